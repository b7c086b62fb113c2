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
