package signature

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestPublic(t *testing.T) {
	for _, tc := range []struct{ src, public string }{
		{"{summary :string, _raw_data [:map]}", "() -> {summary :string}"},
		{"(id :int) -> {summary :string, _raw_data :map}", "(id :int) -> {summary :string}"},
		{"(_secret :string, q {a :int, _b :int}) -> :bool", "(q {a :int}) -> :bool"},
		{"[{id :int, _x {y :int}, meta {_z :int}?}]?", "() -> [{id :int, meta {}?}]?"},
		{"{_only :int}", "() -> {}"},
		{"(q :string) -> [{id :int}]", "(q :string) -> [{id :int}]"},
	} {
		sig := MustParse(tc.src)
		if got := sig.Public().String(); got != tc.public {
			t.Errorf("Public(%q) = %q, want %q", tc.src, got, tc.public)
		}
		if got := sig.Prompt(); got != tc.public {
			t.Errorf("Prompt(%q) = %q, want %q", tc.src, got, tc.public)
		}
	}
	// Nothing firewalled: the same value comes back, no copy.
	sig := MustParse("(q :string) -> [{id :int}]")
	if sig.Public() != sig {
		t.Error("Public copied a signature with no firewalled fields")
	}
	// The original is untouched.
	fw := MustParse("{a :int, _b :int}")
	_ = fw.Public()
	if fw.String() != "() -> {a :int, _b :int}" {
		t.Errorf("Public modified the signature: %s", fw)
	}
	if !IsFirewalled("_x") || IsFirewalled("x_") || IsFirewalled("") {
		t.Error("IsFirewalled")
	}
}

func TestPromptRendering(t *testing.T) {
	sig := MustParse("(query :string, limit :int?, _trace :string) -> {count :int, items [{id :int, _raw :map}], _ids [:int]}")
	if got := sig.PromptInputs(); got != "(query :string, limit :int?)" {
		t.Errorf("PromptInputs = %q", got)
	}
	if got := sig.PromptOutput(); got != "{count :int, items [{id :int}]}" {
		t.Errorf("PromptOutput = %q", got)
	}
	if got := sig.InputsString(); got != "(query :string, limit :int?, _trace :string)" {
		t.Errorf("InputsString = %q", got)
	}
	if got := PromptType(Int); got != ":int" {
		t.Errorf("PromptType(:int) = %q", got)
	}
}

func TestJSONSchema(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{":string", `{"type":"string"}`},
		{":keyword", `{"type":"string"}`},
		{":int", `{"type":"integer"}`},
		{":float", `{"type":"number"}`},
		{":bool", `{"type":"boolean"}`},
		{":any", `{}`},
		{":any?", `{}`},
		{":map", `{"type":"object"}`},
		{":int?", `{"type":["integer","null"]}`},
		{"[:int]", `{"items":{"type":"integer"},"type":"array"}`},
		{"[:int]?", `{"items":{"type":"integer"},"type":["array","null"]}`},
		{"{}", `{"properties":{},"type":"object"}`},
		{"{a :int?}", `{"properties":{"a":{"type":["integer","null"]}},"type":"object"}`},
		{`"low" | "high"`, `{"enum":["low","high"],"type":"string"}`},
		{`1 | 2.5`, `{"enum":[1,2.5],"type":"number"}`},
		{`"a" | 1`, `{"enum":["a",1]}`},
		{`"a" | "b"?`, `{"enum":["a","b",null],"type":["string","null"]}`},
		{`:int | [:string]`, `{"anyOf":[{"type":"integer"},{"items":{"type":"string"},"type":"array"}]}`},
		{`:int | "all"?`, `{"anyOf":[{"type":"integer"},{"enum":["all"],"type":"string"},{"type":"null"}]}`},
		{`:int(min 0, max 100)`, `{"maximum":100,"minimum":0,"type":"integer"}`},
		{`:float(min 0.5)?`, `{"minimum":0.5,"type":["number","null"]}`},
		{`:string(min 1, max 8, pattern "^[a-z]+$")`, `{"maxLength":8,"minLength":1,"pattern":"^[a-z]+$","type":"string"}`},
		{`[:int](max 3)`, `{"items":{"type":"integer"},"maxItems":3,"type":"array"}`},
		{"{id :int, name :string?, tags [:string], owner {id :int}?, _x :any}",
			`{"properties":{"_x":{},"id":{"type":"integer"},"name":{"type":["string","null"]},"owner":{"properties":{"id":{"type":"integer"}},"required":["id"],"type":["object","null"]},"tags":{"items":{"type":"string"},"type":"array"}},"required":["id","tags","_x"],"type":"object"}`},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(JSONSchema(typ))
		if err != nil || string(b) != tc.want {
			t.Errorf("JSONSchema(%s) =\n%s\nwant\n%s", tc.typ, b, tc.want)
		}
	}
	sig := MustParse("(query :string, limit :int?) -> [{id :int}]")
	b, _ := json.Marshal(sig.InputSchema())
	if want := `{"properties":{"limit":{"type":["integer","null"]},"query":{"type":"string"}},"required":["query"],"type":"object"}`; string(b) != want {
		t.Errorf("InputSchema = %s", b)
	}
	b, _ = json.Marshal(sig.JSONSchema())
	if want := `{"items":{"properties":{"id":{"type":"integer"}},"required":["id"],"type":"object"},"type":"array"}`; string(b) != want {
		t.Errorf("JSONSchema = %s", b)
	}
	b, _ = json.Marshal(MustParse(":int").InputSchema())
	if want := `{"properties":{},"type":"object"}`; string(b) != want {
		t.Errorf("InputSchema without inputs = %s", b)
	}
	if req := sig.InputSchema()["required"]; !reflect.DeepEqual(req, []string{"query"}) {
		t.Errorf("required = %#v", req)
	}
}

func TestPlaceholders(t *testing.T) {
	got := Placeholders("Hi {{ user.name }}, {{#items}}{{name}} {{.}}{{/items}}{{^x}}none{{/x}} {{!note}} {{{raw}}} {{&amp}} {{> part}} {{=<% %>=}} {{bad path}} {{topic}} {{unclosed")
	var names []string
	var sections []string
	for _, p := range got {
		names = append(names, p.String())
		sections = append(sections, p.Section)
	}
	wantNames := []string{"{{user.name}}", "{{name}}", "{{raw}}", "{{amp}}", "{{topic}}"}
	wantSections := []string{"", "items", "", "", ""}
	if !reflect.DeepEqual(names, wantNames) || !reflect.DeepEqual(sections, wantSections) {
		t.Fatalf("Placeholders = %v %q", names, sections)
	}
	if got[0].Offset != 3 || !reflect.DeepEqual(got[0].Path, []string{"user", "name"}) {
		t.Errorf("first = %+v", got[0])
	}
	if len(Placeholders("no tags")) != 0 || len(Placeholders("{{")) != 0 {
		t.Error("spurious placeholders")
	}
}

func TestCheckPlaceholders(t *testing.T) {
	for _, tc := range []struct{ sig, prompt, want string }{
		{"(name :string) -> {greeting :string}", "Hello {{name}}", "<nil>"},
		{"(user {name :string}, topic :string) -> {count :int}", "Find emails for {{user.name}} about {{topic}}", "<nil>"},
		{"(name :string) -> :string", "Hello {{unknown}}", "placeholders {{unknown}} not found in signature"},
		{"{count :int}", "Find {{user}} {{topic}} {{user}}", "placeholders {{user}}, {{topic}} not found in signature"},
		{"(user {name :string}) -> :any", "{{user.nam}} {{user.name}}", "placeholders {{user.nam}} not found in signature"},
		{"(user {name :string}?) -> :any", "{{user.name}}", "<nil>"},
		{"(user {address {city :string}}) -> :any", "{{user.address.city}} {{user.address.zip}}", "placeholders {{user.address.zip}} not found in signature"},
		{"(user :map, x :any) -> :any", "{{user.anything.deep}} {{x.y}}", "<nil>"},
		{"(topic :string, items [{name :string}]) -> :any", "{{topic.length}} {{items.name}}", "placeholders {{topic.length}}, {{items.name}} not found in signature"},
		{"(items [{name :string}]) -> :any", "{{#items}}{{name}} {{.}}{{/items}}{{^items}}none{{/items}}", "<nil>"},
	} {
		err := MustParse(tc.sig).CheckPlaceholders(tc.prompt)
		if got := errString(err); got != tc.want {
			t.Errorf("CheckPlaceholders(%q, %q) = %s, want %s", tc.sig, tc.prompt, got, tc.want)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindPlaceholder || !errors.Is(err, ErrPlaceholder) {
				t.Errorf("error %#v is not a KindPlaceholder *Error", err)
			}
		}
	}
}

// A type with enums, unions and refinements goes to JSON Schema and back
// unchanged, so an MCP tool's schema and a provider's structured output
// say what the signature says.
func TestJSONSchemaRoundTripRich(t *testing.T) {
	for _, src := range []string{
		`(status "low" | "medium" | "high", score :int(min 0, max 100), id :int | :string, code :string(min 2, max 3, pattern "^[A-Z]+$")?, ratio :float(min 0, max 1), tags [:string](min 1, max 5), flag true | false, level 1 | 2 | 3?) -> {hits [{id :int} | :string](max 10), kind "a" | "b"?}`,
	} {
		sig := MustParse(src)
		in, out := roundTripJSON(t, sig.InputSchema()), roundTripJSON(t, sig.JSONSchema())
		back, untyped, notes := FromJSONSchema(in, out)
		if untyped || len(notes) > 0 {
			t.Fatalf("untyped %v, notes %q", untyped, notes)
		}
		// FromJSONSchema orders the inputs required first, then by name.
		want := `(status "low" | "medium" | "high", score :int(min 0, max 100), id :int | :string, ratio :float(min 0, max 1), tags [:string](min 1, max 5), flag true | false, code :string(min 2, max 3, pattern "^[A-Z]+$")?, level 1 | 2 | 3?) -> {hits [{id :int} | :string](max 10), kind "a" | "b"?}`
		if got := back.String(); got != want {
			t.Errorf("round trip:\n got %s\nwant %s", got, want)
		}
	}
}

// roundTripJSON encodes a schema and decodes it as a JSON reader would.
func roundTripJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
