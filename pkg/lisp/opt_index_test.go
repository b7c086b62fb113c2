package lisp

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// indexOutcome runs src with host records in ctx/recs and returns its
// value, or its error's kind, message and position.
func indexOutcome(src string) string {
	recs := []map[string]any{{"qty": int64(1)}, {"qty": int64(2)}, {"qty": 2.5}}
	res, err := Exec(context.Background(), src, Options{Context: map[string]any{"recs": recs, "n": int64(2)}})
	if err != nil {
		e := err.(*core.Error)
		return fmt.Sprintf("error %v %s at %d:%d", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col)
	}
	return core.PrStr(res.Value)
}

var (
	indexXs    = []string{"0", "1", "-1", "3", "1025", "9223372036854775807", "1.5", "2.0", "##NaN", "nil", `"a"`, ":k"}
	indexColls = []string{"[]", "[1 2 3]", "ctx/recs", `"abc"`, "{:a 1}", "#{1 2}", "nil", "5", "(range 4)", "(map inc [1 2])", "true"}
)

// TestCountCompareMatchesCall checks (< x (count coll)) and the other
// comparisons, compiled as one node (countCompare), against count called
// as written ((do count) is not the builtin's name, so it is an ordinary
// call at the same position): the same value, or the same error kind,
// message and position. coll is a local, a global and a ctx symbol.
func TestCountCompareMatchesCall(t *testing.T) {
	n := 0
	for _, op := range []string{"<", "<=", ">", ">="} {
		for _, x := range indexXs {
			for _, coll := range indexColls {
				for _, form := range []string{
					"(let [x %s c %s]\n  (%s x (%s c)))",
					"(def c %[2]s) (%[3]s %[1]s (%[4]s c))",
				} {
					got := indexOutcome(fmt.Sprintf(form, x, coll, op, "count"))
					want := indexOutcome(fmt.Sprintf(form, x, coll, op, "(do count)"))
					if got != want {
						t.Errorf("%s %s %s: fused %s, as written %s", op, x, coll, got, want)
					}
					n++
				}
			}
			got := indexOutcome(fmt.Sprintf("(%s %s (count ctx/recs))", op, x))
			want := indexOutcome(fmt.Sprintf("(%s %s ((do count) ctx/recs))", op, x))
			if got != want {
				t.Errorf("%s %s ctx/recs: fused %s, as written %s", op, x, got, want)
			}
		}
	}
	if n < 800 {
		t.Fatalf("only %d programs compared", n)
	}
}

// TestNthFastMatchesCall checks (nth coll i) through nth's fixed-arity
// node against nth called through its general entry at the same
// position, over vectors, host records and other collections.
func TestNthFastMatchesCall(t *testing.T) {
	for _, i := range indexXs {
		for _, coll := range indexColls {
			for _, form := range []string{"(let [c %s i %s]\n  (%s c i))", "(:qty (%[3]s %[1]s %[2]s))"} {
				got := indexOutcome(fmt.Sprintf(form, coll, i, "nth"))
				want := indexOutcome(fmt.Sprintf(form, coll, i, "(do nth)"))
				if got != want {
					t.Errorf("nth %s %s: fast %s, general %s", coll, i, got, want)
				}
			}
		}
	}
	// an index loop over host records, as the benchmarks write it
	src := `(def data ctx/recs) (loop [i 0 acc 0] (if (< i (count data)) (recur (inc i) (+ acc (:qty (nth data i)))) acc))`
	if got := indexOutcome(src); got != "5.5" {
		t.Fatalf("index loop: %s", got)
	}
}

// TestIndexLoopTestDoesNotBox checks that an index loop's test
// (< i (count xs)) does not box the count on each iteration: the loop
// allocates for its counter's boxes (above the small-integer cache) and
// not again for the count.
func TestIndexLoopTestDoesNotBox(t *testing.T) {
	const n = 6000
	xs := make([]any, n)
	for i := range xs {
		xs[i] = int64(i)
	}
	p, err := Compile(`(loop [i 0] (if (< i (count ctx/xs)) (recur (inc i)) i))`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Context: map[string]any{"xs": xs}, MaxSteps: -1}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := p.Run(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	})
	// the counter's boxes: about n; a boxed count per test would double it
	if allocs > n*1.3 {
		t.Fatalf("%.0f allocations for %d iterations", allocs, n)
	}
}
