package lisp

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// TestShadowedNamesMatchClojure: programs where a local (a let, fn or
// loop binding, a destructured name, a letfn function, a #(...) body's
// let) shadows a builtin or a special form that the optimisation passes
// look for: reduce's transient accumulator (LinearAccFn), a loop's
// transient map binding (LinearLoopBindings), loop cursors, fused
// pipelines' purity (pureFn). Each must
// give Clojure 1.11's answer (in the comment where it prints differently,
// a seq of a vector prints as a list there) compiled with the passes and
// compiled as written.
func TestShadowedNamesMatchClojure(t *testing.T) {
	for _, tc := range []struct{ src, want, prints string }{
		// a reducer whose "update" is the caller's function: it must not
		// get the transient accumulator (it keeps it, the map would hold
		// itself)
		{`(let [dissoc (fn [m k] (assoc m :prev m))] (reduce (fn [acc x] (dissoc acc x)) {} [1 2 3]))`, `{:prev {:prev {:prev {}}}}`, ""},
		{`((fn [dissoc] (reduce (fn [acc x] (dissoc acc x)) {} [1 2 3])) (fn [m k] (assoc m :prev m)))`, `{:prev {:prev {:prev {}}}}`, ""},
		{`(let [{:keys [dissoc]} {:dissoc (fn [m k] (assoc m :prev m))}] (reduce (fn [acc x] (dissoc acc x)) {} [1 2 3]))`, `{:prev {:prev {:prev {}}}}`, ""},
		{`(let [if-not (fn [a b c] (assoc b :prev b))] (reduce (fn [acc x] (if-not x acc acc)) {} [1 2]))`, `{:prev {:prev {}}}`, ""},
		{`(let [cond (fn [a b] (assoc b :prev b))] (reduce (fn [acc x] (cond x acc)) {} [1 2]))`, `{:prev {:prev {}}}`, ""},
		{`(let [let (fn [a b] (assoc b :prev b))] (reduce (fn [acc x] (let [x] acc)) {} [1 2]))`, `{:prev {:prev {}}}`, ""},
		{`(reduce #(let [assoc (fn [m k v] (clojure.core/assoc m :prev m))] (assoc %1 %2 1)) {} [1 2])`, `{:prev {:prev {}}}`, ""},
		// a loop's map binding handed to a local named like an update
		{`(let [update (fn [m k f] (assoc m :prev m))] (loop [m {} i 0] (if (< i 3) (recur (update m i inc) (inc i)) m)))`, `{:prev {:prev {:prev {}}}}`, ""},
		{`(loop [dissoc (fn [m k] (assoc m :prev m)) m {} i 0] (if (< i 3) (recur dissoc (dissoc m i) (inc i)) m))`, `{:prev {:prev {:prev {}}}}`, ""},
		{`(letfn [(update [m k f] (assoc m :prev m))] (loop [m {} i 0] (if (< i 3) (recur (update m i inc) (inc i)) m)))`, `{:prev {:prev {:prev {}}}}`, ""},
		// a loop cursor's (seq xs) handed to a local named when or cond:
		// it keeps the vector the loop would advance in place
		// Clojure: [(1 2 3) (2 3) (3)]
		{`(let [when (fn [s acc] (conj acc s))] (loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (when (seq xs) acc)))))`, `[[1 2 3] [2 3] [3]]`, ""},
		{`(let [when (fn [s acc] (conj acc s))] (loop [xs [1 2 3] acc [] i 0] (if (empty? xs) acc (recur (rest xs) (when (seq xs) acc) (inc i)))))`, `[[1 2 3] [2 3] [3]]`, ""},
		{`(let [cond (fn [s acc] (conj acc s))] (loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (next xs) (cond (seq xs) acc)))))`, `[[1 2 3] [2 3] [3]]`, ""},
		{`(let [[when] [(fn [s acc] (conj acc s))]] (loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (when (seq xs) acc)))))`, `[[1 2 3] [2 3] [3]]`, ""},
		// the let, if and = of an expansion are the special forms and the
		// builtin whatever locals the program has
		{`(let [= (fn [a b] true)] (some-> 1 inc))`, `2`, ""},
		{`(let [let 1] (as-> 1 x (inc x)))`, `2`, ""},
		{`(let [let 1] (cond-> 1 true inc))`, `2`, ""},
		{`(let [= (fn [a b] true) let 1] (some-> {:a 1} :a inc))`, `2`, ""},
		// a map/filter chain fuses only when its functions are pure: a
		// local named like a pure builtin, or a threading step, may print
		// (the lines printed, | between them)
		{`(count (map (fn [x] (let [inc println] (mapv inc [x]) x)) (filter (fn [x] (let [inc println] (mapv inc ["f" x]) true)) [1 2])))`, `2`, `f|1|f|2|1|2`},
		{`(count (map (fn [x] (-> x println) x) (filter (fn [x] (-> x println) true) [1 2])))`, `2`, `1|2|1|2`},
		// a local of the same name inside the form a pass looks at is
		// another binding: the passes follow the resolver's binder
		// numbers, so the inner one is neither the accumulator, the
		// cursor, the walked sequence nor the index
		{`(reduce (fn [acc x] (if (odd? x) (assoc acc x (let [acc 5] acc)) (assoc acc x 0))) {} [1 2 3])`, `{1 5 2 0 3 5}`, ""},
		{`(loop [m {} i 0] (if (< i 3) (recur (assoc m i (let [m 7] m)) (inc i)) m))`, `{0 7 1 7 2 7}`, ""},
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (let [xs [9]] (conj acc (first xs))))))`, `[9 9 9]`, ""},
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (let [xs (rest xs)] (recur xs (conj acc (count xs))))))`, `[2 1 0]`, ""},
		{`(loop [i 0 acc 0] (if (< i 3) (recur (inc i) (+ acc (let [acc 10] acc))) acc))`, `30`, ""},
		{`(loop [xs [1 2 3] acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (let [acc (first xs)] (* acc acc))))))`, `14`, ""},
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (let [xs [0]] (conj acc (first xs))))))`, `[0 0 0]`, ""},
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (conj acc ((fn [xs] (count xs)) [7 8])))))`, `[2 2 2]`, ""},
		{`(let [d [{:qty 1} {:qty 2}]] (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (+ acc (let [i 0] (:qty (nth d i))))) acc)))`, `2`, ""},
		{`(let [d [{:qty 1} {:qty 2}]] (loop [i 0 acc 0] (if (< i (count d)) (let [first last] (recur (inc i) (+ acc (:qty (nth d i))))) acc)))`, `3`, ""},
	} {
		want := tc.want + " " + tc.prints
		for _, plain := range []bool{false, true} {
			if got := loopOutcome(tc.src, plain); got != want {
				t.Errorf("%s (plain loops %v)\n  got  %s\n  want %s", tc.src, plain, got, tc.want)
			}
		}
	}
}

// TestPassesFollowBindings: a local that shadows a loop's binding inside
// the loop is another binding, so it does not keep the loop from being a
// walk, from owning its accumulator or from being an index walk (the
// answers are TestShadowedNamesMatchClojure's).
func TestPassesFollowBindings(t *testing.T) {
	for _, tc := range []struct {
		src                 string
		walks, owned, index int
	}{
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (let [xs [0]] (conj acc (first xs))))))`, 1, 0, 0},
		{`(loop [xs [1 2 3] acc []] (if (empty? xs) acc (recur (rest xs) (conj acc ((fn [xs] (count xs)) [7 8])))))`, 1, 0, 0},
		{`(loop [i 0 acc 0] (if (< i 3) (recur (inc i) (+ acc (let [acc 10] acc))) acc))`, 0, 2, 0},
		{`(loop [xs [1 2 3] acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (let [acc (first xs)] (* acc acc))))))`, 1, 1, 0},
		{`(let [d [{:qty 1} {:qty 2}]] (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (+ acc (let [i 0] (:qty (nth d i))))) acc)))`, 1, 3, 1},
	} {
		c := compiled(t, tc.src)
		if c.Walks != tc.walks || c.OwnedN != tc.owned || c.IndexLoops != tc.index {
			t.Errorf("%s: %d walks, %d owned, %d index walks; want %d, %d, %d", tc.src, c.Walks, c.OwnedN, c.IndexLoops, tc.walks, tc.owned, tc.index)
		}
	}
}

// TestResolve: what the resolver records for every symbol of a program,
// in source order (name:what; binder numbers renumbered from 1 in order of
// appearance).
func TestResolve(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`(let [assoc 1 x assoc] (assoc x {}))`, `let:special assoc:binder#1 x:binder#2 assoc:local#1 assoc:local#1 x:local#2`},
		{`(let [if inc when inc] (if (when 1) 2))`, `let:special if:binder#1 inc:builtin when:binder#2 inc:builtin if:special when:local#2`},
		{`(fn f [a & {:keys [b c/d :e] :or {b a} :as m}] [f a b d e m %])`,
			`fn:special f:binder#1 a:binder#2 &: b:binder#3 c/d:binder#4 b: a:local#2 m:binder#5 f:local#1 a:local#2 b:local#3 d:local#4 e:local#6 m:local#5 %:other`},
		{`(loop [[x & xs] [1 2] n 0] (recur xs (+ n x)))`, `loop:special x:binder#1 &: xs:binder#2 n:binder#3 recur:special xs:local#2 +:builtin n:local#3 x:local#1`},
		{`(if-let [v (first [])] v v)`, `if-let:special v:binder#1 first:builtin v:local#1 v:other`},
		{`(letfn [(f [n] (g n)) (g [n] n)] (f 1))`, `letfn:special f:binder#1 n:binder#2 g:local#3 n:local#2 g:binder#3 n:binder#4 n:local#4 f:local#1`},
		{`(for [x [1] :let [y x] :when (odd? y)] [x y])`, `for:special x:binder#1 y:binder#2 x:local#1 odd?:builtin y:local#2 x:local#1 y:local#2`},
		{`#(assoc % %2 first)`, `assoc:builtin %:local#1 %2:local#2 first:builtin`},
		{`(as-> [] v (conj v 1))`, `as->:special v:binder#1 conj:builtin v:local#1`},
		{`(case x a 1 (b c) 2 first)`, `case:special x:other a: b: c: first:builtin`},
		{`(do (def total 1) (defn f [n] (+ n total)) (f total))`, `do:special def:special total:global defn:special f:global n:binder#1 +:builtin n:local#1 total:global f:global total:global`},
		{`(quote (a b))`, `quote:special a: b:`},
		{`(-> {} (assoc :a 1) keys)`, `->:special assoc:builtin keys:builtin`},
		{`(where :a > 1)`, `where:special >:`},
		{`(ctx/rows clojure.string/join)`, `ctx/rows:other clojure.string/join:other`},
	} {
		forms, err := syntax.Read(tc.src, map[string]*core.Keyword{})
		if err != nil {
			t.Fatal(err)
		}
		c := &compile.Compiler{Builtins: builtins.BuiltinTable(), MemNames: map[string]bool{"total": true, "f": true}}
		var parts []string
		ids := map[string]string{}
		var walk func(f *syntax.Form)
		walk = func(f *syntax.Form) {
			if f.Kind == syntax.FSym {
				what := compile.ResolvedAs(f)
				if i := strings.IndexByte(what, '#'); i > 0 {
					n, ok := ids[what[i:]]
					if !ok {
						n = "#" + strconv.Itoa(len(ids)+1)
						ids[what[i:]] = n
					}
					what = what[:i] + n
				}
				parts = append(parts, f.SymText()+":"+what)
			}
			for _, it := range f.Items {
				walk(it)
			}
		}
		for _, f := range forms {
			c.Resolve(f)
			walk(f)
		}
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("%s\n  got  %s\n  want %s", tc.src, got, tc.want)
		}
	}
}

// TestResolverAgreesWithCompiler compiles every program of the testdata
// chunks, the Clojure oracle and generated loops with checkResolve: for
// each symbol the compiler compiles, the resolver must have recorded what
// the compiler's own scopes say it names (for a local, the same binding
// occurrence).
func TestResolverAgreesWithCompiler(t *testing.T) {
	var srcs []string
	files, _ := filepath.Glob("testdata/*.lisp")
	for _, f := range files {
		for _, ch := range readChunks(t, f) {
			srcs = append(srcs, ch.src)
		}
	}
	data, err := os.ReadFile("testdata/clojure_oracle.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if src, _, ok := strings.Cut(l, "\t"); ok {
			srcs = append(srcs, src)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		srcs = append(srcs, loopProgram(rng))
	}
	srcs = append(srcs, `(let [if inc when inc] (if (when 1) 2))`, `(defn f [x] {:pre [(pos? x)] :post [(pos? %)]} (inc x)) (f 1)`,
		`(as-> [1] v (conj v 2) (count v))`, `(letfn [(f [n] (if (pos? n) (g (dec n)) 0)) (g [n] (f n))] (f 3))`,
		`(for [x [1 2] :let [y (inc x)] :when (odd? y)] #(+ % y x))`, `(let [x 1 x (inc x)] x)`,
		`((fn [a] (let [a (inc a)] ((fn [] a)))) 1)`, `(loop [[x & xs] [1 2] n 0] (if x (recur xs (+ n x)) n))`,
		`(-> {} (as-> m (assoc m :a 1)))`, `(-> 1 (as-> n (let [m (inc n)] (+ m n))))`, `(cond-> {} true (as-> m (assoc m :a 1)))`,
		`(some-> {:a 1} (as-> m (:a m)))`, `(let [as-> conj] (-> [] (as-> 1)))`,
		`(some->> [1 2] (map inc) first)`, `(cond->> [1] true (map inc) false (cons 0))`, `((fn [y] {y 1} 2) 3)`,
		`(defn g [{:keys [:a b] :or {a 1}}] (+ a b)) (g {:b 2})`, `(map #(vector % %1 %& %3) [1] [2] [3] [4])`,
		`(defn h [n] (if (pos? n) (h (dec n)) n)) (h 3)`, `((fn f [n] (if (pos? n) (f (dec n)) n)) 2)`,
		`(let [d [{:qty 1} {:qty 2}]] (loop [i 0 acc 0] (if (< i (count d)) (recur (inc i) (+ acc (:qty (nth d i)))) acc)))`,
		`(let [d [1 2]] (loop [i 0 acc []] (if (>= i (count d)) acc (recur (inc i) (conj acc (nth d i))))))`)
	if len(srcs) < 2000 {
		t.Fatalf("only %d programs", len(srcs))
	}
	for _, src := range srcs {
		_, err := Compile(src, Options{Tools: testTools(), checkResolve: true})
		if e, ok := err.(*Error); ok && strings.Contains(e.Msg, "resolver") {
			t.Errorf("%s\n  %v", src, err)
		}
	}
}
