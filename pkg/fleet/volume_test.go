package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A finished mission's journal is purged: the entries its run wrote are
// replaced by one empty marker on the mission's journal subject.
func TestJournalPurgedWhenMissionEnds(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	startTools(t, nc)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
		if err != nil {
			return nil, err
		}
		if err := env.Journal.Flush(ctx); err != nil { // the answer is written
			return nil, err
		}
		return &messages.Step{Return: r}, nil
	}))
	m := newMission("search")
	step, err := c.Run(testCtx(t), m)
	if err != nil || step.Fail != nil {
		t.Fatalf("mission: %+v, %v", step, err)
	}
	js, _ := jetstream.New(nc)
	journal, err := js.Stream(testCtx(t), messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the journal rolled up into one marker", func() bool {
		info, err := journal.Info(testCtx(t), jetstream.WithSubjectFilter(messages.JournalSubject(m.ID)))
		if err != nil || info.State.Subjects[messages.JournalSubject(m.ID)] != 1 {
			return false
		}
		last, err := journal.GetLastMsgForSubject(testCtx(t), messages.JournalSubject(m.ID))
		return err == nil && len(last.Data) == 0 && last.Header.Get(jetstream.MsgRollup) == jetstream.MsgRollupSubject
	})
}

// Progress events are bounded: a tool call with large arguments and a
// large result publishes events of at most MaxEventBytes, with previews of
// what was cut and its size; the stored result keeps everything.
func TestEventsBounded(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"id": int64(i), "name": "customer name", "城市": "東京"}
	}
	if err := svc.Register("rows", fleet.ToolSpec{}, func(context.Context, map[string]any) (any, error) { return rows, nil }); err != nil {
		t.Fatal(err)
	}
	bigArg := strings.Repeat("q", 10000)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		r, err := env.Tools.Call(ctx, "rows", map[string]any{"query": bigArg})
		return &messages.Step{Return: r}, err
	}))
	m := newMission("rows")
	step, err := c.Run(testCtx(t), m)
	if err != nil || step.Fail != nil || len(step.Return.([]any)) != len(rows) {
		t.Fatalf("mission: %v, %v", step.Fail, err)
	}
	var evs []*messages.Event
	if err := c.Watch(testCtx(t), m.ID, func(ev *messages.Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	cuts := map[string]bool{}
	for _, ev := range evs {
		b, _ := messages.Marshal(ev)
		if len(b) > fleet.MaxEventBytes {
			t.Errorf("%s event: %d bytes, more than %d", ev.Kind, len(b), fleet.MaxEventBytes)
		}
		cut, _ := ev.Data["cut"].(map[string]any)
		for field, c := range cut {
			c := c.(map[string]any)
			if n, _ := c["bytes"].(int64); n <= 1024 || c["preview"] == "" {
				t.Errorf("%s event: cut %s %v", ev.Kind, field, c)
			}
			cuts[ev.Kind+"."+field] = true
		}
	}
	for _, want := range []string{"tool_call.args", "tool_result.result", "final.return"} {
		if !cuts[want] {
			t.Errorf("no preview of %s in the events (%v)", want, cuts)
		}
	}
}
