package lisp

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// FuzzCountSplit checks that the fused (count (split s sep)) agrees with
// counting the vector split builds, on any string and separator.
func FuzzCountSplit(f *testing.F) {
	for _, seed := range [][2]string{
		{"a b  c", " "}, {"a,b,,,", ","}, {",,,", ","}, {"", " "}, {"abc", ""},
		{"a--b--", "--"}, {"aaa", "aa"}, {"héllo wörld", "ö"}, {"\xff \xfe", " "},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, s, sep string) {
		opts := Options{Context: map[string]any{"s": s, "sep": sep}}
		fused, err1 := Exec(context.Background(), `(count (split ctx/s ctx/sep))`, opts)
		plain, err2 := Exec(context.Background(), `(let [p (split ctx/s ctx/sep)] (count p))`, opts)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ for %q %q: %v vs %v", s, sep, err1, err2)
		}
		if err1 != nil {
			if err1.(*core.Error).Kind != err2.(*core.Error).Kind {
				t.Fatalf("error kinds differ for %q %q: %v vs %v", s, sep, err1, err2)
			}
			return
		}
		if fused.Value != plain.Value || fused.Steps != plain.Steps {
			t.Fatalf("split %q on %q: fused %v (%d steps), plain %v (%d steps)", s, sep, fused.Value, fused.Steps, plain.Value, plain.Steps)
		}
	})
}
