package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Runner outcomes the worker turns into Steps.
func TestRunnerOutcomes(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		switch m.Context["mode"] {
		case "panic":
			panic("runner bug")
		case "error":
			return nil, errors.New("spec could not be built")
		case "nil":
			return nil, nil
		case "fail":
			return &messages.Step{Fail: &messages.Fail{Reason: "max_turns_exceeded", Message: "5 turns"}}, errors.New("ignored")
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &messages.Step{Return: "ok"}, nil
	}))
	tests := []struct {
		mode   string
		edit   func(*messages.Mission)
		reason string
		msg    string
		state  string
	}{
		{"ok", nil, "", "", messages.StateSucceeded},
		{"panic", nil, fleet.ReasonRunnerPanic, "the runner crashed: runner bug", messages.StateFailed},
		{"error", nil, fleet.ReasonRunnerError, "spec could not be built", messages.StateFailed},
		{"nil", nil, fleet.ReasonRunnerError, "the runner returned no step", messages.StateFailed},
		{"fail", nil, "max_turns_exceeded", "5 turns", messages.StateFailed},
		{"hang", func(m *messages.Mission) { m.Limits.MissionTimeout = 100 * time.Millisecond }, fleet.ReasonTimeout, "timeout of 100ms", messages.StateFailed},
		{"ok", func(m *messages.Mission) { m.Deadline = time.Now().Add(-time.Second) }, fleet.ReasonDeadline, "deadline", messages.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.reason, func(t *testing.T) {
			m := newMission()
			m.Context = map[string]any{"mode": tt.mode}
			if tt.edit != nil {
				tt.edit(m)
			}
			step, err := c.Run(testCtx(t), m)
			if err != nil {
				t.Fatal(err)
			}
			if tt.reason == "" {
				if !step.Ok() {
					t.Fatalf("step failed: %v", step.Fail)
				}
			} else if step.Fail == nil || step.Fail.Reason != tt.reason || !strings.Contains(step.Fail.Message, tt.msg) {
				t.Fatalf("fail = %+v, want %s containing %q", step.Fail, tt.reason, tt.msg)
			}
			waitState(t, c, m.ID, tt.state)
		})
	}
}

func TestWatchStopsWithContext(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.Watch(ctx, messages.NewMissionID(), func(*messages.Event) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Watch = %v, want deadline exceeded", err)
	}
	if err := c.Watch(ctx, "bad", nil); !errors.Is(err, messages.ErrInvalid) {
		t.Fatalf("Watch(bad id) = %v", err)
	}
}

func TestWorkerRunDrainsWhenContextEnds(t *testing.T) {
	_, nc := runJetStream(t)
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		Runner: fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
			return &messages.Step{}, nil
		}),
		Store: testStore, Priorities: []string{messages.PriorityNormal}, IdleWait: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Ready() {
		t.Fatal("ready before Start")
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	eventually(t, 5*time.Second, "ready", w.Ready)
	if err := w.Start(ctx); err == nil {
		t.Error("second Start succeeded")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run = %v", err)
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed after Run returned")
	}
	if w.Ready() {
		t.Fatal("ready after drain")
	}
}

// A tool whose service starts after the worker's last discovery is found by
// the miss-triggered refresh.
func TestToolDiscoveredAfterServiceStarts(t *testing.T) {
	_, nc := runJetStream(t)
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"late"}, MissRefresh: 20 * time.Millisecond, DiscoveryWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := box.Call(ctx, "late", nil); !errors.Is(err, fleet.ErrToolUnavailable) {
		t.Fatalf("before the service: %v", err)
	}
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "tardy"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	if err := svc.Register("late", fleet.ToolSpec{Signature: "() -> :string"}, func(context.Context, map[string]any) (any, error) {
		return "here", nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	got, err := box.Call(ctx, "late", nil)
	if err != nil || got != "here" {
		t.Fatalf("after the service started: %v, %v", got, err)
	}
	tl, err := box.Get(ctx, "late")
	if err != nil || tl.Signature() != "() -> :string" {
		t.Fatalf("Get = %v, %v", tl, err)
	}
	if _, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"a.b"}}); !errors.Is(err, fleet.ErrInvalidConfig) {
		t.Errorf("NewToolbox(bad name) = %v", err)
	}
}

// After no responders the cache is refreshed, so a tool that moved to
// another service is found again.
func TestToolMovesToAnotherService(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	serve := func(name string) *fleet.ToolService {
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Register("where", fleet.ToolSpec{}, func(context.Context, map[string]any) (any, error) { return name, nil }); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	old := serve("old")
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"where"}, MissRefresh: 10 * time.Millisecond, DiscoveryWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Call(ctx, "where", nil); err != nil || got != "old" {
		t.Fatalf("first call = %v, %v", got, err)
	}
	if err := old.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	newSvc := serve("new")
	defer newSvc.Stop(context.Background())
	if _, err := box.Call(ctx, "where", nil); !errors.Is(err, fleet.ErrToolUnavailable) {
		t.Fatalf("call after the move = %v, want unavailable (no responders)", err)
	}
	eventually(t, 5*time.Second, "the moved tool", func() bool {
		got, err := box.Call(ctx, "where", nil)
		return err == nil && got == "new"
	})
}
