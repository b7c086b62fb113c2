package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// dedupService starts a tool service "pay" with deduplication on an
// embedded server, with hook making the dedup store's writes, and
// registers charge as its tool "charge".
func dedupService(t *testing.T, hook func(ctx context.Context, op string, write func(context.Context) (uint64, error)) (uint64, error),
	charge ToolFunc) (*nats.Conn, *ToolService) {
	t.Helper()
	nc := embeddedConn(t)
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "pay", Dedup: &DedupConfig{TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	// set before Register: the goroutines that serve calls start after
	svc.dedup.writeHook = hook
	if err := svc.Register("charge", ToolSpec{}, charge); err != nil {
		t.Fatal(err)
	}
	return nc, svc
}

// dedupCall sends a request of the tool pay.charge with idempotency key
// key and the given timeout, and returns its result, or its error code
// and message.
func dedupCall(t *testing.T, nc *nats.Conn, key string, timeout time.Duration) (any, string) {
	t.Helper()
	data, _ := messages.Marshal(&messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "1", Tool: "charge",
		Args: map[string]any{"amount": int64(5)}})
	msg := &nats.Msg{Subject: messages.ToolSubject("pay", "charge"), Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderIdempotencyKey, key)
	msg.Header.Set(messages.HeaderTimeout, strconv.FormatInt(timeout.Milliseconds(), 10))
	resp, err := nc.RequestMsg(msg, timeout+5*time.Second)
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

// countedCharge is a tool that counts its runs and answers receipt-<n>.
func countedCharge(runs *atomic.Int64) ToolFunc {
	return func(ctx context.Context, args map[string]any) (any, error) {
		return fmt.Sprintf("receipt-%d", runs.Add(1)), nil
	}
}

// A request whose claim was written but whose acknowledgement did not come
// back before its deadline gives up without running the tool and releases
// its claim: a retry of the call runs the tool, once, and succeeds, rather
// than waiting for an outcome that never comes and answering "outcome
// unknown" until the key's TTL.
func TestDedupClaimWithALostAckIsReleased(t *testing.T) {
	var runs, creates atomic.Int64
	nc, _ := dedupService(t, func(ctx context.Context, op string, write func(context.Context) (uint64, error)) (uint64, error) {
		if op != "create" || creates.Add(1) > 1 {
			return write(ctx)
		}
		// the first claim lands; its acknowledgement does not come back
		if _, err := write(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("the claim's write: %v", err)
		}
		<-ctx.Done()
		return 0, ctx.Err()
	}, countedCharge(&runs))
	key := messages.NewMissionID() + "/1/1"
	if _, msg := dedupCall(t, nc, key, 300*time.Millisecond); !strings.Contains(msg, "did not confirm this call's claim; the tool did not run") || runs.Load() != 0 {
		t.Fatalf("the request whose claim's ack was lost answered %q after %d runs, want a timeout saying the tool did not run, and none", msg, runs.Load())
	}
	res, msg := dedupCall(t, nc, key, 3*time.Second)
	if msg != "" || res != "receipt-1" || runs.Load() != 1 {
		t.Fatalf("the retry answered %v %q after %d runs, want receipt-1 and one run", res, msg, runs.Load())
	}
	if res, msg := dedupCall(t, nc, key, 3*time.Second); res != "receipt-1" || runs.Load() != 1 {
		t.Errorf("a repeat answered %v %q after %d runs, want the stored receipt-1", res, msg, runs.Load())
	}
}

// A claim whose write lands after its request gave up (and after the
// release first looked for it) is released too.
func TestDedupClaimLandingAfterTheGiveUpIsReleased(t *testing.T) {
	var runs, creates atomic.Int64
	landed := make(chan error, 1)
	nc, _ := dedupService(t, func(ctx context.Context, op string, write func(context.Context) (uint64, error)) (uint64, error) {
		if op != "create" || creates.Add(1) > 1 {
			return write(ctx)
		}
		// the write is made 300 ms after the request gave up
		go func() {
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond)
			_, err := write(context.Background())
			landed <- err
		}()
		<-ctx.Done()
		return 0, ctx.Err()
	}, countedCharge(&runs))
	key := messages.NewMissionID() + "/1/1"
	if _, msg := dedupCall(t, nc, key, 200*time.Millisecond); msg == "" {
		t.Fatal("the request whose claim was not written in time answered a result")
	}
	if err := <-landed; err != nil {
		t.Fatalf("the late claim: %v", err)
	}
	res, msg := dedupCall(t, nc, key, 3*time.Second)
	if msg != "" || res != "receipt-1" || runs.Load() != 1 {
		t.Fatalf("the retry answered %v %q after %d runs, want receipt-1 and one run", res, msg, runs.Load())
	}
}

// A claim whose tool ran is never released, even when the run's answer is
// a timeout and its outcome could not be stored: the tool may have acted,
// so a retry does not run it again.
func TestDedupClaimWhoseToolRanIsKept(t *testing.T) {
	var runs atomic.Int64
	var failOutcomes atomic.Bool
	failOutcomes.Store(true)
	nc, svc := dedupService(t, func(ctx context.Context, op string, write func(context.Context) (uint64, error)) (uint64, error) {
		if op == "update" && failOutcomes.Load() {
			return 0, errors.New("store unavailable")
		}
		return write(ctx)
	}, func(ctx context.Context, args map[string]any) (any, error) {
		runs.Add(1) // acts, then answers too late
		<-ctx.Done()
		return nil, ctx.Err()
	})
	key := messages.NewMissionID() + "/1/1"
	if _, msg := dedupCall(t, nc, key, 200*time.Millisecond); msg == "" || runs.Load() != 1 {
		t.Fatalf("the run answered %q after %d runs, want a timeout after one", msg, runs.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dkey := "pay/charge/" + key
	e, err := svc.dedup.kv.Get(ctx, dkey)
	if err != nil {
		t.Fatalf("the run's claim: %v", err)
	}
	if _, msg := dedupCall(t, nc, key, time.Second); msg == "" || runs.Load() != 1 {
		t.Errorf("a retry answered %q after %d runs, want no second run", msg, runs.Load())
	}
	if e2, err := svc.dedup.kv.Get(ctx, dkey); err != nil || e2.Revision() != e.Revision() {
		t.Fatalf("the ran claim after a retry: %v, %v; want revision %d kept", e2, err, e.Revision())
	}
	// the outcome, stored once the store takes it, answers later requests
	failOutcomes.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, msg := dedupCall(t, nc, key, time.Second)
		if msg == "timeout: no answer within 200ms" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stored outcome not answered: %q", msg)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1", runs.Load())
	}
}

// releaseClaim deletes a key's record only when it is the unrun claim of
// the request that gave up, at the revision it read; it waits for a claim
// that lands late, and leaves another request's claim and any outcome.
func TestReleaseClaimDeletesOnlyItsOwnUnrunClaim(t *testing.T) {
	nc := embeddedConn(t)
	d, err := openDedup(nc, "svc", DedupConfig{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log := zerolog.Nop()
	rec := func(owner string, done bool) []byte {
		b, _ := messages.Marshal(&dedupRecord{Digest: "d", Owner: owner, Done: done, Started: time.Now().UTC(), Timeout: time.Second})
		return b
	}
	released := func(key, owner string) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); d.releaseClaim(nil, key, owner, &log) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("releaseClaim(%s) did not return", key)
		}
	}
	kept := map[string][]byte{"other": rec("b", false), "outcome": rec("a", true), "notarecord": []byte("x")}
	for k, v := range kept {
		if _, err := d.create(ctx, "svc/t/"+k, v); err != nil {
			t.Fatal(err)
		}
		released("svc/t/"+k, "a")
		if e, err := d.kv.Get(ctx, "svc/t/"+k); err != nil || string(e.Value()) != string(v) || e.Revision() == 0 {
			t.Errorf("%s: after release %v, %v; want it kept", k, e, err)
		}
	}
	if _, err := d.create(ctx, "svc/t/own", rec("a", false)); err != nil {
		t.Fatal(err)
	}
	released("svc/t/own", "a")
	if _, err := d.kv.Get(ctx, "svc/t/own"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("own claim after release: %v, want deleted", err)
	}
	// a retry claims the released key
	if _, err := d.create(ctx, "svc/t/own", rec("c", false)); err != nil {
		t.Errorf("claiming a released key: %v", err)
	}
	// a claim landing after the release started
	go func() {
		time.Sleep(200 * time.Millisecond)
		if _, err := d.create(context.Background(), "svc/t/late", rec("a", false)); err != nil {
			t.Errorf("the late claim: %v", err)
		}
	}()
	released("svc/t/late", "a")
	if _, err := d.kv.Get(ctx, "svc/t/late"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("late claim after release: %v, want deleted", err)
	}
	// a release stops looking when the service stops
	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	d.releaseClaim(stop, "svc/t/never", "a", &log)
	if time.Since(start) > 5*time.Second {
		t.Errorf("a stopped release took %v", time.Since(start))
	}
}
