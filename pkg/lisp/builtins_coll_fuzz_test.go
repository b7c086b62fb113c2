package lisp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// collFuzzFns are the builtins FuzzCollBuiltins combines.
var collFuzzFns = []string{
	"first", "second", "last", "nth", "rest", "next", "butlast", "ffirst", "nnext", "take", "drop", "take-last",
	"drop-last", "take-while", "drop-while", "take-nth", "empty?", "not-empty", "seq", "nthrest", "nthnext",
	"find", "mapcat", "map-indexed", "pluck", "sort", "sort-by", "reverse", "rseq", "distinct", "distinct-by",
	"group-by", "frequencies", "partition", "partition-all", "flatten", "interleave", "interpose", "zip",
	"combinations", "conj", "cons", "concat", "into", "vec", "vector", "walk", "prewalk", "postwalk", "tree-seq",
	"reductions", "distinct?", "sum", "avg", "sum-by", "avg-by", "min-by", "max-by", "max-key", "min-key", "some",
	"every?", "not-any?", "contains?", "get-in", "assoc", "assoc-in", "update", "update-in", "dissoc", "merge",
	"select-keys", "keys", "vals", "entries", "key", "val", "update-vals", "fnil", "set", "set?", "union",
	"intersection", "difference", "subset?", "superset?", "set/select", "set/project", "set/rename-keys",
	"set/map-invert", "set/index", "set/join",
}

// collFuzzArgs are the argument forms FuzzCollBuiltins draws from.
var collFuzzArgs = []string{
	"nil", "0", "1", "-1", "2", "3.5", "##NaN", "\"ab\"", "\"\"", ":a", ":desc", "true",
	"[]", "[1 2 3]", "[3 1 2 1]", "[[1 2] [3 4]]", "[:a \"a\" 1 1.0]", "[nil nil]", "[[1 [2 [3]]] 4]",
	"{}", "{:a 1 :b 2}", "{\"a\" 1 :a 2}", "{:a {:b 1}}", "[{:a 1 :b 2} {:a 3} {:b nil}]",
	"#{}", "#{1 2 3}", "#{:a \"a\"}", "(range)", "(range 5)", "(repeat 2)",
	"inc", "identity", "odd?", ">", "compare", ":a", "[:a :b]", "vector", "(fn [& xs] (first xs))",
	"ctx/rows", "(first ctx/rows)", "\"a\"",
}

// FuzzCollBuiltins: random calls of the access/seq/agg/maps/sets builtins
// on random small data (plain and host string-keyed) end in a value or a
// *lisp.Error of a user-facing kind, never an internal error (a recovered
// Go panic), and within their limits.
func FuzzCollBuiltins(f *testing.F) {
	for _, seed := range []string{"\x00\x01\x02", "\x19\x20\x0d\x05", "\x27\x1e\x0e", "\x40\x17\x03\x10", "\x05\x2a\x02",
		"\x10\x22\x1d\x1d", "\x51\x0c\x0d", "\x30\x21\x15\x16\x19", "\x3a\x24\x1c\x00\x01"} {
		f.Add([]byte(seed))
	}
	rows := []any{
		map[string]any{"a": int64(1), "b": "x", "n": map[string]any{"c": 2.5}},
		map[string]any{"a": int64(2), "b": nil},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 64 {
			return
		}
		src := collFuzzProgram(data)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := Exec(ctx, src, Options{Context: map[string]any{"rows": rows}, Timeout: 200 * time.Millisecond, MaxMemory: 1 << 20})
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Fatalf("%s took %v", src, d)
		}
		if err == nil {
			return
		}
		var e *core.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: error %T %v is not a *lisp.Error", src, err, err)
		}
		if e.Kind == core.KindInternal {
			t.Fatalf("%s: internal error: %s", src, e.Detail())
		}
	})
}

// collFuzzProgram turns bytes into a program of nested builtin calls.
func collFuzzProgram(data []byte) string {
	var b strings.Builder
	i := 0
	next := func() int {
		if i >= len(data) {
			return 0
		}
		i++
		return int(data[i-1])
	}
	var expr func(depth int)
	expr = func(depth int) {
		c := next()
		if depth > 2 || c%3 != 0 {
			b.WriteString(collFuzzArgs[next()%len(collFuzzArgs)])
			return
		}
		b.WriteString("(" + collFuzzFns[next()%len(collFuzzFns)])
		n := 1 + next()%4
		for j := 0; j < n; j++ {
			b.WriteByte(' ')
			expr(depth + 1)
		}
		b.WriteByte(')')
	}
	b.WriteString("(" + collFuzzFns[next()%len(collFuzzFns)])
	for i < len(data) {
		b.WriteByte(' ')
		expr(0)
	}
	b.WriteByte(')')
	return b.String()
}

// TestCollFuzzSeeds runs the fuzz check over a deterministic sweep: every
// builtin with every argument in first position, each with two of a few
// fixed tails.
// The small allocation budget makes realising an infinite seq fail fast.
func TestCollFuzzSeeds(t *testing.T) {
	rows := []any{map[string]any{"a": int64(1)}, map[string]any{"a": "x"}}
	n := 0
	tails := []string{"", " [1 2 3]", " {:a 1}", " nil", " (range)", " [{:a 1} {:a 2}]", " 1 [1 2]", " :a ctx/rows"}
	for fi, fn := range collFuzzFns {
		for ai, a := range collFuzzArgs {
			// two tails per (fn, arg) pair, rotating so every tail meets every fn
			for _, tail := range []string{tails[(fi+ai)%len(tails)], tails[(fi*7+ai*3+1)%len(tails)]} {
				src := "(" + fn + " " + a + tail + ")"
				n++
				_, err := Exec(context.Background(), src, Options{Context: map[string]any{"rows": rows}, Timeout: time.Second, MaxMemory: 32 << 10})
				var e *core.Error
				if err != nil && (!errors.As(err, &e) || e.Kind == core.KindInternal) {
					t.Fatalf("%s: %v", src, err)
				}
			}
		}
	}
	t.Logf("%d programs", n)
}
