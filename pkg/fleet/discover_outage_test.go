package fleet_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// callArgs are the arguments callRunner calls its tool with: a refund
// small enough to need no approval.
func callArgs() map[string]any { return map[string]any{"order": "A-1", "amount": int64(50)} }

// onceAtTurn1 checks that the shop's refund ran once, as the call the
// program made at its first turn (its idempotency key: turn 1, first
// occurrence).
func onceAtTurn1(t *testing.T, shop *shopTools, id string) {
	t.Helper()
	want := id + "/1/" + fleet.CallDigest("refund", callArgs()) + "/1"
	if _, refunds, keys := shop.counts(); len(refunds) != 1 || keys[0] != want {
		t.Fatalf("refunds %v with keys %v, want one with the key %s", refunds, keys, want)
	}
}

// callRunner behaves as a program at turn 1: it calls the tool named
// by the mission's context once and returns its answer, or the code and
// text of its tool error; each attempt's outcome of the call is kept in
// calls.
func callRunner(calls *sync.Map) fleet.RunnerFunc {
	return func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		ctx = fleet.WithTurn(ctx, 1)
		tool, _ := m.Context["tool"].(string)
		res, err := env.Tools.Call(ctx, tool, callArgs())
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var te *fleet.ToolError
		if errors.As(err, &te) {
			calls.Store(env.Attempt, te.Code+": "+te.Message)
			return &messages.Step{Return: map[string]any{"code": te.Code, "error": te.Message}}, nil
		}
		if err != nil {
			return nil, err
		}
		calls.Store(env.Attempt, res)
		return &messages.Step{Return: res}, nil
	}
}

// startCallWorker starts a worker on nc running callRunner, whose runs
// wait 300 ms for an unanswered discovery and call onHandBack each time
// one is handed back.
func startCallWorker(t *testing.T, nc *nats.Conn, calls *sync.Map, onHandBack func()) {
	t.Helper()
	log := zerolog.New(logHook{match: "retryable failure; handing back", on: onHandBack}).Level(zerolog.WarnLevel)
	startWorker(t, nc, callRunner(calls), func(c *fleet.WorkerConfig) {
		c.Logger = &log
		c.ToolUnavailableWait = 300 * time.Millisecond
	})
}

// runCall submits a mission whose program calls tool (callRunner) and
// returns its Step and id, failing t unless it succeeded.
func runCall(ctx context.Context, t *testing.T, c *fleet.Client, tool string) (*messages.Step, string) {
	t.Helper()
	m := newMission(tool)
	m.Context = map[string]any{"tool": tool}
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	return step, m.ID
}

// A call whose tool discovery hears no answer from NATS (here a listener
// on $SRV.INFO that never answers, as a request lost while a node
// restarts) is not answered "no tool service is running": after the
// worker's ToolUnavailableWait its run is handed back, and the mission,
// back once discovery answers again, makes the call and finishes. The
// program never sees an error: each attempt's program makes its one call
// at turn 1, the first never returns, and the second gets the answer.
func TestToolDiscoveryOutageEndsTheRunNotTheCall(t *testing.T) {
	s, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx := testCtx(t)
	snc := connect(t, s)
	silent, err := snc.Subscribe(micro.APIPrefix+"."+micro.InfoVerb.String(), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := snc.Flush(); err != nil {
		t.Fatal(err)
	}
	var handedBack atomic.Int32
	var shop atomic.Pointer[shopTools]
	var calls sync.Map
	startCallWorker(t, nc, &calls, func() {
		// the run ended on discovery's silence: the tool's service is up
		// and discovery answers before the mission comes back
		if handedBack.Add(1) == 1 {
			shop.Store(startShop(t, nc))
			if err := silent.Unsubscribe(); err != nil {
				t.Error(err)
			}
			if err := snc.Flush(); err != nil {
				t.Error(err)
			}
		}
	})
	step, id := runCall(ctx, t, c, "refund")
	if handedBack.Load() != 1 {
		t.Fatalf("handed back %d times, want once", handedBack.Load())
	}
	if got, _ := step.Return.(map[string]any); got["refunded"] != int64(50) {
		t.Fatalf("return %v, want the refund's answer", step.Return)
	}
	onceAtTurn1(t, shop.Load(), id)
	if step.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", step.Attempts)
	}
	calls.Range(func(attempt, got any) bool {
		if attempt != 2 {
			t.Errorf("attempt %v's program got %v from the call", attempt, got)
		}
		return true
	})
}

// A call of a tool discovery hears no service offer gets the tool error
// unavailable at once, the run not handed back: with no service at all
// (the server answers that nobody listens) and with services offering
// other tools.
func TestToolNoServiceOffersIsAToolError(t *testing.T) {
	for _, services := range []bool{false, true} {
		name := "no services"
		if services {
			name = "other services"
		}
		t.Run(name, func(t *testing.T) {
			_, nc := runJetStream(t)
			c := newClient(t, nc)
			ctx := testCtx(t)
			if services {
				startShop(t, nc)
			}
			var handedBack atomic.Int32
			var calls sync.Map
			startCallWorker(t, nc, &calls, func() { handedBack.Add(1) })
			step, _ := runCall(ctx, t, c, "ghost")
			got, _ := step.Return.(map[string]any)
			if got["code"] != messages.ToolErrUnavailable || step.Attempts != 1 || handedBack.Load() != 0 {
				t.Fatalf("return %v after %d attempts, handed back %d times; want the tool error unavailable at the first",
					step.Return, step.Attempts, handedBack.Load())
			}
		})
	}
}

// A call made while its worker's connection to NATS is down (the server
// restarting) cannot discover its tool: the run is handed back rather
// than the program told the tool is not running, and the mission, back
// after the restart, makes the call to the service that came up with the
// server and finishes with its answer.
func TestToolDiscoveryAcrossNATSRestart(t *testing.T) {
	dir := t.TempDir()
	port := fleettest.FreePort(t)
	srv, err := embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	dial := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	cnc, wnc, snc := dial(), dial(), dial()
	c := newClient(t, cnc)
	ctx := testCtx(t)
	ready, down := make(chan struct{}), make(chan struct{})
	handedBack := make(chan struct{}, 8)
	log := zerolog.New(logHook{match: "retryable failure; handing back", on: func() { handedBack <- struct{}{} }}).Level(zerolog.WarnLevel)
	var calls sync.Map
	inner := callRunner(&calls)
	startWorker(t, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if env.Attempt == 1 {
			// the program calls its tool once the server is down
			close(ready)
			<-down
		}
		return inner(ctx, m, env)
	}), func(c *fleet.WorkerConfig) {
		c.Logger = &log
		c.ToolUnavailableWait = 300 * time.Millisecond
	})
	m := newMission("refund")
	m.Context = map[string]any{"tool": "refund"}
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the mission did not start")
	}
	srv.Close()
	// the tool's service comes up with the server: its subscriptions
	// wait in its connection for the reconnect, so the tool the run
	// could not find before is offered once NATS is back
	shop := startShop(t, snc)
	close(down)
	select {
	case <-handedBack:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not handed back")
	}
	srv, err = embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if got, _ := step.Return.(map[string]any); got["refunded"] != int64(50) {
		t.Fatalf("return %v, want the refund's answer", step.Return)
	}
	onceAtTurn1(t, shop, m.ID)
	calls.Range(func(attempt, got any) bool {
		if attempt == 1 {
			t.Errorf("attempt 1's program got %v from the call made while NATS was down", got)
		}
		return true
	})
}
