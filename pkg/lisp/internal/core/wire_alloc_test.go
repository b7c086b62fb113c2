package core

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestDecodeMsgpackAllocations: decoding a tool's record reuses a kept
// msgpack decoder and reader, and looks its shape up and notes its keys'
// order in buffers made at the record's size; what allocates is the record itself (its keys,
// strings, shape and map) and the decode's tables.
func TestDecodeMsgpackAllocations(t *testing.T) {
	data, err := messages.Marshal(map[string]any{"id": int64(1), "name": "Ada Lovelace", "email": "ada@example.com",
		"region": "eu", "tier": "gold", "_phone": "+44 20 7946 0000"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeMsgpack(data)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := v.(*Map); !ok || m.Len() != 6 {
		t.Fatalf("decoded %#v, want a map of 6", v)
	}
	n := testing.AllocsPerRun(200, func() {
		if _, err := DecodeMsgpack(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations a record", n)
	if n > decodeRecordAllocs+raceAllocSlack+raceKeptKeysSlack {
		t.Errorf("%.1f allocations decoding a record, want at most %d", n, decodeRecordAllocs+raceAllocSlack+raceKeptKeysSlack)
	}
	// malformed input leaves no decoder in a bad state for the next
	if _, err := DecodeMsgpack([]byte{0x81, 0xa1}); err == nil {
		t.Fatal("a truncated map decoded")
	}
	if again, err := DecodeMsgpack(data); err != nil || !Equal(again, v) {
		t.Fatalf("after a malformed input: %v, %v", again, err)
	}
}

// A decode that meets more than maxKeptKeys distinct keys leaves its
// reader none: the next decodes read their values as before, and make
// their table again.
func TestDecodeMsgpackKeptKeysBounded(t *testing.T) {
	wide := make(map[string]any, 2*maxKeptKeys)
	for i := range 2 * maxKeptKeys {
		wide[fmt.Sprintf("key-%d", i)] = int64(i)
	}
	rec := map[string]any{"id": int64(1), "key-7": "seven", "region": "eu"}
	for _, in := range []any{rec, wide, rec, wide, rec} {
		data, err := messages.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		v, err := DecodeMsgpack(data)
		if err != nil {
			t.Fatal(err)
		}
		want, err := FromGo(in)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(v, want) {
			t.Fatalf("decoded %v, want %v", v, want)
		}
	}
	var mr msgpackReader
	small, big := keyTable{}, keyTable{}
	for i := range maxKeptKeys + 1 {
		big.Get(fmt.Appendf(nil, "key-%d", i))
		if i < maxKeptKeys {
			small.Get(fmt.Appendf(nil, "key-%d", i))
		}
	}
	if mr.keep(small); len(mr.keys) != maxKeptKeys {
		t.Errorf("a reader keeps %d keys of %d", len(mr.keys), maxKeptKeys)
	}
	if mr.keep(big); mr.keys != nil {
		t.Errorf("a reader keeps %d keys, want none beyond %d", len(mr.keys), maxKeptKeys)
	}
}

// decodeRecordAllocs is what decoding TestDecodeMsgpackAllocations'
// record allocates: 30 with each key boxed again to look it up in the
// record's shape (noting the order the keys arrived in), 50 with its keys
// interned anew by each decode besides (a table of six keys and each
// key's string and box), 60 with a decoder
// and reader made for each decode and the shape cache's key buffer and
// note of the keys' arrival order grown key by key, 58 with the latter
// alone; 24 with a map made to intern the record's few strings, a key
// made for its one shape, and a shape cache, a short-string buffer and
// entry buffers made for each decode rather than kept with the reader.
const decodeRecordAllocs = 14

// TestDecodeMsgpackRecordBytes: a decode of one record (one map) lays its
// map out in a slab of one small map, not of the first slab's four: the
// decode knows how many maps the message holds from its bounds check.
func TestDecodeMsgpackRecordBytes(t *testing.T) {
	rec := map[string]any{"id": int64(1), "name": "Ada Lovelace", "email": "ada@example.com",
		"region": "eu", "tier": "gold", "_phone": "+44 20 7946 0000"}
	one, err := messages.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	many, err := messages.Marshal([]any{rec, rec, rec, rec, rec, rec})
	if err != nil {
		t.Fatal(err)
	}
	perDecode := func(data []byte) uint64 {
		const runs = 500
		if _, err := DecodeMsgpack(data); err != nil { // the kept decoder, made
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if _, err := DecodeMsgpack(data); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	b1, b6 := perDecode(one), perDecode(many)
	t.Logf("%d bytes decoding a record, %d six", b1, b6)
	if limit := uint64(decodeRecordBytes + raceAllocSlack*64 + raceKeptScratchBytes); b1 > limit {
		t.Errorf("%d bytes decoding a record, want at most %d", b1, limit)
	}
	if b6 <= b1 {
		t.Errorf("%d bytes decoding six records against %d for one", b6, b1)
	}
}

// decodeRecordBytes bounds the bytes of decoding
// TestDecodeMsgpackRecordBytes' record: 3,160 with a first slab of four
// small maps (896 bytes) for its one map, 2,472 with a slab of one,
// about 1,600 with a shape cache, its buffers, a short-string buffer,
// entry buffers and an intern map made for each decode.
const decodeRecordBytes = 700

// TestWireMapViewLookupAllocations: a signature's check of a decoded
// record looks each field up without boxing its name, and finds what
// Get finds.
func TestWireMapViewLookupAllocations(t *testing.T) {
	data, err := messages.Marshal(map[string]any{"id": int64(1), "name": "Ada Lovelace", "email": "ada@example.com",
		"region": "eu", "tier": "gold", "_phone": "+44 20 7946 0000"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeMsgpack(data)
	if err != nil {
		t.Fatal(err)
	}
	view := wireMapView{v.(*Map)}
	fields := []string{"id", "name", "email", "region", "tier", "_phone", "missing"}
	for _, f := range fields {
		got, ok := view.Lookup(f)
		want, wok := v.(*Map).Get(f)
		if ok != wok || (ok && !Equal(got, want)) {
			t.Errorf("Lookup(%q) = %v, %v; Get finds %v, %v", f, got, ok, want, wok)
		}
	}
	// a keyword key is found by its name, as Get finds it
	kw := NewMapBuilder(0)
	kw.Set(NewKeyword("name"), "Grace")
	km := kw.Build()
	if got, ok := (wireMapView{km}).Lookup("name"); !ok || got != "Grace" {
		t.Errorf("Lookup of a keyword's name: %v, %v", got, ok)
	}
	n := testing.AllocsPerRun(100, func() {
		for _, f := range fields {
			_, _ = view.Lookup(f)
		}
	})
	if n > raceAllocSlack {
		t.Errorf("%v allocations looking up %d fields, want 0", n, len(fields))
	}
}

// The scratch space a kept reader carries from one decode to the next
// (its shape cache's buffers, its entry buffers, its short-string
// buffer) is none of a decoded value's: values decoded earlier are
// unchanged by the decodes after them, whatever those hold.
func TestDecodeMsgpackKeptScratchSharesNothing(t *testing.T) {
	ins := []any{
		map[string]any{"id": int64(1), "name": "Ada", "region": "eu", "tags": []any{"a", "b"}},
		map[string]any{"id": int64(2), "name": "Grace", "region": "us", "tier": "gold"},
		[]any{map[string]any{"k": "v1", "n": 1.5}, map[string]any{"k": "v2", "m": map[string]any{"x": "y"}}},
		map[string]any{"name": strings.Repeat("long ", 40), "id": int64(3)},
	}
	var kept []Value
	for round := range 3 {
		for i, in := range ins {
			data, err := messages.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			v, err := DecodeMsgpack(data)
			if err != nil {
				t.Fatal(err)
			}
			if round == 0 {
				kept = append(kept, v)
			}
			want, _ := FromGo(in)
			if !Equal(v, want) {
				t.Fatalf("round %d, input %d: decoded %v, want %v", round, i, v, want)
			}
		}
	}
	for i, v := range kept {
		if want, _ := FromGo(ins[i]); !Equal(v, want) {
			t.Errorf("input %d decoded first is now %v, want %v", i, v, want)
		}
	}
}

// A tool result decoded for a run (DecodeWireResult) allocates what
// DecodeMsgpack does: DecodeMsgpack makes the charger it counts in, and
// DecodeWireResult the WireResult with its charger, in one allocation.
func TestDecodeWireResultAllocations(t *testing.T) {
	if raceAllocSlack != 0 {
		t.Skip("the race detector drops pooled readers")
	}
	data, err := messages.Marshal(map[string]any{"id": int64(1), "name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := DecodeWireResult(ctx, "", data)
	if err != nil || w.Decoded == nil {
		t.Fatal(err)
	}
	dec := testing.AllocsPerRun(200, func() { _, _ = DecodeMsgpack(data) })
	res := testing.AllocsPerRun(200, func() { _, _ = DecodeWireResult(ctx, "", data) })
	t.Logf("%.0f allocations, its decode %.0f", res, dec)
	if res > dec {
		t.Errorf("DecodeWireResult: %.0f allocations, DecodeMsgpack %.0f: want no more", res, dec)
	}
}

// A short string repeated in a result is boxed once: its later copies
// are looked up from their bytes, making no string, whether the decode
// holds its interned strings in its first few or in its map.
func TestDecodeMsgpackRepeatedStringsAllocateNothing(t *testing.T) {
	if raceAllocSlack != 0 {
		t.Skip("the race detector drops pooled readers")
	}
	list := func(n, distinct int) []byte {
		items := make([]any, n)
		for i := range items {
			items[i] = fmt.Sprintf("s%d", i%distinct)
		}
		data, err := messages.Marshal(items)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, distinct := range []int{3, 20} {
		few, many := list(distinct, distinct), list(10*distinct, distinct)
		a := testing.AllocsPerRun(100, func() { _, _ = DecodeMsgpack(few) })
		b := testing.AllocsPerRun(100, func() { _, _ = DecodeMsgpack(many) })
		if b > a+1 { // the longer vector's slots
			t.Errorf("%d distinct strings: %.0f allocations once each, %.0f ten times each", distinct, a, b)
		}
	}
}
