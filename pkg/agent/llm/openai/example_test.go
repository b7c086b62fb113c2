package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// A client pointed at a local OpenAI-compatible server (here an httptest
// server standing in for Ollama or vLLM), wrapped in the retry policy.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"llama3.2",
			"choices":[{"index":0,"message":{"role":"assistant","content":"(return 42)"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":31,"completion_tokens":5,"total_tokens":36}}`)
	}))
	defer srv.Close()

	client, err := openai.New(openai.Config{Model: "llama3.2", BaseURL: srv.URL + "/v1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llm.WithRetry(client, llm.RetryPolicy{MaxAttempts: 3})
	resp, err := model.Complete(context.Background(), llm.Request{
		System:   "You write PTC-Lisp.",
		Messages: []llm.Message{llm.UserText("What is 6 * 7?")},
		Opts:     map[string]any{"temperature": 0},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Content, resp.StopReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output: (return 42) end_turn 31 5
}
