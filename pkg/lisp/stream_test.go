package lisp

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestStreamingNotCharged: a finite lazy sequence written as the argument
// of a call that reads it once (count, reduce, some, every?, ... and map,
// filter, remove over one) is not kept, so a program that holds nothing
// runs under a memory limit far smaller than the items it reads.
func TestStreamingNotCharged(t *testing.T) {
	cases := []struct{ src, want string }{
		{`(count (range 300000))`, "300000"},
		{`(reduce + (range 300000))`, "44999850000"},
		{`(reduce + 0 (range 300000))`, "44999850000"},
		{`(some #(when (> % 299998) %) (range 300000))`, "299999"},
		{`(some #(when (> % 299999) %) (range 300000))`, "nil"},
		{`(every? #(< % 300000) (range 300000))`, "true"},
		{`(not-any? neg? (range 300000))`, "true"},
		{`(not-every? #(< % 10) (range 300000))`, "true"},
		{`(count (filter even? (range 300000)))`, "150000"},
		{`(reduce + (map inc (range 300000)))`, "45000150000"},
		{`(reduce + (map #(* 2 %) (filter odd? (range 300000))))`, "45000000000"},
		{`(count (remove even? (map inc (range 300000))))`, "150000"},
		{`(->> (range 300000) (map inc) (filter even?) (reduce +))`, "22500150000"},
		{`(some #(when (= % 5) :found) (map (fn [x] (tool/echo {:x x}) x) (range 300000)))`, ":found"},
		{`(reduce + (range 0.5 300000))`, "4.5E10"},
		{`(count (range 0 900000 3))`, "300000"},
		{`(let [n 300000] (count (map inc (range n))))`, "300000"},
		{`(loop [i 0 acc 0] (if (< i 3) (recur (inc i) (+ acc (count (range 300000)))) acc))`, "900000"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			res, err := Exec(context.Background(), c.src, Options{Tools: testTools(), MaxMemory: 1 << 20, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got := core.PrStr(res.Value); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestStreamingHeldStillCharged: a sequence something else can reach (a
// local, a def, an endless range) is realised and kept as before, so it
// is charged and ends with memory_limit; so do the items a stream's
// functions build and hand on.
func TestStreamingHeldStillCharged(t *testing.T) {
	for _, src := range []string{
		`(let [r (range 300000)] (count r))`,
		`(def r (range 300000)) (count r)`,
		`(count (range))`,
		`(let [r (range 300000)] (+ (count r) (reduce + r)))`,
		`(reduce conj [] (range 300000))`,
		`(count (map (fn [i] (vec (range 100))) (range 300000)))`,
		`(vec (range 300000))`,
	} {
		t.Run(src, func(t *testing.T) {
			_, err := Exec(context.Background(), src, Options{MaxMemory: 1 << 20, Timeout: time.Minute})
			checkMemoryLimit(t, err)
		})
	}
}

func checkMemoryLimit(t *testing.T, err error) {
	t.Helper()
	e, ok := err.(*core.Error)
	if !ok || e.Reason() != "memory_limit" {
		t.Fatalf("want memory_limit, got %v", err)
	}
}

// A stream is read in order and once: a sequence read twice is a local,
// kept and correct.
func TestStreamingValuesAgree(t *testing.T) {
	src := `(let [r (map inc (range 200000))] [(count r) (reduce + r) (count (map inc (range 200000))) (reduce + (map inc (range 200000)))])`
	res, err := Exec(context.Background(), src, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.PrStr(res.Value); got != "[200000 20000100000 200000 20000100000]" {
		t.Fatalf("got %s", got)
	}
}
