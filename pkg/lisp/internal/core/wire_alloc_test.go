package core

import (
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
	if n > decodeRecordAllocs+raceAllocSlack {
		t.Errorf("%.1f allocations decoding a record, want at most %d", n, decodeRecordAllocs+raceAllocSlack)
	}
	// malformed input leaves no decoder in a bad state for the next
	if _, err := DecodeMsgpack([]byte{0x81, 0xa1}); err == nil {
		t.Fatal("a truncated map decoded")
	}
	if again, err := DecodeMsgpack(data); err != nil || !Equal(again, v) {
		t.Fatalf("after a malformed input: %v, %v", again, err)
	}
}

// decodeRecordAllocs is what decoding TestDecodeMsgpackAllocations'
// record allocates: 60 with a decoder and reader made for each decode and
// the shape cache's key buffer and note of the keys' arrival order grown
// key by key, 58 with the latter alone.
const decodeRecordAllocs = 50
