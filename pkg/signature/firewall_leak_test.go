package signature

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// leakCanaries are firewalled values a message must never quote: CJK,
// quotes, backslashes, newlines and tabs, short and long.
var leakCanaries = []string{
	"CANARY-7f3a9c",
	strings.Repeat("秘密鍵", 27)[:240], // 80 CJK characters
	`{"token": "CANARY-\"q\"", "path": "C:\\Users\\x"}`,
	"-----BEGIN KEY-----\nCANARYbody\tline\n-----END KEY-----",
	"短",
}

// TestValidateFirewalledValueHidden: a value under a "_" field that fails
// validation (or is coerced) is named in the message by its path and kind,
// never by its value; the value of a "_" field inside a value that is
// quoted shows as <Firewalled>.
func TestValidateFirewalledValueHidden(t *testing.T) {
	for _, c := range leakCanaries {
		cases := []struct {
			typ  string
			v    any
			want string
		}{
			{"{_tok :string}", map[string]any{"_tok": []any{c}}, "_tok: expected string, got list <Firewalled>"},
			{"{_tok :int}", map[string]any{"_tok": c}, "_tok: expected integer, got string <Firewalled>"},
			{"{items [{_k :int}]}", map[string]any{"items": []any{map[string]any{"_k": map[string]any{"v": c}}}}, "items[0]._k: expected integer, got map <Firewalled>"},
			{"{_in {id :int}}", map[string]any{"_in": map[string]any{"id": c}}, "_in.id: expected integer, got string <Firewalled>"},
			{"{pub :string}", map[string]any{"pub": map[string]any{"_s": c, "id": int64(1)}}, "pub: expected string, got map {:_s <Firewalled>, :id 1}"},
			{"{pub :string}", map[string]any{"pub": map[string]string{"_s": c}}, "pub: expected string, got map {:_s <Firewalled>}"},
		}
		for _, tc := range cases {
			var ve ValidationErrors
			err := Validate(mustType(t, tc.typ), tc.v, Enabled)
			if !errors.As(err, &ve) || len(ve) != 1 || ve[0].Error() != tc.want {
				t.Errorf("%s: got %v, want %s", tc.typ, err, tc.want)
			}
		}
		// a typed tool's "_" argument: coercion warnings and errors
		sig := MustParse("(_key :int, _flag :bool, n :int) -> :any")
		_, warns, err := sig.CoerceInputs(map[string]any{"_key": c, "_flag": "true", "n": "5"}, Enabled)
		var ve ValidationErrors
		if !errors.As(err, &ve) || len(ve) != 1 || ve[0].Error() != "_key: expected integer, got string <Firewalled>" {
			t.Errorf("CoerceInputs error %v", err)
		}
		if len(warns) != 2 || warns[0] != "_flag: coerced string <Firewalled> to boolean" || warns[1] != `n: coerced string "5" to integer` {
			t.Errorf("warnings %q", warns)
		}
		all := strings.Join(warns, "\n") + "\n" + err.Error()
		if strings.Contains(all, c) || strings.Contains(all, "CANARY") {
			t.Errorf("message quotes the canary: %s", all)
		}
	}
}

// TestPreviewCutsOnCharacters: an 80-character CJK string is cut on a
// character boundary, marked with "..." and valid UTF-8.
func TestPreviewCutsOnCharacters(t *testing.T) {
	s := strings.Repeat("秘", 80)
	got := preview(s)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || !strings.HasPrefix(got, `"秘`) {
		t.Fatalf("preview = %q", got)
	}
	if n := utf8.RuneCountInString(got); n > maxPreview {
		t.Fatalf("preview has %d characters", n)
	}
	if d := describe(s, false); !utf8.ValidString(d) || !strings.HasSuffix(d, "...") {
		t.Fatalf("describe = %q", d)
	}
}

// checkPreview asserts preview's contract for a string: valid UTF-8, at
// most maxPreview characters, and either the whole string quoted or a
// cut marked with "..." that shows only a prefix of its quoted form.
func checkPreview(t *testing.T, s string) {
	t.Helper()
	for _, v := range []any{s, []any{s}, map[string]any{"k": s}} {
		got := preview(v)
		if !utf8.ValidString(got) {
			t.Fatalf("preview(%q) = %q: invalid UTF-8", v, got)
		}
		if n := utf8.RuneCountInString(got); n > maxPreview {
			t.Fatalf("preview(%q) = %q: %d characters", v, got, n)
		}
		if hidden := preview(map[string]any{"_s": v, "k": 1}); hidden != "{:_s <Firewalled>, :k 1}" {
			t.Fatalf("preview of a _ field shows its value: %q", hidden)
		}
		if str, ok := v.(string); ok && utf8.ValidString(str) {
			q := preview(str)
			full := strings.Contains(q, str) || q == quoteAll(str)
			if !full && !strings.HasSuffix(q, "...") {
				t.Fatalf("preview(%q) = %q: cut without \"...\"", str, q)
			}
		}
	}
}

func quoteAll(s string) string {
	w := previewWriter{}
	w.value(s, 0)
	return w.b.String()
}

// TestPreviewProperties: random strings of CJK, quotes, backslashes,
// newlines, tabs and invalid bytes, at lengths around the cut.
func TestPreviewProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		checkPreview(t, randLeakString(r, 1+r.IntN(400)))
	}
}

// FuzzPreview checks preview's contract for any string.
func FuzzPreview(f *testing.F) {
	for _, c := range leakCanaries {
		f.Add(c)
	}
	f.Add(strings.Repeat("秘", 80))
	f.Add("\xe5\x88" + strings.Repeat("x", 200))
	f.Fuzz(checkPreview)
}

// FuzzValidateFirewalled validates a firewalled field holding any value of
// the wrong type: the message never holds the value.
func FuzzValidateFirewalled(f *testing.F) {
	for _, c := range leakCanaries {
		f.Add(c, uint8(0))
	}
	f.Fuzz(func(t *testing.T, c string, shape uint8) {
		if len(c) < 3 {
			return
		}
		var v any = c
		switch shape % 3 {
		case 1:
			v = []any{c}
		case 2:
			v = map[string]any{"x": c}
		}
		err := Validate(mustType(t, "{_s :int, p {_q :bool}}"), map[string]any{"_s": v, "p": map[string]any{"_q": v}}, Strict)
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), c) {
			t.Fatalf("message quotes the value: %v", err)
		}
	})
}

const leakAlphabet = "ab秘密\"\\\n\t -é\x00"

func randLeakString(r *rand.Rand, n int) string {
	rs := []rune(leakAlphabet)
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(50) == 0 {
			b.WriteByte(0xe5) // a stray byte: not UTF-8
			continue
		}
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

func mustType(t *testing.T, src string) Type {
	t.Helper()
	typ, err := ParseType(src)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}
