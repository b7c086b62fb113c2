package lisp

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// storeCases are reducers and loops that build maps beyond smallMapMax
// entries in place. Each case is written with %s where the accumulator is
// handed to assoc/update/dissoc: "m" keeps the accumulator linear (a
// transient, kept in a hashStore while its keys allow), "(identity m)"
// makes it a plain persistent build. Both must give the same map.
var storeCases = []struct{ name, src string }{
	{"ints", `(reduce (fn [m x] (assoc %s x (* x 10))) {} (range 100))`},
	{"strings", `(reduce (fn [m x] (assoc %s (str "k-" x) x)) {} (range 100))`},
	{"keywords", `(reduce (fn [m x] (assoc %s (keyword (str "k-" x)) x)) {} (range 100))`},
	// "a" and :a are two entries; a keyword write finds the string first
	// only when no keyword entry exists (flex)
	{"flex pairs", `(reduce (fn [m x] (assoc %s (if (even? x) (str "n" (quot x 4)) (keyword (str "n" (quot x 4)))) x)) {} (range 100))`},
	{"string then keyword", `(let [m0 (into {} (map (fn [i] [(str "s" i) i]) (range 20)))] (reduce (fn [m x] (assoc %s (keyword (str "s" x)) (- x))) m0 (range 30)))`},
	{"overwrite", `(reduce (fn [m x] (assoc %s (mod x 30) x)) {} (range 100))`},
	{"update fnil", `(reduce (fn [m x] (update %s (mod x 20) (fnil + 0) x)) {} (range 200))`},
	{"update keyword", `(reduce (fn [m x] (update %s (keyword (str "c" (mod x 12))) (fnil inc 0))) {} (range 200))`},
	{"float key spills", `(reduce (fn [m x] (assoc %s (if (= x 50) 7.0 x) x)) {} (range 100))`},
	{"float key 1.5", `(reduce (fn [m x] (assoc %s (if (= x 50) 1.5 x) x)) {} (range 100))`},
	{"nil key", `(reduce (fn [m x] (assoc %s (if (= x 40) nil x) x)) {} (range 60))`},
	{"vector key", `(reduce (fn [m x] (assoc %s (if (= x 40) [x] x) x)) {} (range 60))`},
	{"dissoc", `(reduce (fn [m x] (if (zero? (mod x 3)) (dissoc %s (- x 2)) (assoc %s x x))) {} (range 100))`},
	{"reduced", `(reduce (fn [m x] (if (= x 50) (reduced m) (assoc %s x x))) {} (range 100))`},
	{"returns acc", `(reduce (fn [m x] (if (odd? x) m (assoc %s x x))) {} (range 100))`},
	{"assoc-in", `(reduce (fn [m x] (assoc-in %s [(mod x 20) :n] x)) {} (range 100))`},
	{"loop", `(loop [m {} i 0] (if (< i 100) (recur (assoc %s i (* i i)) (inc i)) m))`},
	// past the store's checkpoints (hashStore.fit): the maps are rebuilt
	// with room for the estimate
	{"ints sized", `(reduce (fn [m x] (assoc %s x (* x 10))) {} (vec (range 5000)))`},
	{"strings sized", `(reduce (fn [m x] (assoc %s (str "k-" x) x)) {} (vec (range 3000)))`},
	{"keywords sized", `(reduce (fn [m x] (assoc %s (keyword (str "k-" x)) x)) {} (vec (range 2000)))`},
	{"keys stop being new", `(reduce (fn [m x] (assoc %s (mod x 1100) x)) {} (vec (range 20000)))`},
	{"sized fused", `(reduce (fn [m x] (assoc %s x (inc x))) {} (filter even? (vec (range 6000))))`},
	{"sized then spills", `(reduce (fn [m x] (assoc %s (if (= x 4000) 0.5 x) x)) {} (vec (range 4100)))`},
}

// storeChecks are read by each case on its result a: lookups, count,
// order, equality and hashing against the persistent build b, writes after
// the build, and the result as a reduce's initial value (left unchanged).
const storeChecks = `
(let [ks (concat (keys b) [0 7 7.0 1.5 "k-3" :k-3 :n1 "n1" nil [40] :absent])]
  [(= a b) (= b a) (= (pr-str a) (pr-str b))
   (= (count a) (count b)) (= (keys a) (keys b)) (= (vals a) (vals b)) (= (seq a) (seq b))
   (= (map #(get a %) ks) (map #(get b %) ks))
   (= (map #(contains? a %) ks) (map #(contains? b %) ks))
   (= (map #(find a %) ks) (map #(find b %) ks))
   (contains? #{a} b) (= (get {a 1} b) 1)
   (= (assoc a :extra 1) (assoc b :extra 1)) (= (dissoc a (first (keys b))) (dissoc b (first (keys b))))
   (= (merge a {0 :zero}) (merge b {0 :zero}))
   (= (select-keys a ks) (select-keys b ks))
   (let [c (reduce (fn [m x] (assoc m (str "more" x) x)) a (range 20))]
     [(= (count c) (+ 20 (count b))) (= a b)])
   (= (pmap (fn [k] (get a k)) ks) (map #(get b %) ks))
   (apply = (pr-str b) (pmap (fn [_] (pr-str a)) (range 4)))])`

// TestStoredMapsMatchPersistent checks that maps built in a transient
// hashStore read, compare, hash, print and change exactly as the same
// maps built persistently.
func TestStoredMapsMatchPersistent(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			lin := strings.ReplaceAll(c.src, "%s", "m")
			plain := strings.ReplaceAll(c.src, "%s", "(identity m)")
			src := "(let [a " + lin + " b " + plain + "] [" + storeChecks + " a b])"
			res, err := Exec(context.Background(), src, Options{Timeout: time.Minute})
			if err != nil {
				t.Fatalf("%v", err.(*core.Error).Detail())
			}
			out := res.Value.(*core.Vector).Items()
			if got := core.PrStr(out[0]); strings.Contains(got, "false") {
				t.Fatalf("checks: %s", got)
			}
			if core.HashValue(out[1]) != core.HashValue(out[2]) {
				t.Fatal("hashes differ")
			}
			if !reflect.DeepEqual(core.ToGo(out[1]), core.ToGo(out[2])) {
				t.Fatalf("ToGo differs: %v vs %v", core.ToGo(out[1]), core.ToGo(out[2]))
			}
		})
	}
}

// TestStoredMapRepresentation pins where the entries live: a reduce over
// integer keys keeps them in a hashStore that lookups and count read in
// place (no trie built), a float key moves them into a trie, and the
// form built for printing is kept.
func TestStoredMapRepresentation(t *testing.T) {
	run := func(src string) *core.Map {
		t.Helper()
		res, err := Exec(context.Background(), src, Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return res.Value.(*core.Map)
	}
	m := run(`(reduce (fn [m x] (assoc m x (str x))) {} (range 1000))`)
	if m.Edit != nil {
		t.Fatal("the result is still a transient")
	}
	if m.Store() == nil || m.Root != nil || m.Shape != nil {
		t.Fatalf("entries not in a hashStore: root %v shape %v", m.Root != nil, m.Shape != nil)
	}
	if v, ok := m.Get(int64(999)); !ok || v != "999" || m.Len() != 1000 {
		t.Fatalf("Get = %v %v, Len %d", v, ok, m.Len())
	}
	if m.Cache.Load().Form != nil {
		t.Fatal("a lookup built the form")
	}
	if core.PrStr(m)[:10] != `{0 "0" 1 "` {
		t.Fatalf("printed %.20s", core.PrStr(m))
	}
	f := m.Cache.Load().Form
	if f == nil || f.Root == nil || m.Store() != nil {
		t.Fatal("printing did not keep the trie form")
	}
	if v, ok := m.Get(int64(5)); !ok || v != "5" {
		t.Fatalf("Get after form = %v %v", v, ok)
	}
	s := run(`(reduce (fn [m x] (assoc m (if (= x 500) 2.5 x) x)) {} (range 1000))`)
	if s.Store() != nil || s.Root == nil {
		t.Fatal("a float key did not move the entries into a trie")
	}
	if v, _ := s.Get(2.5); v != int64(500) {
		t.Fatalf("Get 2.5 = %v", v)
	}
}

// TestStoredMapBoundary checks that a stored map leaves with the boundary
// rule: string keys as they are, keyword keys with _ for -.
func TestStoredMapBoundary(t *testing.T) {
	res, err := Exec(context.Background(),
		`(reduce (fn [m x] (assoc m (str "order-" x) x (keyword (str "row-" x)) x)) {} (range 10))`,
		Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for i := range 10 {
		want["order-"+itoa(i)] = int64(i)
		want["row_"+itoa(i)] = int64(i)
	}
	if got := core.ToGo(res.Value); !reflect.DeepEqual(got, want) {
		t.Fatalf("ToGo = %v", got)
	}
}

// TestStoredMapCharged checks that a map kept in a hashStore is charged
// per entry as a trie is: building one beyond the limit fails.
func TestStoredMapCharged(t *testing.T) {
	_, err := Exec(context.Background(), `(count (reduce (fn [m x] (assoc m x x)) {} (range 200000)))`,
		Options{Timeout: time.Minute, MaxMemory: 4 << 20})
	var le *core.Error
	if !errors.As(err, &le) || le.Kind != core.KindMemory {
		t.Fatalf("err = %v, want memory_limit", err)
	}
	res, err := Exec(context.Background(), `(count (reduce (fn [m x] (assoc m x x)) {} (range 20000)))`,
		Options{Timeout: time.Minute, MaxMemory: 4 << 20})
	if err != nil || res.Value != int64(20000) {
		t.Fatalf("20k entries under 4 MiB: %v %v", res.Value, err)
	}
}

// TestStoredMapEscapes checks reducers whose accumulator escapes into a
// closure or a pmap branch mid-reduce: each step must see the map as it
// was at that step, never a later in-place write.
func TestStoredMapEscapes(t *testing.T) {
	cases := []struct{ src, want string }{
		{`(let [r (reduce (fn [m x] (assoc m x (fn [] (count m)))) {} (range 20))] (map #((get r %)) (range 20)))`,
			`[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19]`},
		{`(let [r (reduce (fn [m x] (assoc m x (first (pmap (fn [_] (count m)) [1])))) {} (range 20))] (vals r))`,
			`[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19]`},
		{`(let [seen (reduce (fn [acc x] (let [m (:m acc)] {:m (assoc m x x) :sizes (conj (:sizes acc) (count m))})) {:m {} :sizes []} (range 12))] [(count (:m seen)) (:sizes seen)])`,
			`[12 [0 1 2 3 4 5 6 7 8 9 10 11]]`},
		{`(let [a (reduce (fn [m x] (assoc m x x)) {} (range 20)) b (reduce (fn [m x] (dissoc m x)) a (range 10))] [(count a) (count b) (get a 3) (get b 3)])`,
			`[20 10 3 nil]`},
	}
	for _, c := range cases {
		res, err := Exec(context.Background(), c.src, Options{Timeout: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := core.PrStr(res.Value); got != c.want {
			t.Errorf("%s\n got  %s\n want %s", c.src, got, c.want)
		}
	}
}

// TestStoreFit checks when and how far a store's map is resized: only at
// its checkpoints, only for a reduce over a known number of items, never
// beyond those items nor beyond 4 times its entries, and only when the
// estimate is at least twice what the map holds.
func TestStoreFit(t *testing.T) {
	for _, c := range []struct {
		n, items, done int
		want           int // 0: not resized
	}{
		{1024, 3000, 1024, 3000},     // one entry per item: room for all
		{1024, 10_000, 1024, 4096},   // at most 4 times its entries
		{4096, 10_000, 4096, 10_000}, // the next checkpoint
		{16 * 1024, 100_000, 16 * 1024, 64 * 1024},
		{1024, 1_000_000, 1100, 4096},
		{1024, 100_000, 60_000, 0}, // keys have mostly stopped being new
		{1024, 2000, 1024, 0},      // under twice its entries
		{1023, 100_000, 1023, 0},   // not a checkpoint
		{2048, 100_000, 2048, 0},   // not a checkpoint
		{512, 100_000, 512, 0},     // before the first one
		{1024, 0, 0, 0},            // not fed by a reduce over a vector
		{1024, 100_000, 0, 0},      // no progress known
		{1024, 2000, 3000, 0},      // inconsistent progress
		{256 * 1024, 8_000_000, 256 * 1024, 1024 * 1024},
	} {
		var edit *core.EditToken
		if c.items > 0 {
			edit = &core.EditToken{Items: c.items, Done: c.done}
		}
		got, ok := core.Fit(c.n, edit)
		if !ok {
			got = 0
		}
		if got != c.want {
			t.Errorf("fit(%d entries, %d of %d items) = %d, want %d", c.n, c.done, c.items, got, c.want)
		}
	}
	if _, ok := core.Fit(1024, nil); ok {
		t.Error("fit without a token resized")
	}
}

// TestBuilderLeafSlabs: a builder told the exact number of keys takes
// its trie's leaves from one slab; one given an estimate (which repeated
// keys can make far larger than the map) allocates them as it goes, so a
// small map never keeps an estimate's worth of leaves alive.
func TestBuilderLeafSlabs(t *testing.T) {
	build := func(b *core.MapBuilder, keys int) *core.Map {
		for i := range keys {
			b.Set(core.Int(int64(i)), core.Int(1))
		}
		return b.Build()
	}
	exact := testing.AllocsPerRun(20, func() { build(core.NewExactMapBuilder(32), 32) })
	est := testing.AllocsPerRun(20, func() { build(core.NewMapBuilder(32), 32) })
	if exact >= est-16 {
		t.Errorf("32 keys: %v allocations with the exact count, %v without: want one slab for the leaves", exact, est)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := core.NewMapBuilder(1_000_000) // 1M items, 9 distinct keys
	for i := range 1_000_000 {
		b.Set(core.Int(int64(i%9)), core.Int(int64(i)))
	}
	m := b.Build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 1<<20 {
		t.Errorf("a 9-key map built from an estimate of 1M holds %d bytes", held)
	}
	if m.Len() != 9 {
		t.Fatalf("len %d", m.Len())
	}
}
