package messages

import (
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// turns is []Turn under another name: msgpack decodes it with its own
// slice decoder, the reference decodeSliceExact must agree with.
type turns []Turn

// TestDecodeSliceExactAsMsgpack: a registered slice decodes as msgpack's
// own decoder decodes the same bytes into the same slice: nil, empty,
// longer and shorter than what the slice held, over elements it held.
func TestDecodeSliceExactAsMsgpack(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	full := []Turn{
		{Number: 1, Program: "(tool/a {})", ToolCalls: []ToolCall{{Name: "a", Args: map[string]any{"id": int64(1)}, StartedAt: at}}},
		{Number: 2, Error: "bad", ToolCalls: []ToolCall{{Name: "b", StartedAt: at}, {Name: "c", Error: "x", StartedAt: at}}},
		{Number: 3, Feedback: "done"},
	}
	held := func() []Turn { return []Turn{{Number: 9, Program: "old", Error: "old"}} }
	for _, src := range [][]Turn{nil, {}, full[:1], full} {
		data, err := msgpack.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		starts := map[string]func() []Turn{
			"nil":          func() []Turn { return nil },
			"empty":        func() []Turn { return []Turn{} },
			"held":         held,
			"held, room":   func() []Turn { return append(make([]Turn, 0, 8), held()...) },
			"len 0, cap 2": func() []Turn { return held()[:0:1] },
		}
		for name, start := range starts {
			got, want := start(), turns(start())
			gerr := msgpack.Unmarshal(data, &got)
			werr := msgpack.Unmarshal(data, &want)
			if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, []Turn(want)) || (got == nil) != (want == nil) {
				t.Fatalf("%d turns into %s: got %#v (%v), want %#v (%v)", len(src), name, got, gerr, want, werr)
			}
		}
	}
}

// TestUnmarshalStepTraceAllocations: a Step's trace and its turns' tool
// calls each decode into one slice of their length.
func TestUnmarshalStepTraceAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := &Step{Version: StepVersion, Return: int64(3), Trace: []Turn{
		{Number: 1, Program: "(return (count (tool/a {:id 1})))", ToolCalls: []ToolCall{{Name: "a", StartedAt: at}}},
	}}
	data, err := Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var got Step
	if err := Unmarshal(data, &got); err != nil || len(got.Trace) != 1 || len(got.Trace[0].ToolCalls) != 1 || got.Trace[0].ToolCalls[0].Name != "a" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	n := testing.AllocsPerRun(100, func() {
		var s Step
		if err := Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
	})
	// 6 on amd64; msgpack's own slice decoder made 12 (3 more for each
	// slice)
	if n > 8 {
		t.Errorf("a one-turn Step decodes in %.0f allocations, want at most 8", n)
	}
}
