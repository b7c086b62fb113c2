package agentrun_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// toolResultObjects lists the object names in service svc's results
// bucket (a listing is bounded: on a loaded machine one may stall).
func toolResultObjects(obs jetstream.ObjectStore) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	return names, nil
}

// waitObjects waits up to 30s for the bucket to hold exactly want.
func waitObjects(t *testing.T, obs jetstream.ObjectStore, want ...string) {
	t.Helper()
	// the worker deletes them after the result is stored, which a loaded
	// race build with other packages' tests running may delay long
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := toolResultObjects(obs)
		if err == nil && strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket holds %v (%v), want %v", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resultBucket creates service svc's results bucket as the setup does and
// puts in it an object of another mission, which no mission's end may
// delete.
func resultBucket(t *testing.T, srv *fleettest.Server, svc string) (jetstream.ObjectStore, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: messages.ToolResultBucket(svc), TTL: fleet.DefaultToolResultTTL, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	other := messages.NewMissionID() + ".search_mail." + messages.NewMissionID()
	if _, err := obs.PutBytes(ctx, other, []byte("another mission's result")); err != nil {
		t.Fatal(err)
	}
	return obs, other
}

// The tool-result objects a mission read are deleted by the worker when
// the mission ends (before their TTL), and nothing else in the bucket is:
// another mission's object stays.
func TestToolObjectsDeletedWhenMissionEnds(t *testing.T) {
	const n = 5_000
	srv := fleettest.Start(t)
	obs, other := resultBucket(t, srv, "mail")
	serveMail(t, srv, func(context.Context, map[string]any) (any, error) { return fleettest.MailRecords(n), nil })
	model := &script{turns: map[string][]string{"mail": {
		"```clojure\n(def a (tool/search_mail {}))\n(def b (tool/search_mail {}))\n(count a)\n```",
		"```clojure\n(return (+ (count a) (count b)))\n```"}}}
	env := startFleetTimeout(t, srv, llm.Registry{"default": model}, 20*time.Second)
	m := &messages.Mission{ID: messages.NewMissionID(),
		Agent: &messages.AgentSpec{Prompt: "Count the mail.", Tools: []string{"search_mail"}},
		Tools: []string{"search_mail"},
	}
	step := runMission(t, env, m)
	if step.Fail != nil || step.Return != int64(2*n) {
		t.Fatalf("mission: return %v, fail %+v", step.Return, step.Fail)
	}
	var names []string
	for _, turn := range step.Trace {
		for _, c := range turn.ToolCalls {
			ref, _ := c.Result.(map[string]any)[messages.RefKey].(map[string]any)
			name, _ := ref["name"].(string)
			if !strings.HasPrefix(name, m.ID+".") {
				t.Fatalf("traced result %.200v: not an object of the mission", c.Result)
			}
			names = append(names, name)
		}
	}
	if len(names) != 2 {
		t.Fatalf("%d objects read, want 2", len(names))
	}
	waitObjects(t, obs, other)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range names {
		if _, err := obs.GetInfo(ctx, name); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("%s: %v, want it deleted", name, err)
		}
	}
}

// A tool returning 1,000,000 small records, more bytes encoded than the
// mission's limits.max_data, is refused from its reference's size before
// it is read: the program sees an error naming limits.max_data and how to
// raise it, the refused object is deleted when the mission ends, and the
// worker goes on to serve the next mission.
func TestResultOverMaxDataRefusedFromReference(t *testing.T) {
	const n = 1_000_000
	srv := fleettest.Start(t)
	obs, other := resultBucket(t, srv, "mail")
	records := func() []any {
		recs := make([]any, n)
		for i := range recs {
			recs[i] = map[string]any{"id": int64(i), "ok": i%2 == 0}
		}
		return recs
	}
	var took atomic.Int64 // how long the tool's function took
	serveMail(t, srv, func(context.Context, map[string]any) (any, error) {
		t0 := time.Now()
		defer func() { took.Store(int64(time.Since(t0))) }()
		return records(), nil
	})
	const maxData = 4 << 20
	model := &script{turns: map[string][]string{
		"mail": {
			"```clojure\n(count (tool/search_mail {}))\n```",
			"```clojure\n(return \"refused\")\n```"},
		"next": {"```clojure\n(return 42)\n```"},
	}}
	// building and encoding a million records takes long in a loaded race build
	env := startFleetTimeout(t, srv, llm.Registry{"default": model}, 2*time.Minute)
	m := &messages.Mission{ID: messages.NewMissionID(),
		Agent: &messages.AgentSpec{Prompt: "Count the mail.", Tools: []string{"search_mail"}},
		Tools: []string{"search_mail"},
		// the tool call counts against the program's time limit
		Limits: messages.Limits{MaxData: maxData, ProgramTimeout: 2 * time.Minute},
	}
	t0 := time.Now()
	step := runMission(t, env, m)
	t.Logf("mission %v, tool function %v", time.Since(t0), time.Duration(took.Load()))
	if step.Fail != nil || step.Return != "refused" {
		t.Fatalf("mission: return %v, fail %+v", step.Return, step.Fail)
	}
	var calls []messages.ToolCall
	for _, turn := range step.Trace {
		calls = append(calls, turn.ToolCalls...)
	}
	if len(calls) != 1 {
		t.Fatalf("%d traced calls, want 1", len(calls))
	}
	msg := calls[0].Error
	enc, err := messages.Marshal(records())
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) <= maxData {
		t.Fatalf("the result is %d bytes encoded, not over the %d limit (the call ended with %q)", len(enc), maxData, msg)
	}
	for _, want := range []string{"over the mission's data limit of 4194304 bytes", "raise limits.max_data", m.ID + ".search_mail."} {
		if !strings.Contains(msg, want) {
			t.Errorf("tool error %q does not say %q", msg, want)
		}
	}
	waitObjects(t, obs, other)

	next := runMission(t, env, &messages.Mission{Agent: &messages.AgentSpec{Prompt: "next"}})
	if next.Fail != nil || next.Return != int64(42) {
		t.Fatalf("next mission: return %v, fail %+v", next.Return, next.Fail)
	}
}
