package lisp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// keptRecord is a record of n fields of every scalar kind, keyed so that
// Go's byte order of the keys differs from the interpreter's key order
// (a non-BMP rune sorts before U+FFFF in UTF-16 order, after it in
// UTF-8), with a nested vector, an empty vector and an empty map.
func keptRecord(i, n int) map[string]any {
	m := map[string]any{
		"id":      int64(i),
		"score":   float64(i) + 0.5,
		"whole":   float64(3), // a float that prints like an int
		"big":     int64(1) << 62,
		"none":    nil,
		"flag":    i%2 == 0,
		"text":    fmt.Sprintf("a\x00b <&> \u2028 é %d", i),
		"\uffff":  "high",
		"😀":       "astral",
		"Upper":   "u",
		"tags":    []any{"x", int64(i), []any{1.25, nil, []any{}}},
		"empty":   []any{},
		"nomap":   map[string]any{},
		"nested":  map[string]any{"deep": map[string]any{"k": int64(i)}, "list": []any{map[string]any{"a": "b"}}},
		"neg":     int64(-i),
		"neg-zer": 0.0,
	}
	for j := len(m); j < n; j++ {
		m[fmt.Sprintf("f%02d", j)] = int64(i * j)
	}
	return m
}

// keptData is a result holding every kind of value a tool result decodes
// to: records of 9 to 64 keys (wide shaped maps), of 70 keys (tries) and
// of 3 (small maps), scalars at the top, nested vectors and empty
// collections.
func keptData() map[string]any {
	var recs []any
	for i, n := range []int{16, 16, 16, 30, 64, 70, 16, 16} {
		recs = append(recs, keptRecord(i, n))
	}
	// records of exactly 9 and 12 keys
	for _, n := range []int{9, 9, 12, 12} {
		m := map[string]any{"id": int64(n), "s": "nul\x00", "f": 0.5, "none": nil}
		for j := len(m); j < n; j++ {
			m[fmt.Sprintf("k%d", j)] = int64(j)
		}
		recs = append(recs, m)
	}
	// narrow records (≤ 8 keys), a shape of their own
	for i := range 3 {
		recs = append(recs, map[string]any{"id": int64(100 + i), "s": "x", "f": 1.5})
	}
	return map[string]any{
		"records": recs,
		"count":   int64(len(recs)),
		"ratio":   0.25,
		"nothing": nil,
		"empty":   []any{},
		"nomap":   map[string]any{},
		"grid":    []any{[]any{int64(1), int64(2)}, []any{}, []any{[]any{"deep"}}},
		"nul":     "\x00",
	}
}

// copyingMemory is Step.Memory as a copy of every value (ToGo), the form
// a Kept must encode and convert to.
func copyingMemory(mem map[string]core.Value) map[string]any {
	out := make(map[string]any, len(mem))
	for k, v := range mem {
		out[k] = core.ToGo(v)
	}
	return out
}

// sameEncodings fails unless got and want encode to the same msgpack
// (messages.Marshal) and JSON (escaping HTML and not) bytes.
func sameEncodings(t *testing.T, what string, got, want any) {
	t.Helper()
	gm, err := messages.Marshal(got)
	if err != nil {
		t.Fatalf("%s: msgpack: %v", what, err)
	}
	wm, err := messages.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gm, wm) {
		t.Errorf("%s: msgpack differs (%d vs %d bytes)", what, len(gm), len(wm))
	}
	gj, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: JSON: %v", what, err)
	}
	wj, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gj, wj) {
		t.Errorf("%s: JSON differs:\n got %.300s\nwant %.300s", what, gj, wj)
	}
	raw := func(v any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("%s: JSON: %v", what, err)
		}
		return b.Bytes()
	}
	if g, w := raw(got), raw(want); !bytes.Equal(g, w) {
		t.Errorf("%s: JSON without HTML escaping differs:\n got %.300s\nwant %.300s", what, g, w)
	}
}

// plainMemory is memory with every Kept replaced by its Go form, at any
// depth, and the caller's []map[string]any (shared) as the []any a copy
// makes.
func plainMemory(x any) any {
	switch v := x.(type) {
	case *core.Kept:
		return plainMemory(v.Go())
	case []map[string]any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainMemory(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = plainMemory(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainMemory(e)
		}
		return out
	}
	return x
}

// TestKeptMemoryEncodesAsItsGoForm keeps decoded tool results (msgpack
// and JSON), converted Go data and views with def, unchanged and after
// assoc/dissoc of some records, next to values the program made (sets,
// keywords, nested vectors), over two runs whose second gets the first's
// Step.Memory as Options.Memory. Step.Memory holds the kept data as
// *Kept, not copies; it encodes to the same msgpack and JSON bytes as
// the copying conversion (ToGo of every value), and its Go form is the
// same Go data.
func TestKeptMemoryEncodesAsItsGoForm(t *testing.T) {
	data := keptData()
	packed, err := messages.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	jsoned, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	view := []map[string]any{{"id": int64(1), "v": "a"}, {"id": int64(2), "v": nil}}
	// interpreter values inside host data: a map whose keys respell to
	// one host key, and a keyword
	made, err := Exec(context.Background(), `{:row-count 1 "row_count" 2 :a-b 3 7 :seven}`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kw, _ := Exec(context.Background(), `:some-kw`, Options{})
	tools := core.Tools{
		"packed": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return core.NewWireResult("", packed) }),
		"jsoned": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return core.NewWireResult(messages.ContentTypeJSON, jsoned)
		}),
		"typed": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return []row{{"a", 1}, {"b<>", 2}}, nil
		}),
		"values": core.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return []any{made.Value, kw.Value, "s", []any{made.Value}}, nil
		}),
	}
	first := `
(def p (tool/packed {}))
(def j (tool/jsoned {}))
(def typed (tool/typed {}))
(def values (tool/values {}))
(def strs ctx/strs)
(def recs (get p "records"))
(def edited (-> recs (assoc-in [1 "id"] 99) (update 3 dissoc "text" "😀") (assoc 5 (assoc (nth recs 5) :added [1 2.0 nil])) (update 8 dissoc "s") (update 10 assoc "k99" "x")))
(def mixed {:kept p :view ctx/view :set #{:a "b" 3} :kw :some-kw :vec [recs [] [[]]] "s" "x\u0000y"})
(def fewer (vec (take 4 recs)))
(def one (nth recs 4))
(count recs)`
	ctxData := map[string]any{"view": view, "strs": []string{"x", "y"}}
	res, err := Exec(context.Background(), first, Options{Tools: tools, Context: ctxData})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Step(first, Options{})
	for _, k := range []string{"p", "j", "typed", "values", "strs", "recs", "one"} {
		if _, ok := st.Memory[k].(*core.Kept); !ok {
			t.Errorf("memory %s is %T, want the kept value", k, st.Memory[k])
		}
	}
	if p := st.Memory["p"].(*core.Kept); p.Value() != res.Memory["p"] {
		t.Error("memory p is not the run's own value")
	}
	if got := st.Memory["mixed"].(map[string]any)["kept"]; got == nil || got.(*core.Kept).Value() != res.Memory["p"] {
		t.Errorf("kept data inside a made map is %T, want the kept value", got)
	}
	want := copyingMemory(res.Memory)
	sameEncodings(t, "run 1", st.Memory, want)
	if got := plainMemory(st.Memory); !reflect.DeepEqual(got, plainMemory(want)) {
		t.Errorf("run 1: the Go form differs from the copy")
	}
	if wantRecs := data["records"]; !reflect.DeepEqual(st.Memory["recs"].(*core.Kept).Go(), wantRecs) {
		t.Error("kept records are not the tool's data")
	}

	// the Step's memory, given back, is the same values again
	second := `(def more (conj recs {:id -1})) (def p2 (get j "grid")) (count edited)`
	res2, err := Exec(context.Background(), second, Options{Tools: tools, Memory: st.Memory})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Memory["p"] != res.Memory["p"] || res2.Memory["recs"] != res.Memory["recs"] {
		t.Error("memory given back as Options.Memory is not the kept values")
	}
	st2 := res2.Step(second, Options{})
	want2 := copyingMemory(res2.Memory)
	sameEncodings(t, "run 2", st2.Memory, want2)
	if got := plainMemory(st2.Memory); !reflect.DeepEqual(got, plainMemory(want2)) {
		t.Errorf("run 2: the Go form differs from the copy")
	}
	// and through Run, as a caller decodes the Step
	st3, err := Run(context.Background(), `(count more)`, Options{Memory: st2.Memory})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := messages.MarshalStep(st3)
	if err != nil {
		t.Fatal(err)
	}
	back, err := messages.UnmarshalStep(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Memory, plainMemory(want2)) {
		t.Error("run 3: the decoded Step's memory differs from the copy")
	}
}

// TestKeptMemoryMasks masks the firewalled keys of kept data as its Go
// form would be masked, and hands kept data without one back as it is.
func TestKeptMemoryMasks(t *testing.T) {
	packed, err := messages.Marshal([]any{map[string]any{"_secret": "s", "id": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := messages.Marshal([]any{map[string]any{"id": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	tools := core.Tools{
		"secret": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return core.NewWireResult("", packed) }),
		"plain":  core.ToolFunc(func(context.Context, map[string]any) (any, error) { return core.NewWireResult("", plain) }),
	}
	st, err := Run(context.Background(), `(def s (tool/secret {})) (def p (tool/plain {})) 1`, Options{Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	masked := messages.MaskFirewalled(st.Memory).(map[string]any)
	if masked["p"] != st.Memory["p"] {
		t.Error("kept data without a firewalled key was copied to be masked")
	}
	want := []any{map[string]any{"_secret": messages.FirewallMask, "id": int64(1)}}
	if !reflect.DeepEqual(masked["s"], want) {
		t.Errorf("masked = %#v, want %#v", masked["s"], want)
	}
}

// TestKeptMemoryCostsNoCopy keeps a decoded result of 100 and of 10,000
// records with def through Run: what building Step.Memory allocates does
// not grow with the records kept.
func TestKeptMemoryCostsNoCopy(t *testing.T) {
	allocs := func(n int) float64 {
		recs := make([]any, n)
		for i := range recs {
			recs[i] = keptRecord(i, 12)
		}
		data, err := messages.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		w, err := core.NewWireResult("", data)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Exec(context.Background(), `(def mail (tool/m {})) (count mail)`, Options{Tools: core.Tools{
			"m": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return w, nil }),
		}})
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(5, func() {
			if st := res.Step("", Options{}); len(st.Memory) != 1 {
				t.Fatal("no memory")
			}
		})
	}
	if small, big := allocs(100), allocs(10_000); big > small+2 { // a copy would be 10k+
		t.Errorf("Step of a kept decoded result allocates %v times for 10k records, %v for 100", big, small)
	}
}
