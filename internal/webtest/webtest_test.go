package webtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// The scripted server speaks the wire format the OpenAI client reads: the
// replies come back in order with their usage, then the script is spent.
func TestScriptedChatAnswersInOrder(t *testing.T) {
	srv, calls := webtest.ScriptedChat(t, "first", "second")
	c, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	for _, want := range []string{"first", "second"} {
		resp, err := c.Complete(context.Background(), req)
		if err != nil || resp.Content != want || resp.Usage.InputTokens != 100 || resp.Usage.OutputTokens != 7 {
			t.Fatalf("Complete = %+v, %v; want %q", resp, err, want)
		}
	}
	if _, err := c.Complete(context.Background(), req); err == nil {
		t.Error("a request past the script succeeded")
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("calls = %d, want 3", n)
	}
}

func TestGetReturnsTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok " + r.URL.Path))
	}))
	defer srv.Close()
	if got := webtest.Get(t, srv.URL+"/metrics"); got != "ok /metrics" {
		t.Errorf("Get = %q", got)
	}
}
