package lisp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// recordStepOutcome runs src over ctx with or without record steps
// (plainLoops) under the memory limit mem: the value, the prints and the
// steps, or the error's kind, message and position.
func recordStepOutcome(src string, ctx map[string]any, plain bool, mem int64) string {
	res, err := Exec(context.Background(), src, Options{Context: ctx, MaxSteps: 1_000_000, MaxMemory: mem, plainLoops: plain})
	if err != nil {
		e := err.(*core.Error)
		return fmt.Sprintf("error %v %s at %d:%d, %d steps", e.Kind, e.Msg, e.Pos.Line, e.Pos.Col, res.Steps)
	}
	return fmt.Sprintf("%s %s, %d steps", core.PrStr(res.Value), strings.Join(res.Prints, "|"), res.Steps)
}

// TestRecordAssocsMatchPlain runs reduces that index host records with
// (assoc m (:k r) (:v r)) (the assoc done without the reducing function's
// call, FnProto.RecordStep) and as written: values, errors with their
// positions, prints and steps must agree, with no memory limit and under
// limits the builds reach (what the step charges and what reduce credits
// for it are the call's). Records are of 3 fields and of 30, some nil or
// without the fields; keys are strings, integers (up to thousands of
// them: the map moves to a Go hash store), floats, nil and maps; values
// integers, floats, strings, booleans, nil, maps and vectors; the
// accumulator starts empty, small, wide, keyword-keyed, sorted or a
// vector.
func TestRecordAssocsMatchPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 11))
	key := func(n int) any {
		switch rng.IntN(16) {
		case 0:
			return nil
		case 1:
			return 1.5
		case 2:
			return map[string]any{"a": int64(1)}
		case 3, 4, 5, 6:
			return fmt.Sprintf("k%d", rng.IntN(n))
		}
		return int64(rng.IntN(n))
	}
	val := func() any {
		switch rng.IntN(10) {
		case 0:
			return nil
		case 1:
			return 2.5
		case 2:
			return "s"
		case 3:
			return true
		case 4:
			return map[string]any{"z": int64(1)}
		case 5:
			return []any{int64(1), "two"}
		}
		return int64(rng.IntN(1000))
	}
	forms := []string{
		`(reduce (fn [m r] (assoc m (:k r) (:v r))) %s ctx/rs)`,
		`(count (reduce (fn [m r] (assoc m (:k r) (:v r))) %s ctx/rs))`,
		`(reduce (fn [acc x] (assoc acc (:v x) (:k x))) %s ctx/rs)`,
		`(let [m (reduce (fn [m r] (assoc m (:k r) (:v r))) %s ctx/rs)] [(count m) (get m 7) (get m "k3")])`,
	}
	inits := []string{"{}", `{"k1" 0}`, `{:k1 1 "k2" 2}`, "ctx/wide", "(sorted-map)", "[]"}
	for i := 0; i < 300; i++ {
		n := rng.IntN(40)
		keys := 1 + rng.IntN(20)
		if rng.IntN(8) == 0 {
			n, keys = 1500+rng.IntN(1500), 5000 // past the store's first checkpoints
		}
		rs := make([]any, n)
		for j := range rs {
			if rng.IntN(30) == 0 {
				continue // a nil record
			}
			r := map[string]any{"id": int64(j)}
			if rng.IntN(15) > 0 {
				r["k"] = key(keys)
			}
			if rng.IntN(15) > 0 {
				r["v"] = val()
			}
			if rng.IntN(4) == 0 {
				for f := 0; f < 27; f++ {
					r[fmt.Sprintf("f%02d", f)] = int64(f)
				}
			}
			rs[j] = r
		}
		if rng.IntN(2) == 0 { // mostly stepped: integer keys, scalar values
			for _, r := range rs {
				if r, ok := r.(map[string]any); ok {
					r["k"], r["v"] = int64(rng.IntN(keys)), float64(rng.IntN(100))/4
				}
			}
		}
		wide := map[string]any{}
		for k := range 20 {
			wide[fmt.Sprintf("k%d", k)] = int64(k)
		}
		src := fmt.Sprintf(forms[rng.IntN(len(forms))], inits[rng.IntN(len(inits))])
		ctx := map[string]any{"rs": rs, "wide": wide}
		for _, mem := range []int64{-1, 4 << 10, 64 << 10, 256 << 10} {
			if got, want := recordStepOutcome(src, ctx, false, mem), recordStepOutcome(src, ctx, true, mem); got != want {
				t.Errorf("%s over %d records (memory limit %d)\n  stepped:    %.300s\n  as written: %.300s", src, len(rs), mem, got, want)
			}
		}
		if n := compiled(t, src).RecordSteps; n != 1 {
			t.Fatalf("%s: %d reducing functions stepped over records, want 1", src, n)
		}
	}
	for src, want := range map[string]int{
		`(reduce (fn [m r] (assoc m (:k r) (:v r))) {} ctx/rs)`:                      1,
		`(reduce (fn [m r] (assoc m (:k r) r)) {} ctx/rs)`:                           0, // the record itself
		`(reduce (fn [m r] (assoc m (:k r) (:v r) :n 1)) {} ctx/rs)`:                 0, // two entries
		`(reduce (fn [m r] (assoc m (str (:k r)) (:v r))) {} ctx/rs)`:                0,
		`(reduce (fn [m r] (assoc m (:k r) (count m))) {} ctx/rs)`:                   0, // not linear
		`(reduce (fn [m [k v]] (assoc m (:k k) (:v v))) {} ctx/rs)`:                  0, // destructured
		`(let [assoc dissoc] (reduce (fn [m r] (assoc m (:k r) (:v r))) {} ctx/rs))`: 0,
		`(reduce #(assoc %1 (:k %2) (:v %2)) {} ctx/rs)`:                             0,
		`(reduce (fn [m r] (println r) (assoc m (:k r) (:v r))) {} ctx/rs)`:          0,
	} {
		if n := compiled(t, src).RecordSteps; n != want {
			t.Errorf("%s: %d reducing functions stepped over records, want %d", src, n, want)
		}
	}
}
