package fleet_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// journalFlushAllocs is what recording a tool result in a mission's
// journal and flushing it (as a mission's next tool call does) allocates
// in the process, the server's included: an ack that comes in time is
// waited for with no context of the flush's own and a pooled timer.
const journalFlushAllocs = 52

func TestJournalFlushAllocations(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	j := fleet.NewJournal(js, messages.NewMissionID())
	data := []byte("a tool's answer")
	i := 0
	write := func() {
		i++
		if err := j.Record(ctx, "t/1/"+strconv.Itoa(i), data); err != nil {
			t.Fatal(err)
		}
		if err := j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if n := testing.AllocsPerRun(200, write); n > journalFlushAllocs+raceAllocSlack {
		t.Errorf("a journal write and flush allocate %.0f times, want at most %d", n, journalFlushAllocs+raceAllocSlack)
	} else {
		t.Logf("a journal write and flush allocate %.0f times", n)
	}
}

// A run's journal with nothing to replay (every mission's first attempt)
// holds only itself and its subject while the run waits on its first
// model call: its maps are made when an answer is replayed or recorded,
// and a lookup that can find nothing builds no key.
func TestJournalWithNothingToReplayHoldsLittle(t *testing.T) {
	id := messages.NewMissionID()
	var j *fleet.Journal
	if n := testing.AllocsPerRun(100, func() { j = fleet.NewJournal(nil, id) }); n > 2 {
		t.Errorf("an empty journal takes %.0f allocations; want at most 2 (itself and its subject)", n)
	}
	// a key as long as a model call's (its model and the digest of its
	// request)
	base := "m/openai:gpt-4o/0123456789abcdef0123456789abcdef"
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := j.Replay(base); ok {
			t.Fatal("an empty journal replayed an answer")
		}
	}); n != 0 {
		t.Errorf("a lookup in an empty journal allocates %.0f times; want none", n)
	}
}
