package fleet

import (
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestEmitAllocations: Emit masks each event into an Event it keeps for
// the next one, not into a new copy, and encodes it into the waiting
// batch: an event that waits allocates nothing.
func TestEmitAllocations(t *testing.T) {
	nc := embeddedConn(t)
	em := &emitter{nc: nc, sub: messages.DefaultSubmitter, missionID: messages.NewMissionID(), worker: "w1", attempt: 1, delay: time.Hour}
	defer em.Flush()
	ev := &messages.Event{Kind: messages.EventToolCall, Turn: 1, Tool: "lookup", CallID: "c1", Args: map[string]any{"id": int64(42)}}
	em.Emit(ev) // the batch's buffer and timer
	n := testing.AllocsPerRun(messages.MaxEventBatch/2, func() { em.Emit(ev) })
	limit := 0.0
	if fleettest.Race {
		limit = 1 // sync.Pool drops some of what it is given
	}
	if n > limit {
		t.Fatalf("%.1f allocations per event, want at most %.0f", n, limit)
	}
	if ev.Version != 0 || ev.MissionID != "" || ev.Worker != "" {
		t.Fatalf("Emit changed the caller's event: %+v", ev)
	}
}
