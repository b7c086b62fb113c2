package fleet

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A record's digest is the object store's, for data of every length
// around base64's blocks and the hash's.
func TestDigestOfIsTheObjectStores(t *testing.T) {
	for n := range 200 {
		data := bytes.Repeat([]byte{byte(n), 0xff, '-'}, n)[:n]
		h := sha256.New()
		h.Write(data)
		if got, want := digestOf(data), jetstream.GetObjectDigestValue(h); got != want {
			t.Fatalf("digestOf(%d bytes) = %q, want %q", n, got, want)
		}
	}
}

// A record's digest costs its string alone.
func TestDigestOfAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	data := bytes.Repeat([]byte("record "), 300)
	if n := testing.AllocsPerRun(100, func() { _ = digestOf(data) }); n > 1 {
		t.Errorf("digestOf allocates %v times, want 1", n)
	}
}
