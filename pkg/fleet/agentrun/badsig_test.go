package agentrun_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool service that advertises a signature that does not parse makes
// calls to that tool fail with a tool error naming the service and the
// signature; the mission runs on (it is not the agent's fault).
func TestInvalidToolSignatureIsAToolError(t *testing.T) {
	srv := fleettest.Start(t)
	svc, err := micro.AddService(srv.Conn(), micro.Config{Name: "broken", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if err := svc.AddEndpoint("lookup", micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(nil) }),
		micro.WithEndpointSubject(messages.ToolSubject("broken", "lookup")),
		micro.WithEndpointMetadata(map[string]string{fleet.MetaTool: "lookup", fleet.MetaSignature: "(id :int -> {"})); err != nil {
		t.Fatal(err)
	}
	model := &script{turns: map[string][]string{"Look it up": {
		"```clojure\n(tool/lookup {:id 1})\n```",
		"```clojure\n(return {:ok (some? ctx/fail)})\n```",
	}}}
	env := startFleetOn(t, srv, llm.Registry{"default": model})
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{Prompt: "Look it up.", Signature: "{ok :bool}", Tools: []string{"lookup"}},
		Tools: []string{"lookup"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	text := fmt.Sprint(reqs[1].Messages[len(reqs[1].Messages)-1].Content)
	for _, want := range []string{"lookup", "tool service broken", "signature", "does not parse"} {
		if !strings.Contains(text, want) {
			t.Errorf("feedback lacks %q: %s", want, text)
		}
	}
}
