package agentrun_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A worker process SIGKILLed while it reads a large tool result (the
// result's reference journaled, its object being streamed into the
// program) is replaced by another worker process, which reads the result
// again from the object store: the mission finishes with the right answer,
// once, and the tool is not called again.
func TestKilledWhileReadingLargeResult(t *testing.T) {
	n := 85_000 // about 20 MB of msgpack, read in chunks
	if fleettest.Race {
		n = 25_000 // about 6 MB: under -race the service would not answer within the tool timeout
	}
	srv := fleettest.Start(t)
	nc := dial(t, srv.ClientURL())
	var calls atomic.Int32
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	recs := fleettest.MailRecords(n)
	if err := svc.Register("search_mail", fleet.ToolSpec{}, func(context.Context, map[string]any) (any, error) {
		calls.Add(1)
		return recs, nil
	}); err != nil {
		t.Fatal(err)
	}
	want := fleettest.BigUnread(recs)
	model := newFakeModel()
	model.program = func(_, step int) string {
		if step == 1 {
			return "```clojure\n(def mail (tool/search_mail {}))\n(count mail)\n```"
		}
		return "```clojure\n(return {:n (count mail) :big (count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) mail))})\n```"
	}
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	first := startWorkerProc(t, srv.ClientURL(), ms.URL, "wa", nil, true)
	id := messages.NewMissionID()
	m := &messages.Mission{ID: id, Kind: messages.KindAgent, Tools: []string{"search_mail"},
		Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=1: count the mail", id), Tools: []string{"search_mail"},
			Limits: messages.Limits{MaxTurns: 4, ProgramMemory: 512 << 20}}}
	submitted := time.Now()
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	// the journal holds the model's first reply and the tool's answer (its
	// reference) once the worker has the reference and reads the object
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	subject := messages.SubjectJournalPrefix + id
	for {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err == nil && info.State.Subjects[subject] >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the tool's answer was never journaled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, err := client.Status(ctx, id); err == nil && messages.TerminalState(st.State) {
		t.Fatalf("the mission ended (%s) before the worker could be killed: make the result larger", st.State)
	}
	first.kill()
	t.Logf("killed the worker %v after submitting, the result's reference journaled", time.Since(submitted).Round(time.Millisecond))
	startWorkerProc(t, srv.ClientURL(), ms.URL, "wb", nil, true)
	step, err := client.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() {
		for _, turn := range step.Trace {
			t.Logf("turn %d: %q error %q", turn.Number, turn.Program, turn.Error)
		}
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	got, _ := step.Return.(map[string]any)
	if got["n"] != int64(n) || got["big"] != want {
		t.Fatalf("return = %v, want n %d and big %d", step.Return, n, want)
	}
	if c := calls.Load(); c != 1 {
		t.Errorf("the tool was called %d times, want 1", c)
	}
	if step.Attempts != 2 || step.Replayed == nil || step.Replayed.ToolCalls != 1 {
		t.Errorf("attempts %d, replayed %+v: want the second attempt to replay the tool call", step.Attempts, step.Replayed)
	}
	if _, asked, _ := model.repeats(); asked != 0 {
		t.Errorf("%d model answers repeated", asked)
	}
}
