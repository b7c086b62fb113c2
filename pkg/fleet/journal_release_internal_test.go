package fleet

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A worker's journal write's header goes back to its pool once the write
// is acknowledged (nats.go holds an asynchronous publish until its ack,
// not after, and the worker's JetStream has no ack handler to hand it
// to): the header the message was published with is cleared by the Flush
// that saw its ack, and the entry is stored as written. A journal made
// with NewJournal, whose JetStream may have such a handler, keeps it.
func TestJournalWriteReleasesItsHeaderOnAck(t *testing.T) {
	ctx, _, js, _ := embeddedStores(t)
	id := messages.NewMissionID()
	j, err := openJournal(ctx, js, id, false, 0)
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
	r, err := openJournal(ctx, js, id, true, 0)
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

// Once its entries are published, the journal records the next into the
// same array (no allocation for it), and what was published is the
// entries as recorded: the first alone, then a batch of two, each
// replayed with its data.
func TestJournalReusesItsUnsentEntries(t *testing.T) {
	ctx, _, js, _ := embeddedStores(t)
	id := messages.NewMissionID()
	j, err := openJournal(ctx, js, id, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	record := func(base, data string) {
		t.Helper()
		if err := j.Record(ctx, base, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	record("m/1/x", "reply")
	j.Push()
	j.mu.Lock()
	var first *journalEntry
	if cap(j.unsent) > 0 {
		first = &j.unsent[:1][0]
	}
	n := len(j.unsent)
	j.mu.Unlock()
	if n != 0 || first == nil {
		t.Fatalf("%d entries unsent after a push, in an array kept: %v; want none, in the one kept", n, first != nil)
	}
	record("t/1/x", "answer")
	j.mu.Lock()
	again := &j.unsent[0]
	j.mu.Unlock()
	if again != first {
		t.Error("the entry recorded after a push is in a new array, want the one published")
	}
	record("t/1/y", "other")
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := openJournal(ctx, js, id, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	for base, want := range map[string]string{"m/1/x": "reply", "t/1/x": "answer", "t/1/y": "other"} {
		if data, ok := r.Replay(base); !ok || string(data) != want {
			t.Errorf("%s replayed %q, %v; want %q", base, data, ok, want)
		}
	}
}

// TestJournalAcksOnTheWorkersReplies: a journal whose acknowledgements
// come on the worker's reply mux stores its writes as js's asynchronous
// publishes did (a replay reads them back), leaves no handler behind,
// and a write and its flush allocate fewer times.
func TestJournalAcksOnTheWorkersReplies(t *testing.T) {
	ctx, _, js, _ := embeddedStores(t)
	replies := newReplyMux(js.Conn())
	id := messages.NewMissionID()
	j, err := openJournal(ctx, js, id, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.acksOn(replies)
	for i, key := range []string{"m/x", "t/1/y"} {
		if err := j.Record(ctx, key, []byte("answer "+key)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			j.Push() // published before the flush, as a model reply is
		}
		if err := j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r, err := openJournal(ctx, js, id, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"m/x", "t/1/y"} {
		if got, ok := r.Replay(key); !ok || string(got) != "answer "+key {
			t.Errorf("replayed %s: %q, %v", key, got, ok)
		}
	}
	replies.mu.Lock()
	left := len(replies.handlers)
	replies.mu.Unlock()
	if left != 0 {
		t.Errorf("%d reply handlers left after the acknowledgements", left)
	}
	if raceOn {
		t.Skip("the race detector drops some of what pools keep")
	}
	write := func(j *Journal) func() {
		i := 0
		return func() {
			i++
			if err := j.Record(ctx, "t/1/"+strconv.Itoa(i), []byte("a tool's answer")); err != nil {
				t.Fatal(err)
			}
			if err := j.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	viaJS, err := openJournal(ctx, js, messages.NewMissionID(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	viaReplies, err := openJournal(ctx, js, messages.NewMissionID(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	viaReplies.acksOn(replies)
	wj, wr := write(viaJS), write(viaReplies)
	wj()
	wr()
	before, now := testing.AllocsPerRun(200, wj), testing.AllocsPerRun(200, wr)
	t.Logf("a journal write and flush: %.0f allocations with js's asynchronous publish, %.0f with the replies", before, now)
	if now > before-5 {
		t.Errorf("a journal write and flush: %.0f allocations with the replies, want at least 5 fewer than js's %.0f", now, before)
	}
}

// TestJournalCountsOccurrencesWithoutAMap: the next occurrence of a run's
// first two base keys is kept in the journal itself, of any more in a
// map, and each counts on from where it was.
func TestJournalCountsOccurrencesWithoutAMap(t *testing.T) {
	j := NewJournal(nil, messages.NewMissionID())
	j.linger = time.Hour // nothing published: the journal has no JetStream
	ctx := context.Background()
	bases := []string{"m/x", "t/1/y", "t/1/z", "", "m/x", "t/1/z", "t/1/y", ""}
	want := map[string]int{}
	for _, b := range bases {
		if err := j.Record(ctx, b, []byte(b)); err != nil {
			t.Fatal(err)
		}
		want[b]++
		j.mu.Lock()
		for base, n := range want {
			if got := j.nextOf(base); got != n {
				t.Errorf("after %q: next of %q is %d, want %d", b, base, got, n)
			}
		}
		j.mu.Unlock()
	}
	j.mu.Lock()
	keys := make([]string, 0, len(j.unsent))
	for _, e := range j.unsent {
		keys = append(keys, e.Key)
	}
	j.mu.Unlock()
	wantKeys := []string{"m/x#0", "t/1/y#0", "t/1/z#0", "#0", "m/x#1", "t/1/z#1", "t/1/y#1", "#1"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys %q, want %q", keys, wantKeys)
	}
	j.settle()
	// a run's first two bases make no map
	if n := testing.AllocsPerRun(100, func() {
		var fresh Journal
		fresh.countNext("m/x", 0)
		fresh.countNext("t/1/y", 0)
		if fresh.nextOf("m/x") != 1 || fresh.nextOf("t/1/y") != 1 {
			t.Fatal("a base's next occurrence was not counted")
		}
	}); n != 0 {
		t.Errorf("counting a run's first two bases: %v allocations, want 0", n)
	}
}
