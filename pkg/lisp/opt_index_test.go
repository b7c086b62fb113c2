package lisp

import (
	"context"
	"fmt"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"math/rand/v2"
	"strings"
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

// indexLoopProgram builds a random index loop from rng:
// (loop [i 0 acc a] (if (< i (count c)) (recur (inc i) upd) exit)) and
// variants, over collections of every kind bound as a local, a global
// (def'd host data or not) or read from ctx, with bodies that keep to the
// pattern and bodies that do not (i used otherwise, the collection
// rebound or redefined while the loop runs).
func indexLoopProgram(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	coll := pick("[1 2 3 4 5]", "[]", "nil", "[1.5 2 -3]", `[1 "a" 2]`, "[nil 1]", "(range 6)", "ctx/xs", "ctx/recs",
		"[{:qty 1} {:qty 2.5} {:y 3}]", "[9223372036854775806 1 1]", `"abc"`, "{:a 1 :b 2}", "#{1 2}", "5", "(map inc [1 2])")
	item := pick("(nth COLL i)", "(:qty (nth COLL i))", "(count (nth COLL i))", "(nth COLL i 0)", "i", "(get COLL i)")
	upd := sub(pick("(+ acc %s)", "(+ %s acc)", "(- acc %s)", "(* acc %s)", "(conj acc %s)", "(inc acc)", "(str acc %s)", "(max acc %s)"), item)
	acc := pick("0", "1", "0.5", "[]", `""`, "9223372036854775806", "nil")
	adv := pick("(inc i)", "(inc i)", "(inc i)", "(+ i 1)", "(+ i 2)")
	rec := fmt.Sprintf("(recur %s %s)", adv, upd)
	switch rng.IntN(8) {
	case 0:
		rec = fmt.Sprintf("(let [x (nth COLL i)] (if (= x 3) acc %s))", rec) // an early exit
	case 1:
		rec = fmt.Sprintf("(do (println (nth COLL i)) %s)", rec)
	case 2:
		rec = fmt.Sprintf("(do (def c [7 8]) %s)", rec) // redefines a global c
	case 3:
		rec = fmt.Sprintf("(let [c [9]] %s)", rec) // shadows c
	case 4:
		rec = fmt.Sprintf("(do (f) %s)", rec) // a function that redefines c
	}
	exit := pick("acc", "[acc]", "(str acc)", "[acc i]")
	test, first := pick("(< i (count COLL))", "(>= i (count COLL))"), true
	if strings.HasPrefix(test, "(>=") {
		first = false
	}
	head := pick("if", "if-not")
	var body string
	if first == (head == "if") {
		body = fmt.Sprintf("(%s %s %s %s)", head, test, rec, exit)
	} else {
		body = fmt.Sprintf("(%s %s %s %s)", head, test, exit, rec)
	}
	loop := fmt.Sprintf("(loop [i 0 acc %s] %s)", acc, body)
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprintf("(defn f [] (def c [1])) (let [c %s] %s)", coll, strings.ReplaceAll(loop, "COLL", "c"))
	case 1:
		return fmt.Sprintf("(defn f [] (def c [1])) (def c %s) %s", coll, strings.ReplaceAll(loop, "COLL", "c"))
	}
	return fmt.Sprintf("(defn f [] (def c [1])) %s", strings.ReplaceAll(loop, "COLL", coll))
}

// TestIndexLoopsMatchPlain runs random index loops compiled with index
// walks (opt_indexloop.go) and compiled as written: values, prints and
// errors (kind, message, position) must agree.
func TestIndexLoopsMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	indexed, ok := 0, 0
	for range 3000 {
		src := indexLoopProgram(rng)
		got, want := indexLoopOutcome(src, false), indexLoopOutcome(src, true)
		if got != want {
			t.Errorf("%s\n  optimised: %s\n  as written: %s", src, got, want)
		}
		if !strings.HasPrefix(got, "error") {
			ok++
		}
		indexed += compiled(t, src).IndexLoops
	}
	if ok < 1000 || indexed < 300 {
		t.Fatalf("%d loops ran without error, %d compiled as index walks", ok, indexed)
	}
}

// FuzzIndexLoops is TestIndexLoopsMatchPlain with the fuzzer choosing
// the loops.
func FuzzIndexLoops(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(9))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		src := indexLoopProgram(rand.New(rand.NewPCG(a, b)))
		if got, want := indexLoopOutcome(src, false), indexLoopOutcome(src, true); got != want {
			t.Errorf("%s\n  optimised: %s\n  as written: %s", src, got, want)
		}
	})
}

// indexLoopOutcome runs src with or without index walks, with ctx/xs and
// ctx/recs host vectors.
func indexLoopOutcome(src string, plain bool) string {
	res, err := Exec(context.Background(), src, Options{
		Context: map[string]any{
			"xs":   []any{1, 2, 3.5, "q", nil},
			"recs": []map[string]any{{"qty": int64(1)}, {"qty": int64(2)}, {"qty": 2.5}, {"qty": int64(3)}},
		},
		MaxSteps:   20_000,
		plainLoops: plain,
	})
	if err != nil {
		e := err.(*core.Error)
		if !compile.Deterministic(e.Kind) {
			return budgetClass(e.Kind)
		}
		return fmt.Sprintf("error %v %s at %d:%d", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col)
	}
	return core.PrStr(res.Value) + " " + strings.Join(res.Prints, "|")
}

// TestIndexLoopShapes checks which loops compile as index walks.
func TestIndexLoopShapes(t *testing.T) {
	for src, want := range map[string]int{
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (+ acc (:qty (nth d i)))) acc))`:         1,
		`(loop [i 0 acc 0] (if (< i (count ctx/recs)) (recur (inc i) (+ acc (:qty (nth ctx/recs i)))) acc))`:            1,
		`(let [d ctx/recs] (loop [i 0 acc []] (if (>= i (count d)) acc (recur (inc i) (conj acc (nth d i))))))`:         1,
		`(let [d ctx/recs] (loop [i 0 n (count d)] (if-not (< i (count d)) n (let [r (nth d i)] (recur (inc i) n)))))`:  1,
		`(let [d ctx/recs g identity] (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (g (nth d i))) acc)))`:       1, // a local d: g cannot change it
		`(def d ctx/recs) (defn g [x] x) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (g (nth d i))) acc))`:     0, // g could redefine d
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (do (def d []) acc)) acc))`:              0,
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (memory/put :d [])) acc))`:               0,
		`(def d ctx/recs) (loop [i 0 acc (count d)] (if (< i (count d)) (recur (inc i) (+ acc (:qty (nth d i)))) acc))`: 0, // an init that is not a literal
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (+ acc i)) acc))`:                        0, // i read
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) acc) i))`:                                0, // exit reads i
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (+ i 2) (nth d i)) acc))`:                        0,
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (nth d i 0)) acc))`:                      0,
		`(def d ctx/recs) (loop [i 0 acc 0] (if (< i (count d)) (let [d [1]] (recur (inc i) (nth d i))) acc))`:          0, // d rebound
		`(def d ctx/recs) (loop [i 1 acc 0] (if (< i (count d)) (recur (inc i) (nth d i)) acc))`:                        0,
		`(let [nth get] (loop [i 0 acc 0] (if (< i (count ctx/recs)) (recur (inc i) (nth ctx/recs i)) acc)))`:           0,
		`(let [d ctx/recs] (loop [i 0 acc 0] (if (< i (count d)) (let [first last] (recur (inc i) (nth d i))) acc)))`:   1, // the walk's first is the builtin
	} {
		if got := compiled(t, src).IndexLoops; got != want {
			t.Errorf("%s: %d index walks, want %d", src, got, want)
		}
	}
}

// TestIndexLoopAllocations checks that an index loop over kept host
// records, compiled as a walk, boxes no counter, count or sum per record.
func TestIndexLoopAllocations(t *testing.T) {
	recs := make([]map[string]any, 5000)
	for i := range recs {
		recs[i] = map[string]any{"qty": int64(i)}
	}
	src := `(def data ctx/recs) (loop [i 0 acc 0] (if (< i (count data)) (recur (inc i) (+ acc (:qty (nth data i)))) acc))`
	p, err := Compile(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Context: map[string]any{"recs": recs}, MaxSteps: -1}
	var res *Result
	allocs := testing.AllocsPerRun(3, func() {
		if res, err = p.Run(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	})
	if res.Value != int64(5000*4999/2) {
		t.Fatalf("sum %v", res.Value)
	}
	if allocs > 100 {
		t.Fatalf("%.0f allocations for %d records", allocs, len(recs))
	}
}
