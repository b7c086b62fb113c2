package core

import (
	"fmt"
	"runtime"
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
// alone.
const decodeRecordAllocs = 24

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
	if limit := uint64(decodeRecordBytes + raceAllocSlack*64); b1 > limit {
		t.Errorf("%d bytes decoding a record, want at most %d", b1, limit)
	}
	if b6 <= b1 {
		t.Errorf("%d bytes decoding six records against %d for one", b6, b1)
	}
}

// decodeRecordBytes bounds the bytes of decoding
// TestDecodeMsgpackRecordBytes' record: 3,160 with a first slab of four
// small maps (896 bytes) for its one map, 2,472 with a slab of one.
const decodeRecordBytes = 2600

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
