package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func TestListAndEvents(t *testing.T) {
	_, nc := runJetStream(t)
	release := make(chan struct{})
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		switch m.Context["n"] {
		case int64(1):
			return &messages.Step{Return: "ok"}, nil
		case int64(2):
			return &messages.Step{Fail: &messages.Fail{Reason: "nope", Message: "cannot"}}, nil
		}
		env.Events.Emit(&messages.Event{Kind: messages.EventTurnStarted, Turn: 1})
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &messages.Step{Return: "late"}, nil
	}), func(c *fleet.WorkerConfig) { c.ID = "lister" })
	c := newClient(t, nc)
	ctx := testCtx(t)
	var ids []string
	for n := int64(1); n <= 3; n++ {
		m := newMission()
		m.Context = map[string]any{"n": n}
		m.Agent.Name = fmt.Sprintf("agent%d", n)
		m.Agent.Prompt = "\n  Count the things of run " + fmt.Sprint(n) + ".\nMore text."
		m.Labels = map[string]string{"team": "a", "run": fmt.Sprint(n)}
		if n == 2 {
			m.Labels["team"] = "b"
		}
		if n < 3 {
			if _, err := c.Run(ctx, m); err != nil {
				t.Fatal(err)
			}
		} else if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		time.Sleep(2 * time.Millisecond) // distinct ULID times
	}
	eventually(t, 5*time.Second, "third mission running", func() bool {
		st, err := c.Status(ctx, ids[2])
		return err == nil && st.State == messages.StateRunning
	})
	eventually(t, 5*time.Second, "finished states stored", func() bool {
		st, err := c.Status(ctx, ids[1])
		return err == nil && st.State == messages.StateFailed
	})
	all, err := c.List(ctx, fleet.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].MissionID != ids[2] || all[1].MissionID != ids[1] || all[2].MissionID != ids[0] {
		t.Fatalf("list = %+v, want the three missions newest first", all)
	}
	if all[0].State != messages.StateRunning || all[0].Worker != "lister" || all[0].Attempt != 1 ||
		all[1].State != messages.StateFailed || all[1].Reason != "nope" || all[2].State != messages.StateSucceeded {
		t.Errorf("list states = %+v", all)
	}
	for _, mi := range all {
		if sub, ok := fleet.MissionTime(mi.MissionID); !ok || !mi.Submitted.Equal(sub) || mi.Duration <= 0 {
			t.Errorf("%s: submitted %v (id time %v), duration %v", mi.MissionID, mi.Submitted, sub, mi.Duration)
		}
	}
	// Each mission says what it is: agent, the prompt's first line, labels.
	if sm := all[1].Summary; sm == nil || sm.Agent != "agent2" || sm.Prompt != "Count the things of run 2." || sm.Labels["team"] != "b" || sm.Kind != messages.KindAgent {
		t.Errorf("summary = %+v", sm)
	}
	teamA, _ := c.List(ctx, fleet.ListOptions{Labels: map[string]string{"team": "a"}})
	if len(teamA) != 2 || teamA[0].MissionID != ids[2] || teamA[1].MissionID != ids[0] {
		t.Errorf("label team=a = %+v", teamA)
	}
	if got, _ := c.List(ctx, fleet.ListOptions{Labels: map[string]string{"team": "a", "run": "3"}}); len(got) != 1 || got[0].MissionID != ids[2] {
		t.Errorf("labels team=a,run=3 = %+v", got)
	}
	if got, _ := c.List(ctx, fleet.ListOptions{Labels: map[string]string{"nope": ""}}); len(got) != 0 {
		t.Errorf("a label no mission has = %+v", got)
	}
	if got, _ := c.List(ctx, fleet.ListOptions{Limit: 1}); len(got) != 1 || got[0].MissionID != ids[2] {
		t.Errorf("limit 1 = %+v", got)
	}
	done, _ := c.List(ctx, fleet.ListOptions{States: []string{messages.StateSucceeded, messages.StateFailed}})
	if len(done) != 2 || done[0].MissionID != ids[1] {
		t.Errorf("finished only = %+v", done)
	}
	if _, err := c.List(ctx, fleet.ListOptions{States: []string{"done"}}); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("unknown state: %v", err)
	}

	// a running mission's events are stored within the worker's EventDelay
	var evs []*messages.Event
	eventually(t, 5*time.Second, "the running mission's events stored", func() bool {
		evs, err = c.Events(ctx, ids[2])
		return err != nil || len(evs) >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != messages.EventStarted || evs[0].Worker != "lister" || evs[1].Kind != messages.EventTurnStarted {
		t.Errorf("events of the running mission = %+v", evs)
	}
	if evs, err := c.Events(ctx, messages.NewMissionID()); err != nil || len(evs) != 0 {
		t.Errorf("events of an unknown mission: %v %v", evs, err)
	}
	close(release)
}
