package lisp

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// boundaryRows is host data whose keys and values hold '-': none of it
// may change on its way through a program.
func boundaryCtx() map[string]any {
	return map[string]any{
		"rows": []any{
			map[string]any{"order-id": int64(7), "region": "eu-north", "sku": "SKU-1", "qty": int64(2)},
			map[string]any{"order-id": int64(8), "region": "us-east", "sku": "SKU-2", "qty": int64(3)},
			map[string]any{"order-id": int64(9), "region": "eu-north", "sku": "SKU-1", "qty": int64(5)},
		},
		"by-day": map[string]any{"2024-01-31": int64(4), "2024-02-01": int64(1)},
	}
}

// plainJSON parses a JSON text into plain data (integers as int64).
func plainJSON(t testing.TB, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad expected JSON %s: %v", text, err)
	}
	out, err := messages.JSONNumbers(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBoundaryKeys runs every builtin that builds a map over host data and
// program data: string keys and host keys leave exactly as they are,
// keyword keys leave with '_' for '-'.
func TestBoundaryKeys(t *testing.T) {
	r0 := `{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2}`
	cases := []struct{ name, src, want string }{
		{"frequencies", `(frequencies ["2024-01-31" "2024-01-31" "eu-north"])`, `{"2024-01-31":2,"eu-north":1}`},
		{"host record", `(first ctx/rows)`, r0},
		{"identity", `(identity ctx/by-day)`, `{"2024-01-31":4,"2024-02-01":1}`},
		{"group-by", `(update-vals (group-by :region ctx/rows) count)`, `{"eu-north":2,"us-east":1}`},
		{"group-by records", `(get (group-by :region ctx/rows) "us-east")`, `[{"order-id":8,"region":"us-east","sku":"SKU-2","qty":3}]`},
		{"zipmap strings", `(zipmap ["a-b"] [1])`, `{"a-b":1}`},
		{"zipmap keywords", `(zipmap [:a-b] [1])`, `{"a_b":1}`},
		{"zipmap host", `(zipmap (map :sku ctx/rows) (map :qty ctx/rows))`, `{"SKU-1":5,"SKU-2":3}`},
		{"into pairs", `(into {} (map (fn [r] [(:sku r) (:qty r)]) ctx/rows))`, `{"SKU-1":5,"SKU-2":3}`},
		{"into record", `(into {} (first ctx/rows))`, r0},
		{"into sorted", `(into (sorted-map) ctx/by-day)`, `{"2024-01-31":4,"2024-02-01":1}`},
		{"assoc keyword", `(assoc (first ctx/rows) :row-count 1)`, `{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2,"row_count":1}`},
		{"assoc string", `(assoc (first ctx/rows) "row-count" 1)`, `{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2,"row-count":1}`},
		{"assoc host key by keyword", `(assoc (first ctx/rows) :order-id 70)`, `{"order-id":70,"region":"eu-north","sku":"SKU-1","qty":2}`},
		{"assoc-in", `(assoc-in {} ["a-b" :c-d] 1)`, `{"a-b":{"c_d":1}}`},
		{"update", `(update (first ctx/rows) :order-id inc)`, `{"order-id":8,"region":"eu-north","sku":"SKU-1","qty":2}`},
		{"update-in", `(update-in {:by-day ctx/by-day} [:by-day "2024-01-31"] inc)`, `{"by_day":{"2024-01-31":5,"2024-02-01":1}}`},
		{"dissoc", `(dissoc (first ctx/rows) :qty :region)`, `{"order-id":7,"sku":"SKU-1"}`},
		{"merge", `(merge (first ctx/rows) {"x-y" 1 :p-q 2})`, `{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2,"x-y":1,"p_q":2}`},
		{"merge-with", `(merge-with + ctx/by-day {"2024-01-31" 1 "2024-03-01" 2})`, `{"2024-01-31":5,"2024-02-01":1,"2024-03-01":2}`},
		{"select-keys", `(select-keys (first ctx/rows) [:order-id "sku"])`, `{"order-id":7,"sku":"SKU-1"}`},
		{"hash-map", `(hash-map "k-1" 1 :k-2 2)`, `{"k-1":1,"k_2":2}`},
		{"array-map", `(array-map "k-1" 1 :k-2 2)`, `{"k-1":1,"k_2":2}`},
		{"sorted-map", `(sorted-map "b-1" 1 :a-1 2)`, `{"b-1":1,"a_1":2}`},
		{"conj", `(conj ctx/by-day ["2024-03-01" 9])`, `{"2024-01-31":4,"2024-02-01":1,"2024-03-01":9}`},
		{"update-keys", `(update-keys ctx/by-day #(str % "-x"))`, `{"2024-01-31-x":4,"2024-02-01-x":1}`},
		{"update-vals", `(update-vals ctx/by-day inc)`, `{"2024-01-31":5,"2024-02-01":2}`},
		{"reduce-kv", `(reduce-kv (fn [m k v] (assoc m k (* 2 v))) {} ctx/by-day)`, `{"2024-01-31":8,"2024-02-01":2}`},
		{"reduce assoc", `(reduce (fn [m r] (assoc m (:sku r) (:order-id r))) {} ctx/rows)`, `{"SKU-1":9,"SKU-2":8}`},
		{"reduce update", `(reduce (fn [m r] (update m (:region r) (fnil + 0) (:qty r))) {} ctx/rows)`, `{"eu-north":7,"us-east":3}`},
		{"empty", `(empty (first ctx/rows))`, `{}`},
		{"rename-keys", `(set/rename-keys (first ctx/rows) {"sku" "item-sku" :qty :item-qty})`, `{"order-id":7,"region":"eu-north","item-sku":"SKU-1","item_qty":2}`},
		{"map-invert", `(set/map-invert {"a-b" "c-d"})`, `{"c-d":"a-b"}`},
		{"project", `(set/project (take 1 ctx/rows) [:order-id :sku])`, `[{"order-id":7,"sku":"SKU-1"}]`},
		{"index", `(update-vals (set/index ctx/rows [:region]) count)`, `{"{\"region\" \"eu-north\"}":2,"{\"region\" \"us-east\"}":1}`},
		{"join", `(set/join (take 1 ctx/rows) [{"sku" "SKU-1" "in-stock" true}])`, `[{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2,"in-stock":true}]`},
		{"postwalk", `(postwalk identity (first ctx/rows))`, r0},
		{"prewalk", `(prewalk identity ctx/by-day)`, `{"2024-01-31":4,"2024-02-01":1}`},
		{"walk", `(walk identity identity (first ctx/rows))`, r0},
		{"for", `(into {} (for [[k v] ctx/by-day] [k (inc v)]))`, `{"2024-01-31":5,"2024-02-01":2}`},
		{"map literal", `{:a-b 1 "c-d" 2 -1 3}`, `{"a_b":1,"c-d":2,"-1":3}`},
		{"exact spelling wins", `{:a-b 1 "a_b" 2}`, `{"a_b":2}`},
		{"destructured", `(let [{:keys [sku qty]} (first ctx/rows)] {sku qty})`, `{"SKU-1":2}`},
		{"keyword values", `[:row-count "a-b"]`, `["row-count","a-b"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step, err := Run(context.Background(), c.src, Options{Context: boundaryCtx()})
			if err != nil {
				t.Fatalf("%s: %v", c.src, err)
			}
			want := plainJSON(t, c.want)
			if !reflect.DeepEqual(step.Return, want) {
				t.Fatalf("%s\n got %#v\nwant %#v", c.src, step.Return, want)
			}
		})
	}
}

// TestBoundaryMemoryAndSignature: keys keep their spelling in memory
// between runs and in Step.Memory; signatures name host keys, so a
// keyword :row-count satisfies row_count and a string "row-count" does not.
func TestBoundaryMemoryAndSignature(t *testing.T) {
	ctx := context.Background()
	res, err := Exec(ctx, `(def rec (first ctx/rows)) (def days (frequencies ["2024-01-31"])) (def kw {:row-count 1})`, Options{Context: boundaryCtx()})
	if err != nil {
		t.Fatal(err)
	}
	step, err := Run(ctx, `[rec (get days "2024-01-31") (:row-count kw) (assoc rec :n 1)]`, Options{Memory: anyMap(res.Memory)})
	if err != nil {
		t.Fatal(err)
	}
	want := plainJSON(t, `[{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2},1,1,{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2,"n":1}]`)
	if !reflect.DeepEqual(step.Return, want) {
		t.Fatalf("got %#v", step.Return)
	}
	wantMem := plainJSON(t, `{"rec":{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2},"days":{"2024-01-31":1},"kw":{"row_count":1}}`)
	if !reflect.DeepEqual(any(step.Memory), wantMem) {
		t.Fatalf("memory %#v", step.Memory)
	}

	if _, err := Run(ctx, `{:row-count 3}`, Options{Signature: "{row_count :int}"}); err != nil {
		t.Fatalf("keyword key against row_count: %v", err)
	}
	if _, err := Run(ctx, `{"row-count" 3}`, Options{Signature: "{row_count :int}"}); err == nil || !strings.Contains(err.Error(), "row_count") {
		t.Fatalf("string key \"row-count\" must not satisfy row_count: %v", err)
	}
	if _, err := Run(ctx, `(first ctx/rows)`, Options{Context: boundaryCtx(), Signature: "{order_id :int}"}); err == nil {
		t.Fatal("host key order-id must not be respelled to satisfy order_id")
	}
}

func anyMap(m map[string]core.Value) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestBoundaryToolArgs: a tool sees string and host keys as written and
// keyword keys with '_'; its result comes back unchanged.
func TestBoundaryToolArgs(t *testing.T) {
	var seen map[string]any
	tools := core.Tools{"echo": core.ToolFunc(func(_ context.Context, args map[string]any) (any, error) {
		seen = args
		return map[string]any{"x-y": int64(1), "in": args}, nil
	})}
	src := `(tool/echo {:row-count 1 "SKU-1" 2 :nested {"a-b" {:c-d 1}} :rec (first ctx/rows) :days (frequencies ["2024-01-31"])})`
	step, err := Run(context.Background(), src, Options{Context: boundaryCtx(), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := plainJSON(t, `{"row_count":1,"SKU-1":2,"nested":{"a-b":{"c_d":1}},"rec":{"order-id":7,"region":"eu-north","sku":"SKU-1","qty":2},"days":{"2024-01-31":1}}`)
	if !reflect.DeepEqual(any(seen), wantArgs) {
		t.Fatalf("tool saw %#v", seen)
	}
	if !reflect.DeepEqual(step.Trace[0].ToolCalls[0].Args, wantArgs) {
		t.Fatalf("recorded args %#v", step.Trace[0].ToolCalls[0].Args)
	}
	wantRet := map[string]any{"x-y": int64(1), "in": wantArgs}
	if !reflect.DeepEqual(step.Return, any(wantRet)) {
		t.Fatalf("return %#v", step.Return)
	}
	// keyword pairs
	if _, err := Run(context.Background(), `(tool/echo :row-count 1 "a-b" 2)`, Options{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(any(seen), plainJSON(t, `{"row_count":1,"a-b":2}`)) {
		t.Fatalf("tool saw %#v", seen)
	}
}

// randHost makes random plain host data whose keys mix '-', '_', digits,
// spaces and non-ASCII, the way real records do.
func randHost(r *rand.Rand, depth int) any {
	keyParts := []string{"a", "b-c", "d_e", "-", "_", "2024-01-31", "SKU-1", "x y", "é-ü", "", "k", "order-id", "order_id", "1"}
	switch n := r.IntN(10); {
	case depth > 3 || n < 5:
		switch r.IntN(6) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return int64(r.IntN(2000) - 1000)
		case 3:
			return float64(r.IntN(1000)) / 8
		case 4:
			return keyParts[r.IntN(len(keyParts))]
		}
		return int64(r.Uint64() >> 1)
	case n < 7:
		out := make([]any, r.IntN(5))
		for i := range out {
			out[i] = randHost(r, depth+1)
		}
		return out
	}
	m := map[string]any{}
	for range r.IntN(12) {
		k := keyParts[r.IntN(len(keyParts))]
		if r.IntN(3) == 0 {
			k += "-" + keyParts[r.IntN(len(keyParts))]
		}
		m[k] = randHost(r, depth+1)
	}
	return m
}

// checkRoundTrip runs the round-trip programs over x and reports the first
// difference.
func checkRoundTrip(x any) error {
	ctx := map[string]any{"x": x}
	progs := []string{`(identity ctx/x)`, `(let [y ctx/x] y)`, `(do (def y ctx/x) y)`}
	if _, ok := x.(map[string]any); ok {
		progs = append(progs, `(into {} ctx/x)`, `(merge {} ctx/x)`, `(zipmap (keys ctx/x) (vals ctx/x))`)
	}
	if _, ok := x.([]any); ok {
		progs = append(progs, `(vec ctx/x)`, `(into [] ctx/x)`, `(mapv identity ctx/x)`)
	}
	if m, ok := x.(map[string]any); ok {
		if _, has := m["k"]; !has {
			progs = append(progs, `(dissoc (assoc ctx/x :k 1) :k)`)
		}
	}
	for _, p := range progs {
		step, err := Run(context.Background(), p, Options{Context: ctx})
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !reflect.DeepEqual(step.Return, x) {
			return fmt.Errorf("%s\n got %#v\nwant %#v", p, step.Return, x)
		}
	}
	// (assoc ctx/x :k 1) minus k: everything else unchanged
	if m, ok := x.(map[string]any); ok {
		if _, has := m["k"]; !has {
			step, err := Run(context.Background(), `(assoc ctx/x :k 1)`, Options{Context: ctx})
			if err != nil {
				return err
			}
			got := step.Return.(map[string]any)
			if got["k"] != int64(1) {
				return fmt.Errorf("assoc :k: %#v", got)
			}
			delete(got, "k")
			if !reflect.DeepEqual(any(got), x) {
				return fmt.Errorf("assoc :k minus k\n got %#v\nwant %#v", got, x)
			}
		}
	}
	return nil
}

// TestHostDataRoundTrips: random host data comes back from lisp.Run
// exactly as it went in.
func TestHostDataRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	for i := range 500 {
		x := randHost(r, 0)
		if err := checkRoundTrip(x); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}
}

// FuzzHostRoundTrip: any JSON document given as host data round-trips
// unchanged through lisp.Run.
func FuzzHostRoundTrip(f *testing.F) {
	for _, s := range []string{`{"order-id":7,"a_b":[1,2.5,"x-y"]}`, `[{"2024-01-31":{"SKU-1":null}}]`, `{"-":{"_":true}}`, `"a-b"`, `[]`, `{}`} {
		f.Add(s)
	}
	var mu sync.Mutex
	f.Fuzz(func(t *testing.T, text string) {
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		x, err := messages.JSONNumbers(v)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err := checkRoundTrip(x); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFromGoShapes: records converted through a recent shape get their
// values in that shape's key order; records with other keys of the same
// count do not take it.
func TestFromGoShapes(t *testing.T) {
	// FromGo gives views (TestViewsReadInPlace); the converter that lays
	// out data decoded from the wire shares shapes
	v, err := (&core.Converter{Shapes: &core.ShapeCache{}}).From([]any{
		map[string]any{"a": int64(1), "b": int64(2)},
		map[string]any{"a": int64(3), "c": int64(4)},
		map[string]any{"b": int64(5), "a": int64(6)},
		map[string]any{"c": int64(7), "a": int64(8)},
		map[string]any{"a": int64(9)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"a" 1 "b" 2} {"a" 3 "c" 4} {"a" 6 "b" 5} {"a" 8 "c" 7} {"a" 9}]`
	if got := core.PrStr(v); got != want {
		t.Fatalf("got %s", got)
	}
	rs := v.(*core.Vector).Items()
	if rs[0].(*core.Map).Shape == nil || rs[0].(*core.Map).Shape != rs[2].(*core.Map).Shape || rs[1].(*core.Map).Shape != rs[3].(*core.Map).Shape {
		t.Fatal("records with the same keys do not share a shape")
	}
	if !core.IsHostData(v) || !core.IsHostData(rs[0]) {
		t.Fatal("converted data is not marked as the host's")
	}
}
