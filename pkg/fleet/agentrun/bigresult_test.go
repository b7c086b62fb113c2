package agentrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// serveMail serves fn as the tool search_mail of a service "mail" on srv
// until the test ends.
func serveMail(t *testing.T, srv *fleettest.Server, fn func(context.Context, map[string]any) (any, error)) {
	t.Helper()
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("search_mail", fleet.ToolSpec{}, fn); err != nil {
		t.Fatal(err)
	}
}

// A tool result larger than one NATS message reaches the program of a
// mission on a worker: the service sends it out of band, the worker
// streams it into the program's values, the program filters it, and the
// Step's trace keeps the result's reference, not its data.
func TestLargeToolResultReachesTheProgram(t *testing.T) {
	const n = 20_000
	srv := fleettest.Start(t)
	serveMail(t, srv, func(context.Context, map[string]any) (any, error) { return fleettest.MailRecords(n), nil })
	model := &script{turns: map[string][]string{"mail": {
		"```clojure\n(return (count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) (tool/search_mail {}))))\n```"}}}
	env := startFleetTimeout(t, srv, llm.Registry{"default": model}, 20*time.Second) // 20,000 records take a while under -race
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "Count the large unread mail.", Tools: []string{"search_mail"}},
		Tools: []string{"search_mail"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	want := fleettest.BigUnread(fleettest.MailRecords(n))
	if step.Return != want {
		t.Fatalf("return %#v, want %d", step.Return, want)
	}
	calls := 0
	for _, turn := range step.Trace {
		for _, c := range turn.ToolCalls {
			calls++
			m, ok := c.Result.(map[string]any)
			ref, _ := m[messages.RefKey].(map[string]any)
			if !ok || ref["bucket"] != messages.ToolResultBucket("mail") || ref["size"].(int64) < 1<<20 {
				t.Errorf("traced result %.200v, want the object's reference", c.Result)
			}
		}
	}
	if calls != 1 {
		t.Fatalf("%d traced calls", calls)
	}
	enc, _ := messages.MarshalStep(step)
	if len(enc) > 64<<10 {
		t.Errorf("the Step is %d bytes: it grew with the data its program read", len(enc))
	}
}

// A mission that keeps a large tool result across two turns with def and
// returns a large value finishes: its Step, too large for one message, is
// stored aside in the mission_results object store, the result message
// refers to it, and the client reads the whole Step in its place.
func TestLargeStepIsStoredAside(t *testing.T) {
	const n = 20_000
	srv := fleettest.Start(t)
	serveMail(t, srv, func(context.Context, map[string]any) (any, error) { return fleettest.MailRecords(n), nil })
	model := &script{turns: map[string][]string{"mail": {
		"```clojure\n(def mail (tool/search_mail {}))\n(count mail)\n```",
		"```clojure\n(return {:unread (count (filter :unread mail)) :big (apply str (repeat 1100000 \"x\"))})\n```"}}}
	env := startFleetTimeout(t, srv, llm.Registry{"default": model}, 20*time.Second)
	m := &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "Count the unread mail.", Tools: []string{"search_mail"}},
		Tools: []string{"search_mail"},
	}
	step := runMission(t, env, m)
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	ret, _ := step.Return.(map[string]any)
	if ret["unread"] != int64((n+2)/3) || len(ret["big"].(string)) != 1_100_000 {
		t.Fatalf("return unread=%v, big of %d bytes", ret["unread"], len(ret["big"].(string)))
	}
	if mail, _ := step.Memory["mail"].([]any); len(mail) != n {
		t.Fatalf("memory keeps %d records, want %d", len(mail), n)
	}
	if step.Stored != nil {
		t.Fatal("the client handed on the reference instead of the Step")
	}
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	results, err := js.Stream(context.Background(), messages.StreamResults)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := results.GetLastMsgForSubject(context.Background(), messages.ResultSubject(messages.DefaultSubmitter, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	stub, err := messages.UnmarshalStep(raw.Data)
	if err != nil || stub.Stored == nil || stub.Stored.Bucket != messages.BucketResults || len(raw.Data) > 1024 {
		t.Fatalf("result message of %d bytes, stored %+v (%v)", len(raw.Data), stub.Stored, err)
	}
}
