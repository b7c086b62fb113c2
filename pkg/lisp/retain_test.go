package lisp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestChurnIsNotHeld: programs that allocate far more than the limit but
// hold little at any time run under a small limit. Each allocates
// hundreds of MB in total against a 4 MiB limit (and each fails with the
// credits switched off).
func TestChurnIsNotHeld(t *testing.T) {
	progs := []string{
		// loop iterations
		`(loop [i 0 acc 0] (if (< i 200000) (recur (inc i) (+ acc (count (vec (range 100))))) acc))`,
		// iterations that each churn more than a credit scope's bytes
		`(loop [i 0 n 0] (if (< i 100) (recur (inc i) (+ n (count (vec (range 100000))))) n))`,
		`(loop [i 0 s ""] (if (< i 20000) (recur (inc i) (subs (str s (apply str (repeat 1000 "x"))) 0 10)) (count s)))`,
		// callbacks of HOFs
		`(reduce (fn [acc i] (+ acc (count (vec (range 100))))) 0 (range 50000))`,
		`(count (filter (fn [i] (> (count (str/split (str "a b c " i) " ")) 3)) (range 50000)))`,
		`(reduce + (map (fn [i] (count (into [] (range 500)))) (range 50000)))`,
		// an accumulator that grows slowly while each step churns
		`(count (reduce (fn [acc i] (if (zero? (mod i 1000)) (conj acc (count (vec (range 100)))) (do (vec (range 100)) acc))) [] (range 50000)))`,
		`(loop [i 0 acc []] (if (< i 100000) (recur (inc i) (if (zero? (mod i 1000)) (conj acc (count (vec (range 100)))) (do (vec (range 100)) acc))) (count acc)))`,
		// a reduce's transient map that grows while each call churns
		`(count (reduce (fn [m i] (assoc m i (count (vec (range 100))))) {} (range 20000)))`,
		`(count (reduce (fn [m i] (assoc m (str "key-number-" i) (count (vec (range 100))))) {} (range 20000)))`,
		`(reduce (fn [m i] (update m (mod i 10) (fnil + 0) (count (vec (range 100))))) {} (range 50000))`,
		`(count (reduce (fn [m i] (-> m (assoc i 1) (assoc (- i) (count (vec (range 100)))))) {} (range 10000)))`,
		// top-level forms whose values are dropped
		strings.Repeat(`(count (vec (range 100000))) `, 40) + `:done`,
		// a named function called many times
		`(defn f [i] (count (vec (range 1000)))) (reduce + (map f (range 50000)))`,
	}
	for _, src := range progs {
		// the limit tested is memory's: the time limit only bounds a run
		// that never ends, generously for a race build on a machine loaded
		// many times over
		res, err := Exec(context.Background(), src, Options{MaxMemory: 4 << 20, Timeout: 10 * time.Minute, MaxSteps: -1})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if res.Value == nil {
			t.Errorf("%s: no value", src)
		}
	}
}

// TestHostDataIsNotCounted: data given by the host (ctx, memory, tool
// results) is the host's; reading, binding, keeping it in memory and
// passing it around costs nothing against the limit.
func TestHostDataIsNotCounted(t *testing.T) {
	rs := benchRecords(20000)
	tools := core.Tools{"rows": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
		out := make([]any, len(rs))
		for i, r := range rs {
			out[i] = r
		}
		return out, nil
	})}
	opts := Options{Context: map[string]any{"records": rs}, Tools: tools, MaxMemory: 64 << 10, Timeout: time.Minute}
	for _, src := range []string{
		`(def d ctx/records) (count d)`,
		`(let [d ctx/records e (rest d)] (count e))`,
		`(def t (tool/rows)) (count (drop 10 t))`,
		`(loop [xs ctx/records n 0] (if (empty? xs) n (recur (rest xs) (+ n (:qty (first xs))))))`,
		`(count (filter :active ctx/records))`,             // fused: nothing kept
		`(let [a (filter :active ctx/records)] (count a))`, // 13k kept: over the 64 KiB limit
	} {
		_, err := Exec(context.Background(), src, opts)
		kept := strings.HasPrefix(src, "(let [a")
		if kept != (err != nil) {
			t.Errorf("%s: %v", src, err)
		}
		if kept && !errors.Is(err, core.ErrMemoryLimit) {
			t.Errorf("%s: want memory_limit, got %v", src, err)
		}
	}
}

// bombs are programs that hold ever more memory: each must end with
// memory_limit, not run into its time limit.
var bombs = []struct{ name, src string }{
	{"vec-range", `(vec (range 1e9))`},
	{"count-range", `(count (range))`},
	{"def-range", `(def r (range 1e9)) (count r)`},
	{"into-range", `(into [] (range))`},
	{"into-set", `(into #{} (range))`},
	{"iterate", `(count (iterate inc 0))`},
	{"repeat", `(vec (repeat "x"))`},
	{"str-doubling", `(loop [s "x"] (recur (str s s)))`},
	{"conj-loop", `(loop [v [] i 0] (recur (conj v i) (inc i)))`},
	{"reduce-conj", `(reduce conj [] (range))`},
	{"reduce-nest", `(reduce (fn [v _] [v]) [] (range))`},
	{"concat-repeat", `(count (apply concat (repeat 1e6 (vec (range 1000)))))`},
	{"str-repeat", `(apply str (repeat 1e8 "x"))`},
	{"mapv-vecs", `(mapv (fn [_] (vec (range 10000))) (range 100000))`},
	{"memory-put", `(loop [i 0] (memory/put (keyword (str "k" i)) (vec (range 1000))) (recur (inc i)))`},
	{"nth-range", `(let [s (range)] (count (map (fn [i] (nth s (* i 1000))) (range 1e6))))`},
	{"closures", `(defn f [n] (let [v (vec (range 1000))] (fn [] (+ n (count v))))) (count (map f (range 1e6)))`},
	{"reduce-assoc", `(reduce (fn [m i] (assoc m i (str "value-" i))) {} (range))`},
	{"reduce-assoc-lit", `(reduce #(assoc %1 %2 %2) {} (range))`},
	{"reduce-assoc-vecs", `(reduce (fn [m i] (assoc m i (vec (range 100)))) {} (range))`},
	{"reduce-assoc-keys", `(reduce (fn [m i] (assoc m (apply str (repeat 100 i)) i)) {} (range))`},
	{"reduce-update-vecs", `(reduce (fn [m i] (update m (mod i 10) (fnil conj []) (vec (range 100)))) {} (range))`},
	{"loop-assoc", `(loop [m {} i 0] (recur (assoc m i i) (inc i)))`},
	{"conj-vecs", `(loop [acc [] i 0] (recur (conj acc (vec (range 100))) (inc i)))`},
	{"str-lazy-repeat", `(apply str (repeat "x"))`},
	{"for-product", `(count (for [a (range 1000) b (range 1000) c (range 1000)] 1))`},
	{"reduce-iterate", `(reduce + (iterate inc 0))`},
	{"nest-doubling", `(loop [v [1]] (recur [v v v v]))`},
}

// TestBombsStop runs every bomb with a small limit.
func TestBombsStop(t *testing.T) {
	for _, b := range bombs {
		src := b.src
		start := time.Now()
		_, err := Exec(context.Background(), src, Options{MaxMemory: 8 << 20, Timeout: 20 * time.Second, MaxSteps: -1})
		if !errors.Is(err, core.ErrMemoryLimit) {
			t.Errorf("%s: want memory_limit, got %v", src, err)
			continue
		}
		var e *core.Error
		errors.As(err, &e)
		if e.Hint == "" || !strings.Contains(e.Msg, "memory limit exceeded") {
			t.Errorf("%s: error %q without the limit's name or a hint", src, e.Detail())
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %v", src, d)
		}
	}
}

// bombDefaults are the limits a program gets by default in an agent's
// turn: the default memory limit and the agent's program time limit
// (with the step budget derived from it). The bombs must end on memory,
// not on time; how long each takes is measured by BenchmarkBombs.
var bombDefaults = Options{Timeout: messages.DefaultProgramTimeout}

// checkBombError checks that a bomb ended with memory_limit, naming the
// limit, with a hint and a position in the source.
func checkBombError(src string, err error) error {
	var e *core.Error
	if !errors.Is(err, core.ErrMemoryLimit) || !errors.As(err, &e) {
		return fmt.Errorf("%s: want memory_limit, got %v", src, err)
	}
	if e.Hint == "" || !strings.Contains(e.Msg, "memory limit exceeded") || !strings.Contains(e.Msg, strconv.Itoa(DefaultMaxMemory)) {
		return fmt.Errorf("%s: error %q does not name the %d-byte limit or has no hint", src, e.Detail(), DefaultMaxMemory)
	}
	if e.Pos.Line == 0 {
		return fmt.Errorf("%s: error %q has no position", src, e.Detail())
	}
	return nil
}

// TestBombsUnderDefaults runs every bomb under the default limits: each
// ends with memory_limit, before the time limit.
func TestBombsUnderDefaults(t *testing.T) {
	for _, b := range bombs {
		_, err := Exec(context.Background(), b.src, bombDefaults)
		if err := checkBombError(b.src, err); err != nil {
			t.Error(err)
		}
	}
}

// TestBombsRSS runs every bomb under the default limits in a subprocess
// and checks its peak resident memory.
func TestBombsRSS(t *testing.T) {
	if os.Getenv("PTC_LISP_BOMBS") == "1" {
		var heapPeak atomic.Uint64
		done := make(chan struct{})
		defer close(done)
		go func() { // sample the Go heap (RSS includes the race detector's shadow memory)
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > heapPeak.Load() {
					heapPeak.Store(ms.HeapInuse)
				}
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		for _, b := range bombs {
			src := b.src
			start := time.Now()
			_, err := Exec(context.Background(), src, bombDefaults)
			if err := checkBombError(src, err); err != nil {
				fmt.Printf("FAIL %v\n", err)
				continue
			}
			var e *core.Error
			errors.As(err, &e)
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			fmt.Printf("ran %s: %s in %v, peak RSS so far %d MiB\n", src, e.Reason(), time.Since(start).Round(time.Millisecond), ru.Maxrss>>10)
			debug.FreeOSMemory() // each bomb's peak on its own
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Printf("maxrss %d\n", ru.Maxrss) // KiB on Linux
		fmt.Printf("heappeak %d\n", heapPeak.Load()>>10)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBombsRSS$", "-test.v")
	// no soft heap limit: only the interpreter's limits hold the bombs
	cmd.Env = append(os.Environ(), "PTC_LISP_BOMBS=1", "GOMEMLIMIT=off", "GOGC=100")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("subprocess: %v\n%s", err, out)
	}
	var rss, heap int64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Error(line)
		}
		if strings.HasPrefix(line, "ran ") {
			t.Log(line)
		}
		if v, ok := strings.CutPrefix(line, "maxrss "); ok {
			rss, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "heappeak "); ok {
			heap, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	t.Logf("bombs' process: peak RSS %d MiB, peak Go heap %d MiB (limit %d MiB per run)", rss>>10, heap>>10, DefaultMaxMemory>>20)
	peak, what := rss, "RSS"
	if raceBuild {
		peak, what = heap, "Go heap"
	}
	if peak == 0 || peak<<10 > 1<<30 {
		t.Fatalf("peak %s %d KiB", what, peak)
	}
}

// TestLegitUnderDefaults: the benchmark pipelines over 100k records and
// heavy but legitimate programs run under the default limits (with the
// default time limit raised: the shared, -race test machine is slow).
func TestLegitUnderDefaults(t *testing.T) {
	recs, err := core.FromGo(benchRecords(100000))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Context: map[string]any{"records": recs}, Timeout: time.Minute}
	srcs := []string{`(count (filter even? (range 1000000)))`, `(count (mapcat #(str/split (:text %) " ") ctx/records))`}
	for _, p := range pipelines {
		srcs = append(srcs, p.src)
	}
	for _, src := range srcs {
		if _, err := Exec(context.Background(), src, opts); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// BenchmarkBombs measures how long each bomb takes to reach the default
// memory limit (time and CPU per op) under bombDefaults.
func BenchmarkBombs(b *testing.B) {
	for _, bomb := range bombs {
		b.Run(bomb.name, func(b *testing.B) {
			loopCPU(b, func() {
				_, err := Exec(context.Background(), bomb.src, bombDefaults)
				if err := checkBombError(bomb.src, err); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// TestLinearFnLit: #(...) reducers that use their accumulator linearly get
// the transient accumulator that (fn [m x] ...) gets.
func TestLinearFnLit(t *testing.T) {
	for src, want := range map[string]bool{
		`#(assoc %1 %2 %2)`:                              true,
		`#(assoc % %2 (inc %2))`:                         true,
		`#(if (odd? %2) (assoc %1 %2 1) %1)`:             true,
		`#(assoc %1 %2 (count %1))`:                      false, // acc read besides the assoc
		`#(assoc %1 %2 %)`:                               false,
		`#(merge %1 {%2 1})`:                             false,
		`#(assoc %1 %2 %&)`:                              false, // not two params
		`#(assoc %1 :k 1)`:                               false, // one param
		`#(assoc (assoc %1 %2 1) (- %2) 2)`:              true,
		`#(-> %1 (assoc %2 1) (update :n (fnil inc 0)))`: true,
		`#(-> (dissoc %1 :a) (assoc %2 1))`:              true,
		`#(-> %1 (assoc %2 (count %1)))`:                 false, // acc read in a step
		`#(-> %1 (assoc %2 1) keys)`:                     false, // a step that is not an update
		`#(-> %1 (assoc %2 1) (merge {}))`:               false,
		`#(assoc (merge %1 {}) %2 1)`:                    false,
		`#(-> %1 (assoc %2 1) (my/assoc 2 3))`:           false, // not the builtin
		`#(assoc (assoc %1 %2 1) (- %2) (get %1 %2))`:    false,
		`#(let [assoc merge] (assoc %1 {%2 1}))`:         false, // assoc is a local
		`#(letfn [(when [a b] b)] (when %2 %1))`:         false, // when is a function
		`#(let [if-not vector] (if-not %2 %1 %1))`:       false,
	} {
		forms, err := syntax.Read(src, map[string]*core.Keyword{})
		if err != nil {
			t.Fatal(err)
		}
		c := resolved(forms[0])
		if got := c.LinearAccFn(compile.FnLitAsFn(forms[0])); got != want {
			t.Errorf("%s: linear %v, want %v", src, got, want)
		}
	}
}

// TestLinearNestedUpdates: reducers that update their accumulator more
// than once per call (nested or threaded) compute what Clojure computes.
func TestLinearNestedUpdates(t *testing.T) {
	for src, want := range map[string]string{
		`(reduce (fn [m i] (-> m (assoc i (* i i)) (update :n (fnil inc 0)))) {} (range 12))`:                         `{0 0 1 1 2 4 3 9 4 16 5 25 6 36 7 49 8 64 9 81 10 100 11 121 :n 12}`,
		`(reduce (fn [m i] (assoc (assoc m i 1) (- i) 2)) {} (range 3))`:                                              `{-2 2 -1 2 0 2 1 1 2 1}`,
		`(count (reduce (fn [m i] (-> m (assoc i 1) (dissoc (dec i)))) {} (range 1000)))`:                             `1`,
		`(let [m0 {:a 1} r (reduce (fn [m i] (-> m (assoc i 1) (assoc :a i))) m0 (range 20))] [m0 (count r) (:a r)])`: `[{:a 1} 21 19]`,
	} {
		res, err := Exec(context.Background(), src, Options{})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := core.PrStr(res.Value); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// TestLinearLoopBindings: which loop bindings start as transient maps.
func TestLinearLoopBindings(t *testing.T) {
	for src, want := range map[string]string{
		`(loop [m {} i 0] (recur (assoc m i i) (inc i)))`:                        "[true false]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i i) (inc i)) m))`:         "[true false]",
		`(loop [i 0 m {}] (when (< i 9) (recur (inc i) (update m :a conj i))))`:  "[false true]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i (count m)) (inc i)) m))`: "[]", // read besides the assoc
		`(loop [m {} i 0] (if (< (count m) 9) (recur (assoc m i i) (inc i)) m))`: "[]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i i) (inc i)) [m]))`:       "[]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i i) (count m)) m))`:       "[]", // another recur argument
		`(loop [m {} i 0] (if (< i 9) (recur m (inc i)) (assoc m :a 1)))`:        "[true false]",
		`(loop [m {} f (fn [] m)] (recur (assoc m 1 1) f))`:                      "[false true]", // a later init captures m
		`(loop [m {} i 0] (println m) (recur (assoc m i i) (inc i)))`:            "[]",
		`(loop [m {} i 0] (recur (let [x (assoc m i i)] x) (inc i)))`:            "[]",
		`(loop [[a b] [1 2] m {}] (recur [a b] (assoc m a b)))`:                  "[false true]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i i) (inc i)) (fn [] m)))`: "[]",
		`(loop [m {} i 0] (if (< i 9) (recur (assoc m i (fn [] m)) (inc i)) m))`: "[]",
		`(let [assoc conj] (loop [m {} i 0] (recur (assoc m i) (inc i))))`:       "[]", // assoc is a local
		`(loop [dissoc conj m {} i 0] (recur dissoc (dissoc m i) (inc i)))`:      "[]",
		`(fn [update] (loop [m {} i 0] (recur (update m i) (inc i))))`:           "[]",
		`(let [{:keys [when]} {}] (loop [m {}] (recur (when 1 m))))`:             "[]",
	} {
		forms, err := syntax.Read(src, map[string]*core.Keyword{})
		if err != nil {
			t.Fatal(err)
		}
		loop := forms[0]
		for loop.Items[0].Name != "loop" {
			loop = loop.Items[len(loop.Items)-1]
		}
		if got := fmt.Sprint(resolved(forms[0]).LinearLoopBindings(loop)); got != want {
			t.Errorf("%s: %s, want %s", src, got, want)
		}
	}
}

// resolved returns a compiler for analyses of top-level form f, resolved.
func resolved(f *syntax.Form) *compile.Compiler {
	c := &compile.Compiler{Builtins: builtins.BuiltinTable(), MemNames: map[string]bool{}}
	c.Resolve(f)
	return c
}
