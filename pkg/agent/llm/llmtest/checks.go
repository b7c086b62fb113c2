package llmtest

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// LastUserContains returns a Check requiring the text of the request's last
// user message to contain every one of subs.
func LastUserContains(subs ...string) func(llm.Request) error {
	return func(req llm.Request) error {
		text, ok := lastUser(req)
		if !ok {
			return fmt.Errorf("request has no user message")
		}
		for _, s := range subs {
			if !strings.Contains(text, s) {
				return fmt.Errorf("last user message does not contain %q; it is:\n%s", s, text)
			}
		}
		return nil
	}
}

// SystemContains returns a Check requiring the system prompt to contain
// every one of subs.
func SystemContains(subs ...string) func(llm.Request) error {
	return func(req llm.Request) error {
		for _, s := range subs {
			if !strings.Contains(req.System, s) {
				return fmt.Errorf("system prompt does not contain %q", s)
			}
		}
		return nil
	}
}

// NoneContain returns a Check requiring that no text sent to the model (the
// system prompt, every text block, tool input and tool result, and the tool
// specs) contains any of subs. It is the firewall canary check.
func NoneContain(subs ...string) func(llm.Request) error {
	return func(req llm.Request) error {
		all := Transcript(req)
		for _, s := range subs {
			if strings.Contains(all, s) {
				return fmt.Errorf("request leaks %q", s)
			}
		}
		return nil
	}
}

// Transcript renders everything a request would send to a model as text:
// the system prompt, the tool specs and every message block. It is meant
// for assertions and golden files.
func Transcript(req llm.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[system]\n%s\n", req.System)
	for _, t := range req.Tools {
		fmt.Fprintf(&b, "[tool %s] %s %v\n", t.Name, t.Description, t.InputSchema)
	}
	for _, m := range req.Messages {
		for _, blk := range m.Content {
			switch x := blk.(type) {
			case llm.Text:
				fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, x.Text)
			case llm.ToolUse:
				fmt.Fprintf(&b, "[%s tool_use %s %s] %v\n", m.Role, x.ID, x.Name, x.Input)
			case llm.ToolResult:
				fmt.Fprintf(&b, "[%s tool_result %s error=%t]\n%s\n", m.Role, x.ToolUseID, x.IsError, x.Content)
			}
		}
	}
	return b.String()
}

func lastUser(req llm.Request) (string, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			var parts []string
			for _, blk := range req.Messages[i].Content {
				switch x := blk.(type) {
				case llm.Text:
					parts = append(parts, x.Text)
				case llm.ToolResult:
					parts = append(parts, x.Content)
				}
			}
			return strings.Join(parts, "\n"), true
		}
	}
	return "", false
}
