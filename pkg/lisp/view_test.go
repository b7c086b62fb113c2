package lisp

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

func viewRecords() []map[string]any {
	return []map[string]any{
		{"id": int64(1), "order-id": "A-1", "qty": 3, "user": map[string]any{"name": "ann", "tags": []any{"x", int64(2)}}},
		{"id": int64(2), "order-id": "A-2", "qty": int32(4), "price": float32(1.5), "user": map[string]any{"name": "bob"}},
	}
}

// sameGoMap reports whether a and b are the same Go map (not a copy).
func sameGoMap(a, b any) bool {
	ma, ok1 := a.(map[string]any)
	mb, ok2 := b.(map[string]any)
	return ok1 && ok2 && reflect.ValueOf(ma).UnsafePointer() == reflect.ValueOf(mb).UnsafePointer()
}

// TestViewsReadInPlace checks that FromGo does not copy maps: records are
// the host's maps themselves (hostMap), read in place without an
// allocation, their views count in O(1), are never built into interpreter
// maps by lookups, and are handed back as equal copies.
func TestViewsReadInPlace(t *testing.T) {
	rs := viewRecords()
	v, err := core.FromGo(rs)
	if err != nil {
		t.Fatal(err)
	}
	vec := v.(*core.Vector)
	h0, ok := vec.At(0).(core.HostMap)
	if !ok || !sameGoMap(h0.Src(), rs[0]) || !core.IsHostData(vec) || !core.IsHostData(h0) {
		t.Fatalf("a record is %#v, not the host's map", vec.At(0))
	}
	user, name, qty, order := core.NewKeyword("user"), core.NewKeyword("name"), core.NewKeyword("qty"), core.NewKeyword("order-id")
	if n := testing.AllocsPerRun(100, func() {
		_ = core.KwGet(h0, qty)
		_, _ = h0.Get(order)
		_ = core.GetKey(h0, order, nil)
	}); n != 0 {
		t.Fatalf("reading a host record allocates %v times", n)
	}
	// a nested record gets a variable of its own (one pointer word)
	if n := testing.AllocsPerRun(100, func() {
		_ = core.KwGet(core.KwGet(h0, user), name)
	}); n != 1 {
		t.Fatalf("reading a nested host record allocates %v times, want 1", n)
	}
	r0, ok := core.AsMap(h0)
	if !ok || r0.Src == nil || !core.IsHostData(r0) {
		t.Fatal("AsMap of a record is not a host view")
	}
	if r0.Len() != 4 {
		t.Fatalf("Len = %d", r0.Len())
	}
	kw := core.NewKeyword("order-id")
	if got, _ := r0.Get(kw); got != "A-1" {
		t.Fatalf(":order-id = %v", got)
	}
	if got, _ := r0.Get("qty"); got != int64(3) {
		t.Fatalf(`"qty" = %#v (an int is read as int64)`, got)
	}
	u, _ := r0.Get(core.NewKeyword("user"))
	if um, ok := u.(core.HostMap); !ok || !sameGoMap(um.Src(), rs[0]["user"]) {
		t.Fatalf(":user = %#v, want the host's map", u)
	}
	if _, ok := r0.Get(core.NewKeyword("order_id")); ok {
		t.Fatal(":order_id found \"order-id\": host keys match by name only")
	}
	if k, ok := r0.LookupKey(kw); !ok || k != "order-id" {
		t.Fatalf("lookupKey = %v %v", k, ok)
	}
	if r0.Cache.Load() != nil {
		t.Fatal("lookups built the record's interpreter form")
	}
	// rs[0] holds an int: it comes back as a copy holding an int64
	if g := core.ToGo(r0).(map[string]any); sameGoMap(g, rs[0]) || g["qty"] != int64(3) || g["order-id"] != "A-1" {
		t.Fatalf("ToGo = %#v", g)
	}
	plain := map[string]any{"a": int64(1), "b": []any{"x", map[string]any{"c": 1.5}}}
	pv, _ := core.FromGo(plain)
	if out := core.ToGo(pv); sameGoMap(out, plain) || !reflect.DeepEqual(out, plain) {
		t.Fatalf("ToGo of a view of plain data = %#v, want an equal copy", out)
	}
	if core.PrStr(r0) != `{"id" 1 "order-id" "A-1" "qty" 3 "user" {"name" "ann" "tags" ["x" 2]}}` {
		t.Fatalf("printed %s", core.PrStr(r0))
	}
	if r0.Cache.Load() == nil {
		t.Fatal("printing did not keep the interpreter form")
	}
	if want, _ := new(core.Converter).From(rs[1]); !core.Equal(vec.At(1), want) || core.HashValue(vec.At(1)) != core.HashValue(want) {
		t.Fatal("a view is not equal to (or hashes unlike) the converted map")
	}
}

// TestViewsInPrograms runs programs over views: lookups, nested paths,
// writes (which leave the host's data as it was), equality, iteration.
func TestViewsInPrograms(t *testing.T) {
	cases := []struct{ src, want string }{
		{`(map :order-id ctx/rows)`, `["A-1" "A-2"]`},
		{`(get-in (first ctx/rows) [:user :tags 1])`, `2`},
		{`(:price (second ctx/rows))`, `1.5`},
		{`(:qty (second ctx/rows))`, `4`},
		{`(count (first ctx/rows))`, `4`},
		{`(keys (second ctx/rows))`, `["id" "order-id" "price" "qty" "user"]`},
		{`(update-in (first ctx/rows) [:user :name] upper-case)`, `{"id" 1 "order-id" "A-1" "qty" 3 "user" {"name" "ANN" "tags" ["x" 2]}}`},
		{`(assoc (second ctx/rows) :qty 5 "" 0 1 2 :a-b 3)`, `{1 2 :a-b 3 "" 0 "id" 2 "order-id" "A-2" "price" 1.5 "qty" 5 "user" {"name" "bob"}}`},
		{`(let [r (first ctx/rows)] [(assoc r :id 2) (count (keys r)) (assoc r :id 3)])`, `[{"id" 2 "order-id" "A-1" "qty" 3 "user" {"name" "ann" "tags" ["x" 2]}} 4 {"id" 3 "order-id" "A-1" "qty" 3 "user" {"name" "ann" "tags" ["x" 2]}}]`},
		{`(dissoc (first ctx/rows) :user :qty)`, `{"id" 1 "order-id" "A-1"}`},
		{`(assoc (first ctx/rows) :id 9)`, `{"id" 9 "order-id" "A-1" "qty" 3 "user" {"name" "ann" "tags" ["x" 2]}}`},
		{`(= (:user (first ctx/rows)) {"name" "ann" "tags" ["x" 2]})`, `true`},
		{`(= (first ctx/rows) (first ctx/rows) (nth ctx/rows 0))`, `true`},
		{`(get (frequencies ctx/rows) (first ctx/rows))`, `1`},
		{`(let [{:keys [id user]} (first ctx/rows)] [id (:name user)])`, `[1 "ann"]`},
		{`(contains? (first ctx/rows) :order-id)`, `true`},
		{`(select-keys (first ctx/rows) [:order-id :nope])`, `{"order-id" "A-1"}`},
		{`(into {} (map (fn [[k v]] [k (str v)]) (:user (second ctx/rows))))`, `{"name" "bob"}`},
		{`(reduce (fn [acc r] (assoc acc (:order-id r) (:qty r))) {} ctx/rows)`, `{"A-1" 3 "A-2" 4}`},
		{`(sort-by :id > ctx/rows)`, `[{"id" 2 "order-id" "A-2" "price" 1.5 "qty" 4 "user" {"name" "bob"}} {"id" 1 "order-id" "A-1" "qty" 3 "user" {"name" "ann" "tags" ["x" 2]}}]`},
		{`(vec (pmap (fn [r] (count (keys r))) (concat ctx/rows ctx/rows)))`, `[4 5 4 5]`},
	}
	rs := viewRecords()
	for _, c := range cases {
		res, err := Exec(context.Background(), c.src, Options{Context: map[string]any{"rows": rs}, Timeout: 5 * time.Second})
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if got := core.PrStr(res.Value); got != c.want {
			t.Errorf("%s = %s, want %s", c.src, got, c.want)
		}
	}
	if got := core.PrStr(mustFromGo(t, rs)); got != core.PrStr(mustFromGo(t, viewRecords())) {
		t.Fatalf("the programs changed the host's data: %s", got)
	}
}

// TestViewsComeBackAsTheyCame checks that host maps a program returns or
// fails with come back equal to the host's data, as copies: what the host
// receives it may change (the run rounds floats in place, a fail value
// gets a reason), and its own data stays as it was. A kept map is the
// host's own (memory is not rounded or written).
func TestViewsComeBackAsTheyCame(t *testing.T) {
	mk := func() []any {
		return []any{
			map[string]any{"k-1": "a", "n": int64(1), "p": 1.23456, "sub": map[string]any{"x-y": []any{1.5, nil, true}}},
			map[string]any{"k-1": "b", "n": int64(2), "p": 2.5},
		}
	}
	rows, orig := mk(), mk()
	opts := Options{Context: map[string]any{"rows": rows}, Timeout: 5 * time.Second, FloatPrecision: 2}
	step, err := Run(context.Background(), `(def kept (first ctx/rows)) (return {:first (first ctx/rows) :sub (:sub (first ctx/rows)) :all ctx/rows})`, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := step.Return.(map[string]any)
	if sameGoMap(out["first"], rows[0]) || out["first"].(map[string]any)["p"] != 1.23 {
		t.Fatalf("first = %#v, want a rounded copy", out["first"])
	}
	if !reflect.DeepEqual(out["sub"], orig[0].(map[string]any)["sub"]) || len(out["all"].([]any)) != 2 {
		t.Fatalf("returned %#v", out)
	}
	if !reflect.DeepEqual(step.Memory["kept"], orig[0]) || !sameGoMap(step.Memory["kept"], rows[0]) {
		t.Fatalf("kept = %#v, want the host's own map", step.Memory["kept"])
	}
	if _, err := Run(context.Background(), `(fail (second ctx/rows))`, opts); err == nil {
		t.Fatal("fail did not fail")
	}
	if !reflect.DeepEqual(rows, orig) {
		t.Fatalf("the run changed the host's data: %#v", rows)
	}
}

// TestViewBadValue checks that a host value the interpreter cannot
// represent is reported, naming its key and type, when a program reads
// it, and that data around it is usable.
func TestViewBadValue(t *testing.T) {
	bad := map[string]any{"id": int64(7), "when": make(chan int)}
	ctx := map[string]any{"rows": []any{bad}}
	run := func(src string) (*Result, error) {
		return Exec(context.Background(), src, Options{Context: ctx, Timeout: 5 * time.Second})
	}
	if res, err := run(`[(count ctx/rows) (:id (first ctx/rows)) (count (first ctx/rows))]`); err != nil || core.PrStr(res.Value) != "[1 7 2]" {
		t.Fatalf("reading around the bad value: %v %v", err, res.Value)
	}
	for _, src := range []string{`(:when (first ctx/rows))`, `(str (first ctx/rows))`, `(keys (first ctx/rows))`, `(assoc (first ctx/rows) :x 1)`} {
		_, err := run(src)
		var le *core.Error
		if !errors.As(err, &le) || le.Kind != core.KindType || !strings.Contains(le.Msg, `"when"`) || !strings.Contains(le.Msg, "chan int") || !le.Pos.IsValid() {
			t.Errorf("%s: %v, want a type error naming \"when\" and chan int at a position", src, err)
		}
	}
	step, err := Run(context.Background(), `(first ctx/rows)`, Options{Context: ctx, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := step.Return.(map[string]any); !ok || out["when"] != bad["when"] || out["id"] != int64(7) {
		t.Fatalf("an unread bad value does not come back as it came: %#v", step.Return)
	}
	if _, err := core.FromGo(map[string]any{"rows": []any{make(chan int)}}); err != nil {
		t.Fatalf("FromGo converted a slice under a map up front: %v", err)
	}
	if _, err := core.FromGo([]any{make(chan int)}); err == nil || !strings.Contains(err.Error(), "[0]") {
		t.Fatalf("FromGo of a bad slice item: %v, want an error naming [0]", err)
	}
}

// TestMapHeaderSize pins the size of a map header: every small map and
// every view of a host record taken as a *Map (asMap) has one. Its values
// are a slice (small and wide maps alike), hence 72 bytes, not 56.
func TestMapHeaderSize(t *testing.T) {
	if n := unsafe.Sizeof(core.Map{}); n > 72 {
		t.Fatalf("Map is %d bytes, want at most 72", n)
	}
}

// TestEmptyRecordViews checks records that are empty or nil maps: FromGo
// does not read a record to hold it, so an empty record is an empty host
// record and must behave as {} in every respect.
func TestEmptyRecordViews(t *testing.T) {
	for _, recs := range []any{
		[]map[string]any{{}, nil, {"a": int64(1)}},
		[]any{map[string]any{}, map[string]any(nil), map[string]any{"a": int64(1)}},
	} {
		res, err := Exec(context.Background(), `(let [[e n r] ctx/rs]
		  [(count e) (count n) (empty? e) (= e {}) (= {} e) (= e n) (pr-str e) (get e :a) (assoc e :b 2)
		   (merge e r) (into {} e) (keys e) (seq e) (contains? #{{}} e) (frequencies [e n {}]) e])`,
			Options{Context: map[string]any{"rs": recs}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want := `[0 0 true true true true "{}" nil {:b 2} {"a" 1} {} nil nil true {{} 3} {}]`
		if got := core.PrStr(res.Value); got != want {
			t.Fatalf("%T: got  %s\nwant %s", recs, got, want)
		}
		if got := core.ToGo(res.Value.(*core.Vector).At(15)); !reflect.DeepEqual(got, map[string]any{}) {
			t.Fatalf("ToGo of an empty record = %#v", got)
		}
	}
}
