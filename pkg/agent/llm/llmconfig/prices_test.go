package llmconfig

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestSpecPrices(t *testing.T) {
	s, err := Parse("anthropic:claude-sonnet-4-5;price_in=3;price_out=15;price_cache_read=0.30;price_cache_write=3.75")
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if s.Prices != want {
		t.Errorf("prices = %+v, want %+v", s.Prices, want)
	}
	if got := s.String(); got != "anthropic:claude-sonnet-4-5;price_cache_read=0.3;price_cache_write=3.75;price_in=3;price_out=15" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"openai:g;price_in=-1", "openai:g;price_out=cheap", "openai:g;price_in=NaN", "openai:g;price_in=Inf"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "is not a price") {
			t.Errorf("Parse(%q) = %v, want a price error", bad, err)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// Models with prices estimate each answer's cost from the provider's own
// usage, prompt-cache reads and writes priced apart, whole bodies and
// streams alike.
func TestPricedModelsOverTheWire(t *testing.T) {
	const (
		anthropicBody = `{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",` +
			`"usage":{"input_tokens":200,"cache_read_input_tokens":1800,"cache_creation_input_tokens":0,"output_tokens":100}}`
		openaiBody = `{"id":"c","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500}}}`
	)
	anthropicSSE := []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","usage":{"input_tokens":200,"cache_read_input_tokens":1000,"cache_creation_input_tokens":800,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":100}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}
	openaiSSE := []string{
		`data: {"id":"c","model":"g","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"}}]}`,
		`data: {"id":"c","model":"g","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: {"id":"c","model":"g","choices":[],"usage":{"prompt_tokens":2000,"completion_tokens":100,"total_tokens":2100,"prompt_tokens_details":{"cached_tokens":1500}}}`,
		`data: [DONE]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		stream := strings.Contains(string(body), `"stream":true`)
		anthropic := strings.HasSuffix(r.URL.Path, "/messages")
		switch {
		case stream:
			w.Header().Set("Content-Type", "text/event-stream")
			evs := openaiSSE
			if anthropic {
				evs = anthropicSSE
			}
			for _, e := range evs {
				fmt.Fprint(w, e+"\n\n")
			}
		case anthropic:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, anthropicBody)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, openaiBody)
		}
	}))
	defer srv.Close()
	o := Options{Getenv: env(nil), HTTPClient: srv.Client()}
	anthropicPrices := ";price_in=3;price_out=15;price_cache_read=0.3;price_cache_write=3.75"
	openaiPrices := ";price_in=2;price_out=8;price_cache_read=0.5"
	cases := []struct {
		spec      string
		want      llm.Usage
		wantCost  float64
		streaming bool
	}{
		{"anthropic:c@" + srv.URL + ";stream=false" + anthropicPrices,
			llm.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 1800}, (200*3 + 1800*0.3 + 100*15) / 1e6, false},
		{"anthropic:c@" + srv.URL + anthropicPrices,
			llm.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 1000, CacheWriteTokens: 800}, (200*3 + 1000*0.3 + 800*3.75 + 100*15) / 1e6, true},
		{"openai:g@" + srv.URL + "/v1;stream=false" + openaiPrices,
			llm.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 1500}, (500*2 + 1500*0.5 + 100*8) / 1e6, false},
		{"openai:g@" + srv.URL + "/v1" + openaiPrices,
			llm.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 1500}, (500*2 + 1500*0.5 + 100*8) / 1e6, true},
		// no prices: tokens only
		{"openai:g@" + srv.URL + "/v1;stream=false",
			llm.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 1500}, 0, false},
	}
	for _, c := range cases {
		m, err := NewModel(c.spec, o)
		if err != nil {
			t.Fatal(err)
		}
		req := llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
		var resp *llm.Response
		if c.streaming {
			s, err := m.(llm.Streamer).Stream(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", c.spec, err)
			}
			resp, err = llm.Collect(s)
			if err != nil {
				t.Fatalf("%s: %v", c.spec, err)
			}
		} else if resp, err = m.Complete(context.Background(), req); err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if resp.Content != "ok" {
			t.Errorf("%s: content %q", c.spec, resp.Content)
		}
		got := resp.Usage
		cost := got.CostUSD
		got.CostUSD = 0
		if got != c.want {
			t.Errorf("%s: usage %+v, want %+v", c.spec, got, c.want)
		}
		if !near(cost, c.wantCost) {
			t.Errorf("%s: cost %v, want %v", c.spec, cost, c.wantCost)
		}
	}
}
