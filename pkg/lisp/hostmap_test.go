package lisp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// hostRecs are host records as a caller passes them: maps nested in
// maps and slices, keys with '-', a nil value, an empty map.
func hostRecs() []map[string]any {
	return []map[string]any{
		{"id": int64(1), "order-id": "A-1", "qty": int64(3), "price": 2.5, "tag": nil,
			"user":  map[string]any{"name": "ann", "address": map[string]any{"city": "Oslo", "zip": int64(150)}},
			"items": []any{map[string]any{"sku": "S-1", "n": int64(2)}, "x"}, "meta": map[string]any{}},
		{"id": int64(2), "order-id": "A-2", "qty": int64(4), "price": 1.5,
			"user": map[string]any{"name": "bob", "address": map[string]any{"city": "Bergen", "zip": int64(5003)}}},
		{"id": int64(3), "order-id": "A-3", "qty": int64(3), "price": 9.0, "active": true,
			"user": map[string]any{"name": "ann"}},
	}
}

// interpRecs converts records into interpreter maps (no views, no host
// records): the reference a host record must behave like.
func interpRecs(t testing.TB, rs []map[string]any) core.Value {
	t.Helper()
	v, err := (&core.Converter{Shapes: &core.ShapeCache{}}).From(rs)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hostMapPrograms use host records (r, s, u: a nested one, e: empty) with
// every builtin that takes a map.
var hostMapPrograms = []string{
	// lookups
	`(:order-id r)`, `(:nope r)`, `(:nope r 0)`, `(r :qty)`, `(r "qty" 9)`, `(get r :price)`, `(get r "order-id")`, `(get r :nope 7)`,
	`(get-in r [:user :address :city])`, `(get-in r [:items 0 :sku])`, `(get-in r [:user :nope] :d)`, `((:user r) :name)`,
	`(count r)`, `(count u)`, `(count e)`, `(contains? r :tag)`, `(contains? r :nope)`, `(find r :qty)`, `(find r :nope)`,
	`(keys r)`, `(vals s)`, `(keys e)`, `(vals e)`, `(empty? r)`, `(empty? e)`, `(seq r)`, `(seq e)`, `(first r)`, `(last r)`, `(second r)`,
	`(nth (seq r) 2)`, `(entries s)`, `(:tag r)`, `(:meta r)`, `(empty (:meta r))`, `(empty r)`,
	// predicates and types
	`(map? r)`, `(map? u)`, `(coll? r)`, `(associative? r)`, `(seqable? r)`, `(counted? r)`, `(sorted? r)`, `(ifn? r)`, `(type r)`,
	`(if r 1 2)`, `(when (:meta r) :yes)`, `(nil? r)`, `(some? r)`, `(vector? r)`, `(sequential? r)`,
	// destructuring
	`(let [{:keys [id qty nope] :or {nope 5}} r] [id qty nope])`, `(let [{:strs [order-id]} r] order-id)`,
	`(let [{{:keys [name]} :user :as all} r] [name (count all)])`, `((fn [{:keys [qty]}] qty) s)`,
	`(for [{:keys [id]} rs] id)`, `(let [[k v] (first r)] [k v])`,
	// equality, hashing, sets, sorting
	`(= r r)`, `(= r s)`, `(= u {"name" "ann" "address" {"city" "Oslo" "zip" 150}})`, `(= {"name" "ann" "address" {"city" "Oslo" "zip" 150}} u)`,
	`(= u {:name "ann" :address {"city" "Oslo" "zip" 150}})`, `(= {"name" "ann" "address" {:city "Oslo" "zip" 150}} u)`, `(= (:address u) (:address u))`,
	`(= u (:user (nth rs 2)))`, `(= (:user (nth rs 2)) {"name" "ann"})`, `(contains? #{{"name" "ann"}} (:user (nth rs 2)))`, `(= [r s] (vec (take 2 rs)))`,
	`(get (group-by :user rs) {"name" "ann"})`, `(count (set (map :user rs)))`, `(= (:meta r) {})`, `(= e {})`, `(= {} e)`, `(not= r s)`, `(= (set [u]) #{{"name" "ann" "address" {"city" "Oslo" "zip" 150}}})`,
	`(count (set rs))`, `(contains? (set rs) r)`, `(distinct [r s r])`, `(frequencies (map :user rs))`, `(group-by :qty rs)`,
	`(sort-by :price rs)`, `(sort-by :price > rs)`, `(sort-by (juxt :qty :id) rs)`, `(max-by :price rs)`, `(min-by :qty rs)`,
	`(apply max-by :price [r])`, `(dedupe [r r s])`, `(.indexOf [s r] r)`, `(compare [1] [2])`,
	`(get {r 1} r)`, `(assoc {} r 1)`, `(set [r s])`, `(disj (set rs) r)`, `(clojure.set/union #{r} #{s})`,
	`(clojure.set/intersection (set rs) #{s})`, `(clojure.set/difference (set rs) #{s})`, `(clojure.set/subset? #{r} (set rs))`,
	// writes
	`(assoc r :qty 9)`, `(assoc r :new 1 "x-y" 2)`, `(assoc u :name "z")`, `(assoc e :a 1)`, `(dissoc r :user :items)`, `(dissoc e :a)`,
	`(update r :qty inc)`, `(update r :nope (fnil inc 0))`, `(update-in r [:user :address :zip] inc)`, `(update-in r [:user :new] (constantly 1))`,
	`(assoc-in r [:user :address :city] "X")`, `(assoc-in r [:items 0 :n] 7)`, `(merge r s)`, `(merge {} r)`, `(merge r nil {:a 1})`, `(merge e r)`,
	`(merge-with + (select-keys r [:qty :id]) (select-keys s [:qty :id]))`, `(select-keys r [:qty "id" :nope])`, `(select-keys e [:a])`,
	`(into {} r)`, `(into [] r)`, `(into #{} u)`, `(into r {:a 1})`, `(into r [[:qty 0]])`, `(conj r [:a 1])`, `(conj r s)`, `(conj {} r)`, `(conj [] r)`,
	`(update-vals (select-keys r [:qty :id]) inc)`, `(update-keys u str)`, `(reduce-kv (fn [a k v] (conj a k)) [] u)`,
	`(zipmap (keys r) (vals r))`, `(clojure.set/rename-keys r {"qty" :q})`, `(clojure.set/map-invert (:address u))`,
	`(clojure.set/project rs [:id :qty])`, `(clojure.set/select :active (set rs))`, `(clojure.set/join rs [{"id" 1 "z" 0}])`,
	`(clojure.set/join rs [{"k" 1}] {"id" "k"})`, `(clojure.set/index rs [:qty])`, `(reduce (fn [m x] (assoc m (:id x) (:qty x))) {} rs)`,
	`(reduce (fn [m x] (update m (:qty x) (fnil conj []) (:id x))) {} rs)`, `(reduce #(merge %1 %2) {} rs)`,
	// sequences over records and maps
	`(pluck :qty rs)`, `(pluck [:user :name] rs)`, `(sum-by :qty rs)`, `(avg-by :price rs)`, `(distinct-by :qty rs)`, `(partition-by :qty rs)`,
	`(filter (where :qty = 3) rs)`, `(filter (where [:user :name] = "ann") rs)`, `(filter (where :order-id in ["A-2"]) rs)`,
	`(map :qty rs)`, `(mapv #(get % :id) rs)`, `(filter :active rs)`, `(remove :active rs)`, `(map count rs)`, `(mapcat keys [u s])`,
	`(apply merge rs)`, `(apply hash-map (apply concat u))`, `(apply str r)`, `(map first r)`, `(sort r)`, `(reverse r)`, `(vec r)`,
	`(take 2 r)`, `(drop 1 u)`, `(some :active rs)`, `(every? map? rs)`, `(keep :tag rs)`, `(partition 2 r)`, `(flatten [r])`,
	`(walk identity identity r)`, `(postwalk identity r)`, `(prewalk identity u)`, `(postwalk #(if (string? %) (keyword %) %) u)`,
	`(prewalk #(if (map? %) (dissoc % :n) %) r)`, `(tree-seq map? vals u)`, `(loop [xs rs acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (:qty (first xs))))))`,
	`(pmap :id rs)`, `(replace r [:qty "qty" "id"])`, `(replace {r 1} [r s])`, `(clojure.string/join ", " (keys r))`,
	// printing and strings
	`(str r)`, `(pr-str u)`, `(str [r])`, `(pr-str e)`, `(pr-str (:items r))`, `(println r)`, `(count (str rs))`,
	// errors
	`(nth r 0)`, `(+ r 1)`, `(r)`, `(clojure.string/join r ", ")`, `(assoc r)`, `(dissoc 1 :a)`, `(inc (:user r))`, `(reduce-kv + 0 1)`,
}

// hostVecPrograms use the host vector of records rs itself: reads that
// view the host's slice (count, nth, rest, drop, a loop's walk) and
// writes that make the vector's item slots (conj, assoc, pop), in both
// orders, lazy seqs kept past the vector, and pmap.
var hostVecPrograms = []string{
	`(count rs)`, `(nth rs 1)`, `(nth rs 5 :d)`, `(get rs 2)`, `(rs 0)`, `(peek rs)`, `(pop rs)`, `(first rs)`, `(second rs)`, `(last rs)`,
	`(rest rs)`, `(next rs)`, `(next (drop 2 rs))`, `(drop 1 rs)`, `(drop 5 rs)`, `(take 2 rs)`, `(subvec rs 1)`, `(subvec rs 1 2)`,
	`(butlast rs)`, `(drop-last rs)`, `(take-last 2 rs)`, `(take-while :id rs)`, `(drop-while #(< (:id %) 2) rs)`, `(empty? rs)`, `(empty? (drop 3 rs))`,
	`(seq rs)`, `(vec rs)`, `(into [] rs)`, `(conj rs {:id 4})`, `(assoc rs 0 {:id 0})`, `(assoc rs 3 {:id 4})`, `(conj (rest rs) 1)`,
	`[(count rs) (conj rs 1) (count rs) (nth rs 2)]`, `[(conj rs 1) (count (rest rs)) (rest rs)]`, `(= rs rs)`, `(= rs (vec (seq rs)))`,
	`(= (rest rs) (drop 1 rs))`, `(hash rs)`, `(contains? rs 2)`, `(contains? rs 3)`, `(.indexOf rs s)`, `(reverse rs)`, `(rseq rs)`,
	`(reduce (fn [a x] (+ a (:qty x))) 0 rs)`, `(reduce (fn [a x] (if (= 2 (:id x)) (reduced a) (+ a (:id x)))) rs)`, `(reduce + (map :qty rs))`,
	`(->> rs (filter :qty) (map :price) (reduce +))`, `(count (filter :active rs))`, `(frequencies (map :qty rs))`, `(group-by :qty rs)`,
	`(group-by :qty (filter :id rs))`, `(set (map :qty rs))`, `(distinct (map :qty rs))`, `(into #{} rs)`, `(mapv :id rs)`, `(keep :tag rs)`,
	`(loop [xs rs n 0] (if (empty? xs) n (recur (rest xs) (+ n (:id (first xs))))))`, `(loop [xs rs out []] (if (seq xs) (recur (next xs) (conj out (:id (first xs)))) out))`,
	`(loop [xs (rest rs) ys rs n 0] (if (empty? xs) [n ys] (recur (rest xs) (rest ys) (inc n))))`, `(doall (pmap :qty rs))`, `(pmap #(count %) rs)`,
	`(let [l (map :id rs)] [(conj rs 1) l (count rs)])`, `(let [l (lazy-seq rs)] (first (rest l)))`, `(take 2 (cycle rs))`, `(interleave rs [1 2])`,
	`(apply max-key :id rs)`, `(sort-by :id > rs)`, `(zipmap (map :id rs) rs)`, `(mapv vector rs (rest rs))`, `(into [] (map :id) rs)`,
	`(update rs 0 :id)`, `(update-in rs [1 :user :name] str "!")`, `(get-in rs [0 :user :address :zip])`, `(assoc-in rs [2 :qty] 0)`,
	`(str rs)`, `(pr-str (rest rs))`, `(nth rs 9)`, `(subvec rs 2 9)`, `(rs 7)`,
}

// TestHostRecordsLikeMaps runs every program with host records and with the
// same data converted to interpreter maps: results (printed, ToGo) and
// errors must be the same, and the host's data must come back as it was.
func TestHostRecordsLikeMaps(t *testing.T) {
	recs, orig := hostRecs(), hostRecs()
	anys := make([]any, len(recs)) // the same records as encoding/json gives them
	for i, m := range recs {
		anys[i] = m
	}
	host := map[string]any{"rs": recs}
	hostAny := map[string]any{"rs": anys}
	interp := map[string]any{"rs": interpRecs(t, hostRecs())}
	run := func(src string, ctx map[string]any) (*Result, error) {
		prog := `(let [rs ctx/rs r (first rs) s (second rs) u (:user r) e (:meta r)] ` + src + `)`
		return Exec(context.Background(), prog, Options{Context: ctx, Timeout: 10 * time.Second})
	}
	for _, src := range append(hostMapPrograms[:len(hostMapPrograms):len(hostMapPrograms)], hostVecPrograms...) {
		got, gerr := run(src, host)
		want, werr := run(src, interp)
		if ga, gaerr := run(src, hostAny); (gaerr == nil) != (gerr == nil) || (gerr == nil && core.PrStr(ga.Value) != core.PrStr(got.Value)) ||
			(gerr != nil && gaerr.Error() != gerr.Error()) {
			t.Errorf("%s: over []any %v %v, over []map[string]any %v %v", src, ga, gaerr, got, gerr)
			continue
		}
		if (gerr == nil) != (werr == nil) {
			t.Errorf("%s: host error %v, interpreter error %v", src, gerr, werr)
			continue
		}
		if werr != nil {
			var ge, we *core.Error
			if !errors.As(gerr, &ge) || !errors.As(werr, &we) || ge.Kind != we.Kind || ge.Msg != we.Msg {
				t.Errorf("%s: host error %v, interpreter error %v", src, gerr, werr)
			}
			continue
		}
		if g, w := core.PrStr(got.Value), core.PrStr(want.Value); g != w {
			t.Errorf("%s:\n host        %s\n interpreter %s", src, g, w)
			continue
		}
		if g, w := core.ToGo(got.Value), core.ToGo(want.Value); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: ToGo host %#v, interpreter %#v", src, g, w)
		}
		if _, ok := got.Value.(core.HostMap); ok {
			t.Errorf("%s: a host record left the run as Result.Value", src)
		}
	}
	if !reflect.DeepEqual(recs, orig) {
		t.Fatalf("the programs changed the host's data: %#v", recs)
	}
}

// TestHostRecordIdentity checks the identity-based parts of host records:
// a record is usable as a Go map key (where a Go map value would panic),
// the same host map is one key, and memory keeps the record as its view,
// not a copy.
func TestHostRecordIdentity(t *testing.T) {
	recs := hostRecs()
	res, err := Exec(context.Background(), `(def kept (second ctx/rs))
	  [(count (distinct (concat ctx/rs ctx/rs))) (count (frequencies (map :user ctx/rs)))]`,
		Options{Context: map[string]any{"rs": recs}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := core.PrStr(res.Value); got != "[3 3]" {
		t.Fatalf("got %s", got)
	}
	kept, ok := res.Memory["kept"].(*core.Map)
	if !ok || !sameGoMap(kept.Src, recs[1]) {
		t.Fatalf("memory keeps %#v, want a view of the host's record", res.Memory["kept"])
	}
	seen := map[core.Value]int{}
	v := mustFromGo(t, recs).(*core.Vector)
	for _, it := range append(v.Items(), v.Items()...) {
		seen[it]++
	}
	if len(seen) != 3 {
		t.Fatalf("records as Go map keys: %d distinct, want 3", len(seen))
	}
	if m, ok := core.AsMap(v.At(0)); !ok || m.Len() != len(recs[0]) {
		t.Fatal("AsMap of a record")
	}
	if _, ok := core.AsMap("x"); ok {
		t.Fatal("AsMap of a string")
	}
}

// TestHostRecordsRoundTrip: random records, given as []map[string]any,
// come back from programs that pass them through exactly as they went
// in, and compare equal to the same data converted to interpreter maps.
func TestHostRecordsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	progs := []string{`(identity ctx/rs)`, `(mapv identity ctx/rs)`, `(mapv #(into {} %) ctx/rs)`, `(mapv #(merge % {}) ctx/rs)`,
		`(mapv #(dissoc (assoc % :zz 1) :zz) ctx/rs)`, `(vec (map (fn [x] (reduce-kv assoc {} x)) ctx/rs))`, `(mapv #(select-keys % (keys %)) ctx/rs)`}
	for i := range 300 {
		recs := make([]map[string]any, r.IntN(4))
		plain := make([]any, len(recs))
		for j := range recs {
			m, _ := randHost(r, 1).(map[string]any)
			delete(m, "zz")
			recs[j], plain[j] = m, m
		}
		want := fmt.Sprintf("%#v", plain)
		for _, p := range progs {
			step, err := Run(context.Background(), p, Options{Context: map[string]any{"rs": recs}})
			if err != nil {
				t.Fatalf("case %d %s: %v", i, p, err)
			}
			got := step.Return
			if got == nil && len(recs) == 0 {
				continue
			}
			for j, m := range recs { // a nil record comes back as {}
				if m == nil {
					got.([]any)[j] = map[string]any(nil)
				}
			}
			if !reflect.DeepEqual(got, any(plain)) {
				t.Fatalf("case %d %s\n got %#v\nwant %s", i, p, got, want)
			}
		}
		res, err := Exec(context.Background(), `(= ctx/rs ctx/conv)`, Options{Context: map[string]any{"rs": recs, "conv": interpRecs(t, recs)}})
		if err != nil || res.Value != true {
			t.Fatalf("case %d: host records unequal to their conversion: %v %v", i, res, err)
		}
	}
}

// TestHostRecordsNotCounted: records and the maps read from them are the
// host's memory: a program passing them along, keeping them in memory and
// returning them from closures and loops is charged nothing for them.
func TestHostRecordsNotCounted(t *testing.T) {
	rs := benchRecords(20000)
	opts := Options{Context: map[string]any{"records": rs}, MaxMemory: 64 << 10, Timeout: time.Minute}
	for _, src := range []string{
		`(def r (first ctx/records)) (def u (:user r)) (count (:address u))`,
		`(:id (reduce (fn [best r] (if (> (:qty r) (:qty best)) r best)) ctx/records))`,
		`(loop [xs ctx/records best nil] (if (empty? xs) (:id best) (recur (rest xs) (let [r (first xs)] (if (or (nil? best) (> (:price r) (:price best))) r best)))))`,
		`(count (keep (fn [r] (when (= 7 (:id r)) (:user r))) ctx/records))`,
		`(:id (max-by :price ctx/records))`,
	} {
		if _, err := Exec(context.Background(), src, opts); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// TestHostVectorSlotsOnce: goroutines reading a host vector of records at
// once (pmap inside a run, and Items from Go) all see one set of item
// slots, equal to the records.
func TestHostVectorSlotsOnce(t *testing.T) {
	recs := benchRecords(200)
	res, err := Exec(context.Background(), `[(pmap (fn [i] [(count (conj ctx/rs i)) (:id (nth ctx/rs i)) (count (rest ctx/rs))]) (range 200))
	  (pmap (fn [i] (reduce + (map :qty (drop i ctx/rs)))) (range 0 200 20))]`,
		Options{Context: map[string]any{"rs": recs}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := core.ToGo(res.Value).([]any)
	for i, x := range got[0].([]any) {
		if want := []any{int64(201), int64(i), int64(199)}; !reflect.DeepEqual(x, want) {
			t.Fatalf("item %d: got %v, want %v", i, x, want)
		}
	}
	for k, x := range got[1].([]any) {
		want := int64(0)
		for _, r := range recs[k*20:] {
			want += r["qty"].(int64)
		}
		if x != want {
			t.Fatalf("sum from %d: got %v, want %d", k*20, x, want)
		}
	}
	v := core.HostVector(core.ItemsOf{Recs: recs})
	slots := make([][]core.Value, 8)
	done := make(chan int)
	for g := range slots {
		go func() { slots[g] = v.Items(); done <- g }()
	}
	for range slots {
		<-done
	}
	for g, s := range slots {
		if &s[0] != &slots[0][0] || len(s) != len(recs) {
			t.Fatalf("goroutine %d got other item slots", g)
		}
	}
	for i, x := range slots[0] {
		if h, ok := x.(core.HostMap); !ok || !sameGoMap(h.Src(), recs[i]) || x != v.At(i) {
			t.Fatalf("slot %d is %#v, not record %d", i, x, i)
		}
	}
}

// TestHostVectorAllocatesNoSlots: reading a host vector of records through
// count, fused pipelines, reduce, a loop's walk and the collection
// builtins allocates nothing per record beyond what the same program
// allocates over a vector of interpreter maps converted in advance: the
// run makes no item slots for the host's records.
func TestHostVectorAllocatesNoSlots(t *testing.T) {
	progs := []string{`(count ctx/rs)`, `(->> ctx/rs (filter :active) (map :qty) (reduce +))`,
		`(reduce (fn [a r] (max a (:qty r))) 0 ctx/rs)`, `(count (filter :active ctx/rs))`, `(frequencies (map :category ctx/rs))`,
		`(loop [rs ctx/rs acc 0] (if (empty? rs) acc (recur (rest rs) (+ acc (:qty (first rs))))))`,
		`(:id (nth ctx/rs 5))`, `(:id (first (rest ctx/rs)))`, `(count (drop 3 ctx/rs))`,
		`(count (group-by :category ctx/rs))`, `(count (set (map :qty ctx/rs)))`, `(count (distinct (map :qty ctx/rs)))`,
		`(:id (first (sort-by :price ctx/rs)))`, `(count (into [] ctx/rs))`, `(count (into #{} ctx/rs))`,
		`(count (keep :active ctx/rs))`, `(count (mapv :id ctx/rs))`, `(count (vec ctx/rs))`, `(count (remove :active ctx/rs))`,
		`(sum-by :qty ctx/rs)`, `(count (pluck :qty ctx/rs))`, `(some :nope ctx/rs)`, `(every? :id ctx/rs)`}
	const n = 20_000
	recs := benchRecords(n)
	bytesPerRun := func(src string, rs any) float64 {
		opts := Options{Context: map[string]any{"rs": rs}, Timeout: time.Minute, MaxSteps: -1, MaxMemory: -1}
		if _, err := Exec(context.Background(), src, opts); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 5
		for range runs {
			Exec(context.Background(), src, opts)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	interp := interpRecs(t, recs)
	anys := make([]any, n)
	for i, m := range recs {
		anys[i] = m
	}
	for _, src := range progs {
		made := bytesPerRun(src, interp)
		for _, rs := range []any{recs, anys} {
			// a []any of records is taken as one []map[string]any (one
			// pointer per record, once) so its records are read in place
			// (into #{} over records costs 4.0 B per record more than
			// over interpreter maps whichever way records are held)
			allowed := 5.0
			if _, ok := rs.([]any); ok {
				allowed += 8
			}
			if host := bytesPerRun(src, rs); (host-made)/n >= allowed {
				t.Errorf("%s over %T: %.1f bytes per record more over host records (%.0f B) than over interpreter maps (%.0f B)", src, rs, (host-made)/n, host, made)
			}
		}
	}
}
