package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// toolCallAllocs is what a mission's call of a tool its registry holds
// allocates in the process (the toolbox, nats.go, the server and the tool
// service): the call's own deadline only, no wait for the registry, and
// the call's headers in one array.
const toolCallAllocs = 130

func TestToolCallAllocations(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"search"}, MissionID: messages.NewMissionID()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := map[string]any{"query": "q"}
	call := func() {
		if _, err := box.Call(ctx, "search", args); err != nil {
			t.Fatal(err)
		}
	}
	call() // the registry learns the tool
	if n := testing.AllocsPerRun(300, call); n > toolCallAllocs+raceAllocSlack {
		t.Errorf("a tool call allocates %.0f times, want at most %d", n, toolCallAllocs+raceAllocSlack)
	} else {
		t.Logf("a tool call allocates %.0f times", n)
	}
}

// liveToolCallAllocs is what a call that waits for progress messages
// (the worker's calls, sendLive) allocates in the process: no context of
// its own for its deadline, which its timer for the silence keeps, and
// that timer from a pool.
const liveToolCallAllocs = 132

func TestLiveToolCallAllocations(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"search"}, MissionID: messages.NewMissionID()})
	if err != nil {
		t.Fatal(err)
	}
	fleet.LiveCalls(box, time.Second)
	ctx := context.Background()
	args := map[string]any{"query": "q"}
	call := func() {
		if _, err := box.Call(ctx, "search", args); err != nil {
			t.Fatal(err)
		}
	}
	call() // the registry learns the tool
	if n := testing.AllocsPerRun(300, call); n > liveToolCallAllocs+raceAllocSlack {
		t.Errorf("a live tool call allocates %.0f times, want at most %d", n, liveToolCallAllocs+raceAllocSlack)
	} else {
		t.Logf("a live tool call allocates %.0f times", n)
	}
}
