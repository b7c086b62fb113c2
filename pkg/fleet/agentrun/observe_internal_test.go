package agentrun

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/messages"
)

type recordedEvents []messages.Event

func (r *recordedEvents) Emit(ev *messages.Event) { *r = append(*r, *ev) }

// TestObserverAllocatesOnlyWhatItReports: an agent event the mission's
// events do not carry (a call of a tool that is no sub-agent) costs the
// observer no allocation; one they carry reaches the emitter as before.
func TestObserverAllocatesOnlyWhatItReports(t *testing.T) {
	var got recordedEvents
	o := observer{events: &got, tel: &telemetry{}, turns: &turnTracker{}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	skipped := agent.Event{Kind: agent.EventToolStart, Depth: 1, Turn: 1, Time: at, Tool: "get_order", Args: map[string]any{"id": 1}}
	if n := testing.AllocsPerRun(100, func() { o.Observe(context.Background(), skipped) }); n != 0 {
		t.Fatalf("%.1f allocations observing an event not reported, want 0", n)
	}
	if len(got) != 0 {
		t.Fatalf("reported %+v", got)
	}
	o.Observe(context.Background(), agent.Event{Kind: agent.EventTurnStart, Depth: 1, Turn: 2, Time: at, Duration: time.Second})
	if len(got) != 1 || got[0].Kind != messages.EventTurnStarted || got[0].Turn != 2 || !got[0].Time.Equal(at) || got[0].Duration != time.Second {
		t.Fatalf("reported %+v, want one turn started at turn 2", got)
	}
}

// kindsSeen is an emitter that keeps the kind of each event it is given,
// in room made beforehand.
type kindsSeen []string

func (k *kindsSeen) Emit(ev *messages.Event) { *k = append(*k, ev.Kind) }

// TestObserverReportsWithoutAllocating: an event the mission's events
// carry reaches the emitter through a pooled Event, not a copy of its own
// on the heap (the emitter keeps no event after Emit returns), and a
// pooled Event reused carries nothing of the one before.
func TestObserverReportsWithoutAllocating(t *testing.T) {
	got := make(kindsSeen, 0, 1000)
	o := observer{events: &got, tel: &telemetry{}, turns: &turnTracker{}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	turn := agent.Event{Kind: agent.EventTurnStart, Depth: 1, Turn: 1, Time: at}
	n := testing.AllocsPerRun(100, func() { o.Observe(context.Background(), turn) })
	if len(got) == 0 || got[0] != messages.EventTurnStarted {
		t.Fatalf("reported %q, want turns started", got)
	}
	if !raceOn && n != 0 {
		t.Errorf("%.1f allocations reporting a turn's start, want 0", n)
	}
	var recorded recordedEvents
	o.events = &recorded
	o.Observe(context.Background(), agent.Event{Kind: agent.EventEmit, Depth: 1, Turn: 1, Time: at, Result: map[string]any{"n": int64(1)}})
	o.Observe(context.Background(), turn)
	if len(recorded) != 2 || recorded[1].Result != nil || recorded[1].Kind != messages.EventTurnStarted {
		t.Fatalf("reported %+v, want an emit, then a turn's start without its result", recorded)
	}
}
