package messages

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// testApprovals are records as workers and deciders write them, and some
// with every kind of plain argument value.
func testApprovals() []*Approval {
	now := time.Date(2026, 11, 30, 16, 0, 0, 123456789, time.UTC)
	base := Approval{Version: ApprovalVersion, MissionID: "01JB0000000000000000000000", Call: "1.3d6db6a8812d1fe0cb4050a3.0",
		State: ApprovalPending, Tool: "refund", Service: "shop", Args: map[string]any{"order": "A-1", "amount": int64(500), "_card": FirewallMask},
		Turn: 1, Rule: "service shop: amount > 100", Priority: "normal", Submitter: "anonymous", RequestedAt: now, Deadline: now.Add(24 * time.Hour)}
	decided := base
	decided.State, decided.DecidedBy, decided.DecidedAt, decided.Reason = ApprovalApproved, "ann", now.Add(time.Second), "fine"
	decided.EditedArgs = map[string]any{"order": "A-2", "amount": int64(90), "_card": FirewallMask}
	odd := base
	odd.Args = map[string]any{
		"neg": int64(-1), "neg8": int64(-100), "neg16": int64(-30000), "neg32": int64(-3e9), "big": int64(math.MaxInt64), "min": int64(math.MinInt64),
		"u8": int64(200), "u16": int64(60000), "u32": int64(4e9), "f": 1.5, "nan": math.Inf(1), "t": true, "no": false, "nil": nil,
		"empty": "", "long": string(bytes.Repeat([]byte("x"), 300)), "list": []any{int64(1), "a", []any{}, map[string]any{}},
		"nested": map[string]any{"a": map[string]any{"b": []any{nil, 2.25, "c"}}}, "": "empty key",
	}
	odd.Program, odd.Position = "(tool/refund {:amount 500})", "1:1"
	zero := Approval{Version: ApprovalVersion, MissionID: base.MissionID, Call: base.Call, State: ApprovalDenied, Tool: "t", Args: map[string]any{}}
	old := base
	old.RequestedAt, old.Deadline = time.Unix(1<<35, 7), time.Unix(12, 0)
	return []*Approval{&base, &decided, &odd, &zero, &old}
}

// TestApprovalDecoderMatchesTheCodec: an approval record as Marshal
// writes it is read without the msgpack decoder, into the same record
// the decoder reads.
func TestApprovalDecoderMatchesTheCodec(t *testing.T) {
	for i, a := range testApprovals() {
		data, err := Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var fast, codec Approval
		if !decodeApproval(data, &fast) {
			t.Fatalf("record %d: not read without the decoder", i)
		}
		if err := unmarshalCodec(data, &codec, false); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&fast, &codec) {
			t.Errorf("record %d:\n read  %#v\n codec %#v", i, fast, codec)
		}
		var viaUnmarshal Approval
		if err := Unmarshal(data, &viaUnmarshal); err != nil || !reflect.DeepEqual(&viaUnmarshal, &codec) {
			t.Errorf("record %d: Unmarshal gave %#v, %v", i, viaUnmarshal, err)
		}
	}
}

// TestApprovalDecoderReadsOtherEncodings: the same values written in the
// other forms msgpack has for them (binary for strings, wider integer
// codes, float32) read as the decoder reads them; forms it does not read
// (an unknown or repeated key, a nil string, an extension among the
// arguments, a non-string map key, a struct as an array) are left to the
// decoder, with the same result or error.
func TestApprovalDecoderReadsOtherEncodings(t *testing.T) {
	type kv struct {
		k string
		v func(e *msgpack.Encoder) error
	}
	str := func(s string) func(e *msgpack.Encoder) error {
		return func(e *msgpack.Encoder) error { return e.EncodeString(s) }
	}
	bin := func(s string) func(e *msgpack.Encoder) error {
		return func(e *msgpack.Encoder) error { return e.EncodeBytes([]byte(s)) }
	}
	tm := func(e *msgpack.Encoder) error { return e.EncodeTime(time.Unix(1764518400, 5)) }
	args := func(e *msgpack.Encoder) error {
		if err := e.EncodeMapLen(7); err != nil {
			return err
		}
		for _, f := range []func() error{
			func() error { return e.EncodeString("u64") }, func() error { return e.EncodeUint64(math.MaxUint64) },
			func() error { return e.EncodeString("u64s") }, func() error { return e.EncodeUint64(5) },
			func() error { return e.EncodeString("i64") }, func() error { return e.EncodeInt64(-5) },
			func() error { return e.EncodeString("f32") }, func() error { return e.EncodeFloat32(0.1) },
			func() error { return e.EncodeBytes([]byte("binkey")) }, func() error { return e.EncodeBytes([]byte("binval")) },
			func() error { return e.EncodeString("arr16") }, func() error { return e.EncodeArrayLen(17) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		for i := range 17 {
			if err := e.EncodeUint16(uint16(i)); err != nil {
				return err
			}
		}
		if err := e.EncodeString("map16"); err != nil {
			return err
		}
		if err := e.EncodeMapLen(17); err != nil {
			return err
		}
		for i := range 17 {
			if err := e.EncodeString(string(rune('a' + i))); err != nil {
				return err
			}
			if err := e.EncodeInt8(int8(-i)); err != nil {
				return err
			}
		}
		return nil
	}
	common := []kv{{"v", func(e *msgpack.Encoder) error { return e.EncodeUint32(1) }}, {"mission_id", bin("01JB0000000000000000000000")},
		{"call", str("1.ab.0")}, {"state", bin("approved")}, {"tool", str("t")}, {"turn", func(e *msgpack.Encoder) error { return e.EncodeInt16(3) }},
		{"requested_at", tm}, {"deadline", tm}, {"args", args}}
	encode := func(fields []kv) []byte {
		var buf bytes.Buffer
		e := msgpack.NewEncoder(&buf)
		if err := e.EncodeMapLen(len(fields)); err != nil {
			t.Fatal(err)
		}
		for _, f := range fields {
			if err := e.EncodeString(f.k); err != nil {
				t.Fatal(err)
			}
			if err := f.v(e); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	with := func(extra ...kv) []kv { return append(append([]kv(nil), common...), extra...) }
	for _, c := range []struct {
		name   string
		fields []kv
		fast   bool
	}{
		{"other encodings", common, true},
		{"nil edited args", with(kv{"edited_args", func(e *msgpack.Encoder) error { return e.EncodeNil() }}), true},
		{"unknown key", with(kv{"later_field", str("x")}), false},
		{"repeated key", with(kv{"tool", str("u")}), false},
		{"nil string", with(kv{"reason", func(e *msgpack.Encoder) error { return e.EncodeNil() }}), false},
		{"time in args", with(kv{"edited_args", func(e *msgpack.Encoder) error {
			return e.Encode(map[string]any{"at": time.Unix(1, 0)})
		}}), false},
		{"integer key", with(kv{"edited_args", func(e *msgpack.Encoder) error { return e.Encode(map[int]any{1: "a"}) }}), false},
		{"time as a string", with(kv{"decided_at", str("2026-11-30T16:00:00Z")}), false},
		{"float turn", with(kv{"turn", func(e *msgpack.Encoder) error { return e.EncodeFloat64(1) }}), false},
	} {
		data := encode(c.fields)
		var fast Approval
		if got := decodeApproval(data, &fast); got != c.fast {
			t.Errorf("%s: read without the decoder %v, want %v", c.name, got, c.fast)
		}
		var viaUnmarshal, codec Approval
		err, codecErr := Unmarshal(data, &viaUnmarshal), unmarshalCodec(data, &codec, false)
		if (err == nil) != (codecErr == nil) || !reflect.DeepEqual(&viaUnmarshal, &codec) {
			t.Errorf("%s: Unmarshal %#v, %v; the decoder %#v, %v", c.name, viaUnmarshal, err, codec, codecErr)
		}
		if c.fast && !reflect.DeepEqual(&fast, &codec) {
			t.Errorf("%s:\n read  %#v\n codec %#v", c.name, fast, codec)
		}
	}
	// a struct written as an array is the decoder's
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.UseArrayEncodedStructs(true)
	if err := e.Encode(testApprovals()[0]); err != nil {
		t.Fatal(err)
	}
	var a Approval
	if decodeApproval(buf.Bytes(), &a) {
		t.Error("a record written as an array read without the decoder")
	}
}

// TestApprovalDecoderOnDamagedRecords: records with bytes changed, cut
// or added decode through Unmarshal exactly as through the decoder: the
// same record or an error from both.
func TestApprovalDecoderOnDamagedRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var fastTaken int
	for _, a := range testApprovals() {
		data, err := Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		for range 3000 {
			d := bytes.Clone(data)
			switch rng.IntN(3) {
			case 0:
				for range 1 + rng.IntN(3) {
					d[rng.IntN(len(d))] = byte(rng.IntN(256))
				}
			case 1:
				d = d[:rng.IntN(len(d))]
			default:
				d = append(d, byte(rng.IntN(256)))
			}
			var got, want Approval
			if decodeApproval(d, &Approval{}) {
				fastTaken++
			}
			err, wantErr := Unmarshal(d, &got), unmarshalCodec(d, &want, false)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("% x: Unmarshal %v, the decoder %v", d, err, wantErr)
			}
			if err == nil && !sameApproval(&got, &want) {
				t.Fatalf("% x:\n read  %#v\n codec %#v", d, got, want)
			}
		}
	}
	if fastTaken == 0 {
		t.Error("no damaged record was read without the decoder")
	}
}

// TestApprovalDecoderKnowsEveryField: the decoder and approvalZero list
// every field of Approval; a field added to it needs them changed.
func TestApprovalDecoderKnowsEveryField(t *testing.T) {
	typ := reflect.TypeFor[Approval]()
	if typ.NumField() != 19 {
		t.Fatalf("Approval has %d fields, decodeApproval and approvalZero know 19", typ.NumField())
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if approvalFieldOf([]byte(name)) == 0 {
			t.Errorf("field %s (%q) unknown to decodeApproval", f.Name, name)
		}
		var a Approval
		v := reflect.ValueOf(&a).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int:
			v.SetInt(1)
		case reflect.Map:
			v.Set(reflect.MakeMap(v.Type()))
		case reflect.Struct:
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
		}
		if approvalZero(&a) {
			t.Errorf("approvalZero misses field %s", f.Name)
		}
	}
	if !approvalZero(&Approval{}) {
		t.Error("approvalZero of the zero Approval is false")
	}
}

// sameApproval reports whether a and b are equal, a NaN among their
// arguments equal to a NaN.
func sameApproval(a, b *Approval) bool {
	x, y := *a, *b
	if !samePlain(x.Args, y.Args) || !samePlain(x.EditedArgs, y.EditedArgs) {
		return false
	}
	x.Args, y.Args, x.EditedArgs, y.EditedArgs = nil, nil, nil, nil
	return reflect.DeepEqual(x, y)
}

// samePlain is reflect.DeepEqual of plain values, with NaN equal to NaN.
func samePlain(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !samePlain(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !samePlain(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestApprovalDecodeAllocations: a decided record as a decider and a
// resumed run read it decodes in 11 allocations (the msgpack decoder
// makes 31): its strings one copy of the data, its two maps of arguments
// and their boxed values.
func TestApprovalDecodeAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector allocates")
	}
	data, err := Marshal(testApprovals()[1])
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		var a Approval
		if err := Unmarshal(data, &a); err != nil {
			t.Fatal(err)
		}
	})
	codec := testing.AllocsPerRun(100, func() {
		var a Approval
		if err := unmarshalCodec(data, &a, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations, the decoder %.0f", n, codec)
	if n > 11 {
		t.Errorf("decoding an approval record: %.0f allocations, want at most 11", n)
	}
}

// FuzzApprovalDecoder: on any input within the bounds, Unmarshal into an
// Approval (the hand-written reader, falling back to the decoder) and the
// msgpack decoder alone agree: both fail, or both read the same record.
// Neither panics.
func FuzzApprovalDecoder(f *testing.F) {
	for _, a := range testApprovals() {
		data, err := Marshal(a)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckBounds(data) != nil {
			return // refused before either reads it
		}
		var got, want Approval
		err, wantErr := Unmarshal(data, &got), unmarshalCodec(data, &want, false)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("% x: Unmarshal %v, the decoder %v", data, err, wantErr)
		}
		if err == nil && !sameApproval(&got, &want) {
			t.Fatalf("% x:\n read  %#v\n codec %#v", data, got, want)
		}
	})
}
