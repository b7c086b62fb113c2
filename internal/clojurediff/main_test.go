package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// TestExpressionsReadAndRun: every generated expression reads as
// PTC-Lisp (a parse error would be the generator's fault, not a
// difference), the same seed gives the same expressions, and most of them
// evaluate to a value.
func TestExpressionsReadAndRun(t *testing.T) {
	exprs := expressions(3, 600)
	if len(exprs) != 600 {
		t.Fatalf("%d expressions, want 600", len(exprs))
	}
	if again := expressions(3, 600); !slices.Equal(exprs, again) {
		t.Fatal("the same seed gave other expressions")
	}
	values := 0
	for _, e := range exprs {
		var le *lisp.Error
		if _, err := lisp.Compile(e, lisp.Options{}); errors.As(err, &le) && le.Kind == lisp.KindParse {
			t.Errorf("%s does not read: %v", e, err)
		}
		if !strings.HasPrefix(evalPTC(context.Background(), e), "ERR ") {
			values++
		}
	}
	if values < len(exprs)*2/3 {
		t.Errorf("only %d of %d expressions gave a value", values, len(exprs))
	}
}

// TestCanonPrintsAlike: the canonical form reads maps and sets in sorted
// order and lists as vectors, as the Clojure side prints them.
func TestCanonPrintsAlike(t *testing.T) {
	for e, want := range map[string]string{
		`{:b 1 :a [2 '(3)]}`: `["#M" [:a [2 [3]]] [:b 1]]`,
		`#{"b" "a"}`:         `["#S" "a" "b"]`,
		`(map inc [1 2])`:    `[2 3]`,
		`nil`:                `nil`,
		`(first nil nil)`:    `ERR first expects 1 arg, got 2`,
	} {
		if got := evalPTC(context.Background(), e); got != want {
			t.Errorf("%s: got %s, want %s", e, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		theirs, ours string
		want         outcome
	}{
		{"[1 2]", "[1 2]", same},
		{"[1 2]", "[2 1]", differ},
		{"ERR ClassCastException", "ERR type error", bothFail},
		{"ERR ClassCastException", "1", onlyClojureFails},
		{"1", "ERR boom", onlyPTCFails},
		{"TIMEOUT", "[]", clojureTimeout},
	} {
		if got := classify(c.theirs, c.ours); got != c.want {
			t.Errorf("classify(%q, %q) = %s, want %s", c.theirs, c.ours, outcomeNames[got], outcomeNames[c.want])
		}
	}
}
