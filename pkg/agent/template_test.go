package agent

import (
	"strings"
	"testing"
)

func TestTemplateRender(t *testing.T) {
	data := map[string]any{
		"user":   map[string]any{"name": "Ann", "tier": "gold", "_ssn": "123-45-6789"},
		"topic":  "billing",
		"n":      int64(3),
		"f":      2.5,
		"emails": []any{map[string]any{"id": int64(1), "subject": "Hi"}, map[string]any{"id": int64(2), "subject": "Yo"}},
		"empty":  []any{},
		"_token": "s3cr3t-token",
		"rec":    map[string]any{"a": int64(1), "_b": "hidden-value"},
	}
	tests := []struct{ tmpl, want string }{
		{"Find emails for {{user.name}} about {{topic}}", "Find emails for Ann about billing"},
		{"{{ n }} items at {{f}}", "3 items at 2.5"},
		{"{{#emails}}- {{id}}: {{subject}}\n{{/emails}}", "- 1: Hi\n- 2: Yo\n"},
		{"[{{#empty}}x{{/empty}}]", "[]"},
		{"{{^empty}}none{{/empty}}", "none"},
		{"{{missing}}|{{user.missing}}", "|"},
		{"token {{_token}} ssn {{user._ssn}}", "token <Firewalled> ssn <Firewalled>"},
		{"{{rec}}", `{"_b" <Firewalled> "a" 1}`},
		{"{{{topic}}} {{&topic}} {{! comment }}", "billing billing "},
		{"{{#user}}{{name}}/{{tier}}{{/user}}", "Ann/gold"},
		{"{{#_token}}leak{{/_token}}", ""},
	}
	for _, tc := range tests {
		got := MustTemplate(tc.tmpl).Render(data)
		if got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.tmpl, got, tc.want)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct{ tmpl, msg string }{
		{"Hello {{name", "offset 6: unclosed {{"},
		{"{{#a}}x", "section {{#a}} is not closed"},
		{"{{#a}}x{{/b}}", "{{/b}} closes section {{#a}}"},
		{"x{{/a}}", "{{/a}} closes no section"},
		{"{{}}", "empty tag"},
		{"{{>partial}}", "partials"},
	}
	for _, tc := range tests {
		_, err := ParseTemplate(tc.tmpl)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseTemplate(%q) = %v, want %q", tc.tmpl, err, tc.msg)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustTemplate did not panic")
		}
	}()
	MustTemplate("{{#x}}")
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"Hi {{name}}", "{{#l}}{{.}}{{/l}}", "{{^x}}y{{/x}}", "{{{a}}}", "{{", "}}{{/", "{{#a}}{{#b}}{{/b}}{{/a}}", "{{_secret}}"} {
		f.Add(s)
	}
	data := map[string]any{"name": "n", "l": []any{int64(1), "two"}, "a": map[string]any{"b": true}, "_secret": "FUZZSECRET"}
	f.Fuzz(func(t *testing.T, src string) {
		tp, err := ParseTemplate(src)
		if err != nil {
			return
		}
		out := tp.Render(data)
		if strings.Contains(out, "FUZZSECRET") && !strings.Contains(src, "FUZZSECRET") {
			t.Fatalf("template %q leaked a firewalled value: %q", src, out)
		}
		if tp.String() != src {
			t.Fatal("String() differs from source")
		}
	})
}
