package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// callTool sends a raw tool request with the given idempotency key, as a
// tool client in any language would.
func callTool(t *testing.T, nc *nats.Conn, subject, key string, args map[string]any) (any, string) {
	t.Helper()
	data, _ := messages.Marshal(&messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "1", Tool: "charge", Args: args})
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderIdempotencyKey, key)
	resp, err := nc.RequestMsg(msg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out messages.ToolResponse
	if err := messages.Unmarshal(resp.Data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Error != nil {
		return nil, out.Error.Code + ": " + out.Error.Message
	}
	return out.Result, ""
}

// A tool service with Dedup runs a call at most once per idempotency key:
// repeats and concurrent duplicates get the first outcome (errors too); the
// same key with other arguments is another call and runs.
func TestToolServiceDedupRunsOncePerKey(t *testing.T) {
	_, nc := runJetStream(t)
	var runs atomic.Int64
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "pay", Dedup: &fleet.DedupConfig{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	err = svc.Register("charge", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		n := runs.Add(1)
		time.Sleep(30 * time.Millisecond)
		if args["fail"] == true {
			return nil, errors.New("card declined")
		}
		return fmt.Sprintf("receipt-%d", n), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	subj := messages.ToolSubject("pay", "charge")
	key := messages.NewMissionID() + "/1/1"
	first, _ := callTool(t, nc, subj, key, map[string]any{"amount": int64(5)})
	var wg sync.WaitGroup
	answers := make(chan any, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := callTool(t, nc, subj, key, map[string]any{"amount": int64(5)})
			answers <- r
		}()
	}
	wg.Wait()
	close(answers)
	for r := range answers {
		if r != first {
			t.Errorf("duplicate answered %v, want %v", r, first)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1", runs.Load())
	}
	// Concurrent first requests of a new key: still one run.
	key2 := messages.NewMissionID() + "/2/1"
	var wg2 sync.WaitGroup
	for range 6 {
		wg2.Add(1)
		go func() { defer wg2.Done(); callTool(t, nc, subj, key2, map[string]any{"amount": int64(7)}) }()
	}
	wg2.Wait()
	if runs.Load() != 2 {
		t.Errorf("runs after concurrent firsts = %d, want 2", runs.Load())
	}
	// A failed outcome is kept too.
	key3 := messages.NewMissionID() + "/1/1"
	_, e1 := callTool(t, nc, subj, key3, map[string]any{"fail": true})
	_, e2 := callTool(t, nc, subj, key3, map[string]any{"fail": true})
	if e1 == "" || e1 != e2 || runs.Load() != 3 {
		t.Errorf("errors %q / %q, runs %d", e1, e2, runs.Load())
	}
	// Same key, other arguments: another call, run.
	callTool(t, nc, subj, key, map[string]any{"amount": int64(6)})
	if runs.Load() != 4 {
		t.Errorf("runs = %d after a different call under a used key, want 4", runs.Load())
	}
	// No key: no deduplication.
	callTool(t, nc, subj, "", map[string]any{"amount": int64(5)})
	callTool(t, nc, subj, "", map[string]any{"amount": int64(5)})
	if runs.Load() != 6 {
		t.Errorf("runs = %d without keys, want 6", runs.Load())
	}
}

// A deduplicating tool service claims a new key with one write and no
// read: the key is read only when the claim is refused, and a repeat of
// the call is answered from the stored outcome.
func TestToolServiceDedupClaimsANewKeyWithoutReading(t *testing.T) {
	s, nc := runJetStream(t)
	var runs atomic.Int64
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "pay", Dedup: &fleet.DedupConfig{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("charge", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		return fmt.Sprintf("receipt-%d", runs.Add(1)), nil
	}); err != nil {
		t.Fatal(err)
	}
	spy := spyAPI(t, connect(t, s))
	subj := messages.ToolSubject("pay", "charge")
	id := messages.NewMissionID()
	spy.watch(t, id)
	first, _ := callTool(t, nc, subj, id+"/1/1", map[string]any{"amount": int64(5)})
	if n := spy.count(t, "$JS.API.DIRECT.GET.KV_tool_dedup") + spy.count(t, "$JS.API.STREAM.MSG.GET.KV_tool_dedup"); n != 0 {
		t.Errorf("a new key's call read the dedup bucket %d times, want none", n)
	}
	again, _ := callTool(t, nc, subj, id+"/1/1", map[string]any{"amount": int64(5)})
	if again != first || runs.Load() != 1 {
		t.Errorf("the repeat answered %v (first %v), runs %d: want the first outcome and one run", again, first, runs.Load())
	}
}

// Tool calls made by a mission carry Idempotency-Key "<id>/<turn>/<index>"
// and the delivery attempt; CallInfo exposes both.
func TestToolCallsCarryIdempotencyKeys(t *testing.T) {
	_, nc := runJetStream(t)
	var mu sync.Mutex
	var infos []fleet.CallInfo
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	_ = svc.Register("echo", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		ci, _ := fleet.CallInfoFrom(ctx)
		mu.Lock()
		infos = append(infos, ci)
		mu.Unlock()
		return args["x"], nil
	})
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		for turn := 1; turn <= 2; turn++ {
			tctx := fleet.WithTurn(ctx, turn)
			for i := range 2 {
				if _, err := env.Tools.Call(tctx, "echo", map[string]any{"x": int64(i)}); err != nil {
					return nil, err
				}
			}
		}
		return &messages.Step{Return: "ok"}, nil
	}))
	_ = w
	c := newClient(t, nc)
	m := newMission("echo")
	if _, err := c.Run(testCtx(t), m); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	key := func(turn, x int) string {
		return fmt.Sprintf("%s/%d/%s/1", m.ID, turn, fleet.CallDigest("echo", map[string]any{"x": int64(x)}))
	}
	want := []string{key(1, 0), key(1, 1), key(2, 0), key(2, 1)}
	if len(infos) != len(want) {
		t.Fatalf("calls = %d", len(infos))
	}
	for i, ci := range infos {
		if ci.IdempotencyKey != want[i] || ci.Attempt != 1 || ci.Retry != 0 || ci.MissionID != m.ID {
			t.Errorf("call %d: key %q attempt %d retry %d, want %q attempt 1", i, ci.IdempotencyKey, ci.Attempt, ci.Retry, want[i])
		}
	}
}

// A tool request in flight when the NATS server restarts is sent again
// after the reconnect (same idempotency key, Ptc-Retry set) and completes
// long before the call's timeout; so does a call that meets "no
// responders" while the tool service resubscribes. Both as a plain
// request and as a live call (a worker's call to a tool that reports
// progress). The first request's answer is lost: its handler answers only
// once the call has ended. (Were it answered during the restart, the
// service's connection would send the answer once reconnected, and a
// live call, which takes an answer to any of its sends, could end with
// it before the service saw the resend.)
func TestToolRequestAcrossNATSRestart(t *testing.T) {
	for _, c := range []struct {
		name         string
		live, shared bool
	}{{"plain", false, false}, {"plain, drops heard by one listener", false, true}, {"live", true, true}} {
		t.Run(c.name, func(t *testing.T) { toolRequestAcrossNATSRestart(t, c.live, c.shared) })
	}
}

// toolRequestAcrossNATSRestart is TestToolRequestAcrossNATSRestart of a
// live call or a plain one, which hears of its connection's drop through
// a listener of its own or the worker's one (shared), as a live call
// always does.
func toolRequestAcrossNATSRestart(t *testing.T, live, shared bool) {
	dir := t.TempDir()
	port := fleettest.FreePort(t)
	srv, err := embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), nats.ReconnectJitter(0, 0)}
	svcConn, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer svcConn.Close()
	callConn, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer callConn.Close()

	started := make(chan struct{}, 1)
	// ended is closed once the call has ended (or the test does)
	ended := make(chan struct{})
	var endOnce sync.Once
	end := func() { endOnce.Do(func() { close(ended) }) }
	var mu sync.Mutex
	var seen []fleet.CallInfo
	svc, err := fleet.NewToolService(svcConn, fleet.ToolServiceConfig{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	defer end() // before the service stops: its first handler returns
	_ = svc.Register("work", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		ci, _ := fleet.CallInfoFrom(ctx)
		mu.Lock()
		seen = append(seen, ci)
		first := len(seen) == 1
		mu.Unlock()
		if first {
			// the request the restart cuts off: its answer is lost
			started <- struct{}{}
			<-ended
			return "the lost answer", nil
		}
		time.Sleep(300 * time.Millisecond)
		return "done", nil
	})
	// the service's subscriptions are in before the discovery below: a
	// discovery the service cannot hear yet finds no tool, and the call
	// then fails at once as unavailable
	if err := svcConn.Flush(); err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	box, err := fleet.NewToolbox(callConn, fleet.ToolboxConfig{Tools: []string{"work"}, MissionID: id, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if live {
		// progress asked for every 2 s: silent for 8 s, longer than the
		// call may take, so the resend is the drop's, not the silence's
		fleet.LiveCalls(t, box, 2*time.Second)
	} else if shared {
		fleet.SharedDrops(t, box)
	}
	// Discover while the server is up.
	if _, err := box.Get(context.Background(), "work"); err != nil {
		t.Fatal(err)
	}
	type res struct {
		v   any
		err error
		d   time.Duration
	}
	done := make(chan res, 1)
	go func() {
		start := time.Now()
		v, err := box.Call(fleet.WithTurn(context.Background(), 4), "work", nil)
		done <- res{v, err, time.Since(start)}
	}()
	select {
	case <-started: // the request reached the service; its answer will be lost
	case r := <-done:
		t.Fatalf("the call ended before its request reached the service: %v, %v after %v", r.v, r.err, r.d)
	case <-time.After(15 * time.Second):
		t.Fatal("the request did not reach the service")
	}
	srv.Close()
	srv, err = embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	var r res
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not complete after the restart")
	}
	end()
	if r.err != nil || r.v != "done" {
		t.Fatalf("call = %v, %v", r.v, r.err)
	}
	if r.d > 5*time.Second {
		t.Errorf("the call took %v: it waited for a timeout", r.d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("the service saw %d requests, want the original and a resend", len(seen))
	}
	last := seen[len(seen)-1]
	want := id + "/4/" + fleet.CallDigest("work", nil) + "/1"
	if last.IdempotencyKey != seen[0].IdempotencyKey || last.IdempotencyKey != want || last.Retry == 0 {
		t.Errorf("first %+v, resend %+v: want the same key %s and a retry count", seen[0], last, want)
	}
	t.Logf("call across a NATS restart: %v, %d sends", r.d.Round(time.Millisecond), len(seen))
	srv.Close()
}
