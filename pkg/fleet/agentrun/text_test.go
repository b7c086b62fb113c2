package agentrun_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// toolThenJSON is a scripted model for text mode: the first request gets a
// native tool call, the second a JSON answer built from the tool result it
// was sent.
type toolThenJSON struct {
	mu   sync.Mutex
	reqs []llm.Request
}

func (m *toolThenJSON) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req.Clone())
	n := len(m.reqs)
	m.mu.Unlock()
	if n == 1 {
		return &llm.Response{ToolCalls: []llm.ToolUse{{ID: "call_1", Name: "get_customer", Input: map[string]any{"id": int64(7)}}}}, nil
	}
	var result string
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			if tr, ok := b.(llm.ToolResult); ok {
				result = tr.Content
			}
		}
	}
	if !strings.Contains(result, `"id":7`) {
		return &llm.Response{Content: `{"name": "missing"}`}, nil
	}
	return &llm.Response{Content: "```json\n{\"name\": \"found\", \"region_known\": " + boolJSON(strings.Contains(result, `"region"`)) + "}\n```"}, nil
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// A text-mode mission (native tool calling, JSON answer) runs through the
// fleet like a PTC-Lisp one: the tool call goes over NATS to the tool service.
func TestTextModeMissionOverNATS(t *testing.T) {
	model := &toolThenJSON{}
	env := startFleetWith(t, llm.Registry{"default": model})
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{
			Prompt: "Look up customer 7.", Signature: "{name :string, region_known :bool}",
			Output: messages.ModeText, Tools: []string{"get_customer"},
		},
		Tools: []string{"get_customer"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	ret := step.Return.(map[string]any)
	if ret["name"] != "found" || ret["region_known"] != true {
		t.Errorf("return = %v", ret)
	}
	if len(model.reqs) != 2 || len(model.reqs[0].Tools) != 1 || model.reqs[0].Tools[0].Name != "get_customer" {
		t.Fatalf("requests = %d, tools offered = %+v", len(model.reqs), model.reqs[0].Tools)
	}
	if props, _ := model.reqs[0].Tools[0].InputSchema["properties"].(map[string]any); props["id"] == nil {
		t.Errorf("tool schema lacks the id parameter: %v", model.reqs[0].Tools[0].InputSchema)
	}
	// The firewalled phone number in the tool result never reaches the model.
	if strings.Contains(llmTranscript(model.reqs[1]), "+1-555-") {
		t.Error("a firewalled phone number reached the model")
	}
}

func llmTranscript(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, c := range m.Content {
			switch x := c.(type) {
			case llm.Text:
				b.WriteString(x.Text)
			case llm.ToolResult:
				b.WriteString(x.Content)
			}
		}
	}
	return b.String()
}
