package signature

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type (
	myString string
	myInt    int16
)

func TestValidateValid(t *testing.T) {
	for _, tc := range []struct {
		typ string
		v   any
	}{
		{":string", "x"},
		{":string", myString("x")},
		{":keyword", "active"},
		{":int", int64(1)},
		{":int", 1},
		{":int", int32(-1)},
		{":int", uint8(7)},
		{":int", myInt(3)},
		{":int", json.Number("42")},
		{":float", 1.5},
		{":float", float32(1.5)},
		{":float", int64(2)},
		{":float", 2},
		{":float", json.Number("2.5")},
		{":bool", false},
		{":any", nil},
		{":any", struct{}{}},
		{":map", map[string]any{}},
		{":map", map[int]string{1: "a"}},
		{":int?", nil},
		{":int?", int64(1)},
		{"[:int]", []any{}},
		{"[:int]", []any{int64(1), 2}},
		{"[:int]", []int{1, 2}},
		{"[:int]", [2]int64{1, 2}},
		{"[:int?]", []any{nil, int64(1)}},
		{"[:int]?", nil},
		{"{a :int}?", nil},
		{"{a :int}", map[string]any{"a": int64(1)}},
		{"{a :int}", map[string]any{"a": int64(1), "extra": "ok"}},
		{"{a :int}", map[string]int{"a": 1}},
		{"{a :int}", map[any]any{"a": 1}},
		{"{a :int?}", map[string]any{}},
		{"{answer :any}", map[string]any{"answer": nil}},
		{"{a :int?}", map[string]any{"a": nil}},
		{"{a :any}", map[string]any{"a": nil}},
		{"{}", map[string]any{"x": 1}},
		{"[{id :int, tags [:string]}]", []map[string]any{{"id": 1, "tags": []string{"a"}}}},
		{"{a {b {c :bool}}}", map[string]any{"a": map[string]any{"b": map[string]any{"c": true}}}},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(typ, tc.v, Enabled); err != nil {
			t.Errorf("Validate(%s, %#v) = %v, want nil", tc.typ, tc.v, err)
		}
	}
}

func TestValidateInvalid(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		typ  string
		v    any
		mode Mode
		want string
	}{
		{":int", "abc", Enabled, `- expected integer, got string "abc"`},
		{":int", 1.5, Enabled, `- expected integer, got float 1.5`},
		{":int", 2.0, Enabled, `- expected integer, got float 2.0`},
		{":int", nil, Enabled, `- expected integer, got nil`},
		{":int", json.Number("1.5"), Enabled, `- expected integer, got number 1.5`},
		{":float", "1.5", Enabled, `- expected float, got string "1.5"`},
		{":float", nil, Enabled, `- expected float, got nil`},
		{":string", 42, Enabled, `- expected string, got integer 42`},
		{":string", myInt(3), Enabled, `- expected string, got integer 3`},
		{":keyword", true, Enabled, `- expected keyword, got boolean true`},
		{":bool", "true", Enabled, `- expected boolean, got string "true"`},
		{":map", []any{1}, Enabled, `- expected map, got list [1]`},
		{":map", nil, Enabled, `- expected map, got nil`},
		{"[:int]", map[string]any{"a": 1}, Enabled, `- expected list, got map {:a 1}`},
		{"[:int]", "abc", Enabled, `- expected list, got string "abc"`},
		{"[:int]", nil, Enabled, `- expected list, got nil`},
		{"{a :int}", []any{}, Enabled, `- expected map, got list []`},
		{"{a :int}", nil, Enabled, `- expected map, got nil`},
		{"{a :int}", map[int]any{1: 1}, Enabled, `- expected map, got map {:1 1}`},
		{"{a :int}", struct{}{}, Enabled, `- expected map, got struct {}`},
		{"{a :int}", map[string]any{}, Enabled, `- a: required field missing`},
		{"{a :int}", map[string]any{"a": nil}, Enabled, `- a: expected integer, got nil`},
		{"{answer :any}", map[string]any{}, Enabled, `- answer: required field missing`},
		{"{answer :any}", map[string]string{}, Enabled, `- answer: required field missing`},
		{"{a :int}", map[string]string{"b": "x"}, Enabled, `- a: required field missing`},
		{"[:int]", []any{1, "2", 3, nil}, Enabled, "- [1]: expected integer, got string \"2\"\n- [3]: expected integer, got nil"},
		{"[:int]", []string{"a"}, Enabled, `- [0]: expected integer, got string "a"`},
		{":int", long, Enabled, `- expected integer, got string "` + strings.Repeat("x", 76) + `...`},
		{":int", []any{long, long}, Enabled, `- expected integer, got list ["` + strings.Repeat("x", 75) + `...`},
		// Strict mode rejects extra fields, sorted, at every depth.
		{"{a :int}", map[string]any{"a": 1, "z": 1, "b": 2}, Strict, "- b: unexpected field\n- z: unexpected field"},
		{"{a {b :int}}", map[string]any{"a": map[string]any{"b": 1, "field": 1}}, Strict, "- a.field: unexpected field"},
		{"{a :int}", map[string]int{"a": 1, "c": 2}, Strict, "- c: unexpected field"},
		{"{}", map[string]any{"x": 1}, Strict, "- x: unexpected field"},
		{"{a :int}", map[any]any{"a": 1, nil: 2, 3: 4}, Strict, "- 3: unexpected field\n- nil: unexpected field"},
		// Warn-only validates the same way.
		{":int", "x", WarnOnly, `- expected integer, got string "x"`},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		err = Validate(typ, tc.v, tc.mode)
		if got := errString(err); got != tc.want {
			t.Errorf("Validate(%s, %#v, %s):\n got %s\nwant %s", tc.typ, tc.v, tc.mode, got, tc.want)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%s) error does not match ErrInvalid", tc.typ)
		}
	}
}

func TestValidateSeedPaths(t *testing.T) {
	sig := MustParse("{results [{customer {id :int}, amount :float}]}")
	v := map[string]any{"results": []any{
		map[string]any{"customer": map[string]any{"id": "abc"}, "amount": 1.0},
		map[string]any{"customer": map[string]any{"id": int64(2)}, "amount": int64(3)},
		map[string]any{"customer": map[string]any{"id": int64(3)}, "amount": nil},
	}}
	err := sig.ValidateOutput(v, Enabled)
	want := "- results[0].customer.id: expected integer, got string \"abc\"\n" +
		"- results[2].amount: expected float, got nil"
	if errString(err) != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	var list ValidationErrors
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("errors.As ValidationErrors: %v", list)
	}
	if list[0].Path != "results[0].customer.id" || list[0].Msg != `expected integer, got string "abc"` {
		t.Errorf("first = %+v", list[0])
	}
	var one *ValidationError
	if !errors.As(err, &one) || one != list[0] {
		t.Errorf("errors.As *ValidationError = %v", one)
	}
	if list[1].Error() != "results[2].amount: expected float, got nil" {
		t.Errorf("single Error() = %q", list[1].Error())
	}
}

func TestValidateNilIsRealNil(t *testing.T) {
	err := Validate(Int, int64(1), Enabled)
	if err != nil {
		t.Fatalf("err = %#v", err)
	}
	if ValidationErrors(nil).Err() != nil {
		t.Fatal("empty list Err() is not nil")
	}
	if err := Validate(Int, "x", Disabled); err != nil {
		t.Fatalf("disabled mode returned %v", err)
	}
	if err := (&Signature{}).ValidateOutput(nil, Enabled); err != nil {
		t.Fatalf("zero signature rejects nil: %v", err)
	}
}

func TestValidateInputs(t *testing.T) {
	sig := MustParse("(query :string, limit :int?, user {name :string}) -> :any")
	for _, tc := range []struct {
		args map[string]any
		mode Mode
		want string
	}{
		{map[string]any{"query": "x", "user": map[string]any{"name": "a"}}, Enabled, "<nil>"},
		{map[string]any{"query": "x", "limit": int64(3), "user": map[string]any{"name": "a"}, "other": 1}, Enabled, "<nil>"},
		{map[string]any{"user": map[string]any{}}, Enabled, "- query: required input missing\n- user.name: required field missing"},
		{nil, Enabled, "- query: required input missing\n- user: required input missing"},
		{map[string]any{"query": "x", "limit": "10", "user": map[string]any{"name": "a"}}, Enabled, `- limit: expected integer, got string "10"`},
		{map[string]any{"query": "x", "user": map[string]any{"name": "a"}, "other": 1}, Strict, "- other: unexpected field"},
		{map[string]any{}, Disabled, "<nil>"},
	} {
		if got := errString(sig.ValidateInputs(tc.args, tc.mode)); got != tc.want {
			t.Errorf("ValidateInputs(%v, %s):\n got %s\nwant %s", tc.args, tc.mode, got, tc.want)
		}
	}
}

func TestValidateDoesNotMutate(t *testing.T) {
	v := map[string]any{"a": []any{int64(1)}}
	_ = Validate(MustParse("{a [:int], b :int}").Output, v, Strict)
	if len(v) != 1 {
		t.Fatalf("value changed: %v", v)
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "nil"},
		{"a\"b", `"a\"b"`},
		{10.0, "10.0"},
		{1e21, "1e+21"},
		{[]any{int64(1), "x", nil, true}, `[1 "x" nil true]`},
		{map[string]any{"b": 1, "a": []any{}}, `{:a [], :b 1}`},
		{[]int{1, 2}, `[1 2]`},
		{map[string]float32{"x": 1}, `{:x 1.0}`},
		{myString("s"), `"s"`},
		{uint(7), `7`},
		{struct{ A int }{1}, `struct { A int }`},
	} {
		if got := preview(tc.v); got != tc.want {
			t.Errorf("preview(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	huge := make([]any, 100000)
	for i := range huge {
		huge[i] = int64(i)
	}
	if got := preview(huge); len(got) != 80 || !strings.HasSuffix(got, "...") {
		t.Errorf("preview of huge list = %q (%d chars)", got, len(got))
	}
	deep := any(int64(1))
	for range 20 {
		deep = []any{deep}
	}
	if got := preview(deep); !strings.Contains(got, "...") {
		t.Errorf("preview of deep list = %q", got)
	}
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Mode
		fatal bool
	}{
		{"enabled", Enabled, true}, {"", Enabled, true}, {":strict", Strict, true},
		{"warn_only", WarnOnly, false}, {"disabled", Disabled, false}, {"strict", Strict, true},
	} {
		m, err := ParseMode(tc.in)
		if err != nil || m != tc.want || m.Fatal() != tc.fatal {
			t.Errorf("ParseMode(%q) = %v, %v (fatal %v)", tc.in, m, err, m.Fatal())
		}
		if tc.in != "" && tc.in[0] != ':' && m.String() != tc.in {
			t.Errorf("%v.String() = %q", m, m.String())
		}
	}
	_, err := ParseMode("lenient")
	if errString(err) != `unknown validation mode "lenient" (want enabled, warn_only, disabled or strict)` || !errors.Is(err, ErrUnknownMode) {
		t.Errorf("ParseMode(lenient) = %v", err)
	}
	var cfg struct{ Mode Mode }
	if err := json.Unmarshal([]byte(`{"Mode":"warn_only"}`), &cfg); err != nil || cfg.Mode != WarnOnly {
		t.Errorf("UnmarshalText: %v %v", cfg.Mode, err)
	}
	if err := json.Unmarshal([]byte(`{"Mode":"nope"}`), &cfg); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("UnmarshalText(nope) = %v", err)
	}
	b, err := json.Marshal(cfg)
	if err != nil || string(b) != `{"Mode":"warn_only"}` {
		t.Errorf("MarshalText: %s %v", b, err)
	}
	if _, err := Mode(9).MarshalText(); err == nil || Mode(9).String() != "mode(9)" {
		t.Errorf("Mode(9): %v %q", err, Mode(9).String())
	}
}
