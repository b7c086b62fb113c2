package agent

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// PreviewPrompt of a text-mode agent shows what its first request sends.
func TestPreviewPromptTextModeMatchesFirstRequest(t *testing.T) {
	a, err := New(Spec{
		Prompt:    "Classify the sentiment of: {{text}}",
		Signature: "(text :string) -> {sentiment :string, score :float}",
		Output:    OutputText,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := map[string]any{"text": "I love it"}
	p, err := PreviewPrompt(a, ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.New(llmtest.Text(`{"sentiment": "positive", "score": 0.9}`))
	if _, err := a.Run(context.Background(), RunOptions{Model: m, Context: ctx}); err != nil {
		t.Fatal(err)
	}
	req, _ := m.LastRequest()
	if req.System != p.System {
		t.Errorf("preview system prompt differs from the request's:\n%s\n---\n%s", p.System, req.System)
	}
	if len(req.Messages) == 0 || req.Messages[0].Text() != p.User {
		t.Errorf("preview user message %q differs from the request's %q", p.User, req.Messages[0].Text())
	}
}
