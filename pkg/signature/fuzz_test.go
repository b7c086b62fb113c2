package signature

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is a positioned
// KindSyntax *Error, and that the canonical form of every signature parses
// back to the same canonical form.
func FuzzParse(f *testing.F) {
	for _, tc := range validSignatures {
		f.Add(tc.src)
	}
	for _, tc := range invalidSignatures {
		f.Add(tc.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sig, err := Parse(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindSyntax {
				t.Fatalf("Parse(%q) error %T %v is not a KindSyntax *Error", src, err, err)
			}
			if !e.Pos.IsValid() || e.Pos.Offset > len(src) || !strings.HasSuffix(e.Snippet, "^") {
				t.Fatalf("Parse(%q) bad position %+v / snippet %q", src, e.Pos, e.Snippet)
			}
			return
		}
		printed := sig.String()
		again, err := Parse(printed)
		if err != nil {
			t.Fatalf("Parse(%q) printed %q, which does not parse: %v", src, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("round trip of %q: %q then %q", src, printed, again.String())
		}
		// The derived forms must not panic either and stay parseable.
		if _, err := Parse(sig.Prompt()); err != nil {
			t.Fatalf("Prompt() %q does not parse: %v", sig.Prompt(), err)
		}
		// JSON Schema and back never panics and keeps every input.
		if back, untyped, _ := FromJSONSchema(sig.InputSchema(), sig.JSONSchema()); !untyped && len(back.Inputs) != len(sig.Inputs) {
			t.Fatalf("FromJSONSchema of %q has %d inputs, want %d", printed, len(back.Inputs), len(sig.Inputs))
		}
		_ = sig.ValidateOutput(nil, Strict)
		_, _, _ = sig.CoerceInputs(map[string]any{}, Enabled)
	})
}

// FuzzPlaceholders checks that template scanning never panics and that every
// placeholder points at a "{{" and has a non-empty dotted path of names.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range []string{
		"Hello {{name}}", "{{#items}}{{name}}{{/items}}", "{{{raw}}} {{&x}} {{!c}} {{.}}",
		"{{", "}}{{", "{{a.b.c}}", "{{ a . b }}", "{{{{x}}}}", "{{#a}}{{#b}}{{c}}{{/a}}",
	} {
		f.Add(s)
	}
	sig := MustParse("(a {b {c :int}}, name :string, items [:map]) -> :any")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range Placeholders(s) {
			if p.Offset < 0 || p.Offset >= len(s) || !strings.HasPrefix(s[p.Offset:], "{{") {
				t.Fatalf("placeholder %+v does not point at {{ in %q", p, s)
			}
			if len(p.Path) == 0 {
				t.Fatalf("empty path in %q", s)
			}
			for _, name := range p.Path {
				if !IsName(name) {
					t.Fatalf("bad name %q in %q", name, s)
				}
			}
		}
		if err := sig.CheckPlaceholders(s); err != nil && !errors.Is(err, ErrPlaceholder) {
			t.Fatalf("CheckPlaceholders error %v", err)
		}
	})
}

// FuzzValidate decodes a JSON value and validates it against a fuzzed type in
// every mode: nothing panics, Disabled accepts everything, Strict only adds
// "unexpected field" problems to Enabled's, and every problem has a message.
func FuzzValidate(f *testing.F) {
	f.Add("{a :int, b [:float?]}", `{"a": 1, "b": [1.5, null, "x"], "c": {}}`)
	f.Add("[{id :int, _x :any}]?", `[{"id": "1"}, 2, null]`)
	f.Add(":map", `{"k": [1, 2, {"z": true}]}`)
	f.Add("{u {n :string}?}", `{"u": {"n": 3, "m": 4}}`)
	f.Add(`{s "low" | "high", n :int(min 0, max 100)}`, `{"s": "mid", "n": 150}`)
	f.Add(`[:int | {id :int} | "x"]?`, `[1, {"id": "2"}, "x", "y", true]`)
	f.Add(`{t :string(min 1, max 3, pattern "^a"), l [:float](max 2)}`, `{"t": "abcd", "l": [1, 2.5, 3]}`)
	f.Fuzz(func(t *testing.T, typSrc, value string) {
		typ, err := ParseType(typSrc)
		if err != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(value))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		if err := Validate(typ, v, Disabled); err != nil {
			t.Fatalf("Disabled returned %v", err)
		}
		var lenient, strict ValidationErrors
		errors.As(Validate(typ, v, Enabled), &lenient)
		errors.As(Validate(typ, v, Strict), &strict)
		extra := 0
		for _, e := range strict {
			if e.Msg == "" {
				t.Fatalf("empty message at %q", e.Path)
			}
			if e.Msg == "unexpected field" {
				extra++
			}
		}
		// A union's alternative may take a value only leniently, so under a
		// union strict mode can fail with other problems than unexpected
		// fields; it never accepts what enabled rejects.
		if hasUnion(typ) {
			if len(lenient) > 0 && len(strict) == 0 {
				t.Fatalf("strict accepted what enabled rejects: %v", lenient)
			}
		} else if len(strict)-extra != len(lenient) {
			t.Fatalf("strict %v vs enabled %v", strict, lenient)
		}
		cv, _ := Coerce(typ, v)
		if len(lenient) == 0 && Validate(typ, cv, Enabled) != nil {
			t.Fatalf("coercion broke a valid value: %v -> %v", v, cv)
		}
		if m, ok := v.(map[string]any); ok {
			sig := &Signature{Inputs: []Param{{Name: "x", Type: typ}}}
			_, _, _ = sig.CoerceInputs(m, Strict)
		}
	})
}

// hasUnion reports whether t has a Union anywhere.
func hasUnion(t Type) bool {
	switch t := t.(type) {
	case Union:
		return true
	case Optional:
		return hasUnion(t.Elem)
	case List:
		return hasUnion(t.Elem)
	case Refined:
		return hasUnion(t.Base)
	case Map:
		for _, f := range t.Fields {
			if hasUnion(f.Type) {
				return true
			}
		}
	}
	return false
}
