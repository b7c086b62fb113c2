package lisp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// wideRecs returns hostRecs with filler fields up to width top-level
// fields each (numbers, strings and floats by turns, one nil).
func wideRecs(width int) []map[string]any {
	rs := hostRecs()
	for i, r := range rs {
		for f := 0; len(r) < width; f++ {
			key := fmt.Sprintf("f-%02d", f)
			switch f % 4 {
			case 0:
				r[key] = int64(i*f) % 7
			case 1:
				r[key] = fmt.Sprintf("v%d", (i+f)%3)
			case 2:
				r[key] = float64(f) / 4
			default:
				r[key] = nil
			}
		}
	}
	return rs
}

// wideForms returns records rs encoded as msgpack and as JSON, and
// decoded from each and converted from Go data.
func wideForms(t *testing.T, rs []map[string]any) (data, jdata []byte, mp, js, cv core.Value) {
	t.Helper()
	data, err := messages.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	if jdata, err = messages.EncodeJSON(rs); err != nil {
		t.Fatal(err)
	}
	if mp, err = core.DecodeMsgpack(data); err != nil {
		t.Fatal(err)
	}
	if js, err = core.DecodeJSON(jdata); err != nil {
		t.Fatal(err)
	}
	if cv, err = (&core.Converter{Shapes: &core.ShapeCache{}}).From(rs); err != nil {
		t.Fatal(err)
	}
	return data, jdata, mp, js, cv
}

// TestWideMapsShaped: records of 9 to 64 fields decoded or converted from
// host data are a shape and exactly as many values, the records of one
// conversion share one shape, and beyond 64 fields a map is a trie.
func TestWideMapsShaped(t *testing.T) {
	for _, width := range []int{9, 12, 30, 64, 65} {
		_, _, mp, js, cv := wideForms(t, wideRecs(width))
		for name, v := range map[string]core.Value{"msgpack": mp, "json": js, "converter": cv} {
			items := v.(*core.Vector).Items()
			m0 := items[0].(*core.Map)
			for i, it := range items {
				m := it.(*core.Map)
				if width > core.WideMapMax {
					if m.Root == nil || m.Shape != nil {
						t.Errorf("%s w%d: record %d of %d fields is not a trie", name, width, i, m.Len())
					}
					continue
				}
				if m.Root != nil || m.Shape == nil || len(m.Vals) != width || len(m.Shape.Keys) != width || int(m.N) != width {
					t.Fatalf("%s w%d: record %d is not a shape and %d values", name, width, i, width)
				}
				if m.Shape != m0.Shape && len(m.Shape.Keys) == len(m0.Shape.Keys) && reflect.DeepEqual(m.Shape.Keys, m0.Shape.Keys) {
					t.Errorf("%s w%d: records with the same keys have two shapes", name, width)
				}
				if m.Shape.Strs == nil || len(m.Shape.Strs) != width {
					t.Errorf("%s w%d: the wide shape is not indexed", name, width)
				}
			}
		}
	}
}

// TestWideMapsLikeTries runs every host-record program over records of
// 12 and 30 fields kept as wide maps (decoded from msgpack and from JSON,
// converted from Go data) and over the same records as tries and as
// views of the Go maps: results (printed, ToGo) and errors must be the
// same.
func TestWideMapsLikeTries(t *testing.T) {
	for _, width := range []int{12, 30} {
		rs := wideRecs(width)
		data, jdata, mp, js, wide := wideForms(t, rs)
		// the references: the same Go data (as each format gives it back)
		// converted without shapes, a trie beyond 8 entries
		var fromMsgpack, fromJSON any
		if err := messages.Unmarshal(data, &fromMsgpack); err != nil {
			t.Fatal(err)
		}
		if err := messages.DecodeJSON(jdata, &fromJSON); err != nil {
			t.Fatal(err)
		}
		tries := map[string]core.Value{}
		for name, x := range map[string]any{"go": rs, "msgpack": fromMsgpack, "json": fromJSON} {
			v, err := (&core.Converter{}).From(x)
			if err != nil {
				t.Fatal(err)
			}
			if m := v.(*core.Vector).Items()[0].(*core.Map); m.Root == nil {
				t.Fatal("the reference records are not tries")
			}
			tries[name] = v
		}
		ref := map[string]string{"msgpack": "msgpack", "json": "json", "converter": "go", "view": "go"}
		run := func(src string, rs core.Value) (*Result, error) {
			prog := `(let [rs ctx/rs r (first rs) s (second rs) u (:user r) e (:meta r)] ` + src + `)`
			return Exec(context.Background(), prog, Options{Context: map[string]any{"rs": rs}, Timeout: 10 * time.Second})
		}
		for _, src := range append(append(hostMapPrograms[:len(hostMapPrograms):len(hostMapPrograms)], hostVecPrograms...), widePrograms...) {
			for name, in := range map[string]any{"msgpack": mp, "json": js, "converter": wide, "view": rs} {
				want, werr := run(src, tries[ref[name]])
				got, gerr := run(src, in)
				if (gerr == nil) != (werr == nil) {
					t.Errorf("w%d %s %s: error %v, over tries %v", width, name, src, gerr, werr)
					continue
				}
				if werr != nil {
					var ge, we *core.Error
					if !errors.As(gerr, &ge) || !errors.As(werr, &we) || ge.Kind != we.Kind || ge.Msg != we.Msg {
						t.Errorf("w%d %s %s: error %v, over tries %v", width, name, src, gerr, werr)
					}
					continue
				}
				if g, w := core.PrStr(got.Value), core.PrStr(want.Value); g != w {
					t.Errorf("w%d %s %s:\n got        %s\n over tries %s", width, name, src, g, w)
					continue
				}
				if g, w := core.ToGo(got.Value), core.ToGo(want.Value); !reflect.DeepEqual(g, w) {
					t.Errorf("w%d %s %s: ToGo %#v, over tries %#v", width, name, src, g, w)
				}
			}
		}
	}
}

// widePrograms exercise what a wide map does on its own: writes of
// existing and new keys (string and keyword spellings), dissoc down to a
// small map, growth past wideMapMax, equality and hashing against tries
// and literals, and transients over wide maps.
var widePrograms = []string{
	`(assoc r "f-01" 5)`, `(assoc r :f-01 5)`, `(assoc r :zz 1)`, `(assoc r "zz" 1 :aa 2)`, `(assoc r 7 1)`, `(assoc r nil 1)`,
	`(= (assoc r :zz 1) (assoc s :zz 1))`, `(map #(assoc % :zz (:id %)) rs)`, `(map #(dissoc % "f-01") rs)`,
	`(map #(:zz (assoc % :zz (:id %))) rs)`, `(map #(get (assoc % "zz" (:id %)) "zz") rs)`, `(get (assoc r :zz 1) "zz")`,
	`(let [m (assoc r :zz 1)] [(get m :zz) (get m "zz") (contains? m :zz) (find m "zz") (count m)])`,
	`(let [m (assoc r "zz" 1)] [(get m :zz) (contains? m "zz") (find m :zz) (keys m)])`,
	`(let [m (assoc r :id 9)] [(get m "id") (get m :id) (keys m) (get r :id)])`,
	`(reduce dissoc r (keys r))`, `(count (reduce dissoc r (take 5 (keys r))))`, `(apply dissoc r (drop 4 (keys r)))`,
	`(reduce (fn [m i] (assoc m (str "k" i) i)) r (range 80))`, `(count (reduce (fn [m i] (assoc m (keyword (str "k" i)) i)) r (range 80)))`,
	`(reduce (fn [m k] (assoc m k 0)) r (keys r))`, `(reduce (fn [m k] (update m k str)) r (keys r))`,
	`(reduce (fn [m i] (assoc m i i)) r (range 20))`, `(hash r)`, `(= (hash r) (hash (into {} r)))`, `(= r (into {} r))`, `(= (into {} r) r)`,
	`(= r (zipmap (keys r) (vals r)))`, `(= (assoc r :zz 1) (assoc (into {} r) :zz 1))`, `(= (dissoc r :id) (dissoc (into {} r) :id))`,
	`(= (hash (dissoc r :id)) (hash (dissoc (into {} r) :id)))`, `(get {r 1} (into {} r))`, `(contains? #{r} (into {} r))`,
	`(merge r {:zz 1 "id" 2})`, `(merge-with str r s)`, `(select-keys r (keys s))`, `(let [{:keys [id f-01 f-02 zz] :or {zz 0}} r] [id f-01 f-02 zz])`,
	`(let [{:strs [id f-03]} r] [id f-03])`, `(into (sorted-map) (dissoc r :user :items :meta))`, `(keys (assoc r :a 0 "a" 1))`,
	`(vals (assoc r :zz 1))`, `(seq (dissoc r :user :items))`, `(update r :qty + 10)`, `(update r :zz (fnil inc 0))`,
	`(reduce-kv (fn [a k v] (assoc a k (str v))) {} r)`, `(reduce-kv (fn [m k v] (assoc m k 1)) r r)`,
	`(pmap #(assoc % :zz (:qty %)) (concat rs rs rs rs))`, `(pmap #(dissoc % :id) (concat rs rs rs rs))`,
	`(map count (map #(dissoc % :id :qty) rs))`, `(map #(count (merge % %)) rs)`, `(clojure.set/rename-keys r {"f-01" "z"})`,
	`(assoc-in r [:f-01] 1)`, `(update-in r [:f-02] str)`, `(into {} (map (fn [[k v]] [k 1]) r))`, `(into r (map (fn [k] [k 2]) (keys s)))`,
}

// TestWideShapeStepsShared: records given the same new key (or losing the
// same key) share one new shape; values of the record written are not
// changed; concurrent writes from pmap branches are safe (run with -race).
func TestWideShapeStepsShared(t *testing.T) {
	data, err := messages.Marshal(recordsOfWidth(200, 30))
	if err != nil {
		t.Fatal(err)
	}
	v, err := core.DecodeMsgpack(data)
	if err != nil {
		t.Fatal(err)
	}
	recs := v.(*core.Vector).Items()
	var mu sync.Mutex
	added, removed := map[*core.Shape]bool{}, map[*core.Shape]bool{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range recs[w*50 : w*50+50] {
				m := r.(*core.Map)
				a := m.Assoc("zz_new", int64(1))
				d := m.Dissoc("qty")
				e := m.Assoc(core.NewKeyword("qty"), int64(-1))
				if !a.Wide() || !d.Wide() || e.Shape != m.Shape {
					t.Error("an assoc or dissoc of a wide map is not a wide map")
					return
				}
				if x, _ := a.Get("zz_new"); x != int64(1) {
					t.Errorf("assoc: %v", x)
				}
				if _, ok := d.Get("qty"); ok || d.Len() != 29 {
					t.Error("dissoc kept the key")
				}
				if x, _ := m.Get(core.NewKeyword("qty")); x == int64(-1) {
					t.Error("an assoc changed the record it was given")
				}
				mu.Lock()
				added[a.Shape], removed[d.Shape] = true, true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// each goroutine may make the new shape once before it sees another's
	if len(added) > 4 || len(removed) > 4 {
		t.Errorf("200 records written the same way made %d and %d shapes", len(added), len(removed))
	}
}

// TestWideMapRepeatedKeys: the last of repeated keys wins in a wide map,
// as in a small one, in both decoders.
func TestWideMapRepeatedKeys(t *testing.T) {
	src := `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"a":11,"j":12}`
	v, err := core.DecodeJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*core.Map)
	if !m.Wide() || m.Len() != 10 || core.PrStr(m) != `{"a" 11 "b" 2 "c" 3 "d" 4 "e" 5 "f" 6 "g" 7 "h" 8 "i" 9 "j" 12}` {
		t.Fatalf("got %s (wide %v)", core.PrStr(m), m.Wide())
	}
	// msgpack: a map16 of 11 entries, "a" twice
	raw := []byte{0xde, 0, 11}
	for i, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "a"} {
		raw = append(raw, 0xa1, k[0], byte(i+1))
	}
	v, err = core.DecodeMsgpack(raw)
	if err != nil {
		t.Fatal(err)
	}
	if m := v.(*core.Map); !m.Wide() || m.Len() != 10 || core.PrStr(m) != `{"a" 11 "b" 2 "c" 3 "d" 4 "e" 5 "f" 6 "g" 7 "h" 8 "i" 9 "j" 10}` {
		t.Fatalf("got %s", core.PrStr(m))
	}
}

// mailRecords are email records of 12 fields as a mail search returns
// them: most strings repeat from record to record (addresses, subject,
// body, folder, labels), the numbers are mostly unique.
func mailRecords(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{
			"id": int64(i), "from": "sender@example.com", "to": "team@example.com",
			"subject": "Quarterly numbers", "body": "Please find the figures attached; reply by Friday.",
			"date": "2026-01-02T03:04:05Z", "unread": i%3 == 0, "size": int64(1000 + i%977), "score": float64(i%100) / 7,
			"labels": []any{"inbox", "work"}, "thread": int64(i / 4), "folder": "INBOX",
		}
	}
	return out
}

// TestWideRecordsCharged: the charge of a decoded result of wide records
// is close to the Go heap its values take: it covers it for records of
// unique strings, and a string repeated from record to record, which
// shares one box, is charged once, so mail records (mostly repeated
// strings) are not charged twice their heap either.
func TestWideRecordsCharged(t *testing.T) {
	const n = 20_000
	for _, kind := range []string{"w12", "w30", "mail"} {
		for _, ct := range []string{"", messages.ContentTypeJSON} {
			var recs any
			switch kind {
			case "w12":
				recs = recordsOfWidth(n, 12)
			case "w30":
				recs = recordsOfWidth(n, 30)
			default:
				recs = mailRecords(n)
			}
			var data []byte
			var err error
			if ct == "" {
				data, err = messages.Marshal(recs)
			} else {
				data, err = messages.EncodeJSON(recs)
			}
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			// twice: the encoder's pooled buffers go at the second
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			m := core.NewMeter(1<<40, "")
			w, err := core.DecodeWireResultFrom(core.WithMeter(context.Background(), m), ct, bytes.NewReader(data), int64(len(data)), &messages.ObjectRef{Bucket: "b", Name: "n", Size: int64(len(data))})
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			runtime.KeepAlive(w)
			runtime.KeepAlive(data)
			ratio := float64(m.Used()) / float64(heap)
			t.Logf("%s %q: %d encoded, %d B of heap, %d charged (%.2fx)", kind, ct, len(data), heap, m.Used(), ratio)
			if ratio < 0.8 || ratio > 1.5 {
				t.Errorf("%s %q: %d B of heap charged %d (%.2fx)", kind, ct, heap, m.Used(), ratio)
			}
		}
	}
}

// TestShapeKeysAnyBytes: records whose keys differ only in where a NUL
// byte falls get shapes of their own keys; records whose keys arrive in
// another order, or repeated, get the shape of their keys.
func TestShapeKeysAnyBytes(t *testing.T) {
	v, err := core.DecodeJSON([]byte(`[{"a\u0000b":1,"c":2},{"a":1,"b\u0000c":2},{"c":3,"a\u0000b":4},{"c":5,"a\u0000b":6,"c":7}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"a\x00b": int64(1), "c": int64(2)}, {"a": int64(1), "b\x00c": int64(2)}, {"a\x00b": int64(4), "c": int64(3)}, {"a\x00b": int64(6), "c": int64(7)}}
	for i, it := range v.(*core.Vector).Items() {
		if got := core.ToGo(it); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("record %d: %#v, want %#v", i, got, want[i])
		}
	}
}

// TestWideMapOpsLikeTrie applies random assoc and dissoc sequences (string
// and keyword keys spelled alike, existing and new keys, keys of other
// types, growth past wideMapMax and shrinking below smallMapMax) to a
// wide map and to the same entries as a trie, and compares the two after
// every step: count, every lookup (both spellings), stored keys, =, hash,
// printing and ToGo.
func TestWideMapOpsLikeTrie(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 80)
	for i := range names {
		names[i] = fmt.Sprintf("k%02d", i)
	}
	key := func() core.Value {
		n := names[rng.IntN(len(names))]
		switch rng.IntN(10) {
		case 0, 1, 2:
			return core.NewKeyword(n)
		case 3:
			return int64(rng.IntN(3))
		}
		return n
	}
	for round := range 100 {
		width := 9 + rng.IntN(40)
		rec := map[string]any{}
		for _, i := range rng.Perm(len(names))[:width] {
			rec[names[i]] = int64(i)
		}
		data, err := messages.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		v, err := core.DecodeMsgpack(data)
		if err != nil {
			t.Fatal(err)
		}
		w := v.(*core.Map)
		tr, err := (&core.Converter{}).From(rec)
		if err != nil {
			t.Fatal(err)
		}
		ref := tr.(*core.Map)
		if !w.Wide() || ref.Root == nil {
			t.Fatalf("round %d: not a wide map and a trie", round)
		}
		for step := range 60 {
			k := key()
			op := "assoc"
			if rng.IntN(3) == 0 {
				op = "dissoc"
				w, ref = w.Dissoc(k), ref.Dissoc(k)
			} else {
				val := int64(1000*round + step)
				w, ref = w.Assoc(k, val), ref.Assoc(k, val)
			}
			where := fmt.Sprintf("round %d step %d (%s %s)", round, step, op, core.PrStr(k))
			if w.Len() != ref.Len() || core.PrStr(w) != core.PrStr(ref) || !core.Equal(w, ref) || !core.Equal(ref, w) || core.HashValue(w) != core.HashValue(ref) {
				t.Fatalf("%s:\n got  %s\n want %s", where, core.PrStr(w), core.PrStr(ref))
			}
			if !reflect.DeepEqual(core.ToGo(w), core.ToGo(ref)) {
				t.Fatalf("%s: ToGo differs", where)
			}
			for _, n := range names {
				for _, q := range []core.Value{n, core.NewKeyword(n)} {
					gk, gok := w.LookupKey(q)
					wk, wok := ref.LookupKey(q)
					gv, _ := w.Get(q)
					wv, _ := ref.Get(q)
					if gok != wok || !core.Equal(gv, wv) || (gok && core.PrStr(gk) != core.PrStr(wk)) {
						t.Fatalf("%s: lookup %s: %v %v %v, want %v %v %v", where, core.PrStr(q), gk, gv, gok, wk, wv, wok)
					}
				}
			}
		}
	}
}

// TestWideShapeStepsNotRetained: a shape's memo of its next shape does not
// keep that shape alive, so a program that keeps changing a record's keys
// does not build a chain of shapes that the record's shape holds.
func TestWideShapeStepsNotRetained(t *testing.T) {
	data, err := messages.Marshal(recordsOfWidth(1, 30)[0])
	if err != nil {
		t.Fatal(err)
	}
	v, err := core.DecodeMsgpack(data)
	if err != nil {
		t.Fatal(err)
	}
	rec := v.(*core.Map)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cur := rec
	for i := range 20_000 {
		cur = cur.Assoc(fmt.Sprintf("n%d", i), int64(i))
		if i > 0 {
			cur = cur.Dissoc(fmt.Sprintf("n%d", i-1))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if !cur.Wide() || cur.Len() != 31 {
		t.Fatalf("the chain ends in %d entries (wide %v)", cur.Len(), cur.Wide())
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("40,000 shapes stepped through hold %d bytes after a collection", grown)
	}
	runtime.KeepAlive(rec)
	runtime.KeepAlive(cur)
}
