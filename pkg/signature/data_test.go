package signature

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// dataOf decodes a JSON text as a mission file's data would be.
func dataOf(t testing.TB, src string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test data %s: %v", src, err)
	}
	return v
}

// The seeds' Malli examples, with the inputs named (:catn) because a
// signature's inputs are the names a program reads them by, and the
// other forms of the data form.
func TestFromData(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		// [:=> [:cat :string] [:map [:status [:enum "low" "medium" "high"]]]]
		{`[":=>", [":catn", ["text", ":string"]], [":map", [":status", [":enum", "low", "medium", "high"]]]]`,
			`(text :string) -> {status "low" | "medium" | "high"}`},
		// [:=> [:cat] [:map [:score [:and :int [:> 0] [:< 100]]]]]
		{`[":=>", [":cat"], [":map", [":score", [":and", ":int", [":>", 0], [":<", 100]]]]]`,
			`() -> {score :int(min 1, max 99)}`},
		{`":int"`, `() -> :int`},
		{`":double"`, `() -> :float`},
		{`[":boolean"]`, `() -> :bool`},
		{`[":int", {"min": 0, "max": 100}]`, `() -> :int(min 0, max 100)`},
		{`[":string", {":min": 1, ":max": 80}]`, `() -> :string(min 1, max 80)`},
		{`[":float", {"max": 0.5}]`, `() -> :float(max 0.5)`},
		{`[":re", "^[A-Z]+$"]`, `() -> :string(pattern "^[A-Z]+$")`},
		{`[":and", [":string", {"max": 3}], [":re", "^a"]]`, `() -> :string(max 3, pattern "^a")`},
		{`[":and", ":float", [":>=", 0], [":<=", 1.5]]`, `() -> :float(min 0, max 1.5)`},
		{`[":enum", ":low", ":high"]`, `() -> "low" | "high"`},
		{`[":enum", {}, 1, 2.5, true]`, `() -> 1 | 2.5 | true`},
		{`[":or", ":int", ":string", [":enum", "all"]]`, `() -> :int | :string | "all"`},
		{`[":orn", ["n", ":int"], ["s", ":string"]]`, `() -> :int | :string`},
		{`[":maybe", [":or", ":int", ":string"]]`, `() -> :int | :string?`},
		{`[":vector", [":map", ["id", ":int"]]]`, `() -> [{id :int}]`},
		{`[":sequential", {"min": 1, "max": 5}, ":int"]`, `() -> [:int](min 1, max 5)`},
		{`[":set", ":string"]`, `() -> [:string]`},
		{`[":map", {}, ["user-id", ":int"], ["email", {"optional": true}, ":string"], ["_ids", [":vector", ":int"]]]`,
			`() -> {user_id :int, email :string?, _ids [:int]}`},
		{`[":map-of", ":string", ":int"]`, `() -> :map`},
		{`[":=>", [":catn", ["q", ":string"], ["limit", {"optional": true}, [":int", {"min": 1}]]], [":vector", ":any"]]`,
			`(q :string, limit :int(min 1)?) -> [:any]`},
	} {
		sig, err := FromData(dataOf(t, tc.data))
		if err != nil {
			t.Errorf("FromData(%s): %v", tc.data, err)
			continue
		}
		if got := sig.String(); got != tc.want {
			t.Errorf("FromData(%s) = %s, want %s", tc.data, got, tc.want)
		}
		if again := MustParse(sig.String()); again.String() != sig.String() {
			t.Errorf("%s does not parse back to itself: %s", sig, again)
		}
	}
}

// The seeds' enum example validates like its syntax form.
func TestFromDataValidates(t *testing.T) {
	sig, err := FromData(dataOf(t, `[":=>", [":catn", ["text", ":string"]], [":map", [":status", [":enum", "low", "medium", "high"]], [":score", [":and", ":int", [":>", 0], [":<", 100]]]]]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := sig.ValidateOutput(map[string]any{"status": "low", "score": int64(99)}, Enabled); err != nil {
		t.Error(err)
	}
	err = sig.ValidateOutput(map[string]any{"status": "urgent", "score": int64(100)}, Enabled)
	want := "- status: expected one of \"low\", \"medium\", \"high\", got string \"urgent\"\n- score: expected integer between 1 and 99, got integer 100"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant\n%s", err, want)
	}
}

func TestFromDataErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`":integer"`, `signature: unknown schema ":integer"`},
		{`"int"`, `signature: expected a schema, got the string "int" (types are keywords, as ":int")`},
		{`42`, `signature: expected a schema (a keyword such as ":int" or a list such as [":enum", ...]), got 42`},
		{`[]`, `signature: empty schema []`},
		{`[":map", ["id", ":int"], ["id", ":string"]]`, `[2]: duplicate field "id"`},
		{`[":map", ["id"]]`, `[1]: expected an entry [name schema] or [name {:optional true} schema], got a list`},
		{`[":map", ["a b", ":int"]]`, `[1][0]: "a b" is not a name (a letter or _ then letters, digits, _ or -)`},
		{`[":map", ["a", {"optional": "yes"}, ":int"]]`, `[1][1]: optional must be true or false, got "yes"`},
		{`[":map", {"closed": true}, ["a", ":int"]]`, `[1]: unknown property "closed" (a :map takes none; validation_mode strict rejects undeclared fields)`},
		{`[":map", ["a", [":vector", ":integer"]]]`, `[1][1][1]: unknown schema ":integer"`},
		{`[":enum"]`, `signature: [:enum] needs at least one value`},
		{`[":enum", "a", ["x"]]`, `[2]: an enum value is a string, number or boolean, got a list`},
		{`[":enum", "a", "a"]`, `signature: value "a" listed twice`},
		{`[":or", ":int"]`, `signature: [:or] needs at least two schemas`},
		{`[":int", {"min": 5, "max": 1}]`, `signature: min 5 of :int is greater than max 1`},
		{`[":int", {"step": 1}]`, `[1]: unknown property "step" (want min, max)`},
		{`[":int", {"min": "0"}]`, `[1]: min must be a number, got "0"`},
		{`[":bool", {"min": 1}]`, `signature: :bool takes no refinements (only :int, :float, :string, :keyword and lists do)`},
		{`[":and", ":float", [":>", 0]]`, `[2]: [:> n] is an exclusive bound, which only :int takes (write [:>= n])`},
		{`[":and", ":int", [":!=", 0]]`, `[2]: expected [:> n], [:>= n], [:< n], [:<= n] or [:re pattern], got ":!="`},
		{`[":re", "("]`, "[1]: invalid pattern: error parsing regexp: missing closing ): `(`"},
		{`[":=>", [":cat", ":string"], ":int"]`, `[1]: inputs need names: write [:catn ["name" schema] ...] instead of [:cat schema ...]`},
		{`[":=>", [":catn", ["a", ":int"], ["a", ":int"]], ":int"]`, `[1][2]: duplicate input "a"`},
		{`[":=>", [":catn"]]`, `signature: [:=> inputs output] takes 2 schemas, got 1`},
		{`[":vector", [":=>", [":cat"], ":int"]]`, `[1]: [:=> ...] is a function schema and stands only at the top`},
		{strings.Repeat(`[":vector", `, 102) + `":int"` + strings.Repeat(`]`, 102), `nesting too deep (more than 100 levels)`},
	} {
		_, err := FromData(dataOf(t, tc.data))
		if err == nil {
			t.Errorf("FromData(%s) succeeded, want %s", tc.data, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromData(%.60s) error:\n got %s\nwant %s", tc.data, err, tc.want)
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("FromData(%.60s) error is not ErrSyntax", tc.data)
		}
	}
}

// FuzzFromData checks that FromData never panics on any JSON data and that
// what it builds prints as a signature that parses back to itself.
func FuzzFromData(f *testing.F) {
	f.Add(`[":=>", [":catn", ["text", ":string"]], [":map", [":status", [":enum", "low", "medium", "high"]]]]`)
	f.Add(`[":=>", [":cat"], [":map", [":score", [":and", ":int", [":>", 0], [":<", 100]]]]]`)
	f.Add(`[":or", [":int", {"min": -3}], [":re", "^a"], [":maybe", [":vector", {"max": 2}, ":any"]]]`)
	f.Add(`[":map", ["a", {"optional": true}, [":enum", 1, 1.5, ":k", false]]]`)
	f.Fuzz(func(t *testing.T, src string) {
		dec := json.NewDecoder(strings.NewReader(src))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		sig, err := FromData(v)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v is not ErrSyntax", err)
			}
			return
		}
		again, err := Parse(sig.String())
		if err != nil || again.String() != sig.String() {
			t.Fatalf("FromData(%s) = %s, which parses to %v, %v", src, sig, again, err)
		}
	})
}
