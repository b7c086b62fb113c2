package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// cachingAnthropic is a fake Anthropic Messages API with prompt caching as
// the API documents it: a request writes the prefix up to each
// cache_control breakpoint (tools, then system, then messages) to the
// cache; a later request reads the longest cached prefix that it repeats
// at a message boundary. cache_control itself is not part of a prefix.
// Token counts are bytes/4 of the prefix's canonical JSON. The answers are
// scripted programs, one per request.
type cachingAnthropic struct {
	t       *testing.T
	mu      sync.Mutex
	cached  map[string]bool
	bodies  [][]byte
	replies []string
}

type wireBody struct {
	Tools    json.RawMessage   `json:"tools"`
	System   json.RawMessage   `json:"system"`
	Messages []json.RawMessage `json:"messages"`
}

// stripCache removes cache_control from a JSON value.
func stripCache(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("body part: %v", err)
		return ""
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, _ := json.Marshal(walk(v))
	return string(out)
}

func (c *cachingAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var b wireBody
	if err := json.Unmarshal(raw, &b); err != nil {
		c.t.Errorf("request body: %v", err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.bodies)
	c.bodies = append(c.bodies, raw)
	if n >= len(c.replies) {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"script exhausted"}}`, http.StatusBadRequest)
		return
	}
	// prefixes[i]: tools + system + the first i messages
	prefix := stripCache(c.t, b.Tools) + stripCache(c.t, b.System)
	prefixes := []string{prefix}
	for _, m := range b.Messages {
		prefix += stripCache(c.t, m)
		prefixes = append(prefixes, prefix)
	}
	total := int64(len(prefix) / 4)
	var read int64
	for _, p := range prefixes {
		if c.cached[p] {
			read = int64(len(p) / 4)
		}
	}
	// writes: the prefix up to the system breakpoint and up to the last
	// message's breakpoint
	var write int64
	if bytes.Contains(b.System, []byte("cache_control")) {
		c.cached[prefixes[0]] = true
	}
	if len(b.Messages) > 0 && bytes.Contains(b.Messages[len(b.Messages)-1], []byte("cache_control")) {
		last := prefixes[len(prefixes)-1]
		if !c.cached[last] {
			write = int64(len(last)/4) - read
		}
		c.cached[last] = true
	}
	reply, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-test",
		"content":     []any{map[string]any{"type": "text", "text": c.replies[n]}},
		"stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": total - read - write, "cache_read_input_tokens": read,
			"cache_creation_input_tokens": write, "output_tokens": 40},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(reply)
}

// A 4-turn PTC mission over the Anthropic wire format: every request from
// turn 2 on repeats the previous request's tools, system prompt and
// messages byte for byte (the moving history breakpoint aside), the
// breakpoints sit on the system prompt and the last message's last block,
// and from turn 2 on at least 70% of the prompt tokens are read from the
// cache, as the provider's usage reports them.
func TestPromptCacheHitsFromTurnTwo(t *testing.T) {
	orders := make([]any, 500)
	for i := range orders {
		orders[i] = map[string]any{"id": int64(i), "status": []string{"paid", "open"}[i%2], "total": float64(i%97) + 0.5}
	}
	fake := &cachingAnthropic{t: t, cached: map[string]bool{}, replies: []string{
		"```clojure\n{:orders (tool/list_orders {})}\n```",
		"```clojure\n{:paid (filter #(= \"paid\" (:status %)) orders)}\n```",
		"```clojure\n{:total (sum-by :total paid)}\n```",
		"```clojure\n(return {:count (count paid) :total total})\n```",
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	model, err := anthropic.New(anthropic.Config{Model: "claude-test", BaseURL: srv.URL, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, Spec{Name: "totals", Prompt: "Count the paid orders and their total.", Signature: "{count :int, total :float}",
		Limits: Limits{MaxTurns: 4}, Tools: map[string]Tool{"list_orders": FuncSig("() -> [{id :int, status :string, total :float}]",
			func(context.Context, map[string]any) (any, error) { return orders, nil })}})
	st, err := a.Run(context.Background(), RunOptions{Model: model})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(fake.bodies) != 4 || len(st.Trace) != 4 {
		t.Fatalf("%d requests, %d turns, want 4", len(fake.bodies), len(st.Trace))
	}
	var prev wireBody
	for i, raw := range fake.bodies {
		var b wireBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(raw, []byte(`"cache_control"`)); got != 2 {
			t.Errorf("request %d: %d breakpoints, want 2 (system, last message; PTC mode sends no API tools)", i+1, got)
		}
		if !bytes.Contains(b.System, []byte(`"cache_control":{"type":"ephemeral"}`)) {
			t.Errorf("request %d: no breakpoint on the system prompt: %.200s", i+1, b.System)
		}
		if !lastBlockMarked(t, b.Messages[len(b.Messages)-1]) {
			t.Errorf("request %d: no breakpoint on the last block of the last message: %s", i+1, b.Messages[len(b.Messages)-1])
		}
		if i > 0 {
			if !bytes.Equal(b.System, prev.System) || !bytes.Equal(b.Tools, prev.Tools) {
				t.Errorf("request %d: the system prompt or tools changed", i+1)
			}
			if len(b.Messages) != len(prev.Messages)+2 {
				t.Fatalf("request %d: %d messages after %d", i+1, len(b.Messages), len(prev.Messages))
			}
			for j := range prev.Messages {
				want := prev.Messages[j]
				if j == len(prev.Messages)-1 {
					want = bytes.Replace(want, []byte(`,"cache_control":{"type":"ephemeral"}`), nil, 1)
				}
				if !bytes.Equal(b.Messages[j], want) {
					t.Errorf("request %d: message %d differs from the previous request's:\n%s\n%s", i+1, j, b.Messages[j], want)
				}
			}
		}
		prev = b
	}
	for _, tr := range st.Trace[1:] {
		u := tr.Usage
		share := float64(u.CacheReadTokens) / float64(u.InputTokens)
		t.Logf("turn %d: %d prompt tokens, %d read from the cache (%.0f%%), %d written", tr.Number, u.InputTokens, u.CacheReadTokens, 100*share, u.CacheWriteTokens)
		if share < 0.70 {
			t.Errorf("turn %d read %.0f%% of its prompt from the cache, want ≥ 70%%", tr.Number, 100*share)
		}
	}
	if st.Usage.CacheReadTokens == 0 || st.Usage.CacheWriteTokens == 0 {
		t.Errorf("step usage = %+v", st.Usage)
	}
}

func lastBlockMarked(t *testing.T, msg json.RawMessage) bool {
	var m struct {
		Content []map[string]any `json:"content"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || len(m.Content) == 0 {
		t.Fatalf("message: %v %s", err, msg)
	}
	_, ok := m.Content[len(m.Content)-1]["cache_control"]
	return ok
}

// Over the OpenAI wire format the prefix is stable the same way and every
// request of an agent carries the agent's prompt_cache_key.
func TestOpenAIPromptCacheKey(t *testing.T) {
	ps := &providerServer{replies: []string{
		`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + "```clojure\\n{:n 1}\\n```" + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":80,"completion_tokens":10}}`,
		`{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + "```clojure\\n(return n)\\n```" + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":64}}}`,
	}}
	srv := httptest.NewServer(ps.handler(t))
	defer srv.Close()
	model, err := openai.New(openai.Config{Model: "gpt-test", BaseURL: srv.URL, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, Spec{Name: "counter", Prompt: "Count."})
	st, err := a.Run(context.Background(), RunOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.bodies) != 2 {
		t.Fatalf("%d requests", len(ps.bodies))
	}
	for i, b := range ps.bodies {
		if b["prompt_cache_key"] != "ptc:counter" {
			t.Errorf("request %d: prompt_cache_key = %v", i+1, b["prompt_cache_key"])
		}
	}
	first, _ := json.Marshal(ps.bodies[0]["messages"])
	second, _ := json.Marshal(jsonPath(t, ps.bodies[1], "messages").([]any)[:2])
	if !strings.HasPrefix(string(second), strings.TrimSuffix(string(first), "]")) {
		t.Errorf("turn 2 does not start with turn 1's messages:\n%s\n%s", first, second)
	}
	if st.Usage.CacheReadTokens != 64 {
		t.Errorf("usage = %+v", st.Usage)
	}
}
