package fleet

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestResultHeaderAllocations: a result's header is pooled and its
// Msg-Id, the status key and "/final", one concatenation.
func TestResultHeaderAllocations(t *testing.T) {
	k := missionKey{sub: "analytics", id: messages.NewMissionID()}
	hdr := resultHeader(k, claimFence{})
	if got, want := hdr.h.Get(jetstream.MsgIDHeader), messages.StatusKey(k.sub, k.id)+"/final"; got != want {
		t.Errorf("Msg-Id %q, want %q", got, want)
	}
	if got := hdr.h.Get(messages.HeaderMissionID); got != k.id {
		t.Errorf("mission id header %q, want %q", got, k.id)
	}
	hdr.release()
	if raceOn {
		t.Skip("the race detector drops some of what pools keep")
	}
	if n := testing.AllocsPerRun(100, func() { resultHeader(k, claimFence{}).release() }); n != 1 {
		t.Errorf("resultHeader: %v allocations, want 1 (the Msg-Id)", n)
	}
}

// TestPurgeJournalAllocations: the purge of a mission's journal publishes
// its marker on the journal's own subject with a pooled header: what is
// left is the message and nats.go's encoding of the header.
func TestPurgeJournalAllocations(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	id := messages.NewMissionID()
	sub, err := nc.SubscribeSync(messages.JournalSubject(id))
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal(nil, id)
	if err := rollUpJournal(nc, j, id); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(jetstream.MsgRollup); got != jetstream.MsgRollupSubject || len(m.Data) != 0 {
		t.Errorf("marker: rollup %q, %d bytes", got, len(m.Data))
	}
	if err := rollUpJournal(nc, nil, id); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("the purge of a run without a journal: %v", err)
	}
	_ = sub.Unsubscribe()
	if raceOn {
		t.Skip("the race detector drops some of what pools keep")
	}
	n := testing.AllocsPerRun(100, func() {
		if err := rollUpJournal(nc, j, id); err != nil {
			t.Fatal(err)
		}
	})
	if n > 3 {
		t.Errorf("rollUpJournal: %v allocations, want at most 3", n)
	}
}
