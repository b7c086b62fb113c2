package messages

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func fullStep() *Step {
	t0 := time.Date(2026, 11, 21, 14, 0, 0, 123456789, time.UTC)
	return &Step{
		Return: map[string]any{
			"count":  int64(3),
			"ratio":  0.5,
			"whole":  float64(2), // an integral float must stay a float
			"big":    int64(math.MaxInt64),
			"neg":    int64(math.MinInt64),
			"name":   "ünïcode ✓",
			"ok":     true,
			"none":   nil,
			"ids":    []any{int64(1), int64(2), 3.5, "x", nil, false},
			"nested": map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": int64(-1)}}}},
			"empty":  []any{},
			"emap":   map[string]any{},
			"_ids":   []any{int64(7)},
		},
		Signature: "{count :int, _ids [:int]}",
		Memory:    map[string]any{"items": []any{int64(1)}, "f": 1.25},
		Usage: Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, CacheReadTokens: 5,
			Requests: 2, Turns: 2, ToolCalls: 1, Duration: 1500 * time.Millisecond, MemoryBytes: 42},
		Trace: []Turn{{
			Number:  1,
			Program: `(return {:count 3})`,
			Result:  map[string]any{"count": int64(3)},
			ToolCalls: []ToolCall{{
				Name: "search", Args: map[string]any{"q": "x", "limit": int64(10)},
				Result: []any{map[string]any{"id": int64(1)}}, StartedAt: t0, Duration: time.Millisecond,
				Child: &Step{Return: "child", Usage: Usage{Turns: 1}},
			}},
			Prints:    []string{"hello"},
			Raw:       "```clojure\n(return {:count 3})\n```",
			StartedAt: t0,
			Duration:  2 * time.Second,
			Messages:  []PromptMessage{{Role: "user", Content: "hi"}},
		}},
		Prints:   []string{"line"},
		Warnings: []string{"limit: coerced string \"10\" to integer"},
		Mode:     ModeLisp,
	}
}

func TestStepRoundTrip(t *testing.T) {
	in := fullStep()
	data, err := MarshalStep(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalStep(data)
	if err != nil {
		t.Fatal(err)
	}
	if out.Version != StepVersion {
		t.Errorf("version = %d, want %d", out.Version, StepVersion)
	}
	if in.Version != 0 {
		t.Errorf("MarshalStep modified its argument")
	}
	want := *in
	want.Version = StepVersion
	if !reflect.DeepEqual(out.Return, want.Return) {
		t.Errorf("return mismatch:\n got %#v\nwant %#v", out.Return, want.Return)
	}
	// time.Time values carry a location pointer; compare instants then the rest.
	if !out.Trace[0].StartedAt.Equal(want.Trace[0].StartedAt) {
		t.Errorf("started_at = %v, want %v", out.Trace[0].StartedAt, want.Trace[0].StartedAt)
	}
	out.Trace[0].StartedAt = want.Trace[0].StartedAt
	out.Trace[0].ToolCalls[0].StartedAt = want.Trace[0].ToolCalls[0].StartedAt
	if !reflect.DeepEqual(*out, want) {
		t.Errorf("step mismatch:\n got %#v\nwant %#v", *out, want)
	}
}

func TestStepKindsPreserved(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want any
	}{
		{"small int", int64(1), int64(1)},
		{"zero", int64(0), int64(0)},
		{"negative fixint", int64(-5), int64(-5)},
		{"int32 range", int64(1 << 20), int64(1 << 20)},
		{"integral float", 3.0, 3.0},
		{"fraction", 0.1, 0.1},
		{"inf", math.Inf(1), math.Inf(1)},
		{"string", "s", "s"},
		{"nil", nil, nil},
		{"bool", false, false},
		{"go int", 7, int64(7)},
		{"uint8", uint8(200), int64(200)},
		{"float32", float32(0.5), 0.5},
		{"slice of strings", []string{"a", "b"}, []any{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := MarshalStep(&Step{Return: c.in})
			if err != nil {
				t.Fatal(err)
			}
			out, err := UnmarshalStep(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Return, c.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", out.Return, out.Return, c.want, c.want)
			}
		})
	}
}

func TestStepNaN(t *testing.T) {
	data, err := MarshalStep(&Step{Return: math.NaN()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalStep(data)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := out.Return.(float64); !ok || !math.IsNaN(f) {
		t.Errorf("got %#v, want NaN", out.Return)
	}
}

func TestMarshalDeterministic(t *testing.T) {
	a, err := MarshalStep(fullStep())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		b, err := MarshalStep(fullStep())
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatal("two encodings of the same step differ")
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, err := MarshalStep(&Step{Return: int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated at byte 0"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"trailing", append(append([]byte{}, good...), 0xc0), "1 trailing bytes"},
		{"not a map", []byte{0x01}, "decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := UnmarshalStep(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestStepValidate(t *testing.T) {
	cases := []struct {
		name string
		step *Step
		want string
	}{
		{"nil", nil, "step is nil"},
		{"future version", &Step{Version: StepVersion + 1}, "version 2 not supported"},
		{"fail without reason", &Step{Fail: &Fail{Message: "x"}}, "step.fail.reason is empty"},
		{"bad mode", &Step{Mode: "prose"}, `step.mode "prose"`},
		{"tool call without name", &Step{Trace: []Turn{{ToolCalls: []ToolCall{{}}}}}, "step.trace[0].tool_calls[0].name is empty"},
		{"bad child", &Step{Trace: []Turn{{ToolCalls: []ToolCall{{Name: "a", Child: &Step{Fail: &Fail{}}}}}}}, "child: invalid message: step.fail.reason"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.step.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
	if err := fullStep().Validate(); err != nil {
		t.Errorf("valid step: %v", err)
	}
}

func TestNormalize(t *testing.T) {
	type S struct{ A int }
	got, err := Normalize(map[string]any{
		"u": uint64(math.MaxUint64), "arr": [2]int{1, 2}, "m": map[string]int{"x": 1},
		"p": ptr(int32(4)), "np": (*int)(nil), "b": []byte("hi"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"u": float64(math.MaxUint64), "arr": []any{int64(1), int64(2)}, "m": map[string]any{"x": int64(1)},
		"p": int64(4), "np": nil, "b": "hi",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, bad := range []any{make(chan int), func() {}, map[int]string{1: "a"}, S{1}} {
		if _, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%T) succeeded, want error", bad)
		}
	}
	deep := any(int64(1))
	for i := 0; i < maxDepth+10; i++ {
		deep = []any{deep}
	}
	if _, err := Normalize(deep); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep value: err = %v", err)
	}
}

func TestFailError(t *testing.T) {
	f := &Fail{Reason: "not_found", Message: "no user 7"}
	if got := f.Error(); got != "not_found: no user 7" {
		t.Errorf("got %q", got)
	}
	if got := (&Fail{Reason: "timeout"}).Error(); got != "timeout" {
		t.Errorf("got %q", got)
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{InputTokens: 1, Requests: 1, Duration: time.Second}
	u.Add(Usage{InputTokens: 2, OutputTokens: 3, TotalTokens: 5, Requests: 2, Turns: 1, ToolCalls: 4, Duration: time.Hour})
	want := Usage{InputTokens: 3, OutputTokens: 3, TotalTokens: 5, Requests: 3, Turns: 1, ToolCalls: 4, Duration: time.Second}
	if u != want {
		t.Errorf("got %+v, want %+v", u, want)
	}
}

func TestUsageAddTokens(t *testing.T) {
	u := Usage{InputTokens: 1, Requests: 1, Turns: 2}
	u.AddTokens(Usage{InputTokens: 2, OutputTokens: 3, TotalTokens: 5, CacheReadTokens: 1, CacheWriteTokens: 2, CostUSD: 0.5,
		Requests: 2, Turns: 1, ToolCalls: 4})
	want := Usage{InputTokens: 3, OutputTokens: 3, TotalTokens: 5, CacheReadTokens: 1, CacheWriteTokens: 2, CostUSD: 0.5,
		Requests: 1, Turns: 2}
	if u != want {
		t.Errorf("got %+v, want %+v", u, want)
	}
}

func ptr[T any](v T) *T { return &v }

func FuzzUnmarshalStep(f *testing.F) {
	for _, s := range []*Step{fullStep(), {}, {Fail: &Fail{Reason: "x"}}, {Return: []any{int64(1), "a"}}} {
		data, err := MarshalStep(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{0xde, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := UnmarshalStep(data)
		if err != nil {
			return
		}
		again, err := MarshalStep(s)
		if err != nil {
			t.Fatalf("re-encode of a decoded step failed: %v", err)
		}
		s2, err := UnmarshalStep(again)
		if err != nil {
			t.Fatalf("decode of a re-encoded step failed: %v", err)
		}
		b1, _ := MarshalStep(s2)
		if string(b1) != string(again) {
			t.Fatalf("encoding not stable across a round trip")
		}
	})
}

func TestUnmarshalStepRejectsHugeDeclaredLengths(t *testing.T) {
	// A map with one key "return" whose value claims 2^32-1 array elements:
	// without the bounds check the decoder would allocate tens of gigabytes.
	data := []byte{0x81, 0xa6, 'r', 'e', 't', 'u', 'r', 'n', 0xdd, 0xff, 0xff, 0xff, 0xff}
	if _, err := UnmarshalStep(data); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v, want a bounds error", err)
	}
}

// Zero values are data: a tool that returns 0, false, "" or [] must not
// arrive as nil (msgpack's omitempty would drop them).
func TestZeroResultsSurvive(t *testing.T) {
	for _, v := range []any{int64(0), false, "", []any{}, map[string]any{}, 0.0} {
		data, err := Marshal(&ToolResponse{CallID: "c", Result: v})
		if err != nil {
			t.Fatal(err)
		}
		var resp ToolResponse
		if err := Unmarshal(data, &resp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(resp.Result, v) {
			t.Errorf("tool result %#v arrived as %#v", v, resp.Result)
		}
		data, err = MarshalStep(&Step{Return: v, Trace: []Turn{{Result: v, ToolCalls: []ToolCall{{Name: "t", Result: v}}}}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := UnmarshalStep(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Return, v) || !reflect.DeepEqual(s.Trace[0].Result, v) || !reflect.DeepEqual(s.Trace[0].ToolCalls[0].Result, v) {
			t.Errorf("step value %#v arrived as %#v / %#v / %#v", v, s.Return, s.Trace[0].Result, s.Trace[0].ToolCalls[0].Result)
		}
		ev := Event{Result: v}
		data, err = Marshal(&ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back.Result, v) {
			t.Errorf("event result %#v arrived as %#v (%v)", v, back.Result, err)
		}
	}
}

func TestRoundFloats(t *testing.T) {
	v := map[string]any{"a": 0.1 + 0.2, "b": []any{2.675, int64(3), "x", math.Inf(-1)}, "c": -1.005}
	got := RoundFloats(v, 2)
	want := map[string]any{"a": 0.3, "b": []any{2.68, int64(3), "x", math.Inf(-1)}, "c": -1.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RoundFloats = %#v, want %#v", got, want)
	}
	if f := RoundFloats(0.123456, 0); f != 0.123456 {
		t.Errorf("digits 0 changed the value: %v", f)
	}
}

// TestUnmarshalStepRefusesOtherMessages: the bytes of a tool request (what a
// worker publishes when a tool service makes it call a result subject) are
// not a Step, nor is a message marked with another type; a Step written
// without the marker still decodes when all its keys are Step fields.
func TestUnmarshalStepRefusesOtherMessages(t *testing.T) {
	req, err := Marshal(&ToolRequest{Version: ToolCallVersion, CallID: "1", MissionID: NewMissionID(),
		Tool: "get_customer", Args: map[string]any{"id": int64(7)}})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := UnmarshalStep(req); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not a step") {
		t.Fatalf("tool request decoded as step %+v, err %v", st, err)
	}
	other, err := Marshal(map[string]any{"type": "status", "v": int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalStep(other); err == nil || !strings.Contains(err.Error(), `message type "status" is not "step"`) {
		t.Fatalf("err = %v", err)
	}
	legacy, err := Marshal(&Step{Version: 1, Return: "old", Usage: Usage{Turns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := UnmarshalStep(legacy)
	if err != nil || st.Return != "old" || st.Usage.Turns != 1 {
		t.Fatalf("unmarked step: %+v, %v", st, err)
	}
	marked, err := MarshalStep(&Step{Return: "new"})
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := Unmarshal(marked, &raw); err != nil || raw["type"] != StepType {
		t.Fatalf("MarshalStep wrote %v (%v), want type %q", raw, err, StepType)
	}
}

// TestNormalizeLeavesItsInputAlone: Normalize copies what it converts and
// writes nothing into the value it is given, so a tool's shared result can
// be normalized and encoded by several goroutines at once (run under
// -race); plain data comes back as the same map and slice.
func TestNormalizeLeavesItsInputAlone(t *testing.T) {
	plain := map[string]any{"id": int64(1), "tags": []any{"a", "b"}, "sub": map[string]any{"x": 1.5}}
	mixed := []any{map[string]any{"n": 7, "ok": true}, plain, []byte("raw")}
	out, err := Normalize(mixed)
	if err != nil {
		t.Fatal(err)
	}
	if n := mixed[0].(map[string]any)["n"]; n != 7 {
		t.Fatalf("the input was changed: n is %T", n)
	}
	if _, ok := mixed[2].([]byte); !ok {
		t.Fatalf("the input was changed: item 2 is %T", mixed[2])
	}
	o := out.([]any)
	if o[0].(map[string]any)["n"] != int64(7) || o[2] != "raw" {
		t.Fatalf("normalized = %#v", o)
	}
	if p, ok := o[1].(map[string]any); !ok || reflect.ValueOf(p).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Fatal("plain data was copied")
	}
	if again, _ := Normalize(plain); reflect.ValueOf(again).Pointer() != reflect.ValueOf(plain).Pointer() {
		t.Fatal("plain data was copied")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				v, err := Normalize(mixed)
				if err == nil {
					_, err = Marshal(v)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Marshal reuses the codec's encoders and its buffers, and writes the
// messages' structs (their times included) without copying their fields
// into interfaces: a status, written several times by every mission,
// costs the bytes it returns, one allocation (14 when msgpack tests each
// omitempty field and writes the time by boxing them, and a new buffer
// grown for each message 4), not a new encoder (3 more; the race
// detector's pools drop some of their puts, which costs about one more on
// average).
func TestMarshalReusesEncoders(t *testing.T) {
	st := &Status{Version: StatusVersion, MissionID: "01M8GXXR14QKVJ9F1BZ9RMM7QG", Submitter: DefaultSubmitter, State: StateRunning}
	// the race detector's sync.Pool drops a quarter of its puts at random,
	// and each drop costs a new buffer or encoder
	bound := 2.5
	if raceBuild {
		bound = 4.5
	}
	if n := testing.AllocsPerRun(200, func() { _, _ = Marshal(st) }); n > bound {
		t.Fatalf("%.1f allocations per Marshal of a status, want at most %.1f", n, bound)
	}
}

// Unmarshal reuses its decoders and their readers: a status read costs
// its strings and one allocation more (7 with a new decoder and reader for
// each read; the race detector's pool drops some of its puts, which costs
// about one more on average).
func TestUnmarshalReusesDecoders(t *testing.T) {
	data, err := Marshal(&Status{Version: StatusVersion, MissionID: "01M8GXXR14QKVJ9F1BZ9RMM7QG", Submitter: DefaultSubmitter, State: StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		var s Status
		if err := Unmarshal(data, &s); err != nil || s.State != StateRunning {
			t.Fatalf("%+v: %v", s, err)
		}
	}); n > 5.5 {
		t.Fatalf("%.1f allocations per Unmarshal of a status, want at most 5.5", n)
	}
}

func TestStaticWireTypes(t *testing.T) {
	type leaf struct {
		N    int
		Next *leaf
		Tags map[string]string
	}
	type branch struct {
		Leaves []leaf
		Back   *branch
		Value  any
	}
	type tree struct {
		Branch *branch
		hidden any // normalizeValue skips unexported fields
	}
	_ = tree{}.hidden
	static := staticWireTypes(reflect.TypeFor[tree](), reflect.TypeFor[Status](), reflect.TypeFor[Step](), reflect.TypeFor[Mission]())
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[leaf](), true},
		{reflect.TypeFor[*leaf](), true},
		{reflect.TypeFor[map[string]string](), true},
		{reflect.TypeFor[branch](), false},
		{reflect.TypeFor[*branch](), false},
		{reflect.TypeFor[tree](), false},
		{reflect.TypeFor[Status](), true},
		{reflect.TypeFor[Usage](), true},
		{reflect.TypeFor[time.Time](), true},
		{reflect.TypeFor[Step](), false},
		{reflect.TypeFor[[]Turn](), false},
		{reflect.TypeFor[Fail](), false},
		{reflect.TypeFor[Mission](), false},
	} {
		if static[c.t] != c.want {
			t.Errorf("%s static: %v, want %v", c.t, static[c.t], c.want)
		}
	}
	wireStatic, _ := walkPlan(wireRoots...)
	for ty := range wireStatic {
		if ty.Kind() == reflect.Interface {
			t.Errorf("the messages' static types hold the interface %s", ty)
		}
	}
	// the fields walked: exported, not static
	_, fields := walkPlan(reflect.TypeFor[tree]())
	for ty, want := range map[reflect.Type][]int{reflect.TypeFor[branch](): {1, 2}, reflect.TypeFor[tree](): {0}} {
		if got, ok := fields[ty]; !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fields walked %v, want %v", ty, got, want)
		}
	}
	if _, ok := fields[reflect.TypeFor[leaf]()]; ok {
		t.Error("a static struct has fields to walk")
	}
}

// TestUnmarshalWalksOnlyDynamicValues: the walk after decoding leaves the
// values that hold nothing dynamic alone (a status with labels costs it
// nothing, where copying each label in and out of the map cost three
// allocations) and still normalizes those that do.
func TestUnmarshalWalksOnlyDynamicValues(t *testing.T) {
	st := &Status{Version: StatusVersion, MissionID: "01M8GXXR14QKVJ9F1BZ9RMM7QG", Submitter: DefaultSubmitter, State: StateRunning, Summary: &MissionSummary{Labels: map[string]string{}}}
	for i := range 20 {
		st.Summary.Labels[fmt.Sprint("label", i)] = "v"
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := normalizeValue(reflect.ValueOf(st), 0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%.1f allocations walking a status of 20 labels, want 0", n)
	}
	s := &Step{Version: StepVersion, Return: map[string]any{"n": uint8(3), "b": []byte("x")},
		Memory: map[string]any{"m": []any{uint16(7)}}}
	if err := normalizeValue(reflect.ValueOf(s), 0); err != nil {
		t.Fatal(err)
	}
	want := &Step{Version: StepVersion, Return: map[string]any{"n": int64(3), "b": "x"},
		Memory: map[string]any{"m": []any{int64(7)}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("normalized %#v, want %#v", s, want)
	}
}

// MarshalStepTo encodes a Step without a version into a buffer with the
// bytes MarshalStep returns, leaves the Step as it was, and takes its
// versioned copy and wire form from a pool: no allocation for a Step of
// plain values once the buffer has room.
func TestMarshalStepToAllocations(t *testing.T) {
	s := &Step{Return: int64(7), Attempts: 1, Usage: Usage{ToolCalls: 1}}
	want, err := MarshalStep(s)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := MarshalStepTo(&buf, s); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("encoded %x, %v; MarshalStep encodes %x", buf.Bytes(), err, want)
	}
	if s.Version != 0 {
		t.Fatal("MarshalStepTo modified its argument")
	}
	n := testing.AllocsPerRun(100, func() {
		buf.Reset()
		if err := MarshalStepTo(&buf, s); err != nil {
			t.Fatal(err)
		}
	})
	if !raceBuild && n != 0 {
		t.Errorf("%.1f allocations encoding a step into a buffer with room, want 0", n)
	}
}

// TestUnmarshalWalksMapsInPlace: the walk after decoding reads and writes
// a map[string]any field (a Step's memory, a tool call's arguments) in
// place: nothing allocated for maps of plain values, where reflect's
// iterator and SetMapIndex made three allocations an entry; a value to
// normalize is still replaced.
func TestUnmarshalWalksMapsInPlace(t *testing.T) {
	s := &Step{Version: StepVersion, Memory: map[string]any{"a": int64(1), "b": "x", "c": []any{1.5}},
		Trace: []Turn{{Number: 1, ToolCalls: []ToolCall{{Name: "get", Args: map[string]any{"id": int64(1), "q": "z"}}}}}}
	n := testing.AllocsPerRun(100, func() {
		if err := normalizeValue(reflect.ValueOf(s), 0); err != nil {
			t.Fatal(err)
		}
	})
	if !raceBuild && n != 0 {
		t.Errorf("%.1f allocations walking a step of two plain maps, want 0", n)
	}
	s.Memory["a"], s.Trace[0].ToolCalls[0].Args["id"] = uint16(2), []byte("y")
	if err := normalizeValue(reflect.ValueOf(s), 0); err != nil {
		t.Fatal(err)
	}
	if s.Memory["a"] != int64(2) || s.Trace[0].ToolCalls[0].Args["id"] != "y" || s.Memory["b"] != "x" {
		t.Fatalf("normalized memory %#v, args %#v", s.Memory, s.Trace[0].ToolCalls[0].Args)
	}
	s.Memory["bad"] = struct{ X chan int }{}
	if err := normalizeValue(reflect.ValueOf(s), 0); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("a value with no plain form: %v", err)
	}
}

// UnmarshalStep makes the Step and its wire form in one allocation: a
// Step of a scalar return decodes in 2 (the Step and the type marker's
// string), where two structs made 3.
func TestUnmarshalStepAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	data, err := MarshalStep(&Step{Return: int64(7), Attempts: 1, Usage: Usage{ToolCalls: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := UnmarshalStep(data); err != nil || s.Return != int64(7) || s.Usage.ToolCalls != 1 {
		t.Fatalf("decoded %+v, %v", s, err)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := UnmarshalStep(data); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2 {
		t.Errorf("%.0f allocations decoding a step, want at most 2", n)
	}
}

// A type outside the messages (a caller's own envelope, a tool response
// read field by field) is walked by the plan made at its first use: the
// fields that can hold a dynamic value are normalized, through slices of
// structs too, with no allocation for plain values, and an error names
// the path to the value that has no plain form.
func TestUnmarshalWalksOtherTypesByTheirPlan(t *testing.T) {
	type envelope struct {
		Version int                `msgpack:"v"`
		CallID  string             `msgpack:"call_id"`
		Raw     msgpack.RawMessage `msgpack:"raw"`
		Error   *ToolError         `msgpack:"error,omitempty"`
		Labels  map[string]string  `msgpack:"labels"`
		Count   int64              `msgpack:"count"`
		Result  any                `msgpack:"result"`
		Items   []struct {
			Name string `msgpack:"name"`
			Val  any    `msgpack:"val"`
		} `msgpack:"items"`
	}
	data, err := Marshal(map[string]any{"v": 1, "call_id": "c1", "raw": []byte{1}, "count": 3,
		"labels": map[string]any{"a": "b"}, "result": map[string]any{"n": uint8(4), "s": []any{uint16(2)}},
		"items": []any{map[string]any{"name": "x", "val": uint32(5)}}})
	if err != nil {
		t.Fatal(err)
	}
	var e envelope
	if err := Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	if e.Result.(map[string]any)["n"] != int64(4) || e.Result.(map[string]any)["s"].([]any)[0] != int64(2) ||
		e.Items[0].Val != int64(5) || e.Items[0].Name != "x" || e.Labels["a"] != "b" || e.CallID != "c1" {
		t.Fatalf("decoded %+v", e)
	}
	e.Result = map[string]any{}
	n := testing.AllocsPerRun(100, func() {
		e.Result.(map[string]any)["m"] = int64(1)
		e.Items[0].Val = "y"
		if err := normalizeValue(reflect.ValueOf(&e), 0); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%.1f allocations walking a decoded envelope of plain values, want 0", n)
	}
	e.Items[0].Val = struct{ C chan int }{}
	if err := normalizeValue(reflect.ValueOf(&e), 0); err == nil || !strings.Contains(err.Error(), "Items: [0]: Val: ") {
		t.Fatalf("a value with no plain form: %v", err)
	}
}

// The sub-agents of a mission's agent (a map of pointers) are walked
// where they are: a mission of three sub-agents costs the walk no
// allocation, where copying each out of the map and storing it back cost
// two an entry; their dynamic values are still normalized.
func TestUnmarshalWalksSubAgentsInPlace(t *testing.T) {
	m := &Mission{Version: MissionVersion, ID: "01JB0000000000000000000000", Kind: KindAgent,
		Agent: &AgentSpec{Prompt: "p", SubAgents: map[string]*AgentSpec{}}}
	for _, name := range []string{"a", "b", "c"} {
		m.Agent.SubAgents[name] = &AgentSpec{Prompt: name, LLMOpts: map[string]any{"temperature": 0.5}}
	}
	data, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got Mission
	if err := Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Agent.SubAgents, m.Agent.SubAgents) {
		t.Fatalf("sub-agents %#v, want %#v", got.Agent.SubAgents, m.Agent.SubAgents)
	}
	got.Agent.SubAgents["b"].LLMOpts["max_tokens"] = uint16(100)
	if err := normalizeValue(reflect.ValueOf(&got), 0); err != nil {
		t.Fatal(err)
	}
	if v := got.Agent.SubAgents["b"].LLMOpts["max_tokens"]; v != int64(100) {
		t.Fatalf("a sub-agent's option normalized to %#v", v)
	}
	n := testing.AllocsPerRun(100, func() {
		if err := normalizeValue(reflect.ValueOf(&got), 0); err != nil {
			t.Fatal(err)
		}
	})
	if !raceBuild && n != 0 {
		t.Errorf("%.1f allocations walking a mission of three sub-agents, want 0", n)
	}
	got.Agent.SubAgents["c"].LLMOpts["bad"] = struct{ C chan int }{}
	if err := normalizeValue(reflect.ValueOf(&got), 0); err == nil || !strings.Contains(err.Error(), "SubAgents: c: LLMOpts: bad: ") {
		t.Fatalf("a value with no plain form: %v", err)
	}
}
