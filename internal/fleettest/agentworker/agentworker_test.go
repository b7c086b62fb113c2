package agentworker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestStartRunsMissionsWithTheModel: a mission submitted to the fleet is
// run by the started worker with the model's program, under the ID the
// edit gave it.
func TestStartRunsMissionsWithTheModel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	w := agentworker.Start(ctx, t, srv.Conn(), llmtest.NewT(t, llmtest.Code(`(return {:n 42})`)),
		func(c *fleet.WorkerConfig) { c.ID = "scripted" })
	if w.ID() != "scripted" {
		t.Errorf("worker ID = %q", w.ID())
	}
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	step, err := client.Run(ctx, &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "answer", Signature: "{n :int}"}})
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() || step.Return.(map[string]any)["n"] != int64(42) {
		t.Fatalf("step = %+v %+v", step.Return, step.Fail)
	}
}
