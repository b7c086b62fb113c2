package fleet

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A worker's journal write's header goes back to its pool once the write
// is acknowledged (nats.go holds an asynchronous publish until its ack,
// not after, and the worker's JetStream has no ack handler to hand it
// to): the header the message was published with is cleared by the Flush
// that saw its ack, and the entry is stored as written. A journal made
// with NewJournal, whose JetStream may have such a handler, keeps it.
func TestJournalWriteReleasesItsHeaderOnAck(t *testing.T) {
	ctx, _, js, st := embeddedStores(t)
	id := messages.NewMissionID()
	j, err := openJournal(ctx, js, st.Journal, id, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Record(ctx, "t/1/x", []byte("answer")); err != nil {
		t.Fatal(err)
	}
	j.Push()
	j.mu.Lock()
	if len(j.pending) != 1 {
		j.mu.Unlock()
		t.Fatalf("%d writes pending, want 1", len(j.pending))
	}
	hdr := j.pending[0].msg.Header
	j.mu.Unlock()
	if hdr.Get(messages.HeaderJournalKey) != "t/1/x#0" {
		t.Fatalf("published with header %v", hdr)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(hdr) != 0 {
		t.Fatalf("the header of an acknowledged write is still %v, want it released", hdr)
	}
	r, err := openJournal(ctx, js, st.Journal, id, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if data, ok := r.Replay("t/1/x"); !ok || string(data) != "answer" {
		t.Fatalf("replayed %q, %v; want the answer written", data, ok)
	}

	theirs := NewJournal(js, id)
	if err := theirs.Record(ctx, "t/2/x", []byte("other")); err != nil {
		t.Fatal(err)
	}
	theirs.Push()
	theirs.mu.Lock()
	hdr = theirs.pending[0].msg.Header
	theirs.mu.Unlock()
	if err := theirs.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if hdr.Get(messages.HeaderJournalKey) != "t/2/x#0" {
		t.Fatalf("the header of a NewJournal's write is %v after its ack, want it kept", hdr)
	}
}
