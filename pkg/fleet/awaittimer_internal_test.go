package fleet

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A Run's wait for the result of the mission it queued (awaitOn of a
// queued mission, the stored result republished to it) allocates only
// what decoding the result takes: the timer bounding how long the wait
// trusts the subscription is a pooled one.
func TestAwaitOfAQueuedMissionAllocations(t *testing.T) {
	data, err := messages.MarshalStep(&messages.Step{Return: "done"})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{republished: true}
	id := messages.NewMissionID()
	w := &resultWait{msgs: make(chan *nats.Msg, resultSignals)}
	stored := &nats.Msg{Data: data}
	ctx := context.Background()
	await := func() {
		w.msgs <- stored
		step, err := c.awaitOn(ctx, id, w, 0, true, false)
		if err != nil || step.Return != "done" {
			t.Fatalf("await: %+v, %v", step, err)
		}
	}
	decode := func() {
		if _, err := storedStep(ctx, c.st, id, data); err != nil {
			t.Fatal(err)
		}
	}
	awaited, decoded := fewestAllocs(await, decode)
	t.Logf("%.0f allocations to await a queued mission's republished result, %.0f to decode it", awaited, decoded)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if awaited > decoded {
		t.Errorf("awaiting a queued mission's republished result made %.0f allocations, decoding it %.0f: want no more", awaited, decoded)
	}
}
