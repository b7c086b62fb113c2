package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// appendArgsJSON writes what json.Marshal writes, byte for byte, for
// arguments of scalars, and declines the rest.
func TestAppendArgsJSONAsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", "é", "日本", "\"", "\\", "<", ">", "&", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f",
		"\u2028", "\u2029", "🙂", " ", "/", "'", "id", "_phone"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 5000 {
		args := map[string]any{}
		for range r.IntN(11) {
			var v any
			switch r.IntN(5) {
			case 0:
				v = nil
			case 1:
				v = r.IntN(2) == 0
			case 2:
				v = r.Int64() - r.Int64()
			default:
				v = str()
			}
			args[str()] = v
		}
		if i == 0 {
			args = nil
		}
		want, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendArgsJSON([]byte("x"), args)
		if !ok || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("%#v: wrote %q (%v), json.Marshal %q", args, got, ok, want)
		}
	}
	for _, args := range []map[string]any{{"f": 1.5}, {"s": "\xff"}, {"\xfe": "k"}, {"l": []any{int64(1)}},
		{"m": map[string]any{}}, {"i": 3}, {"ok": "x", "bad": float64(2)}} {
		if got, ok := appendArgsJSON([]byte("x"), args); ok || string(got) != "x" {
			t.Errorf("%#v: wrote %q, %v; want it declined", args, got, ok)
		}
	}
}

type plainRecord struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Empty   string `json:"empty,omitempty"`
	Off     bool   `json:"off,omitempty"`
	On      bool
	Small   uint8         `json:"small"`
	U32     uint32        `json:"u32,omitempty"`
	Big     int64         `json:"big"`
	Wait    time.Duration `json:"wait"`
	Skipped string        `json:"-"`
	hidden  string
}

type textName string

func (n textName) MarshalText() ([]byte, error) { return []byte("t:" + n), nil }

type inner struct{ A int }

// A plan reads a result into the values messages.FromJSON returns for it;
// types whose JSON it does not write as a plain record get no plan.
func TestPlainPlanAsFromJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rec := func() plainRecord {
		s := []string{"", "x", "<é>", "\u2028", "日本"}
		return plainRecord{ID: r.IntN(600) - 300, Name: s[r.IntN(len(s))], Empty: s[r.IntN(2)], Off: r.IntN(2) == 0,
			On: r.IntN(2) == 0, Small: uint8(r.Uint32()), U32: uint32(r.IntN(2)) * r.Uint32(), Big: r.Int64() - r.Int64(),
			Wait: time.Duration(r.Int64()), Skipped: "s", hidden: "h"}
	}
	check := func(v any) {
		t.Helper()
		want, err := messages.FromJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		p := newPlainPlan(reflect.TypeOf(v))
		if p == nil {
			t.Fatalf("no plan for %T", v)
		}
		got, ok := p.plain(reflect.ValueOf(v))
		if !ok || !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%T %+v: plan read %#v (%v), FromJSON %#v", v, v, got, ok, want)
		}
	}
	for range 500 {
		check(rec())
		x := rec()
		check(&x)
		recs := make([]plainRecord, r.IntN(4))
		for i := range recs {
			recs[i] = rec()
		}
		check(recs)
	}
	check((*plainRecord)(nil))
	check([]plainRecord(nil))
	check(struct{}{})
	if p := newPlainPlan(reflect.TypeFor[plainRecord]()); p != nil {
		if _, ok := p.plain(reflect.ValueOf(plainRecord{Name: "\xff"})); ok {
			t.Error("a string of invalid UTF-8 read by the plan, which encoding/json would change")
		}
	}
	for _, v := range []any{
		0, "s", []int{1}, map[string]any{},
		struct{ F float64 }{}, struct{ P *int }{}, struct{ S []string }{}, struct{ In inner }{},
		struct{ inner }{}, struct {
			N int `json:"n,string"`
		}{}, struct {
			N int `json:"n,omitzero"`
		}{}, struct {
			N int `json:"a b"`
		}{}, struct {
			A int
			B int `json:"A"`
		}{}, struct{ T textName }{}, struct{ T time.Time }{}, struct{ U uint64 }{}, struct{ U uint }{},
		[]*plainRecord{}, &[]plainRecord{},
	} {
		if p := newPlainPlan(reflect.TypeOf(v)); p != nil {
			t.Errorf("%T has a plan", v)
		}
	}
}

type shopCustomer struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Region string `json:"region"`
	Tier   string `json:"tier"`
	Phone  string `json:"_phone"`
}

// A typed tool's arguments of scalars and its result of a plain record
// skip the JSON between, and the result is kept typed until the service
// encodes it: 2 allocations for a call of a customer lookup's handler
// (the arguments' struct and the result), where the result's map and its
// strings boxed made 8 and the JSON both ways 28.
func TestTypedToolAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocations counted without the race detector")
	}
	fn := typedFunc(func(_ context.Context, in struct {
		ID int `json:"id"`
	}) (shopCustomer, error) {
		return shopCustomer{ID: in.ID, Name: "Ada", Email: "ada@example.com", Region: "west", Tier: "gold", Phone: "555"}, nil
	})
	ctx := context.Background()
	args := map[string]any{"id": int64(7)}
	got, err := fn(ctx, args)
	want := map[string]any{"id": int64(7), "name": "Ada", "email": "ada@example.com", "region": "west", "tier": "gold", "_phone": "555"}
	re, ok := got.(resultEncoder)
	if err != nil || !ok {
		t.Fatalf("got %#v, %v", got, err)
	}
	if plain, err := re.plainResult(); err != nil || !reflect.DeepEqual(plain, want) {
		t.Fatalf("plain data %#v, %v", plain, err)
	}
	var enc, wantEnc bytes.Buffer
	if err := messages.MarshalTo(&wantEnc, want); err != nil {
		t.Fatal(err)
	}
	if ok, err := re.encodeResult(&enc); !ok || err != nil || !bytes.Equal(enc.Bytes(), wantEnc.Bytes()) {
		t.Fatalf("encoded %x (%v, %v), want %x", enc.Bytes(), ok, err, wantEnc.Bytes())
	}
	if _, err := fn(ctx, map[string]any{"id": int64(7), "di": "x"}); err == nil || !strings.Contains(err.Error(), `unknown field "di"`) {
		t.Fatalf("an argument In has no field for: %v", err)
	}
	n := testing.AllocsPerRun(200, func() {
		if _, err := fn(ctx, args); err != nil {
			t.Fatal(err)
		}
	})
	if n > 2 {
		t.Errorf("%.0f allocations a call of a typed tool, want at most 2", n)
	}
}

// A plan writes a result's msgpack as messages.MarshalTo writes the plain
// data the plan reads, byte for byte, and declines a string of invalid
// UTF-8, leaving the buffer as it was.
func TestPlainPlanEncodesAsMarshalTo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rec := func() plainRecord {
		s := []string{"", "x", "<é>", "\u2028", "日本", strings.Repeat("long ", 60)}
		n := []int{0, 1, -1, 127, 128, -32, -33, 255, 256, -129, 65535, 65536, r.Int() - r.Int()}
		return plainRecord{ID: n[r.IntN(len(n))], Name: s[r.IntN(len(s))], Empty: s[r.IntN(2)], Off: r.IntN(2) == 0,
			On: r.IntN(2) == 0, Small: uint8(r.Uint32()), U32: uint32(r.IntN(2)) * r.Uint32(), Big: r.Int64() - r.Int64(),
			Wait: time.Duration(n[r.IntN(len(n))]), Skipped: "s", hidden: "h"}
	}
	check := func(v any) {
		t.Helper()
		p := newPlainPlan(reflect.TypeOf(v))
		if p == nil {
			t.Fatalf("no plan for %T", v)
		}
		rv := reflect.New(reflect.TypeOf(v)).Elem()
		rv.Set(reflect.ValueOf(v))
		plain, ok := p.plain(rv)
		if !ok {
			t.Fatalf("%+v not read", v)
		}
		var want bytes.Buffer
		if err := messages.MarshalTo(&want, plain); err != nil {
			t.Fatal(err)
		}
		got := bytes.NewBufferString("x")
		if ok, err := p.encode(got, rv); !ok || err != nil || !bytes.Equal(got.Bytes(), append([]byte("x"), want.Bytes()...)) {
			t.Fatalf("%T %+v: plan wrote %x (%v, %v), MarshalTo %x", v, v, got.Bytes(), ok, err, want.Bytes())
		}
	}
	for range 500 {
		check(rec())
		x := rec()
		check(&x)
		recs := make([]plainRecord, r.IntN(4))
		for i := range recs {
			recs[i] = rec()
		}
		check(recs)
	}
	check((*plainRecord)(nil))
	check([]plainRecord(nil))
	check([]plainRecord{})
	check(struct{}{})
	p := newPlainPlan(reflect.TypeFor[[]plainRecord]())
	buf := bytes.NewBufferString("x")
	if ok, err := p.encode(buf, reflect.ValueOf([]plainRecord{{Name: "a"}, {Name: "\xff"}})); ok || err != nil || buf.String() != "x" {
		t.Errorf("a string of invalid UTF-8: wrote %q, %v, %v; want it declined and nothing written", buf.Bytes(), ok, err)
	}
}
