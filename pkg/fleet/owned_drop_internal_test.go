package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run whose worker's connection dropped since the last heartbeat
// confirms that the mission is still its own before its next model or
// tool request (RunEnv.Owned), however recent that heartbeat: a NATS
// server that restarted gives the messages it had given out to whichever
// worker asks first. A run whose mission was taken meanwhile sends
// nothing more: Owned is ErrFenced.
func TestOwnedConfirmsAfterAConnectionDrop(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a heartbeat every 20 s: none falls within the run
	store := StoreConfig{AckWait: time.Minute, MaxDeliver: 5}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan error, 2)
	dropWorker(ctx, t, nc, store, func(w *Worker) RunnerFunc {
		return func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			owned <- env.Owned(ctx)
			// another worker takes the mission while this worker's
			// connection drops and comes back
			if err := takeOver(ctx, w, missionKey{sub: client.Submitter(), id: m.ID}, 0); err != nil {
				return nil, err
			}
			if err := dropConnection(ctx, nc); err != nil {
				return nil, err
			}
			owned <- env.Owned(ctx)
			return &messages.Step{Return: "sent after the drop"}, nil
		}
	})
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	if _, err := client.Submit(ctx, m, SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, ErrFenced} {
		select {
		case err := <-owned:
			if !errors.Is(err, want) {
				t.Fatalf("Owned %d: %v, want %v", i+1, err, want)
			}
		case <-ctx.Done():
			t.Fatalf("Owned %d: not asked", i+1)
		}
	}
}

// A run whose worker's connection dropped since its status was last
// confirmed reads the status before its result, though the stream fences
// the result: another worker's claim whose marker RESULTS did not take in
// time (the claim then goes on without one) is seen there, and the run
// stores nothing. The mission's redelivery runs it again here (the other
// claim stands for a worker that died).
func TestResultAfterAConnectionDropReadsTheStatusFirst(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := StoreConfig{AckWait: time.Second, MaxDeliver: 5}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	dropWorker(ctx, t, nc, store, func(w *Worker) RunnerFunc {
		return func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			n := runs.Add(1)
			if n == 1 {
				// the other claim's status, with no marker of its own
				if err := takeOver(ctx, w, missionKey{sub: client.Submitter(), id: m.ID}, 0); err != nil {
					return nil, err
				}
				if err := dropConnection(ctx, nc); err != nil {
					return nil, err
				}
			}
			return &messages.Step{Return: fmt.Sprintf("run %d", n)}, nil
		}
	})
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Return != "run 2" || runs.Load() != 2 {
		t.Fatalf("result %v after %d runs; want the second run's (the first lost the mission)", step.Return, runs.Load())
	}
}

// takeOver writes mission k's status as another worker's claim of it
// writes it: worker "other", the next attempt, claimSeq its marker's
// sequence (0: a claim that went on without one).
func takeOver(ctx context.Context, w *Worker, k missionKey, claimSeq uint64) error {
	cur, err := getStatus(ctx, w.st, k)
	if err != nil {
		return err
	}
	st := cur.st
	st.Worker, st.Attempt, st.ClaimSeq = "other", cur.st.Attempt+1, claimSeq
	_, err = casStatus(ctx, w.st, st, cur.rev)
	return err
}

// dropConnection drops nc's connection to its server and returns once it
// is back.
func dropConnection(ctx context.Context, nc *nats.Conn) error {
	back := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(back)
	if err := nc.ForceReconnect(); err != nil {
		return err
	}
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dropWorker starts, on nc, a worker of one slot with store's settings
// running runner.
func dropWorker(ctx context.Context, t *testing.T, nc *nats.Conn, store StoreConfig, runner func(w *Worker) RunnerFunc) {
	t.Helper()
	var w *Worker
	w, err := NewWorker(nc, WorkerConfig{
		ID: "dropped", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			return runner(w)(ctx, m, env)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
}
