package httpx

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		headers map[string]string
		want    time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After": " 2 "}, 2 * time.Second},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "-4"}, 0},
		{map[string]string{"Retry-After": "1e12"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "Sat, 21 Nov 2026 12:00:30 GMT"}, 30 * time.Second},
		{map[string]string{"Retry-After": "Sat, 21 Nov 2026 11:59:00 GMT"}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "junk", "Retry-After": "9"}, 9 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %s, want %s", tt.headers, got, tt.want)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	for status, want := range map[int]bool{200: false, 400: false, 401: false, 403: false, 404: false, 408: true, 409: true, 413: false, 422: false, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true} {
		if Retryable(status) != want {
			t.Errorf("Retryable(%d) = %v", status, !want)
		}
	}
}

func TestMergeOpts(t *testing.T) {
	body := map[string]any{"model": "m"}
	if err := MergeOpts("p", body, map[string]any{"temperature": 0.5, "seed": 7}, "model"); err != nil || body["temperature"] != 0.5 || body["seed"] != 7 {
		t.Errorf("MergeOpts = %v %v", body, err)
	}
	if err := MergeOpts("p", body, map[string]any{"model": "x"}, "model"); err == nil || !strings.Contains(err.Error(), `"model"`) || body["model"] != "m" {
		t.Errorf("reserved key: %v %v", body, err)
	}
}

func TestNewHTTPClientHasTimeouts(t *testing.T) {
	r, ok := NewHTTPClient().Transport.(*protoRouter)
	if !ok {
		t.Fatalf("transport = %T", NewHTTPClient().Transport)
	}
	for _, tr := range []*http.Transport{r.h1, r.h2} {
		if tr.TLSHandshakeTimeout != TLSHandshakeTimeout || tr.ResponseHeaderTimeout != ResponseHeaderTimeout || tr.DialContext == nil || tr.Proxy == nil {
			t.Fatalf("transport = %+v", tr)
		}
	}
	if r.h2.MaxConnsPerHost != MaxDialsPerHost || r.h1.MaxConnsPerHost != 0 {
		t.Errorf("MaxConnsPerHost %d and %d", r.h2.MaxConnsPerHost, r.h1.MaxConnsPerHost)
	}
	if ua := UserAgent(); !strings.HasPrefix(ua, "ptc/") {
		t.Errorf("UserAgent = %q", ua)
	}
}

func TestSetupClient(t *testing.T) {
	s := Setup{Name: "p", Provider: "prov", Model: "m", DefaultBaseURL: "https://api.example.com/v1/",
		Headers: map[string]string{"x-title": "t"}, Reserved: []string{"Authorization"}, AuthHeader: "Authorization"}
	c, base, h, err := s.Client()
	if err != nil || base != "https://api.example.com/v1" || h.Get("X-Title") != "t" || c.Provider != "prov" || c.HTTP == nil {
		t.Fatalf("Client() = %+v %q %v %v", c, base, h, err)
	}
	for _, tc := range []struct {
		edit func(*Setup)
		want string
	}{
		{func(s *Setup) { s.Model = " " }, "p: Model is required"},
		{func(s *Setup) { s.BaseURL = "api.example.com" }, `p: BaseURL "api.example.com" must be an absolute http or https URL`},
		{func(s *Setup) { s.Headers = map[string]string{"authorization": "x"} }, "p: Headers cannot set authorization"},
	} {
		bad := s
		tc.edit(&bad)
		var le *llm.Error
		if _, _, _, err := bad.Client(); !errors.As(err, &le) || le.Kind != llm.KindConfig || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want a config error %q", err, tc.want)
		}
	}
}

func TestInputSchema(t *testing.T) {
	if got := InputSchema(llm.ToolSpec{Name: "t"}); got["type"] != "object" || got["properties"] == nil {
		t.Errorf("no schema: %v", got)
	}
	own := map[string]any{"type": "object", "required": []any{"a"}}
	if got := InputSchema(llm.ToolSpec{Name: "t", InputSchema: own}); got["required"] == nil {
		t.Errorf("own schema replaced: %v", got)
	}
}
