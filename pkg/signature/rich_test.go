package signature

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestValidateRichValid(t *testing.T) {
	for _, tc := range []struct {
		typ string
		v   any
	}{
		{`"low" | "medium" | "high"`, "medium"},
		{`"low" | "medium" | "high"`, myString("low")},
		{`1 | 2 | 3`, int64(2)},
		{`1 | 2 | 3`, uint8(3)},
		{`1 | 2 | 3`, json.Number("1")},
		{`0.5 | 1.5`, 1.5},
		{`1.0 | 2.5`, int64(1)}, // a float value is matched by an equal integer, as :float takes integers
		{`true`, true},
		{`"a" | "b"?`, nil},
		{`:int | :string`, int64(4)},
		{`:int | :string`, "four"},
		{`{id :int} | [:int]`, []any{int64(1)}},
		{`:int | "all"`, "all"},
		{`:int(min 0, max 100)`, int64(0)},
		{`:int(min 0, max 100)`, int64(100)},
		{`:int(min -5)`, int8(-5)},
		{`:int(max 9007199254740991)`, int64(9007199254740991)},
		{`:float(min 0, max 0.5)`, 0.5},
		{`:float(min 0, max 0.5)`, int64(0)},
		{`:float(min 0.5)`, json.Number("0.75")},
		{`:string(min 2, max 3)`, "héé"}, // characters, not bytes
		{`:string(pattern "^[A-Z]+$")`, "ABC"},
		{`:string(pattern "b")`, "abc"}, // unanchored
		{`[:int](min 1, max 2)`, []any{int64(1), int64(2)}},
		{`[:int](max 2)`, []int{}},
		{`{score :int(min 0, max 100)?}`, map[string]any{}},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(typ, tc.v, Strict); err != nil {
			t.Errorf("Validate(%s, %#v) = %v, want nil", tc.typ, tc.v, err)
		}
	}
}

func TestValidateRichInvalid(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    any
		want string
	}{
		{`{status "low" | "medium" | "high"}`, map[string]any{"status": "urgent"},
			`- status: expected one of "low", "medium", "high", got string "urgent"`},
		{`{status "low" | "medium" | "high"}`, map[string]any{"status": nil},
			`- status: expected one of "low", "medium", "high", got nil`},
		{`"only"`, "other", `- expected "only", got string "other"`},
		{`1 | 2 | 3`, 2.0, `- expected one of 1, 2, 3, got float 2.0`},
		{`1 | 2 | 3`, "2", `- expected one of 1, 2, 3, got string "2"`},
		{`[:int | :string]`, []any{int64(1), true},
			`- [1]: expected integer or string, got boolean true`},
		{`:int | :string | :bool`, 1.5, `- expected integer, string or boolean, got float 1.5`},
		{`{a {id :int} | :string}`, map[string]any{"a": map[string]any{"id": "x"}},
			`- a.id: expected integer, got string "x"`},
		{`{id :int} | {name :string}`, map[string]any{},
			`- expected map or map, got map {}`},
		{`{score :int(min 0, max 100)}`, map[string]any{"score": int64(150)},
			`- score: expected integer between 0 and 100, got integer 150`},
		{`{score :int(min 0, max 100)}`, map[string]any{"score": "x"},
			`- score: expected integer between 0 and 100, got string "x"`},
		{`:int(min 1)`, int64(0), `- expected integer at least 1, got integer 0`},
		{`:int(max 10)`, uint64(1 << 63), `- expected integer at most 10, got integer 9223372036854775808`},
		{`:float(min 0.5)`, int64(0), `- expected float at least 0.5, got integer 0`},
		{`:string(min 1, max 3)`, "", `- expected string of 1 to 3 characters, got string ""`},
		{`:string(max 3)`, "abcd", `- expected string of at most 3 characters, got string "abcd"`},
		{`:string(pattern "^[A-Z]+$")`, "abc", `- expected string matching "^[A-Z]+$", got string "abc"`},
		{`[:int](min 1)`, []any{}, `- expected list of at least 1 element, got list []`},
		{`[:int](max 1)`, []any{int64(1), "x"}, `- [1]: expected integer, got string "x"`},
		{`{_code :string(pattern "^A")}`, map[string]any{"_code": "secret"},
			`- _code: expected string matching "^A", got string <Firewalled>`},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		err = Validate(typ, tc.v, Enabled)
		if err == nil {
			t.Errorf("Validate(%s, %#v) = nil, want %s", tc.typ, tc.v, tc.want)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("Validate(%s, %#v):\n got %s\nwant %s", tc.typ, tc.v, got, tc.want)
		}
	}
}

// The seeds' Malli examples in the signature syntax: an enum field and a
// refined integer.
func TestValidateSeedEnumAndRange(t *testing.T) {
	sig := MustParse(`(text :string) -> {status "low" | "medium" | "high"}`)
	if err := sig.ValidateOutput(map[string]any{"status": "high"}, Enabled); err != nil {
		t.Fatal(err)
	}
	if err := sig.ValidateOutput(map[string]any{"status": "HIGH"}, Enabled); err == nil {
		t.Fatal("HIGH accepted")
	}
	score := MustParse(`() -> {score :int(min 1, max 99)}`) // [:and :int [:> 0] [:< 100]]
	for v, ok := range map[int64]bool{0: false, 1: true, 99: true, 100: false} {
		if err := score.ValidateOutput(map[string]any{"score": v}, Enabled); (err == nil) != ok {
			t.Errorf("score %d: %v", v, err)
		}
	}
}

func TestCoerceRich(t *testing.T) {
	sig := MustParse(`(level 1 | 2 | 3, mode "fast" | "slow", limit :int | "all", n :int(min 0, max 10), flag true?) -> :any`)
	args := map[string]any{"level": "2", "mode": "fast", "limit": "7", "n": 3.0, "flag": "true"}
	orig := deepCopy(args)
	out, warnings, err := sig.CoerceInputs(args, Enabled)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"level": int64(2), "mode": "fast", "limit": int64(7), "n": int64(3), "flag": true}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("coerced %#v, want %#v", out, want)
	}
	wantW := []string{`level: coerced string "2" to integer`, `limit: coerced string "7" to integer`,
		`n: coerced float 3.0 to integer`, `flag: coerced string "true" to boolean`}
	if strings.Join(warnings, "\n") != strings.Join(wantW, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(wantW, "\n"))
	}
	if !reflect.DeepEqual(args, orig) {
		t.Error("args modified")
	}
	// "all" is taken as given; "9" is not an enum value, so it stays a
	// string and fails; 11 coerces to an integer and fails its bound.
	out, warnings, err = sig.CoerceInputs(map[string]any{"level": "9", "mode": "quick", "limit": "all", "n": "11"}, Enabled)
	if out["limit"] != "all" || out["level"] != "9" {
		t.Errorf("coerced %#v", out)
	}
	wantErr := "- level: expected one of 1, 2, 3, got string \"9\"\n" +
		"- mode: expected one of \"fast\", \"slow\", got string \"quick\"\n" +
		"- n: expected integer between 0 and 10, got integer 11"
	if err == nil || err.Error() != wantErr {
		t.Errorf("error:\n%v\nwant\n%s", err, wantErr)
	}
	if len(warnings) != 1 || warnings[0] != `n: coerced string "11" to integer` {
		t.Errorf("warnings %q", warnings)
	}
}

func TestPublicAndPromptRich(t *testing.T) {
	sig := MustParse(`(q :string(min 1)) -> {hits [{id :int, _raw :map} | :string](max 5), status "ok" | "partial"}`)
	want := `(q :string(min 1)) -> {hits [{id :int} | :string](max 5), status "ok" | "partial"}`
	if got := sig.Prompt(); got != want {
		t.Errorf("Prompt = %q\nwant     %q", got, want)
	}
	if !strings.Contains(sig.String(), "_raw") {
		t.Error("Public modified the signature")
	}
	withUser := MustParse(`(user {name :string} | :string) -> :any`)
	if err := withUser.CheckPlaceholders("{{user.name}}"); err != nil {
		t.Errorf("placeholder through a union: %v", err)
	}
	if err := withUser.CheckPlaceholders("{{user.email}}"); err == nil {
		t.Error("{{user.email}} resolved")
	}
}
