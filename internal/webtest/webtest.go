// Package webtest holds the HTTP sides of tests that reach a service or a
// model over HTTP: a GET that fails the test on error, and OpenAI's
// chat-completions wire format (one answer, or a scripted server), the
// way a worker reaches its model.
package webtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Get returns the body of a GET of url. A request that fails ends tb; a
// status other than 200 is reported as an error.
func Get(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		tb.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// ChatCompletion writes a chat.completion answer: content as the
// assistant's message, with the given usage.
func ChatCompletion(w http.ResponseWriter, id, model, content string, promptTokens, completionTokens int) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": promptTokens, "completion_tokens": completionTokens,
			"total_tokens": promptTokens + completionTokens},
	})
}

// ScriptedChat starts a server (closed when tb ends) answering POST
// {URL}/v1/chat/completions with replies in order, each with 100 prompt
// and 7 completion tokens; a request past the script or to another path
// gets a 400 in OpenAI's error format. The counter counts the requests.
func ScriptedChat(tb testing.TB, replies ...string) (*httptest.Server, *atomic.Int32) {
	reply, calls := inOrder(replies)
	return ScriptedChatFunc(tb, reply), calls
}

// inOrder answers each request with the next of replies ("" past the
// last), counting the requests.
func inOrder(replies []string) (func(map[string]any) string, *atomic.Int32) {
	var calls atomic.Int32
	return func(map[string]any) string {
		n := int(calls.Add(1))
		if n > len(replies) {
			return ""
		}
		return replies[n-1]
	}, &calls
}

// ScriptedChatFunc is ScriptedChat answering each request (its decoded
// JSON body) with reply's answer; "" answers with a 400.
func ScriptedChatFunc(tb testing.TB, reply func(body map[string]any) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		text := ""
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && json.NewDecoder(r.Body).Decode(&body) == nil {
			text = reply(body)
		}
		if text == "" {
			http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		ChatCompletion(w, "chatcmpl-1", "test-model", text, 100, 7)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// ScriptedMessages starts a server (closed when tb ends) answering POST
// {URL}/v1/messages (the Anthropic Messages API) with replies in order,
// each with 100 input and 7 output tokens; a request past the script or to
// another path gets a 400 in Anthropic's error format. The counter counts
// the requests.
func ScriptedMessages(tb testing.TB, replies ...string) (*httptest.Server, *atomic.Int32) {
	reply, calls := inOrder(replies)
	return ScriptedMessagesFunc(tb, reply), calls
}

// ScriptedMessagesFunc is ScriptedMessages answering each request (its
// decoded JSON body) with reply's answer; "" answers with a 400.
func ScriptedMessagesFunc(tb testing.TB, reply func(body map[string]any) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		text := ""
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" && json.NewDecoder(r.Body).Decode(&body) == nil {
			text = reply(body)
		}
		w.Header().Set("Content-Type", "application/json")
		if text == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"unexpected request"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 100, "output_tokens": 7},
		})
	}))
	tb.Cleanup(srv.Close)
	return srv
}
