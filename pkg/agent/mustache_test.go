package agent

import (
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/signature"
)

func TestMustacheRender(t *testing.T) {
	products := []any{
		map[string]any{"name": "Widget", "price": 9.99},
		map[string]any{"name": "Gadget", "price": 19.99},
	}
	type item struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	tests := []struct {
		name string
		tmpl string
		data map[string]any
		want string
	}{
		{"variable", "Hello {{name}}!", map[string]any{"name": "Ann"}, "Hello Ann!"},
		{"missing is empty", "[{{nope}}]", nil, "[]"},
		{"nested path", "{{user.name}} / {{order.items.count}}",
			map[string]any{"user": map[string]any{"name": "Bo"}, "order": map[string]any{"items": map[string]any{"count": int64(3)}}}, "Bo / 3"},
		{"no html escaping", "{{q}} {{{q}}} {{&q}}", map[string]any{"q": `<a href="x">&</a>`},
			`<a href="x">&</a> <a href="x">&</a> <a href="x">&</a>`},
		{"numbers exact", "{{i}} {{f}} {{g}} {{b}}", map[string]any{"i": int64(9007199254740993), "f": 0.1, "g": 1e21, "b": true},
			"9007199254740993 0.1 1000000000000000000000 true"},
		{"list and map as json", "{{l}} {{m}}", map[string]any{"l": []any{int64(1), "a<b"}, "m": map[string]any{"k": "v", "_s": "secret"}},
			`[1,"a<b"] {"_s":"<Firewalled>","k":"v"}`},
		{"firewalled path", "{{_token}} {{u._pw}}", map[string]any{"_token": "abc", "u": map[string]any{"_pw": "x"}},
			"<Firewalled> <Firewalled>"},
		{"section standalone lines (text-mode.md)", "Categorize these products:\n{{#products}}\n- {{name}}: ${{price}}\n{{/products}}\n",
			map[string]any{"products": products}, "Categorize these products:\n- Widget: $9.99\n- Gadget: $19.99\n"},
		{"scalar list dot", "Classify these tags: {{#tags}}{{.}}, {{/tags}}", map[string]any{"tags": []any{"go", "nats"}},
			"Classify these tags: go, nats, "},
		{"inverted on empty list", "{{#items}}Process items...{{/items}}\n{{^items}}No items to process.{{/items}}\n",
			map[string]any{"items": []any{}}, "\nNo items to process.\n"},
		{"inverted on missing", "{{^x}}none{{/x}}", nil, "none"},
		{"inverted skipped on truthy", "{{^x}}none{{/x}}", map[string]any{"x": "y"}, ""},
		{"section on map", "{{#u}}{{name}} ({{age}}){{/u}}", map[string]any{"u": map[string]any{"name": "Cy", "age": int64(4)}}, "Cy (4)"},
		{"section on empty map is falsy", "{{#u}}x{{/u}}{{^u}}empty{{/u}}", map[string]any{"u": map[string]any{}}, "empty"},
		{"section on bool", "{{#vip}}VIP {{/vip}}{{name}}", map[string]any{"vip": true, "name": "D"}, "VIP D"},
		{"false and empty string are falsy", "{{#a}}A{{/a}}{{#b}}B{{/b}}", map[string]any{"a": false, "b": ""}, ""},
		{"zero is truthy", "{{#n}}[{{.}}]{{/n}}", map[string]any{"n": int64(0)}, "[0]"},
		{"outer names visible in sections", "{{#items}}{{name}} for {{user}};{{/items}}",
			map[string]any{"user": "U", "items": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}, "a for U;b for U;"},
		{"nested sections", "{{#groups}}{{title}}:{{#members}} {{.}}{{/members}}\n{{/groups}}",
			map[string]any{"groups": []any{map[string]any{"title": "g1", "members": []any{"x", "y"}}, map[string]any{"title": "g2", "members": []any{}}}},
			"g1: x y\ng2:\n"},
		{"comment", "a{{! ignore me }}b", nil, "ab"},
		{"standalone comment line", "a\n  {{! note }}\nb", nil, "a\nb"},
		{"crlf standalone", "x\r\n{{#l}}\r\n{{.}}\r\n{{/l}}\r\ny", map[string]any{"l": []any{"1"}}, "x\r\n1\r\ny"},
		{"go structs", "{{#items}}{{name}}={{n}} {{/items}}", map[string]any{"items": []item{{"a", 1}, {"b", 2}}}, "a=1 b=2 "},
		{"typed slice of strings", "{{#tags}}<{{.}}>{{/tags}}", map[string]any{"tags": []string{"p", "q"}}, "<p><q>"},
		{"section with dotted name", "{{#a.b}}{{c}}{{/a.b}}", map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": "C"}}}}, "C"},
		{"section over the current element (lists of lists)", "{{#m}}[{{#.}}{{.}} {{/.}}]{{/m}}",
			map[string]any{"m": []any{[]any{int64(1), int64(2)}, []any{}, []any{int64(3)}}}, "[1 2 ][][3 ]"},
		{"firewalled section skipped", "{{#_s}}x{{/_s}}{{^_s}}hidden{{/_s}}", map[string]any{"_s": []any{"1"}}, "hidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := parseMustache(tc.tmpl)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := tm.render(tc.data); got != tc.want {
				t.Fatalf("render = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMustacheParseErrors(t *testing.T) {
	tests := []struct {
		tmpl string
		want string
	}{
		{"Hello {{name", "template: offset 6: unclosed tag"},
		{"{{}}", "template: offset 0: empty tag"},
		{"{{#a}}x", "template: offset 0: section {{#a}} is not closed"},
		{"{{^a}}x{{/b}}", "template: offset 7: {{/b}} closes section {{^a}}"},
		{"x{{/a}}", "template: offset 1: {{/a}} closes no section"},
		{"{{> partial}}", "template: offset 0: partials, blocks and delimiter changes are not supported"},
		{"{{=<% %>=}}", "not supported"},
		{"{{a..b}}", `template: offset 0: invalid name "a..b"`},
		{"{{a b}}", `invalid name "a b"`},
		{"{{{x}}", "unclosed tag"},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl, func(t *testing.T) {
			_, err := parseMustache(tc.tmpl)
			if err == nil {
				t.Fatalf("parse %q: no error, want %q", tc.tmpl, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestMustacheCheck pins the validation rules of text-mode.md and their
// exact messages.
func TestMustacheCheck(t *testing.T) {
	tests := []struct {
		name, tmpl, sig string
		want            string // "" = valid
	}{
		{"both params used", "Analyze {{text}} for {{user}}", "(text :string, user :string) -> {result :string}", ""},
		{"unused param", "Analyze {{text}}", "(text :string, user :string) -> {result :string}",
			`Text mode requires all signature params in prompt. Unused: ["user"]`},
		{"several unused, in signature order", "x", "(b :string, a :int) -> :string",
			`Text mode requires all signature params in prompt. Unused: ["b", "a"]`},
		{"used as section", "{{#items}}{{name}}{{/items}}", "(items [{name :string, price :float}]) -> {count :int}", ""},
		{"used in inverted section only", "{{^items}}none{{/items}}", "(items [:string]) -> {status :string}", ""},
		{"used by dotted path", "{{user.name}}", "(user {name :string}) -> :string", ""},
		{"used inside a section", "{{#items}}{{name}} {{user}}{{/items}}", "(items [{name :string}], user :string) -> :string", ""},
		{"firewalled param may be unused", "{{q}}", "(q :string, _token :string) -> :string", ""},
		{"unknown field in section", "{{#items}}{{unknown}}{{/items}}", "(items [{name :string}]) -> {count :int}",
			"{{unknown}} inside {{#items}} not found in element type"},
		{"unknown nested field in section", "{{#items}}{{meta.x}}{{/items}}", "(items [{meta {y :int}}]) -> :int",
			"{{meta.x}} inside {{#items}} not found in element type"},
		{"dot on scalar list", "{{#tags}}{{.}}{{/tags}}", "(tags [:string]) -> {count :int}", ""},
		{"dot on list of maps", "{{#items}}{{.}}{{/items}}", "(items [{name :string}]) -> {count :int}",
			"{{.}} inside {{#items}} - use {{field}} instead (list contains maps)"},
		{"dot on list of :map", "{{#items}}{{.}}{{/items}}", "(items [:map]) -> :int",
			"{{.}} inside {{#items}} - use {{field}} instead (list contains maps)"},
		{"dot on a map section", "{{#u}}{{.}}{{/u}}", "(u {a :int}) -> :int",
			"{{.}} inside {{#u}} - use {{field}} instead (u is a map)"},
		{"dot outside a section", "{{.}}", "(a :int) -> :int", "{{.}} outside a section"},
		{"any elements allow any field", "{{#items}}{{whatever}}{{/items}}", "(items [:any]) -> :int", ""},
		{":map elements allow any field", "{{#items}}{{whatever}}{{/items}}", "(items [:map]) -> :int", ""},
		{"unknown top-level section", "{{#nope}}x{{/nope}} {{a}}", "(a :int) -> :int", "placeholder {{nope}} not found in signature"},
		{"unknown path field hint", "{{user.email}}", "(user {name :string}) -> :string",
			"placeholder {{user.email}} not found in signature; user has fields: name"},
		{"nested section element types", "{{#groups}}{{#members}}{{id}}{{/members}}{{/groups}}",
			"(groups [{members [{id :int}]}]) -> :int", ""},
		{"nested section unknown", "{{#groups}}{{#members}}{{nope}}{{/members}}{{/groups}}",
			"(groups [{members [{id :int}]}]) -> :int", "{{nope}} inside {{#members}} not found in element type"},
		{"lists of lists", "{{#m}}{{#.}}{{.}}{{/.}}{{/m}}", "(m [[:int]]) -> :int", ""},
		{"lists of lists of maps", "{{#m}}{{#.}}{{id}}{{/.}}{{/m}}", "(m [[{id :int}]]) -> :int", ""},
		{"lists of lists of maps, unknown field", "{{#m}}{{#.}}{{x}}{{/.}}{{/m}}", "(m [[{id :int}]]) -> :int",
			"{{x}} inside {{#.}} not found in element type"},
		{"section over dot at top level", "{{#.}}x{{/.}}", "(a :int) -> :int", "{{.}} outside a section"},
		{"optional list", "{{#tags}}{{.}}{{/tags}}", "(tags [:string]?) -> :int", ""},
		{"no inputs: nothing checked", "Hello", "{count :int}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := parseMustache(tc.tmpl)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = tm.check(signature.MustParse(tc.sig), true)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("check: no error, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want):
				t.Fatalf("check error = %q, want %q", err, tc.want)
			}
		})
	}
}

func FuzzMustache(f *testing.F) {
	for _, s := range []string{
		"Hello {{name}}", "{{#items}}\n- {{name}}: {{price}}\n{{/items}}\n", "{{^x}}none{{/x}}",
		"{{#tags}}{{.}}, {{/tags}}", "{{! c }}{{{raw}}}{{&amp}}", "{{#a}}{{#b}}{{/a}}{{/b}}", "{{", "}}{{/",
		"a\r\n{{#l}}\r\n{{.}}\r\n{{/l}}", "{{a.b.c}}", "{{#a.b}}{{/a.b}}", "{{=<% %>=}}", "{{{x}}",
	} {
		f.Add(s)
	}
	sig := signature.MustParse("(name :string, items [{name :string, price :float}], tags [:string], x :int) -> :string")
	data := map[string]any{
		"name": "n", "x": int64(1), "tags": []any{"a", "b"},
		"items": []any{map[string]any{"name": "w", "price": 1.5}},
		"a":     map[string]any{"b": []any{map[string]any{"c": "d"}}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := parseMustache(src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "template: offset ") {
				t.Fatalf("error without offset: %v", err)
			}
			return
		}
		_ = tm.check(sig, true)
		_ = tm.usedInputs(sig)
		// rendering is deterministic and does not modify the data
		if a, b := tm.render(data), tm.render(data); a != b {
			t.Fatalf("render not deterministic: %q vs %q", a, b)
		}
	})
}
