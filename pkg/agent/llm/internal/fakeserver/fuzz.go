package fakeserver

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// roundTripper answers requests with a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Fixed returns an HTTP client that answers every request with status,
// contentType and body, without a network: the provider fuzz tests feed
// their inputs through it.
func Fixed(status int, contentType, body string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
}

// AddCorpus adds the named files of testdata/ to f's seed corpus.
func AddCorpus(f *testing.F, names ...string) {
	for _, n := range names {
		data, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}

// fuzzRequest is the request the fuzz tests send.
var fuzzRequest = llm.Request{Messages: []llm.Message{llm.UserText("x")}}

// CheckComplete sends one request to m and checks what a client must hold
// whatever the answer's body: exactly one of a response and an error, and
// an input map on every tool call.
func CheckComplete(t *testing.T, m llm.Model) {
	t.Helper()
	resp, err := m.Complete(context.Background(), fuzzRequest)
	checkResult(t, resp, err)
}

// CheckStream is CheckComplete for a streamed answer, collected whole.
func CheckStream(t *testing.T, m llm.Streamer) {
	t.Helper()
	st, err := m.Stream(context.Background(), fuzzRequest)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Collect(st)
	checkResult(t, resp, err)
}

func checkResult(t *testing.T, resp *llm.Response, err error) {
	t.Helper()
	if (resp == nil) == (err == nil) {
		t.Fatalf("want exactly one of response and error: %v, %v", resp, err)
	}
	if resp != nil {
		for _, c := range resp.ToolCalls {
			if c.Input == nil {
				t.Fatalf("tool call %q has nil input", c.Name)
			}
		}
	}
}
