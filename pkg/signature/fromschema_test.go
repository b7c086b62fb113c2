package signature

import (
	"encoding/json"
	"strings"
	"testing"
)

func schemaOf(t *testing.T, src string) any {
	t.Helper()
	if src == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("bad test schema %s: %v", src, err)
	}
	return v
}

func TestFromJSONSchema(t *testing.T) {
	cases := []struct {
		name, in, out string
		want          string
		untyped       bool
		notes         []string // substrings, one per note
	}{
		{name: "plain", in: `{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"},"ratio":{"type":"number"},"all":{"type":"boolean"}},"required":["q"]}`,
			want: "(q :string, all :bool?, limit :int?, ratio :float?) -> :any"},
		{name: "no input schema", want: "() -> :any"},
		{name: "empty object", in: `{"type":"object"}`, want: "() -> :any"},
		{name: "empty properties", in: `{"type":"object","properties":{}}`, want: "() -> :any"},
		{name: "nested and lists", in: `{"type":"object","properties":{"user":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},"tags":{"type":"array","items":{"type":"string"}},"raw":{"type":"array"}},"required":["user","tags"]}`,
			out:  `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"score":{"type":["number","null"]}},"required":["id","score"]}}},"required":["items"]}`,
			want: "(user {id :int}, tags [:string], raw [:any]?) -> {items [{id :int, score :float?}]}"},
		{name: "nullable via anyOf", in: `{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["x"]}`,
			want: "(x :int?) -> :any"},
		{name: "enum and const", in: `{"type":"object","properties":{"mode":{"enum":["a","b"]},"n":{"const":3},"v":{"enum":[1,2.5]}},"required":["mode","n","v"]}`,
			want: `(mode "a" | "b", n 3, v 1 | 2.5) -> :any`},
		{name: "enum of mixed or nullable values", in: `{"type":"object","properties":{"m":{"enum":["a",1,true,null]},"o":{"enum":[{"k":1},"x"]},"t":{"type":["string","null"],"enum":["x","y"]},"d":{"enum":["a","a"]}},"required":["m","o","t","d"]}`,
			want: `(m "a" | 1 | true?, o :map | :string, t "x" | "y"?, d "a") -> :any`, notes: []string{"input.properties.d.enum: a value is listed twice"}},
		{name: "unions", in: `{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"},{"type":"string"}]},"y":{"type":["string","integer"]},"z":{"oneOf":[{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},{"type":"string","maxLength":3},{"type":"null"}]},"w":{"anyOf":[{"type":"integer"},{}]}},"required":["x","y","z","w"]}`,
			want: "(x :int | :string, y :string | :int, z {id :int} | :string(max 3)?, w :any) -> :any"},
		{name: "refinements", in: `{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":100},"b":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10.5},"c":{"type":"number","minimum":0.5},"d":{"type":"string","minLength":1,"maxLength":8,"pattern":"^[a-z]+$"},"e":{"type":"array","items":{"type":"integer"},"minItems":1},"f":{"type":"integer","minimum":0.5,"maximum":2.5}},"required":["a","b","c","d","e","f"]}`,
			want: `(a :int(min 0, max 100), b :int(min 1, max 10), c :float(min 0.5), d :string(min 1, max 8, pattern "^[a-z]+$"), e [:int](min 1), f :int(min 1, max 2)) -> :any`},
		{name: "refinements kept out", in: `{"type":"object","properties":{"a":{"type":"number","exclusiveMinimum":0},"b":{"type":"string","pattern":"(?=x)"},"c":{"type":"integer","minimum":5,"maximum":1},"d":{"type":"integer","minimum":"0"}},"required":["a","b","c","d"]}`,
			want:  "(a :float, b :string, c :int, d :int) -> :any",
			notes: []string{"input.properties.a.exclusiveMinimum: an exclusive bound on a number is not supported", "input.properties.b: invalid pattern", "input.properties.c: min 5 of :int is greater than max 1", "input.properties.d.minimum: must be a number, got a string"}},
		{name: "integer or number", in: `{"type":"object","properties":{"x":{"type":["integer","number"]}},"required":["x"]}`,
			want: "(x :float) -> :any"},
		{name: "ref and allOf degrade", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"allOf":[{"type":"string"}]},"c":{"$ref":"#/$defs/C"}},"required":["a","b"]}`,
			want: "(a :any, b :any, c :any?) -> :any", notes: []string{"input.properties.a: $ref", "input.properties.b: allOf", "input.properties.c: $ref"}},
		{name: "odd property names", in: `{"type":"object","properties":{"file-path":{"type":"string"},"a.b":{"type":"string"}},"required":["file-path"]}`,
			untyped: true, notes: []string{`input.properties: the names "a.b", "file-path" are not signature names`}},
		{name: "nested odd names become map", in: `{"type":"object","properties":{"h":{"type":"object","properties":{"Content-Type":{"type":"string"}}}},"required":["h"]}`,
			want: "(h :map) -> :any", notes: []string{`input.properties.h.properties: the names "Content-Type"`}},
		{name: "input not an object", in: `{"type":"array","items":{"type":"string"}}`, untyped: true, notes: []string{"input: the arguments are [:string], not an object"}},
		{name: "input schema is a string", in: `"object"`, untyped: true, notes: []string{"input: the schema is a string, not an object schema"}},
		{name: "malformed type", in: `{"type":"object","properties":{"x":{"type":5},"y":{"type":"decimal"},"z":7,"w":{"type":["string",3]}},"required":["x","y","z","w"]}`,
			want:  "(x :any, y :any, z :any, w :any) -> :any",
			notes: []string{"input.properties.x.type: must be a string or a list of strings, got a number", `input.properties.y.type: unknown type "decimal"`, "input.properties.z: a schema must be an object, got a number", "input.properties.w.type: entries must be strings"}},
		{name: "properties not a map", in: `{"type":"object","properties":[1,2]}`, untyped: true, notes: []string{"input.properties: must be an object, got a list"}},
		{name: "tuple items", in: `{"type":"object","properties":{"p":{"type":"array","items":[{"type":"string"}]}},"required":["p"]}`,
			want: "(p [:any]) -> :any", notes: []string{"input.properties.p.items: tuple items"}},
		{name: "output scalar", out: `{"type":"string"}`, want: "() -> :string"},
		{name: "output bool schema", out: `true`, want: "() -> :any"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sig, untyped, notes := FromJSONSchema(schemaOf(t, c.in), schemaOf(t, c.out))
			if untyped != c.untyped {
				t.Fatalf("untyped = %v, want %v (notes %q)", untyped, c.untyped, notes)
			}
			if !untyped {
				if got := sig.String(); got != c.want {
					t.Errorf("signature = %s\n            want %s", got, c.want)
				}
				back, err := Parse(sig.String())
				if err != nil {
					t.Fatalf("canonical form does not parse: %v", err)
				}
				if back.String() != sig.String() {
					t.Errorf("round trip %s → %s", sig, back)
				}
			}
			if len(notes) != len(c.notes) {
				t.Fatalf("notes = %q, want %d like %q", notes, len(c.notes), c.notes)
			}
			for i, want := range c.notes {
				if !strings.Contains(notes[i], want) {
					t.Errorf("note %d = %q, want it to contain %q", i, notes[i], want)
				}
			}
		})
	}
}

func TestFromJSONSchemaDeepNesting(t *testing.T) {
	schema := map[string]any{"type": "string"}
	for range 200 {
		schema = map[string]any{"type": "array", "items": schema}
	}
	sig, _, notes := FromJSONSchema(nil, schema)
	if len(notes) != 1 || !strings.Contains(notes[0], "nested deeper than") {
		t.Fatalf("notes = %q", notes)
	}
	if _, err := Parse(sig.String()); err != nil {
		t.Fatalf("deep signature does not parse: %v", err)
	}
}

func FuzzFromJSONSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, `{"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"null"}]}}`)
	f.Add(`{"properties":{"a":{"enum":[1,"x",null]}}}`, `{"$ref":"x"}`)
	f.Add(`[]`, `5`)
	f.Add(`{"properties":{"a":{"oneOf":[{"type":"integer","minimum":0},{"type":"string","pattern":"^a"},{"type":"null"}]},"b":{"type":["array","string"],"items":{"const":1.5},"minItems":2,"maxLength":4}},"required":["a"]}`,
		`{"type":"integer","exclusiveMinimum":-3.5,"exclusiveMaximum":1e300}`)
	f.Fuzz(func(t *testing.T, in, out string) {
		var a, b any
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(out), &b) != nil {
			return
		}
		sig, untyped, _ := FromJSONSchema(a, b)
		if untyped && sig.Inputs != nil {
			t.Fatalf("untyped signature with inputs: %s", sig)
		}
		again, err := Parse(sig.String())
		if err != nil {
			t.Fatalf("signature %s from %s -> %s does not parse: %v", sig, in, out, err)
		}
		if again.String() != sig.String() {
			t.Fatalf("signature %s from %s -> %s prints %s once parsed", sig, in, out, again)
		}
	})
}

// An explicit additionalProperties opens the inputs ("..."); without it a
// call's unlisted argument is unknown.
func TestFromJSONSchemaAdditionalProperties(t *testing.T) {
	props := map[string]any{"path": map[string]any{"type": "string"}}
	for _, c := range []struct {
		ap   any
		want string
	}{
		{nil, "(path :string?) -> :any"},
		{false, "(path :string?) -> :any"},
		{true, "(path :string?, ...) -> :any"},
		{map[string]any{"type": "string"}, "(path :string?, ...) -> :any"},
	} {
		in := map[string]any{"type": "object", "properties": props}
		if c.ap != nil {
			in["additionalProperties"] = c.ap
		}
		sig, _, _ := FromJSONSchema(in, nil)
		if sig.String() != c.want {
			t.Errorf("additionalProperties %v: %s, want %s", c.ap, sig, c.want)
		}
	}
}
