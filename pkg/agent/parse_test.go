package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"clojure block", "Reasoning.\n```clojure\n(+ 1 2)\n```\nDone.", "(+ 1 2)", true},
		{"lisp block", "```lisp\n(return 1)\n```", "(return 1)", true},
		{"clj block", "```clj\n(return 1)\n```", "(return 1)", true},
		{"several blocks in order", "```clojure\n(def a 1)\n```\ntext\n```lisp\n(return a)\n```", "(def a 1)\n(return a)", true},
		{"other languages ignored", "```python\nprint(1)\n```\n```clojure\n(return 2)\n```", "(return 2)", true},
		{"bare fence with code", "```\n(return 3)\n```", "(return 3)", true},
		{"bare fence with prose", "```\nhello\n```", "", false},
		{"plain code", "  (return {:a 1})  ", "(return {:a 1})", true},
		{"prose", "I think the answer is 4.", "", false},
		{"prose then code", "The answer:\n(return 4)", "", false},
		{"empty block", "```clojure\n\n```", "", false},
		{"unterminated block", "```clojure\n(return 5)", "(return 5)", true},
		{"smart quotes", "```clojure\n(str \u201chi\u201d \u2018x)\n```", "(str \"hi\" 'x)", true},
		{"zero width and nbsp", "\ufeff\u200b(+\u00a01\u202f2)\u200d", "(+ 1 2)", true},
		{"empty", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseResponse(tc.in)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseResponse(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{"```clojure\n(+ 1 2)\n```", "(return 1)", "```\n```", "```lisp\n", "text ``` more", "\u201c(x)\u201d", "```clojure\n(a)\n```\n```lisp\n(b)\n```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		code, ok := ParseResponse(in)
		if !ok {
			if code != "" {
				t.Fatalf("no code but %q", code)
			}
			return
		}
		if strings.TrimSpace(code) != code || code == "" {
			t.Fatalf("code not trimmed or empty: %q", code)
		}
		if utf8.ValidString(in) && !utf8.ValidString(code) {
			t.Fatalf("valid input gave invalid UTF-8 code %q", code)
		}
		for _, r := range []string{"\u201c", "\u201d", "\u200b", "\ufeff", "\u00a0"} {
			if strings.Contains(code, r) {
				t.Fatalf("code keeps %q: %q", r, code)
			}
		}
	})
}

// cleanCode replaces exactly what the replacer does, and returns ASCII
// code as it is, without copying it.
func TestCleanCode(t *testing.T) {
	for _, s := range []string{"", "(return {:a 1})", "(str \u201chi\u201d)", "caf\u00e9 \u00a0x", "\u3000", "(+ 1 2)\n\ufeff"} {
		if got, want := cleanCode(s), codeReplacer.Replace(s); got != want {
			t.Errorf("cleanCode(%q) = %q, want %q", s, got, want)
		}
	}
	code := strings.Repeat("(tool/get_order {:id 42})\n", 20)
	if n := testing.AllocsPerRun(100, func() { _ = cleanCode(code) }); n != 0 {
		t.Fatalf("%.0f allocations cleaning ASCII code, want 0", n)
	}
}
