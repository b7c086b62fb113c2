package agentrun_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The example mission examples/missions/support-lead.yaml, read as a
// mission file and sent with its scripts as dispatcher local sends it, runs
// on a worker that has no model: its program spawns a child agent
// (spawn_agent) and asks an llm-query, and the scripted model answers the
// support lead from script by turn and each agent it starts from the
// script_by_prompt entry its mission text matches. The events show the
// requests each agent's model received (the feedback each later request
// carried), and the trace each agent's replies.
func TestScriptedMissionDrivesChildren(t *testing.T) {
	f, err := missionfile.Read("../../../examples/missions/support-lead.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if m.Scripted() {
		t.Fatal("Build kept the script")
	}
	m.Model, m.Script, m.ScriptByPrompt = messages.ModelScripted, f.Script, f.ScriptByPrompt
	env := startFleet(t, &script{}, false)
	step := runMission(t, env, m)
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v\ntrace: %+v", step.Fail, step.Trace)
	}
	if got := fmt.Sprint(step.Return); got != "map[angry:true latest:Question about refund #76 urgent:6]" {
		t.Fatalf("return %s", got)
	}

	// (the fleet serves shop.Generate(200, 1000, 300): 6 urgent refund emails)
	// the trace: each agent got its own script's replies, in turn order
	if len(step.Trace) != 2 || step.Trace[0].Raw != f.Script[0] || step.Trace[1].Raw != f.Script[1] {
		t.Fatalf("support lead's trace: %+v", step.Trace)
	}
	spawn := step.Trace[0].ToolCalls
	if len(spawn) != 1 || spawn[0].Name != messages.SpawnToolName || spawn[0].Child == nil {
		t.Fatalf("turn 1's tool calls: %+v", spawn)
	}
	child := spawn[0].Child
	emails := f.ScriptByPrompt[0]
	if len(child.Trace) != 2 || child.Trace[0].Raw != emails.Replies[0] || child.Trace[1].Raw != emails.Replies[1] ||
		len(child.Trace[0].ToolCalls) != 1 || child.Trace[0].ToolCalls[0].Name != "search_emails" {
		t.Fatalf("spawned child's trace: %+v", child.Trace)
	}
	query := step.Trace[1].ToolCalls
	if len(query) != 1 || query[0].Name != "llm-query" || query[0].Child == nil ||
		len(query[0].Child.Trace) != 1 || query[0].Child.Trace[0].Raw != f.ScriptByPrompt[1].Replies[0] {
		t.Fatalf("turn 2's tool calls: %+v", query)
	}
	if step.Usage.Requests != 5 {
		t.Errorf("%d model requests, want 5 (2 + 2 + 1)", step.Usage.Requests)
	}

	// the requests each agent's model received, from the mission's events
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	requests := map[string]int{}      // agent → requests
	feedback := map[string][]string{} // agent → the feedback its later requests carried
	err = env.client.Watch(ctx, m.ID, func(ev *messages.Event) error {
		who := "support_lead"
		if a, ok := ev.Data["agent"].(string); ok {
			who = a
		}
		switch ev.Kind {
		case messages.EventLLMRequest:
			requests[who]++
		case messages.EventTurnFinished:
			if fb, ok := ev.Data["feedback"].(string); ok {
				feedback[who] = append(feedback[who], fb)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// the spawned child and the llm-query are named after the tool
	// that started them
	childName, queryName := messages.SpawnToolName, "llm-query"
	if want := map[string]int{"support_lead": 2, childName: 2, queryName: 1}; !reflect.DeepEqual(requests, want) {
		t.Fatalf("model requests by agent: %v, want %v", requests, want)
	}
	if fb := feedback["support_lead"]; len(fb) != 1 || !strings.HasPrefix(fb[0], "Result: 6\nMemory: found\n") {
		t.Errorf("support lead's turn 2 request carried %q", fb)
	}
	if fb := feedback[childName]; len(fb) != 1 || !strings.HasPrefix(fb[0], "Output:\nurgent refund emails: 6\nResult: 6\nMemory: emails\nTurn 2 of 2") {
		t.Errorf("the spawned child's turn 2 request carried %q", fb)
	}
	if n := len(feedback[queryName]); n != 0 {
		t.Errorf("the llm-query's one request carried feedback: %q", feedback[queryName])
	}
	if !reflect.DeepEqual(child.Return, map[string]any{"count": int64(6), "latest": "Question about refund #76"}) {
		t.Errorf("child's return %#v", child.Return)
	}
}
