package llm_test

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestMessageHelpers(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.Text{Text: "a"}, llm.ToolUse{ID: "1", Name: "t", Input: map[string]any{"k": []any{map[string]any{"x": 1}}}}, llm.Text{Text: "b"},
	}}
	if m.Text() != "ab" || len(m.ToolUses()) != 1 {
		t.Errorf("Text %q ToolUses %v", m.Text(), m.ToolUses())
	}
	c := m.Clone()
	c.Content[1].(llm.ToolUse).Input["k"].([]any)[0].(map[string]any)["x"] = 2
	c.Content[0] = llm.Text{Text: "z"}
	if m.Content[1].(llm.ToolUse).Input["k"].([]any)[0].(map[string]any)["x"] != 1 || m.Text() != "ab" {
		t.Error("Clone shares state with the original")
	}
	tr := llm.ToolResults(llm.ToolResult{ToolUseID: "1", Content: "r"}, llm.ToolResult{ToolUseID: "2", Content: "e", IsError: true})
	if tr.Role != llm.RoleUser || len(tr.Content) != 2 || tr.Text() != "" {
		t.Errorf("ToolResults = %+v", tr)
	}
	if u := llm.UserText("hi"); u.Role != llm.RoleUser || u.Text() != "hi" {
		t.Errorf("UserText = %+v", u)
	}
	if a := llm.AssistantText("yo"); a.Role != llm.RoleAssistant || a.Text() != "yo" {
		t.Errorf("AssistantText = %+v", a)
	}
}

func TestResponseMessage(t *testing.T) {
	r := &llm.Response{Content: "thinking", ToolCalls: []llm.ToolUse{{ID: "c", Name: "t", Input: map[string]any{"a": 1}}}}
	m := r.Message()
	if m.Role != llm.RoleAssistant || m.Text() != "thinking" || len(m.ToolUses()) != 1 {
		t.Fatalf("Message = %+v", m)
	}
	m.ToolUses()[0].Input["a"] = 2
	if r.ToolCalls[0].Input["a"] != 1 {
		t.Error("Message shares tool input with the response")
	}
	if empty := (&llm.Response{}).Message(); len(empty.Content) != 0 {
		t.Errorf("empty response message = %+v", empty)
	}
}

func TestRequestClone(t *testing.T) {
	r := llm.Request{System: "s", Messages: []llm.Message{llm.UserText("u")}, Tools: []llm.ToolSpec{{Name: "t", InputSchema: map[string]any{"type": "object"}}},
		ToolNames: []string{"t"}, Opts: map[string]any{"temperature": 0.1}}
	c := r.Clone()
	c.Tools[0].InputSchema["type"] = "x"
	c.ToolNames[0] = "x"
	c.Opts["temperature"] = 1
	c.Messages[0] = llm.UserText("x")
	if r.Tools[0].InputSchema["type"] != "object" || r.ToolNames[0] != "t" || r.Opts["temperature"] != 0.1 || r.Messages[0].Text() != "u" {
		t.Errorf("Clone shares state: %+v", r)
	}
}

func TestUsage(t *testing.T) {
	u := llm.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 2}
	u.Add(llm.Usage{InputTokens: 1, OutputTokens: 1, CacheWriteTokens: 3})
	if u != (llm.Usage{InputTokens: 11, OutputTokens: 6, CacheReadTokens: 2, CacheWriteTokens: 3}) || u.Total() != 17 {
		t.Errorf("usage = %+v total %d", u, u.Total())
	}
}
