package agentrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// keyOfParts is a model reply's journal key as it is defined: the SHA-256
// of each part's length, a colon and the part, in order, its first 16
// bytes in hex after the prefix.
func keyOfParts(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return fleet.ModelKeyPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// TestModelKeyIsItsDefinition: the key of a request is the hash of the
// model's name, the system prompt, the messages, tools and options as
// json.Marshal writes them (HTML escaped) and the turn, so journals
// written by any worker replay on any other; an option with no JSON form
// counts as empty.
func TestModelKeyIsItsDefinition(t *testing.T) {
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	reqs := []llm.Request{
		{},
		{System: "you <answer> & stop", Turn: 1, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text{Text: "find <b>order</b> & ship\n"}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse{ID: "t1", Name: "get", Input: map[string]any{"z": 1, "a": []any{"x", 2.5}}}}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult{ToolUseID: "t1", Content: "ok"}}},
		}},
		{System: "s", Turn: 12, Tools: []llm.ToolSpec{{Name: "get", Description: "gets", InputSchema: map[string]any{"type": "object"}}},
			Opts: map[string]any{"temperature": 0.2, "max_tokens": 100}},
		{System: "s", Turn: 3, Opts: map[string]any{"bad": make(chan int)}},
	}
	for i, req := range reqs {
		want := keyOfParts("model-"+strconv.Itoa(i), req.System, jsonOf(req.Messages), jsonOf(req.Tools), jsonOf(req.Opts), strconv.Itoa(req.Turn))
		for range 2 { // the second from a builder used before
			if got := modelKey("model-"+strconv.Itoa(i), req); got != want {
				t.Fatalf("request %d: key %s, want %s", i, got, want)
			}
		}
		if got := fleet.ModelKey("model-"+strconv.Itoa(i), req.System, jsonOf(req.Messages), jsonOf(req.Tools), jsonOf(req.Opts), strconv.Itoa(req.Turn)); got != want {
			t.Fatalf("request %d: fleet.ModelKey %s, want %s", i, got, want)
		}
	}
}

// TestModelKeyAllocations: a key is built in kept buffers; what allocates
// is the JSON encoder's own work and the key itself, not copies of the
// system prompt or of each part.
func TestModelKeyAllocations(t *testing.T) {
	system := string(make([]byte, 16<<10))
	req := llm.Request{System: system, Turn: 1, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.Text{Text: "find the order"}}},
	}}
	modelKey("m", req)
	limit := 3.0
	if fleettest.Race {
		limit = 16 // sync.Pool drops some of what it is given
	}
	if n := testing.AllocsPerRun(100, func() { modelKey("m", req) }); n > limit {
		t.Fatalf("%.1f allocations per key, want at most %.0f", n, limit)
	}
}
