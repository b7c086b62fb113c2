package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// resultAfterStatus is a fleet client whose first status read lets the
// mission finish and returns only once its result is stored: the result
// lands between loadView's status read and its result read.
type resultAfterStatus struct {
	*fleet.Client
	release chan struct{}
	reads   int
}

func (r *resultAfterStatus) Status(ctx context.Context, id string) (*messages.Status, error) {
	r.reads++
	st, err := r.Client.Status(ctx, id)
	if r.reads > 1 {
		return st, err
	}
	close(r.release)
	for {
		if _, rerr := r.Client.Result(ctx, id); rerr == nil {
			return st, err
		} else if !errors.Is(rerr, fleet.ErrNotFound) {
			return nil, rerr
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A result stored between the view's status read and its result read is
// shown with the final state, not next to the running status read first.
func TestViewOfAResultStoredBetweenItsReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	release := make(chan struct{})
	w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{ID: "late", Slots: 1, IdleWait: 100 * time.Millisecond,
		Runner: fleet.RunnerFunc(func(ctx context.Context, _ *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &messages.Step{Return: "done"}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "late"}}
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := client.Status(ctx, m.ID)
		if err == nil && st.State == messages.StateRunning {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("mission never ran: %+v %v", st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	src := &resultAfterStatus{Client: client, release: release}
	v, err := loadView(ctx, src, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Step == nil || v.Step.Return != "done" {
		t.Fatalf("view's step: %+v", v.Step)
	}
	if v.state() != messages.StateSucceeded || v.Status == nil || v.Status.State != messages.StateSucceeded {
		t.Errorf("view of a stored result shows state %q (status %+v)", v.state(), v.Status)
	}
	if v.Events != nil {
		t.Errorf("view with a result read %d events", len(v.Events))
	}
}
