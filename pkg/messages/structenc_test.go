package messages

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// codecMarshal is Marshal as the msgpack encoder alone writes it.
func codecMarshal(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return buf.Bytes()
}

// fillRandom sets v, and what it holds, to random values: zero and empty
// ones as often as others, so that every omitempty test is taken both ways.
func fillRandom(r *rand.Rand, v reflect.Value, depth int) {
	if depth > 5 {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt([]int64{0, 0, 1, -3, 300, 1 << 40}[r.IntN(6)] % (1 << (v.Type().Bits() - 1)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint([]uint64{0, 0, 1, 200}[r.IntN(4)])
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 0, 1.5, -2}[r.IntN(4)])
	case reflect.String:
		v.SetString([]string{"", "", "x", "a longer string, beyond what fits a fixstr of msgpack"}[r.IntN(4)])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch r.IntN(3) {
		case 0:
			return
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), 1+r.IntN(2), 3)
			for i := range s.Len() {
				fillRandom(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range v.Len() {
			fillRandom(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		switch r.IntN(3) {
		case 0:
			return
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			// the encoder sorts the keys of map[string]any, string and
			// bool only: other maps get one entry, whose bytes are fixed
			n := 1
			switch v.Type() {
			case reflect.TypeFor[map[string]any](), reflect.TypeFor[map[string]string](), reflect.TypeFor[map[string]bool]():
				n += r.IntN(3)
			}
			m := reflect.MakeMap(v.Type())
			for range n {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fillRandom(r, k, depth+1)
				fillRandom(r, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return
		}
		choices := []any{nil, nil, "s", "", int64(0), int64(7), 0.0, 2.5, false, true,
			map[string]any{}, map[string]any{"b": int64(1), "a": []any{"x", nil}}, []any{}, []any{int64(1), "y"}}
		if c := choices[r.IntN(len(choices))]; c != nil {
			v.Set(reflect.ValueOf(c))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if r.IntN(2) == 1 {
				v.Set(reflect.ValueOf(time.Unix(1700000000+r.Int64N(1000), r.Int64N(1e9)).UTC()))
			}
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fillRandom(r, v.Field(i), depth+1)
			}
		}
	}
}

// Marshal writes the messages' structs itself (no boxing of each
// omitempty field): the bytes are the msgpack encoder's for every planned
// type, over random values that take every omitempty field both empty and
// not, nil and empty containers, nil embedded pointers and nested structs.
func TestStructEncoderWritesTheCodecsBytes(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Mission](), reflect.TypeFor[Status](), reflect.TypeFor[Event](),
		reflect.TypeFor[Step](), reflect.TypeFor[stepWire](), reflect.TypeFor[MissionRecord](),
		reflect.TypeFor[ToolRequest](), reflect.TypeFor[ToolResponse](), reflect.TypeFor[AgentSpec]()} {
		if wirePlans[typ] == nil {
			t.Errorf("%s has no plan: Marshal leaves it to the encoder", typ)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for typ := range wirePlans {
		for i := range 300 {
			p := reflect.New(typ)
			if i > 0 {
				fillRandom(r, p.Elem(), 0)
			}
			got, err := Marshal(p.Interface())
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if want := codecMarshal(t, p.Interface()); !bytes.Equal(got, want) {
				t.Fatalf("%s: Marshal wrote\n%x\nthe encoder\n%x\nfor %+v", typ, got, want, p.Elem().Interface())
			}
		}
	}
	// a slice of planned structs, and a value Marshal leaves to the encoder
	for _, v := range []any{[]*Event{{Kind: EventStarted}, nil}, []Status{{State: StateQueued}}, map[string]any{"a": int64(1)}, struct{ A int }{3}} {
		got, err := Marshal(v)
		if err != nil || !bytes.Equal(got, codecMarshal(t, v)) {
			t.Fatalf("%T: %x (%v), want %x", v, got, err, codecMarshal(t, v))
		}
	}
}

// A struct the plans cannot judge inside an omitempty field of type any
// (a Go runner's own struct as a Step's return) is left to the encoder
// whole, with the encoder's bytes.
func TestStructEncoderLeavesForeignStructsToTheEncoder(t *testing.T) {
	type own struct {
		A string `msgpack:"a,omitempty"`
	}
	for _, s := range []*Step{{Return: own{}}, {Return: own{A: "x"}}, {Return: &own{}}, {Return: time.Time{}}} {
		got, err := Marshal(s)
		if err != nil || !bytes.Equal(got, codecMarshal(t, s)) {
			t.Fatalf("%+v: %x (%v), want %x", s, got, err, codecMarshal(t, s))
		}
	}
}

// Equal values give equal bytes also for maps the encoder would write in
// Go's iteration order: an agent's sub-agents are written by their names.
func TestMarshalSortsEveryStringKeyedMap(t *testing.T) {
	spec := &AgentSpec{Prompt: "p", SubAgents: map[string]*AgentSpec{}}
	for _, n := range []string{"delta", "alpha", "charlie", "bravo", "echo", "foxtrot"} {
		spec.SubAgents[n] = &AgentSpec{Prompt: n}
	}
	m := &Mission{ID: "m1", Agent: spec}
	first, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		again, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("the same mission encoded to different bytes:\n%x\n%x", first, again)
		}
	}
	var back Mission
	if err := Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Agent.SubAgents, spec.SubAgents) {
		t.Fatalf("sub-agents came back as %+v, want %+v", back.Agent.SubAgents, spec.SubAgents)
	}
	// the names in order
	at := func(name string) int { return bytes.Index(first, []byte(name)) }
	if !(at("alpha") < at("bravo") && at("bravo") < at("charlie") && at("charlie") < at("delta") && at("delta") < at("echo")) {
		t.Fatalf("sub-agents not written by their names: %q", first)
	}
}

// Whether a field's type has an IsZero method is known from its plan, so
// that an encode asks reflect only for fields of interface type; the plan
// says what reflect would.
func TestWirePlansKnowWhichFieldsHaveIsZero(t *testing.T) {
	sawYes := false
	for typ, p := range wirePlans {
		for _, f := range p.fields {
			ft := typ
			for i, x := range f.index {
				if i > 0 && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				ft = ft.Field(x).Type
			}
			want := zeroerNo
			switch {
			case ft.Kind() == reflect.Interface:
				want = zeroerDynamic
			case ft.Implements(zeroerType):
				want = zeroerYes
			}
			if f.zeroer != want {
				t.Errorf("%s.%s (%s): plan says %d, reflect %d", typ, f.name, ft, f.zeroer, want)
			}
			sawYes = sawYes || f.zeroer == zeroerYes
		}
	}
	if !sawYes {
		t.Error("no planned field has an IsZero method: the times of a mission should")
	}
}

// BenchmarkMarshal encodes a running status, a mission of a typical
// agent submission and a tool's answer of 200 orders (each a map holding
// a slice of one map).
func BenchmarkMarshal(b *testing.B) {
	now := time.Now()
	var orders []any
	for i := range 200 {
		orders = append(orders, map[string]any{"id": int64(i), "customer_id": int64(i % 37), "total": float64(i) * 1.25, "status": "paid",
			"items": []any{map[string]any{"sku": "A-" + strconv.Itoa(i), "qty": int64(2)}}})
	}
	for _, v := range []any{
		&ToolResponse{Result: map[string]any{"orders": orders, "next": nil}},
		&Status{Version: 1, MissionID: "01JB0000000000000000000000", Submitter: "s", State: StateRunning, Worker: "w1", Attempt: 1, StreamSeq: 7, UpdatedAt: now},
		&Mission{Version: MissionVersion, ID: "01JB0000000000000000000000", Kind: KindAgent, CreatedAt: now,
			Agent: &AgentSpec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int}", Tools: []string{"get_customer"}},
			Tools: []string{"get_customer"}, Context: map[string]any{"n": int64(1)}},
	} {
		b.Run(reflect.TypeOf(v).Elem().Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// textKind is a string with an encoding of its own.
type textKind string

func (k textKind) MarshalText() ([]byte, error) { return []byte("t:" + string(k)), nil }

// Strings, bools and numbers with no encoding of their own are written by
// the plan (encodeScalar) with the encoder's bytes; those with one are
// left to the encoder.
func TestWirePlansKnowWhichFieldsAreScalars(t *testing.T) {
	scalars := 0
	for _, p := range wirePlans {
		for _, f := range p.fields {
			if f.scalar {
				scalars++
			}
		}
	}
	if scalars == 0 {
		t.Fatal("no planned field is written as a scalar")
	}
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[string](): true, reflect.TypeFor[int64](): true, reflect.TypeFor[uint8](): true,
		reflect.TypeFor[float32](): true, reflect.TypeFor[bool](): true, reflect.TypeFor[time.Duration](): true,
		reflect.TypeFor[textKind](): false, reflect.TypeFor[time.Time](): false, reflect.TypeFor[[]byte](): false,
		reflect.TypeFor[any](): false, reflect.TypeFor[*string](): false,
	} {
		if isScalar(typ) != want {
			t.Errorf("isScalar(%s) = %v, want %v", typ, !want, want)
		}
	}
	var buf bytes.Buffer
	for _, v := range []any{"", "x", strings.Repeat("s", 300), true, int64(-1 << 40), int8(-5), uint64(1 << 63), uint16(300), float32(1.5), 2.25, 5 * time.Second} {
		buf.Reset()
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true)
		if err := encodeScalar(enc, reflect.ValueOf(v)); err != nil {
			t.Fatal(err)
		}
		if want := codecMarshal(t, v); !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%T %v: %x, the encoder %x", v, v, buf.Bytes(), want)
		}
	}
}

// Plain data in the messages' maps, slices and dynamic fields is written
// with the encoder's bytes: maps of up to plainKeys keys and beyond,
// slices of every kind of value, nested ones, nil ones, and values that
// are not plain data (times, named types, typed nils), which the encoder
// writes.
func TestPlainDataWritesTheCodecsBytes(t *testing.T) {
	type name string
	keys := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[strings.Repeat("k", i%5)+string(rune('z'-i%26))+strconv.Itoa(i)] = int64(i * 1000)
		}
		return m
	}
	values := []any{
		map[string]any{}, keys(1), keys(plainKeys - 1), keys(plainKeys), keys(plainKeys + 1), keys(40),
		[]any{}, []any(nil), map[string]any(nil),
		[]any{nil, true, false, int64(-1), int64(-200), int64(70000), int64(1) << 40, uint64(1) << 63, 1.5, float32(2.5), "s",
			strings.Repeat("x", 40), []byte("b"), []any{[]any{}}, map[string]any{"n": nil, "m": map[string]any{"x": []any{int64(3)}}},
			[]any(nil), map[string]any(nil), time.Unix(1700000000, 5).UTC(), name("named"), 3, time.Second, (*Status)(nil),
			[]string{"a"}, map[string]string{"b": "c", "a": "d"}},
		map[string]any{"times": []any{time.Unix(0, 1).UTC()}, "": "empty key", "é": "non-ASCII key", "Z": 1, "a": int64(2)},
	}
	for i, v := range values {
		for _, s := range []any{&Event{Kind: EventToolResult, Result: v, Data: map[string]any{"v": v}},
			&Step{Return: v}, &Mission{Context: map[string]any{"v": v}}} {
			got, err := Marshal(s)
			if err != nil {
				t.Fatalf("value %d in %T: %v", i, s, err)
			}
			if want := codecMarshal(t, s); !bytes.Equal(got, want) {
				t.Fatalf("value %d in %T: Marshal wrote\n%x\nthe encoder\n%x", i, s, got, want)
			}
		}
	}
}

// encodePlainMap sorts the keys of a small map on its stack: writing an
// event's data of a few keys allocates nothing beyond the buffer.
func TestPlainMapAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector allocates")
	}
	ev := &Event{Version: EventVersion, MissionID: "01JB0000000000000000000000", Kind: EventToolResult, Time: time.Unix(1700000000, 0),
		Tool: "refund", Result: map[string]any{"refunded": int64(500)},
		Data: map[string]any{"approval": map[string]any{"call": "1.ab.0", "state": ApprovalApproved, "decided_by": "ann", "reason": ""}}}
	var buf bytes.Buffer
	n := testing.AllocsPerRun(100, func() {
		buf.Reset()
		if err := MarshalTo(&buf, ev); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("writing a tool result event: %.0f allocations, want 0", n)
	}
}
