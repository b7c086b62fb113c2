package lisp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// countCtx is the context of the counting tests: records with integer,
// float, nil and string fields, 12 categories (the map outgrows a small
// map's 8 entries), and host maps used as init values (wide: 24 keys,
// kept as a wide map).
func countCtx() map[string]any {
	rs := make([]any, 0, 40)
	for i := range 40 {
		r := map[string]any{"cat": fmt.Sprintf("c%d", i%12), "small": fmt.Sprintf("s%d", i%5), "qty": int64(i * 1000), "price": float64(i) + 0.25}
		switch i {
		case 17:
			r["odd"] = "x"
		case 23:
			r["odd"] = nil
		case 31:
			r["odd"] = 2.5
		default:
			r["odd"] = int64(i)
		}
		rs = append(rs, r)
	}
	wide := map[string]any{}
	for i := range 12 {
		wide[fmt.Sprintf("c%d", i)] = int64(i)
		wide[fmt.Sprintf("x%d", i)] = float64(i) / 4
	}
	wide["c7"] = nil
	return map[string]any{"rs": rs, "init": map[string]any{"s1": int64(5), "s2": nil}, "big": map[string]any{"s1": int64(math.MaxInt64 - 10)}, "wide": wide}
}

// countOutcome runs src with or without counting updates: the value, the
// prints, the steps, or the error's kind, message and position.
func countOutcome(src string, ctx map[string]any, plain bool) string {
	res, err := Exec(context.Background(), src, Options{Context: ctx, MaxSteps: 1_000_000, plainLoops: plain})
	if err != nil {
		e := err.(*core.Error)
		return fmt.Sprintf("error %v %s at %d:%d, %d steps", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col, res.Steps)
	}
	return fmt.Sprintf("%s %s, %d steps", core.PrStr(res.Value), strings.Join(res.Prints, "|"), res.Steps)
}

// TestCountUpdatesMatchPlain runs counting reduces compiled with unboxed
// sums and as written (plainLoops): values, errors with their positions,
// prints and steps must agree, and the sums must be kept unboxed where
// the form allows it (counts: the updates compiled to count).
func TestCountUpdatesMatchPlain(t *testing.T) {
	for _, tc := range []struct {
		src    string
		counts int
	}{
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:cat r) (fnil + 0) (:qty r))) {} ctx/rs)`, 1}, // 12 keys: a trie
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:price r))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:odd r))) {} ctx/rs)`, 1}, // a string: the error of +
		{`(reduce (fn [m r] (update m (:small r) (fnil + 7) (if (= (:qty r) 31000) 2.5 (:qty r)))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (get {23 nil} (:qty r) 1))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil inc 0))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil inc 10))) {"s1" 1.5} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) ctx/init ctx/rs)`, 1}, // a nil count: fnil's 0
		{`(reduce (fn [m r] (update m (:cat r) (fnil + 0) (:qty r))) ctx/wide ctx/rs)`, 1},   // a wide init map: 24 keys
		{`(reduce (fn [m r] (update m (str "x" (mod (:qty r) 7)) (fnil + 0) (:price r))) ctx/wide ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) + (:qty r))) ctx/init ctx/rs)`, 1}, // a nil count: the error of +
		{`(reduce (fn [m r] (update m (:small r) inc)) {"s0" 0 "s1" 0 "s2" 0 "s3" 0 "s4" 0} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) inc)) {"s0" 0 "s1" 0 "s2" "two" "s3" 0 "s4" 0} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) ctx/big ctx/rs)`, 1}, // overflow
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {"s1" 9223372036854700000} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (- (:qty r)))) {"s1" -9223372036854700000} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {:s1 1 "s3" 2} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (keyword (:small r)) (fnil + 0) (:qty r))) {"s1" 1} ctx/rs)`, 1},
		{`(->> ctx/rs (filter #(even? (:qty %))) (reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {}))`, 1},
		{`(let [m0 {"s1" 1 "s2" 2}] [(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) m0 ctx/rs) m0])`, 1},
		{`(let [f (fn [n] (reduce (fn [m r] (update m (:small r) (fnil + 0) n)) {} ctx/rs))] [(f 1) (f 2000)])`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (count (reduce (fn [a s] (update a (:cat s) (fnil inc 0))) {} (take 3 ctx/rs))))) {} ctx/rs)`, 2},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (do (println (:small r)) 1))) {} (take 6 ctx/rs))`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (if (= (:qty r) 9000) (fail "stop") 1))) {} ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) (sorted-map) ctx/rs)`, 1},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) [] ctx/rs)`, 1},
		// not counted: the accumulator is read, the function is not the
		// builtin, or the names are shadowed
		{`(reduce (fn [m r] (update m (:small r) (fnil + (count m)) (:qty r))) {} ctx/rs)`, 0},
		{`(reduce (fn [m r] (update m (:small r) (fnil - 0) (:qty r))) {} ctx/rs)`, 0},
		{`(reduce (fn [m r] (update m (:small r) (fnil + 0.5) (:qty r))) {} ctx/rs)`, 0},
		{`(let [fnil (fn [f d] (fn [x y] (* 2 (f (or x d) y))))] (reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {} ctx/rs))`, 0},
		{`(let [+ -] (reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {} ctx/rs))`, 0},
		{`(let [inc dec] (reduce (fn [m r] (update m (:small r) (fnil inc 0))) {} ctx/rs))`, 0},
		{`(let [update (fn [m k f x] (assoc m k x))] (reduce (fn [m r] (update m (:small r) (fnil + 0) (:qty r))) {} ctx/rs))`, 0},
		{`(reduce (fn [m r] (println (count m)) (update m (:small r) (fnil + 0) 1)) {} (take 4 ctx/rs))`, 0},
		{`(reduce (fn [m +] (update m (:small +) (fnil + 0) 1)) {} ctx/rs)`, 0},
		{`(reduce #(update %1 (:small %2) (fnil + 0) (:qty %2)) {} ctx/rs)`, 0},
	} {
		ctx := countCtx()
		got, want := countOutcome(tc.src, ctx, false), countOutcome(tc.src, ctx, true)
		if got != want {
			t.Errorf("%s\n  counted:    %s\n  as written: %s", tc.src, got, want)
		}
		if !reflect.DeepEqual(ctx, countCtx()) {
			t.Errorf("%s: the context changed", tc.src)
		}
		if n := compiled(t, tc.src).Counts; n != tc.counts {
			t.Errorf("%s: %d counting updates, want %d", tc.src, n, tc.counts)
		}
	}
}

// TestCountedMapsStayPut checks that a counted map that left its reduce
// does not change when the same reduce runs again, and that the init
// map is not written.
func TestCountedMapsStayPut(t *testing.T) {
	src := `(let [m0 {"s0" 1}
	              f (fn [n] (reduce (fn [m r] (update m (:small r) (fnil + 0) n)) m0 ctx/rs))
	              a (f 1000) b (f 2000)]
	          [m0 a b (f 1000)])`
	res, err := Exec(context.Background(), src, Options{Context: countCtx()})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"s0" 1} {"s0" 8001 "s1" 8000 "s2" 8000 "s3" 8000 "s4" 8000} {"s0" 16001 "s1" 16000 "s2" 16000 "s3" 16000 "s4" 16000} {"s0" 8001 "s1" 8000 "s2" 8000 "s3" 8000 "s4" 8000}]`
	if got := core.PrStr(res.Value); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// TestCountingAllocatesOnce checks that a counting reduce over records
// boxes its sums once, not once an item: 10k records into 5 sums beyond
// the small-integer cache.
func TestCountingAllocatesOnce(t *testing.T) {
	rs := recordsOfWidth(10_000, 8)
	opts := Options{Context: map[string]any{"records": rs}}
	p, err := Compile(`(reduce (fn [m r] (update m (:category r) (fnil + 0) (:qty r))) {} ctx/records)`, opts)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := p.Run(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 200 {
		t.Fatalf("%.0f allocations for 10k records", allocs)
	}
}

// TestRecordCountsMatchPlain runs counting reduces whose key and x are
// fields of the item over host records (the update done without the
// reducing function's call, FnProto.RecordStep) and as written: values,
// errors with their positions, prints and steps must agree. The records
// are of 3 fields and of 30, some without the key or x, some nil; keys
// are strings, integers, floats, nil and maps; x integers near overflow,
// floats, nil and strings; the accumulator starts empty, small, wide or
// sorted.
func TestRecordCountsMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 10))
	key := func() any {
		switch rng.IntN(14) {
		case 0:
			return nil
		case 1:
			return int64(rng.IntN(3))
		case 2:
			return 1.0
		case 3:
			return map[string]any{"a": int64(1)}
		}
		return fmt.Sprintf("k%d", rng.IntN(11))
	}
	num := func() any {
		switch rng.IntN(16) {
		case 0:
			return nil
		case 1:
			return 2.5
		case 2:
			return "q"
		case 3:
			return int64(math.MaxInt64 - 3)
		case 4:
			return int64(math.MinInt64 + 3)
		}
		return int64(rng.IntN(1000) - 100)
	}
	forms := []struct{ src, fn string }{
		{`(reduce (fn [m r] (update m (:k r) (fnil + 0) (:x r))) %s ctx/rs)`, "+"},
		{`(reduce (fn [m r] (update m (:k r) + (:x r))) %s ctx/rs)`, "+"},
		{`(reduce (fn [m r] (update m (:k r) (fnil inc 5))) %s ctx/rs)`, "inc"},
		{`(reduce (fn [m r] (update m (:k r) inc)) %s ctx/rs)`, "inc"},
		{`(reduce (fn [acc item] (update acc (:x item) (fnil + 0) (:x item))) %s ctx/rs)`, "+"},
	}
	inits := []string{"{}", `{"k1" 0 "k2" 1.5}`, `{"k1" 0 "k2" nil "k3" 7}`, "ctx/wide", "(sorted-map)", `{:k1 1 "k4" 2}`}
	for i := 0; i < 400; i++ {
		rs := make([]any, rng.IntN(40))
		for j := range rs {
			if rng.IntN(20) == 0 {
				continue // a nil record
			}
			r := map[string]any{"id": int64(j)}
			if rng.IntN(12) > 0 {
				r["k"] = key()
			}
			if rng.IntN(12) > 0 {
				r["x"] = num()
			}
			if rng.IntN(3) == 0 {
				for f := 0; f < 27; f++ {
					r[fmt.Sprintf("f%02d", f)] = int64(f)
				}
			}
			rs[j] = r
		}
		if rng.IntN(2) == 0 { // mostly counted: few keys, small numbers
			for _, r := range rs {
				if r, ok := r.(map[string]any); ok {
					r["k"], r["x"] = fmt.Sprintf("k%d", rng.IntN(4)), int64(rng.IntN(50))
				}
			}
		}
		wide := map[string]any{}
		for k := range 20 {
			wide[fmt.Sprintf("k%d", k)] = int64(k)
		}
		form := forms[rng.IntN(len(forms))]
		src := fmt.Sprintf(form.src, inits[rng.IntN(len(inits))])
		ctx := map[string]any{"rs": rs, "wide": wide}
		if got, want := countOutcome(src, ctx, false), countOutcome(src, ctx, true); got != want {
			t.Errorf("%s over %v\n  counted:    %s\n  as written: %s", src, rs, got, want)
		}
		if n := compiled(t, src).RecordSteps; n != 1 {
			t.Fatalf("%s: %d reducing functions counted over records, want 1", src, n)
		}
	}
	for src, want := range map[string]int{
		`(reduce (fn [m r] (update m (:k r) (fnil + 0) (:x r))) {} ctx/rs)`:             1,
		`(reduce (fn [m r] (update m (:k r) (fnil + 0) 1)) {} ctx/rs)`:                  0, // x not a field
		`(reduce (fn [m r] (update m (str (:k r)) (fnil + 0) (:x r))) {} ctx/rs)`:       0, // key not a field
		`(reduce (fn [m r] (update m (:k m) (fnil + 0) (:x r))) {} ctx/rs)`:             0, // not linear
		`(reduce (fn [m r] (update m (:k r 0) (fnil + 0) (:x r))) {} ctx/rs)`:           0, // a default
		`(reduce (fn [m [k x]] (update m (:k k) (fnil + 0) (:x x))) {} ctx/rs)`:         0, // destructured
		`(let [r {:k "a"}] (reduce (fn [m s] (update m (:k r) inc)) {} ctx/rs))`:        0, // another r
		`(reduce (fn [m r] (update m (:k r) (fnil - 0) (:x r))) {} ctx/rs)`:             0,
		`(reduce #(update %1 (:k %2) (fnil + 0) (:x %2)) {} ctx/rs)`:                    0,
		`(reduce (fn [m r] (update m (:k r) (fnil + 0) (:x r))) {} (filter :x ctx/rs))`: 1,
	} {
		if n := compiled(t, src).RecordSteps; n != want {
			t.Errorf("%s: %d reducing functions counted over records, want %d", src, n, want)
		}
	}
}
