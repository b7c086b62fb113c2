package lisp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// loopProgram builds a random loop from rng: walks over many kinds of
// collections and counting loops, with accumulators updated by
// arithmetic (owned boxes) and bindings that keep the accumulator's value
// in collections and closures (which must not be owned).
func loopProgram(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	acc := pick("0", "1", "0.5", "9223372036854775806", "-9223372036854775807", "1023", "1024", "[]", "nil", "{}", "-2")
	other := pick("[]", "0", "nil", "{}") // {}: o may be a transient map (assoc)
	if rng.IntN(3) == 0 {
		// a counting loop: (loop [i 0 acc a o b] (if (< i n) (recur ...) exit))
		i := "i"
		upd := sub(pick("(+ acc %s)", "(+ %s acc)", "(- acc %s)", "(* acc %s)", "(inc acc)", "(dec acc)",
			"(if (odd? %s) (+ acc 2) acc)", "(max acc %s)", "(conj acc %s)", "(+ acc 0.25)", "(* %s acc)", "acc"), pick(i, "(* i 3)", "1.5", "(- i)"))
		o := pick("(conj o acc)", "o", "(conj o #(+ acc %))", "(if (even? i) [acc] o)", "(+ i acc)", "(inc o)", "(str o acc)")
		test := pick("(< i %d)", "(<= i %d)", "(not= i %d)")
		n := rng.IntN(8)
		exit := pick("acc", "[acc o]", "(str acc)", "(if (fn? (first o)) ((first o) 1) [acc o])", "{:a acc :o o}", "(+ acc 1)")
		branch := fmt.Sprintf("(recur (inc i) %s %s)", upd, o)
		if rng.IntN(2) == 0 {
			return fmt.Sprintf("(loop [i 0 acc %s o %s] (if %s %s %s))", acc, other, fmt.Sprintf(test, n), branch, exit)
		}
		return fmt.Sprintf("(loop [i 0 acc %s o %s] (if-not %s %s %s))", acc, other, fmt.Sprintf(test, n), exit, branch)
	}
	if rng.IntN(4) == 0 {
		// a walk with one accumulator: (loop [xs coll acc a] (if (empty? xs) exit (recur (rest xs) upd)))
		coll := pick("[1 2 3 4 5]", "[]", "nil", "[1.5 2 -3]", "[1 \"a\" 2]", "[nil 1]", "(range 6)", "ctx/xs",
			"[{:x 1} {:x 2.5} {:y 3}]", "[9223372036854775806 1 1]", "[{:x 9223372036854775807} {:x 1}]", "\"abc\"", "#{1 2}")
		item := pick("(first xs)", "(:x (first xs))", "(count (first xs))", "2.5")
		upd := sub(pick("(+ acc %s)", "(+ %s acc)", "(- acc %s)", "(* acc %s)", "(* %s acc)", "(inc acc)", "(dec acc)"), item)
		exit := pick("acc", "(str acc)", "[acc]", "(+ acc 1)")
		adv := pick("(rest xs)", "(next xs)")
		return fmt.Sprintf("(loop [xs %s acc %s] (if (empty? xs) %s (recur %s %s)))", coll, pick("0", "1", "0.5", "9223372036854775806", "-2", "nil"), exit, adv, upd)
	}
	coll := pick("[1 2 3 4 5]", "[]", "nil", "[1.5 2 -3]", "[1 \"a\" 2]", "[nil 1]", "'(1 2 3)", "(range 6)",
		"(map inc [1 2 3])", "\"abc\"", "{:a 1 :b 2}", "#{1 2 3}", "5", "ctx/xs", "[{:x 1} {:x 2.5} {:y 3}]",
		"[9223372036854775806 1 1]", "(range)", "[[1 2] [3]]", "(filter odd? (range 10))", "(list)", "[0 0 0]")
	item := pick("(first xs)", "(:x (first xs))", "(count (first xs))", "1", "2.5", "(first xs)")
	letWrap := rng.IntN(3) == 0
	if letWrap {
		item = pick("x", "(:x x)", "x")
	}
	upd := sub(pick("(+ acc %s)", "(+ %s acc)", "(- acc %s)", "(* acc %s)", "(* %s acc)", "(conj acc %s)",
		"(if (pos? %s) (+ acc 1) acc)", "(max acc %s)", "(str acc %s)", "(+ acc (count o))", "(quot acc %s)",
		"(+ acc 1.5)", "(- acc 2)"), item)
	if rng.IntN(6) == 0 {
		upd = pick("(inc acc)", "(dec acc)", "acc")
	}
	o := pick("(conj o acc)", "o", "(conj o (fn [] acc))", "(conj o %s)", "(assoc o acc 1)", "(+ o acc)", "[acc]")
	o = sub(o, item)
	adv := pick("(rest xs)", "(next xs)")
	rec := fmt.Sprintf("(recur %s %s %s)", adv, upd, o)
	if rng.IntN(4) == 0 {
		rec = fmt.Sprintf("(if (= %s 3) acc %s)", item, rec) // an early exit inside
	}
	if letWrap {
		rec = fmt.Sprintf("(let [x (first xs)] %s)", rec)
	}
	switch rng.IntN(12) {
	case 0:
		rec = fmt.Sprintf("(let [+ *] %s)", rec) // a shadowed builtin
	case 1:
		rec = fmt.Sprintf("(let [acc (inc acc)] %s)", rec) // a shadowed binding
	case 2:
		rec = fmt.Sprintf("(do (println (first xs) acc) %s)", rec)
	}
	exit := pick("acc", "[acc o]", "(str acc)", "{:sum acc}", "(+ acc 1)", "(map #(%) (filter fn? o))", "(count o)")
	var body string
	switch rng.IntN(5) {
	case 0:
		body = fmt.Sprintf("(if (empty? xs) %s %s)", exit, rec)
	case 1:
		body = fmt.Sprintf("(if (seq xs) %s %s)", rec, exit)
	case 2:
		body = fmt.Sprintf("(if-not (empty? xs) %s %s)", rec, exit)
	case 3:
		body = fmt.Sprintf("(if-not (seq xs) %s %s)", exit, rec)
	default:
		body = fmt.Sprintf("(if (nil? (seq xs)) %s %s)", exit, rec) // not a walk
	}
	return fmt.Sprintf("(loop [xs %s acc %s o %s] %s)", coll, acc, other, body)
}

// sub puts x for each %s in pattern.
func sub(pattern, x string) string { return strings.ReplaceAll(pattern, "%s", x) }

// loopOutcome runs src with or without walk loops and owned boxes.
func loopOutcome(src string, plain bool) string {
	res, err := Exec(context.Background(), src, Options{
		Context:    map[string]any{"xs": []any{1, 2, 3.5, "q", nil}},
		MaxSteps:   20_000,
		plainLoops: plain,
	})
	if err != nil {
		e := err.(*core.Error)
		if !compile.Deterministic(e.Kind) {
			return budgetClass(e.Kind) // budgets are spent differently
		}
		return fmt.Sprintf("error %v %s at %d:%d", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col)
	}
	return core.PrStr(res.Value) + " " + strings.Join(res.Prints, "|")
}

// loopOpts compiles src and returns its walk loops and owned bindings.
func loopOpts(t testing.TB, src string) (walks, owned int) {
	t.Helper()
	c := compiled(t, src)
	return c.Walks, c.OwnedN
}

// soleWalks compiles src and returns its walks that run their one update
// without the recur node.
func soleWalks(t testing.TB, src string) int {
	t.Helper()
	return compiled(t, src).SoleWalks
}

// TestLoopsMatchPlain runs random loops compiled with walks and owned
// boxes and compiled as written: values and errors must agree.
func TestLoopsMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	walks, owned, soles, ok := 0, 0, 0, 0
	for i := 0; i < 4000; i++ {
		src := loopProgram(rng)
		got, want := loopOutcome(src, false), loopOutcome(src, true)
		if got != want {
			t.Errorf("%s\n  optimised: %s\n  as written: %s", src, got, want)
		}
		if !strings.HasPrefix(got, "error") {
			ok++
		}
		w, o := loopOpts(t, src)
		walks += w
		owned += o
		soles += soleWalks(t, src)
	}
	if ok < 1500 || walks < 1500 || owned < 1000 || soles < 400 {
		t.Fatalf("%d loops ran without error, %d walks (%d with a sole update), %d owned bindings", ok, walks, soles, owned)
	}
}

// FuzzLoops is TestLoopsMatchPlain with the fuzzer choosing the loops.
func FuzzLoops(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(5), uint64(8))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		src := loopProgram(rand.New(rand.NewPCG(a, b)))
		if got, want := loopOutcome(src, false), loopOutcome(src, true); got != want {
			t.Errorf("%s\n  optimised: %s\n  as written: %s", src, got, want)
		}
	})
}

func TestLoopShapes(t *testing.T) {
	for src, want := range map[string][2]int{
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (:qty (first xs))))))`:             {1, 1},
		`(loop [xs ctx/rs acc 0] (if (seq xs) (recur (next xs) (+ acc (first xs))) acc))`:                       {1, 1},
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (let [x (first xs)] (recur (rest xs) (+ acc x)))))`:        {1, 1},
		`(loop [xs ctx/rs acc []] (if (empty? xs) acc (recur (rest xs) (conj acc (first xs)))))`:                {1, 0}, // conj keeps values
		`(loop [xs ctx/rs acc 0 v []] (if (empty? xs) v (recur (rest xs) (+ acc 1) (conj v acc))))`:             {1, 0}, // v keeps acc
		`(loop [xs ctx/rs acc 0 fs []] (if (empty? xs) fs (recur (rest xs) (inc acc) (conj fs #(+ acc %)))))`:   {1, 0},
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (rest xs) (max acc (first xs)))))`:                  {1, 0}, // max returns an argument
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (rest xs) (if (pos? (first xs)) (+ acc 1) acc))))`:  {1, 0},
		`(loop [xs ctx/rs n 0] (if (empty? xs) n (recur (rest xs) (count xs))))`:                                {0, 0}, // xs used
		`(loop [xs ctx/rs acc 0] (if (empty? xs) xs (recur (rest xs) (inc acc))))`:                              {0, 1}, // exit uses xs
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc ((fn [] (first xs)))))))`:          {0, 1}, // a function over xs
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (drop 2 xs) (inc acc))))`:                           {0, 1},
		`(let [first last] (loop [xs ctx/rs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs))))))`: {0, 1},
		`(loop [xs ctx/rs acc 0] (if (empty? xs) acc (let [+ -] (recur (rest xs) (+ acc 1)))))`:                 {1, 0}, // + rebound
		`(loop [i 0 acc 0] (if (< i 10) (recur (inc i) (+ acc i)) acc))`:                                        {0, 2},
		`(loop [i 0 acc 0] (if (< i 10) (recur (inc i) (+ acc i)) [i acc]))`:                                    {0, 2},
		`(loop [i 0 acc 0] (when (< i 10) (recur (inc i) (+ acc i))))`:                                          {0, 0}, // not an if
	} {
		w, o := loopOpts(t, src)
		if w != want[0] || o != want[1] {
			t.Errorf("%s: %d walks, %d owned; want %d, %d", src, w, o, want[0], want[1])
		}
	}
}

// TestOwnedBoxesDoNotLeak checks values that left a loop with an owned
// box: later iterations and later activations must not change them.
func TestOwnedBoxesDoNotLeak(t *testing.T) {
	for src, want := range map[string]string{
		// each activation returns its own box
		`(let [f (fn [n] (loop [i 0 acc 0] (if (< i n) (recur (inc i) (+ acc 1000)) acc)))] [(f 2) (f 3) (f 2)])`:          "[2000 3000 2000]",
		`(mapv (fn [n] (loop [xs (range n) acc 5000] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))) [3 4 0])`: "[5003 5006 5000]",
		// a float accumulator, then a switch from int to float and back
		`(loop [xs [1 2.5 -2.5] acc 2000] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))`: "2001.0",
		`(loop [xs [2000 0.5 "a"] acc 0] (if (empty? xs) acc (recur (rest xs) (* acc (first xs)))))`:  "",
		// overflow is still an error
		`(loop [i 0 acc 9223372036854775806] (if (< i 3) (recur (inc i) (+ acc 1)) acc))`: "",
	} {
		res, err := Exec(context.Background(), src, Options{})
		if want == "" {
			if err == nil {
				t.Errorf("%s: want an error, got %s", src, core.PrStr(res.Value))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := core.PrStr(res.Value); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// walkRecordsOutcome runs src over ctx/recs with the loop limit loops
// (0: none): the value and the steps, or the error with its kind and
// position.
func walkRecordsOutcome(src string, recs []map[string]any, loops int64) string {
	res, err := Exec(context.Background(), src, Options{Context: map[string]any{"recs": recs}, LoopLimit: loops})
	if err != nil {
		e := err.(*core.Error)
		return fmt.Sprintf("error %v %s at %d:%d", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col)
	}
	return fmt.Sprintf("%s in %d steps", core.PrStr(res.Value), res.Steps)
}

// TestWalkRecordsMatchesWalk checks a walk over host records whose update
// reads a field of each record (the records read in place, not put in the
// item slot) against the same walk over a vector of the same records made
// by the program (the walk as it runs for any vector), and against the
// loop as written: values, errors with their positions, and for the two
// walks the steps spent. Records are of 2 fields or of 30 (a map of more
// than one group); some runs have a loop limit the walk reaches.
func TestWalkRecordsMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 8))
	field := func() any {
		switch rng.IntN(12) {
		case 0:
			return 2.5
		case 1:
			return nil
		case 2:
			return "q"
		case 3:
			return int64(math.MaxInt64 - 1)
		case 4:
			return math.NaN()
		case 5:
			return map[string]any{"a": int64(1)}
		case 6:
			return int64(-3)
		}
		return int64(rng.IntN(100))
	}
	loops := []string{
		`(loop [xs %s acc %s] (if (empty? xs) acc (recur (rest xs) (%s acc (:qty (first xs))))))`,
		`(loop [xs %s acc %s] (if (seq xs) (recur (next xs) (%s (:qty (first xs)) acc)) acc))`,
		`(let [v %s] (loop [i 0 acc %s] (if (< i (count v)) (recur (inc i) (%s acc (:qty (nth v i)))) acc)))`,
	}
	fast := 0
	for i := 0; i < 600; i++ {
		recs := make([]map[string]any, rng.IntN(12))
		for j := range recs {
			switch rng.IntN(10) {
			case 0:
				recs[j] = nil
			case 1:
				recs[j] = map[string]any{"other": int64(1)}
			default:
				recs[j] = map[string]any{"qty": field(), "id": int64(j)}
				if rng.IntN(3) == 0 {
					for f := 0; f < 28; f++ {
						recs[j][fmt.Sprintf("f%02d", f)] = int64(f)
					}
				}
			}
		}
		if rng.IntN(2) == 0 { // mostly numbers: the fast path runs far
			for _, r := range recs {
				if r != nil {
					r["qty"] = int64(rng.IntN(1000))
				}
			}
		}
		loop := loops[rng.IntN(len(loops))]
		acc := []string{"0", "1.5", "-9223372036854775807", "nil", "1000"}[rng.IntN(5)]
		op := []string{"+", "-", "*"}[rng.IntN(3)]
		prelude := "(let [a (into [] ctx/recs) b ctx/recs] %s)"
		host := fmt.Sprintf(prelude, fmt.Sprintf(loop, "b", acc, op))
		made := fmt.Sprintf(prelude, fmt.Sprintf(loop, "a", acc, op))
		if soleWalks(t, host) == 1 {
			fast++
		}
		var limit int64
		if rng.IntN(4) == 0 {
			limit = int64(1 + rng.IntN(12))
		}
		if got, want := walkRecordsOutcome(host, recs, limit), walkRecordsOutcome(made, recs, limit); got != want {
			t.Errorf("%s over %v (loop limit %d):\n  host records: %s\n  made vector: %s", host, recs, limit, got, want)
		}
		plainRes, plainErr := Exec(context.Background(), host, Options{Context: map[string]any{"recs": recs}, plainLoops: true, LoopLimit: limit})
		res, err := Exec(context.Background(), host, Options{Context: map[string]any{"recs": recs}, LoopLimit: limit})
		if (err == nil) != (plainErr == nil) {
			t.Fatalf("%s over %v: error %v, as written %v", host, recs, err, plainErr)
		}
		if err != nil {
			e, pe := err.(*core.Error), plainErr.(*core.Error)
			// a limit's position is where the loop counted the iteration,
			// which an optimised loop does elsewhere (compile.Deterministic)
			if e.Kind != pe.Kind || e.Msg != pe.Msg || (compile.Deterministic(e.Kind) && e.Pos != pe.Pos) {
				t.Errorf("%s over %v: error %v, as written %v", host, recs, e, pe)
			}
		} else if got, want := core.PrStr(res.Value), core.PrStr(plainRes.Value); got != want {
			t.Errorf("%s over %v: %s, as written %s", host, recs, got, want)
		}
	}
	if fast < 500 {
		t.Fatalf("%d of 600 loops walked with a sole update", fast)
	}
}

// TestWalkRecordBatches checks a walk that sums integer fields of host
// records, which counts its steps and iterations in batches up to the
// next budget check (Thread.LoopRoom), against the same walk over a
// vector the program made and against the loop as written: over 3,000
// records, a float, a nil or an overflow at places around the checks
// (every 1,024 steps), under step and loop limits that fall inside a
// batch or on its edge. Values, errors (kind and message) and the steps
// spent must agree.
func TestWalkRecordBatches(t *testing.T) {
	recs := make([]map[string]any, 3000)
	for i := range recs {
		recs[i] = map[string]any{"qty": int64(i % 7), "id": int64(i)}
	}
	loops := []string{
		`(loop [xs %s acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (:qty (first xs))))))`,
		`(loop [i 0 acc 0] (if (< i (count %s)) (recur (inc i) (+ (:qty (nth %[1]s i)) acc)) acc))`,
	}
	outcome := func(src string, opts Options) string {
		res, err := Exec(context.Background(), src, opts)
		if err != nil {
			e := err.(*core.Error)
			return fmt.Sprintf("error %v %s, %d steps", e.Kind, e.Msg, res.Steps)
		}
		return fmt.Sprintf("%s in %d steps", core.PrStr(res.Value), res.Steps)
	}
	for _, at := range []int{-1, 0, 340, 511, 512, 1020, 1023, 2047, 2999} {
		for _, odd := range []any{2.5, nil, int64(math.MaxInt64)} {
			rs := append([]map[string]any(nil), recs...)
			if at >= 0 {
				rs[at] = map[string]any{"qty": odd}
			}
			for _, lim := range []struct{ steps, loops int64 }{{-1, 0}, {1000, 0}, {2047, 0}, {5000, 0}, {-1, 511}, {-1, 1023}, {-1, 1024}, {-1, 2500}} {
				for _, loop := range loops {
					prelude := "(let [a (into [] ctx/recs) b ctx/recs] %s)"
					host := fmt.Sprintf(prelude, fmt.Sprintf(loop, "b"))
					made := fmt.Sprintf(prelude, fmt.Sprintf(loop, "a"))
					opts := Options{Context: map[string]any{"recs": rs}, MaxSteps: lim.steps, LoopLimit: lim.loops}
					got, want := outcome(host, opts), outcome(made, opts)
					if got != want {
						t.Errorf("%s, odd %v at %d, limits %v:\n  host records: %s\n  made vector:  %s", host, odd, at, lim, got, want)
					}
					opts.plainLoops = true
					if plain := outcome(host, opts); strings.Split(plain, " in ")[0] != strings.Split(got, " in ")[0] && !strings.HasPrefix(plain, "error") {
						t.Errorf("%s, odd %v at %d, limits %v: %s, as written %s", host, odd, at, lim, got, plain)
					}
				}
			}
		}
	}
}
