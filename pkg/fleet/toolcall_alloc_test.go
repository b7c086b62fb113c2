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
// the call's headers in one array; the service's walk of the decoded
// arguments reads their map in place, and it encodes the result in a
// pooled buffer and holds the CallInfo in the call's context; the
// request is encoded in a pooled buffer too, and its message, header and
// header values are pooled; the service's context for the call makes
// its timer only when the tool asks for Done; the response is read
// without the msgpack decoder (messages.ReadToolResult) (92 on amd64,
// held exactly: the count does not vary between runs; 98 with the
// response read by the decoder, 102 with a context.WithTimeout for the
// call in the service too, 105 with the message made for each call too).
const toolCallAllocs = 92

func TestToolCallAllocations(t *testing.T) {
	checkToolCallAllocs(t, "a tool call", false, toolCallAllocs)
}

// liveToolCallAllocs is what a call that waits for progress messages
// (the worker's calls, sendLive) allocates in the process: no context of
// its own for its deadline, which its timer for the silence keeps, and
// that timer from a pool; its reply subject registered with the subject
// the one string made; its connection's drops heard through the
// worker's one status listener, where a listener of its own cost a
// channel and the connection's lock twice; its request's message, header
// and header values pooled, its heartbeat interval's header set in them
// and the interval's text kept from the call before; the service's
// context for the call as in toolCallAllocs, and what sends the call's
// progress messages kept by the service from a call before, the response
// read as in toolCallAllocs (82 on amd64, held exactly; 88 with the
// response read by the decoder, 91 with the beat made for each call too,
// 95 with a context.WithTimeout in the service too, 97 with that header set
// by nats.Header.Set and its text made for each call too, 100 with the
// message made for each call too, 101 with its own listener too, 119
// before the cuts above).
const liveToolCallAllocs = 82

func TestLiveToolCallAllocations(t *testing.T) {
	checkToolCallAllocs(t, "a live tool call", true, liveToolCallAllocs)
}

// A call that finds no caller of the service waiting, as each call of a
// service whose calls come one by one does, starts one, whose timer for
// the next call is taken from a pool: the call allocates as one that a
// waiting caller takes, and one more, the start of the caller's
// goroutine (3 more with a timer made for each caller).
func TestToolCallOnANewCallerAllocations(t *testing.T) {
	if raceAllocSlack > 0 {
		t.Skip("the race detector's pools drop some of their puts")
	}
	_, nc := runJetStream(t)
	tools := startTools(t, nc)
	fleet.CallerGrace(tools.svc, time.Microsecond)
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
		// the caller's grace passes: it ends and gives its timer back
		time.Sleep(2 * time.Millisecond)
	}
	call() // the registry learns the tool
	want := toolCallAllocs + 1
	if n := testing.AllocsPerRun(100, call); n > float64(want) {
		t.Errorf("a tool call on a new caller allocates %.0f times, want at most %d", n, want)
	} else {
		t.Logf("a tool call on a new caller allocates %.0f times", n)
	}
}

// checkToolCallAllocs fails when a call of a tool the registry holds (a
// live one: waiting for progress messages, as a worker's calls do)
// allocates more than want in the process.
func checkToolCallAllocs(t *testing.T, what string, live bool, want int) {
	t.Helper()
	_, nc := runJetStream(t)
	startTools(t, nc)
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"search"}, MissionID: messages.NewMissionID()})
	if err != nil {
		t.Fatal(err)
	}
	if live {
		fleet.LiveCalls(t, box, time.Second)
	}
	ctx := context.Background()
	args := map[string]any{"query": "q"}
	call := func() {
		if _, err := box.Call(ctx, "search", args); err != nil {
			t.Fatal(err)
		}
	}
	call() // the registry learns the tool
	if n := testing.AllocsPerRun(300, call); n > float64(want+raceAllocSlack) {
		t.Errorf("%s allocates %.0f times, want at most %d", what, n, want+raceAllocSlack)
	} else {
		t.Logf("%s allocates %.0f times", what, n)
	}
}

// dedupToolCallAllocs is what a call of a deduplicating service's tool
// allocates in the process: the call, and the service's claim of the
// call's idempotency key and the outcome stored over it, two
// compare-and-set writes whose acknowledgements are read without
// encoding/json (publishAcked; 172 on amd64, held exactly in runs of
// the test, 177 with the response read by the msgpack decoder, 181 with
// a context.WithTimeout for the call in the service too, 184 with the
// request's message made for each call too, against 221 through the KV's
// Create and Update).
const dedupToolCallAllocs = 172

func TestDedupToolCallAllocations(t *testing.T) {
	if raceAllocSlack > 0 {
		t.Skip("the race detector's pools drop some of their puts")
	}
	_, nc := runJetStream(t)
	startShop(t, nc, true)
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"lookup"}, MissionID: messages.NewMissionID()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := fleet.WithTurn(context.Background(), 1)
	args := map[string]any{"order": "A-1"}
	// each call of the same arguments in the turn is the next
	// occurrence: a key of its own, claimed and answered
	call := func() {
		if _, err := box.Call(ctx, "lookup", args); err != nil {
			t.Fatal(err)
		}
	}
	call() // the registry learns the tool
	want := dedupToolCallAllocs + 2
	if n := testing.AllocsPerRun(300, call); n > float64(want) {
		t.Errorf("a deduplicated tool call allocates %.0f times, want at most %d", n, want)
	} else {
		t.Logf("a deduplicated tool call allocates %.0f times", n)
	}
}
