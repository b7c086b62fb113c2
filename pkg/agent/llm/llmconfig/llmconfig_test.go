package llmconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
	}{
		{"openai:gpt-4.1-mini", Spec{Provider: "openai", Model: "gpt-4.1-mini"}},
		{" Anthropic:claude-sonnet-4-5 ", Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{"ollama:llama3.2:3b", Spec{Provider: "ollama", Model: "llama3.2:3b"}},
		{"openrouter:anthropic/claude-sonnet-4.5", Spec{Provider: "openrouter", Model: "anthropic/claude-sonnet-4.5"}},
		{"openai:llama3@http://localhost:11434/v1", Spec{Provider: "openai", Model: "llama3", BaseURL: "http://localhost:11434/v1"}},
		{"openai:org@name@https://vllm.internal:8000/v1;key_env=VLLM_KEY;stream_usage=false",
			Spec{Provider: "openai", Model: "org@name", BaseURL: "https://vllm.internal:8000/v1", KeyEnv: "VLLM_KEY", NoStreamUsage: true}},
		{"anthropic:claude-haiku-4-5;max_tokens=8192;version=2023-06-01;header.anthropic-beta=prompt-caching-2024-07-31",
			Spec{Provider: "anthropic", Model: "claude-haiku-4-5", MaxTokens: 8192, Version: "2023-06-01", Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"}}},
		{"openrouter:x;header.HTTP-Referer=https://ptc.example;header.X-Title=ptc fleet",
			Spec{Provider: "openrouter", Model: "x", Headers: map[string]string{"HTTP-Referer": "https://ptc.example", "X-Title": "ptc fleet"}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		again, err := Parse(got.format(false))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %q via %q = %+v, %v", tt.in, got.format(false), again, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gpt-4.1-mini", `want "provider:model"`},
		{"", `want "provider:model"`},
		{"gemini:pro", `unknown provider "gemini"`},
		{"openai:", "model name is empty"},
		{"openai: gpt", "surrounding spaces"},
		{"openai:m@http://", "base URL \"http://\" is not an absolute"},
		{"openai:m;oops", "parameter 1: want key=value"},
		{"openai:m;=x", "parameter 1: want key=value"},
		{"openai:m;key_env=1BAD", `key_env "1BAD" is not an environment variable name`},
		{"openai:m;key_env=", `key_env "" is not`},
		{"anthropic:m;max_tokens=-5", `max_tokens "-5" is not a positive integer`},
		{"openai:m;max_tokens=5", `parameter "max_tokens" does not apply to openai (it takes key_env, header.NAME, price_in, price_out, price_cache_read, price_cache_write, stream, stream_usage); request options go in the agent's llm_opts (OpenAI: max_completion_tokens)`},
		{"openai:m;version=1", `parameter "version" does not apply to openai`},
		{"anthropic:m;stream_usage=false", `parameter "stream_usage" does not apply to anthropic (it takes key_env, header.NAME, price_in, price_out, price_cache_read, price_cache_write, max_tokens, stream, version)`},
		// base URLs: no scheme, Azure deployments, queries, mangled paths, another provider's endpoint
		{"openai:qwen@localhost:8000/v1", `base URL "localhost:8000/v1" has no scheme: write openai:qwen@http://localhost:8000/v1 (or https://); accepted forms: "provider:model"`},
		{"openai:qwen@10.0.0.5:8000/v1;key_env=K", `base URL "10.0.0.5:8000/v1" has no scheme`},
		{"openai:d@https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21", `is an Azure OpenAI deployment URL`},
		{"openai:m@https://gw.example/v1?tenant=1", `has a query or fragment; the client appends /chat/completions`},
		{"openai:m@https://gw.example/v1/chat/completions", `already ends with /chat/completions, which the client appends; give https://gw.example/v1`},
		{"anthropic:m@https://gw.example/v1", `ends with /v1; the client appends /v1/messages, so give https://gw.example`},
		{"anthropic:claude@https://api.openai.com/v1", `is an endpoint of the OpenAI chat completions API, but anthropic speaks the Anthropic Messages API`},
		{"openai:gpt@https://api.anthropic.com", `is an endpoint of the Anthropic Messages API, but openai speaks the OpenAI chat completions API`},
		{"openai:m;stream_usage=maybe", "stream_usage must be true or false"},
		{"openai:m;header.Bad Name=x", `header name "Bad Name" is not valid`},
		{"openai:m;temperature=0.2", `parameter "temperature" does not apply to openai`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if !errors.Is(err, llm.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	// Header values never reach an error message.
	_, err := Parse("openai:m;header.Authorization=Bearer SECRET;bogus")
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("err = %v", err)
	}
}

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestBuildKeys(t *testing.T) {
	keys := map[string]string{"OPENAI_API_KEY": "sk-openai-SECRET1", "ANTHROPIC_API_KEY": "sk-ant-SECRET2", "MY_KEY": "SECRET3"}
	tests := []struct {
		spec    string
		env     map[string]string
		wantErr string
		str     string
	}{
		{"openai:gpt-4.1-mini", keys, "", "openai:gpt-4.1-mini@https://api.openai.com/v1/chat/completions"},
		{"openai:gpt-4.1-mini", nil, "environment variable OPENAI_API_KEY is not set", ""},
		{"anthropic:claude-sonnet-4-5", nil, "environment variable ANTHROPIC_API_KEY is not set", ""},
		{"openrouter:meta/llama", nil, "environment variable OPENROUTER_API_KEY is not set", ""},
		{"openrouter:meta/llama", map[string]string{"OPENROUTER_API_KEY": "k-SECRET"}, "", "openrouter:meta/llama@https://openrouter.ai/api/v1/chat/completions"},
		{"ollama:llama3.2:3b", nil, "", "ollama:llama3.2:3b@http://localhost:11434/v1/chat/completions"},
		{"openai:llama3@http://localhost:8080/v1", nil, "", "openai:llama3@http://localhost:8080/v1/chat/completions"},
		{"openai:llama3@http://localhost:8080/v1;key_env=MY_KEY", nil, "environment variable MY_KEY is not set", ""},
		{"anthropic:claude-sonnet-4-5;key_env=MY_KEY", keys, "", "anthropic:claude-sonnet-4-5@https://api.anthropic.com/v1/messages"},
		{"openai:m;header.Authorization=x", keys, "Headers cannot set Authorization", ""},
	}
	for _, tt := range tests {
		m, err := NewModel(tt.spec, Options{Getenv: env(tt.env)})
		if tt.wantErr != "" {
			if !errors.Is(err, llm.ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewModel(%q) = %v, want %q", tt.spec, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("secret in error: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewModel(%q): %v", tt.spec, err)
			continue
		}
		if got := fmt.Sprint(m); got != tt.str {
			t.Errorf("model = %s, want %s", got, tt.str)
		}
		if s := fmt.Sprintf("%v %+v %#v", m, m, m); strings.Contains(s, "SECRET") {
			t.Errorf("secret printed: %s", s)
		}
	}
}

// The built models send the key from the environment to the server, in
// each provider's header, and to an overridden base URL only the key its
// spec names.
func TestBuiltModelsSendKeys(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got = append(got, r.URL.Path+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")+" "+r.Header.Get("X-Title"))
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			fmt.Fprint(w, `{"type":"message","id":"m","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
			return
		}
		fmt.Fprint(w, `{"id":"c","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	o := Options{Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a", "K": "sk-k"}), HTTPClient: srv.Client()}
	for _, spec := range []string{
		"openai:g@" + srv.URL + "/v1;header.X-Title=t",
		"anthropic:c@" + srv.URL,
		"ollama:g@" + srv.URL + "/v1;key_env=K",
		"ollama:g@" + srv.URL + "/v1",
		"openai:g@" + srv.URL + "/v1;key_env=OPENAI_API_KEY",
		"anthropic:c@" + srv.URL + ";key_env=ANTHROPIC_API_KEY",
	} {
		m, err := NewModel(spec, o)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
		if err != nil || resp.Content != "ok" {
			t.Fatalf("%s: %v %v", spec, resp, err)
		}
	}
	// An overridden base URL gets a key only when the spec names its
	// variable, never the provider's default key.
	want := []string{"/v1/chat/completions  t", "/v1/messages  ", "/v1/chat/completions Bearer sk-k ", "/v1/chat/completions  ",
		"/v1/chat/completions Bearer sk-o ", "/v1/messages sk-a "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests = %q\nwant       %q", got, want)
	}
}

func TestRegistryFromEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"PTC_MODEL_HAIKU=anthropic:claude-haiku-4-5",
		"PTC_MODEL_SONNET=anthropic:claude-sonnet-4-5;max_tokens=8192",
		"PTC_MODEL_LOCAL=ollama:llama3.2:3b",
		"PTC_MODEL_GPT_MINI=openai:gpt-4.1-mini",
		"ANTHROPIC_API_KEY=sk-ant-SECRET",
		"OPENAI_API_KEY=sk-SECRET",
	}
	reg, err := RegistryFromEnv(environ, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Names(); !reflect.DeepEqual(got, []string{"gpt_mini", "haiku", "local", "sonnet"}) {
		t.Errorf("names = %v", got)
	}
	if m, err := reg.Lookup("sonnet"); err != nil || fmt.Sprint(m) != "anthropic:claude-sonnet-4-5@https://api.anthropic.com/v1/messages" {
		t.Errorf("sonnet = %v, %v", m, err)
	}

	// Getenv, when given, is where keys come from.
	_, err = RegistryFromEnv(environ, Options{Getenv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "PTC_MODEL_GPT_MINI: ") || !strings.Contains(err.Error(), "PTC_MODEL_HAIKU: ") ||
		!strings.Contains(err.Error(), "ANTHROPIC_API_KEY is not set") || strings.Contains(err.Error(), "PTC_MODEL_LOCAL") {
		t.Errorf("err = %v", err)
	}

	bad := []string{"PTC_MODEL_=openai:x", "PTC_MODEL_A=gemini:pro", "PTC_MODEL_B=openai:b;header.Authorization=Bearer sk-SECRET;x", "PTC_MODEL_c=ollama:c", "PTC_MODEL_C=ollama:c"}
	_, err = RegistryFromEnv(bad, Options{})
	for _, want := range []string{"PTC_MODEL_: empty model name", "PTC_MODEL_A: ", `unknown provider`, "PTC_MODEL_B: ", `PTC_MODEL_c: model name "c" is defined twice`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "SECRET") {
		t.Errorf("secret in error: %v", err)
	}
	reg, err = RegistryFromEnv(nil, Options{})
	if err != nil || reg == nil || len(reg) != 0 {
		t.Errorf("empty environ = %v, %v", reg, err)
	}
}

func TestSpecStringRedactsHeaders(t *testing.T) {
	s, err := Parse("openai:m;header.Authorization-Proxy=SECRET")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "openai:m;header.Authorization-Proxy=[redacted]" || strings.Contains(fmt.Sprint(s), "SECRET") {
		t.Errorf("String = %s", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"openai:gpt-4.1-mini", "ollama:llama3.2:3b", "openai:a@b@http://x:1/v1;key_env=K;stream_usage=false",
		"anthropic:c;max_tokens=10;version=v;header.A-B=c d", "x", ":", "openai:m;", "openai:m@http://", "openai:m;header.=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			if !errors.Is(err, llm.ErrConfig) {
				t.Fatalf("error is not a config error: %v", err)
			}
			return
		}
		canon := s.format(false)
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, in, err)
		}
		if again.format(false) != canon {
			t.Fatalf("round trip: %q -> %q -> %q", in, canon, again.format(false))
		}
	})
}

// An '@' inside a model name is not taken for a base URL.
func TestModelNameWithAt(t *testing.T) {
	s, err := Parse("anthropic:claude-3-5-sonnet@20240620")
	if err != nil || s.Model != "claude-3-5-sonnet@20240620" || s.BaseURL != "" {
		t.Fatalf("Parse = %+v, %v", s, err)
	}
}

// Models built from specs stream their answers over the wire unless the
// spec says stream=false; a server answering with one JSON body still works.
func TestSpecModelsStream(t *testing.T) {
	var streamed []any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		streamed = append(streamed, body["stream"])
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	for _, spec := range []string{"openai:m@" + srv.URL + "/v1", "openai:m@" + srv.URL + "/v1;stream=false"} {
		m, err := NewModel(spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("x")}})
		if err != nil || resp.Content != "hi" || resp.StopReason != llm.StopEndTurn {
			t.Fatalf("%s: %+v, %v", spec, resp, err)
		}
	}
	if len(streamed) != 2 || streamed[0] != true || streamed[1] != nil {
		t.Fatalf("stream flags sent = %v", streamed)
	}
}

// openai-responses selects the Responses API client.
func TestResponsesProvider(t *testing.T) {
	m, err := NewModel("openai-responses:gpt-5-codex", Options{Getenv: func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-x"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*openai.ResponsesClient); !ok || !strings.HasSuffix(fmt.Sprint(m), "@https://api.openai.com/v1/responses") {
		t.Fatalf("model = %T %v", m, m)
	}
	if _, err := Parse("openai-responses:m@https://gw.example/v1/responses"); err == nil || !strings.Contains(err.Error(), "already ends with /responses") {
		t.Errorf("err = %v", err)
	}
}
