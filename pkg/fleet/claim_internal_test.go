package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A redelivered mission whose result another worker stores while this
// worker claims it (after every read of the claim, just before it writes the status)
// is not run again: the claim reads the result once its own status write
// is in, finds it, and settles the message with that result.
func TestResultStoredDuringClaimIsNotRunAgain(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := StoreConfig{AckWait: time.Second, MaxDeliver: 5}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	w, err := NewWorker(nc, WorkerConfig{
		ID: "late", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			if runs.Add(1) == 1 {
				// the first attempt goes back to the queue
				return nil, fmt.Errorf("%w: try again", ErrRetryable)
			}
			return &messages.Step{Return: "run again"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The second attempt's claim: the previous owner's result lands
	// between its read and its write of the status.
	var landed atomic.Bool
	w.claimWrite = func(k missionKey, attempt int) {
		if attempt != 2 || landed.Swap(true) {
			return
		}
		if _, mine, err := publishResult(ctx, w.js, w.st, k, &messages.Step{Return: "stored by the owner"}, claimFence{}); err != nil || !mine {
			t.Errorf("the owner's result: mine %v, %v", mine, err)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Return != "stored by the owner" {
		t.Fatalf("result %v, want the owner's", step.Return)
	}
	if !landed.Load() {
		t.Fatal("no second claim")
	}
	// the message was settled: nothing is redelivered and run
	time.Sleep(store.AckWait + 500*time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the runner ran %d times, want once (the retried attempt only)", n)
	}
	st, err := client.Status(ctx, m.ID)
	if err != nil || st.State != messages.StateSucceeded {
		t.Fatalf("status %+v, %v; want %s", st, err, messages.StateSucceeded)
	}
}

// failingStatusKV is the status bucket with its next Get failing once
// armed: a read that cannot reach the bucket.
type failingStatusKV struct {
	jetstream.KeyValue
	fails atomic.Int32
}

func (kv *failingStatusKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.fails.Add(-1) >= 0 {
		return nil, errors.New("status bucket unreachable")
	}
	return kv.KeyValue.Get(ctx, key)
}

// On a layout whose RESULTS holds no claim markers, a run whose last
// fence check cannot read the mission's status publishes nothing: the
// mission goes back to the queue, and the next attempt's result is the
// one stored.
func TestStatusUnreadableBeforeTheResultSendsTheMissionBack(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// heartbeats (every AckWait/3) read the status too: none falls within a run
	store := StoreConfig{AckWait: 30 * time.Second, MaxDeliver: 5}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	kv := &failingStatusKV{}
	var runs atomic.Int32
	var w *Worker
	w, err = NewWorker(nc, WorkerConfig{
		ID: "blind", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			n := runs.Add(1)
			if n == 1 {
				// the status read that follows this run, finish's, fails
				// (the stores are bound once the worker starts; finish
				// runs after this function, on its goroutine)
				kv.KeyValue = w.st.Status
				kv.fails.Store(1)
				w.st.Status, w.st.nc = kv, nil // status reads and writes through kv
				// a layout set up before the markers: the status read is
				// the result's only fence
				w.st.claimMarkers = false
			}
			return &messages.Step{Return: fmt.Sprintf("run %d", n)}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Return != "run 2" {
		t.Fatalf("result %v, want the second run's", step.Return)
	}
	if n := kv.fails.Load(); n >= 0 {
		t.Fatalf("the armed status read was not made (%d left)", n+1)
	}
	// the final status follows the result
	for {
		st, err := client.Status(ctx, m.ID)
		if err == nil && st.State == messages.StateSucceeded && st.Attempt == 2 {
			break
		}
		if err != nil || messages.TerminalState(st.State) || ctx.Err() != nil {
			t.Fatalf("status %+v, %v; want %s at attempt 2", st, err, messages.StateSucceeded)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the runner ran %d times, want 2", n)
	}
}

// A submission of a mission id the client did not make is published
// without waiting for its status read: here the read's answer is handed
// on only once the mission is in the queue, and the submission, which
// queued it, is no duplicate.
func TestSubmissionDoesNotWaitForItsStatusRead(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	var answered, queued atomic.Bool
	mux := newReplyMux(nc)
	mux.once.Do(func() {
		mux.prefix = nc.NewInbox()
		_, mux.err = nc.Subscribe(mux.prefix+".*", func(msg *nats.Msg) {
			wait, stop := context.WithTimeout(ctx, 5*time.Second)
			defer stop()
			for wait.Err() == nil {
				if _, err := queuedMsg(wait, c.st.nc, c.st.Missions, c.sub, m.ID); err == nil {
					queued.Store(true)
					break
				}
				time.Sleep(time.Millisecond)
			}
			answered.Store(true)
			mux.deliver(msg)
		})
	})
	c.replies = mux
	sub, err := c.Submit(ctx, m)
	if err != nil || sub.Duplicate || sub.Sequence == 0 {
		t.Fatalf("submission %+v, %v; want a new copy queued", sub, err)
	}
	if !answered.Load() {
		t.Fatal("the status read was not made")
	}
	if !queued.Load() {
		t.Fatal("the mission was queued only after its status read's answer")
	}
}

// heldResultRun runs one mission on a worker of its own whose runner
// returns "run <n>" for its n-th run and whose first run's result
// publish is held while hold runs (a publish its connection holds while
// it reconnects, or its process while it stalls), and returns the
// mission's result and the number of runs.
func heldResultRun(t *testing.T, store StoreConfig, hold func(ctx context.Context, w *Worker, k missionKey), opts ...func(*WorkerConfig)) (*messages.Step, int32) {
	t.Helper()
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	cfg := WorkerConfig{
		ID: "held", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: fmt.Sprintf("run %d", runs.Add(1))}, nil
		}),
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	w, err := NewWorker(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	w.resultHeld = func(k missionKey) {
		if !held.Swap(true) {
			hold(ctx, w, k)
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	if !w.st.claimMarkers {
		t.Fatal("the layout's results stream holds no claim markers")
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatalf("%v (runs %d)", err, runs.Load())
	}
	return step, runs.Load()
}

// A run whose result publish is held past its last fence check while
// another worker claims the mission (its marker, then its status, as
// claim writes them) and reads that no result is stored, stores nothing:
// the stream refuses the result for the newer marker, and the run is
// dropped as taken over. Without the fence the held result lands after
// the new owner's read, and the mission runs twice with the first run's
// result kept.
func TestResultHeldPastALaterClaimIsRefused(t *testing.T) {
	step, runs := heldResultRun(t, StoreConfig{AckWait: time.Second, MaxDeliver: 5}, func(ctx context.Context, w *Worker, k missionKey) {
		seq, err := markClaim(ctx, w.nc, w.st, k, "other")
		if err != nil {
			t.Errorf("the other claim's marker: %v", err)
			return
		}
		if err := takeOver(ctx, w, k, seq); err != nil {
			t.Errorf("the other claim's status: %v", err)
		}
		if _, err := readResult(ctx, w.st, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("the other claim's read: %v, want no result", err)
		}
	})
	// The other claim never runs (it stands for a worker that died): its
	// redelivery runs the mission again, here.
	if step.Return != "run 2" || runs != 2 {
		t.Fatalf("result %v after %d runs; want the second run's (the first was taken over)", step.Return, runs)
	}
}

// A run whose result is refused for a newer claim marker while the
// status is still its own (the claim that wrote the marker lost its
// status write and dropped its copy of the message) fences its result
// anew (refence) and stores it: the mission runs once. Sent back to the
// queue instead, it runs again, and on its last delivery (MaxDeliver 1)
// it is left dead. With the record and the result in one batch, the
// refused batch's record is stored before the result published again.
func TestResultRefusedForAMarkerAloneIsFencedAgain(t *testing.T) {
	for _, maxDeliver := range []int{5, 1} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("max_deliver_%d/batch_%v", maxDeliver, batch), func(t *testing.T) {
				opt := NoResultBatches
				if batch {
					opt = BatchOnOneReplica
				}
				// AckWait far longer than the test: no redelivery
				step, runs := heldResultRun(t, StoreConfig{AckWait: time.Minute, MaxDeliver: maxDeliver}, func(ctx context.Context, w *Worker, k missionKey) {
					if w.st.batchResults != batch {
						t.Errorf("the worker batches results: %v, want %v", w.st.batchResults, batch)
					}
					if _, err := markClaim(ctx, w.nc, w.st, k, "lost its status write"); err != nil {
						t.Errorf("marker: %v", err)
					}
				}, opt)
				if step.Return != "run 1" || runs != 1 {
					t.Fatalf("result %+v after %d runs, want the first run's", step, runs)
				}
				if step.Record == nil {
					t.Fatal("the result names no record")
				}
			})
		}
	}
}

// A run whose claim marker is gone when it publishes (markers expire
// with the results stream's MaxAge, which a mission awaiting approval
// can outlast: its resumption publishes under the claim_seq of a marker
// stored before its suspensions) is refused with no newer marker
// stored, and fences its result anew: the mission does not run again,
// nor end dead on its last delivery.
func TestResultFencedByAGoneMarkerIsFencedAgain(t *testing.T) {
	var runs atomic.Int32
	retryOnce := func(c *WorkerConfig) {
		c.Runner = RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			n := runs.Add(1)
			if n == 1 {
				return nil, fmt.Errorf("first run: %w", ErrRetryable)
			}
			return &messages.Step{Return: fmt.Sprintf("run %d", n)}, nil
		})
	}
	// the first run is retried: the second claim stores a marker, which
	// is deleted before its run's result is published
	step, _ := heldResultRun(t, StoreConfig{AckWait: time.Minute, MaxDeliver: 2}, func(ctx context.Context, w *Worker, k missionKey) {
		cur, err := getStatus(ctx, w.st, k)
		if err != nil || cur.st.ClaimSeq == 0 {
			t.Errorf("status %+v, %v; want the second claim's marker named", cur, err)
			return
		}
		if err := w.st.Results.DeleteMsg(ctx, cur.st.ClaimSeq); err != nil {
			t.Errorf("marker not deleted: %v", err)
		}
	}, retryOnce)
	if step.Return != "run 2" || runs.Load() != 2 {
		t.Fatalf("result %+v after %d runs, want the second run's", step, runs.Load())
	}
}
