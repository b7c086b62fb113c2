package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/internal/sse"
)

// Setup is the part of a provider client's configuration that every
// provider checks alike.
type Setup struct {
	// Name prefixes configuration errors ("openai", "anthropic").
	Name string
	// Provider names the provider in the errors of requests.
	Provider string
	// Model is required.
	Model string
	// BaseURL is the API root (DefaultBaseURL when empty); it must be an
	// absolute http or https URL.
	BaseURL, DefaultBaseURL string
	// Headers are the configured extra headers; Reserved lists, in
	// canonical form, those the client sets itself, which Headers cannot.
	Headers  map[string]string
	Reserved []string
	// HTTPClient sends the requests (NewHTTPClient when nil).
	HTTPClient *http.Client
	// Key is sent in AuthHeader after AuthPrefix.
	Key                    llm.Secret
	AuthHeader, AuthPrefix string
}

// ConfigError is the *llm.Error of a configuration that cannot work,
// prefixed with the client's name.
func ConfigError(name, format string, args ...any) error {
	return &llm.Error{Kind: llm.KindConfig, Message: name + ": " + fmt.Sprintf(format, args...)}
}

// Client checks s and returns the client that sends the requests, the base
// URL without its trailing slash and the extra headers. Errors name the
// field.
func (s Setup) Client() (*Client, string, http.Header, error) {
	if strings.TrimSpace(s.Model) == "" {
		return nil, "", nil, ConfigError(s.Name, "Model is required")
	}
	base := s.BaseURL
	if base == "" {
		base = s.DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", nil, ConfigError(s.Name, "BaseURL %q must be an absolute http or https URL", base)
	}
	h := http.Header{}
	for k, v := range s.Headers {
		ck := http.CanonicalHeaderKey(k)
		for _, r := range s.Reserved {
			if ck == r {
				return nil, "", nil, ConfigError(s.Name, "Headers cannot set %s", k)
			}
		}
		h.Set(k, v)
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = NewHTTPClient()
	}
	c := &Client{Provider: s.Provider, HTTP: hc, Key: s.Key, AuthHeader: s.AuthHeader, AuthPrefix: s.AuthPrefix}
	return c, strings.TrimRight(base, "/"), h, nil
}

// Provider is what every provider client shows of itself: the llm.Model
// and llm.Streamer methods over its Endpoint, and String, GoString and
// Format that never print the key. Provider clients embed it.
type Provider struct {
	ep     *Endpoint
	model  string
	goName string
}

// NewProvider is the Provider of a client of Go type goName
// ("anthropic.Client") calling model at ep.
func NewProvider(goName, model string, ep *Endpoint) Provider {
	return Provider{ep: ep, model: model, goName: goName}
}

// Model returns the configured model name.
func (p Provider) Model() string { return p.model }

// Complete sends one request and decodes the whole answer (see
// Endpoint.Complete).
func (p Provider) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	return p.ep.Complete(ctx, req)
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (see Endpoint.CompleteAsync).
func (p Provider) CompleteAsync(ctx context.Context, req llm.Request, done func(*llm.Response, error)) {
	p.ep.CompleteAsync(ctx, req, done)
}

// Stream sends a streaming request (see Endpoint.Stream).
func (p Provider) Stream(ctx context.Context, req llm.Request) (*llm.Stream, error) {
	return p.ep.Stream(ctx, req)
}

// String describes the client without its key: "provider:model@url".
func (p Provider) String() string { return p.ep.HTTP.Provider + ":" + p.model + "@" + p.ep.URL }

// GoString is the %#v form, the Go type around String; it hides the key
// too.
func (p Provider) GoString() string { return p.goName + "(" + p.String() + ")" }

// Format prints String under every verb and GoString under %#v, so that no
// field of a client (its key) can leak through fmt, whether the client or
// a pointer to it is printed.
func (p Provider) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, p.GoString())
		return
	}
	fmt.Fprint(f, p.String())
}

// InputSchema is a tool's input schema as the APIs want it: an empty object
// schema when the tool declares none.
func InputSchema(t llm.ToolSpec) map[string]any {
	if t.InputSchema == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return t.InputSchema
}

// Read reads a whole 2xx body (ReadBody). It returns the request id and
// the body; the error is ctx's own or a transport error.
func (c *Client) Read(ctx context.Context, resp *http.Response) (reqID string, data []byte, err error) {
	reqID = RequestID(resp.Header)
	data, err = ReadBody(resp)
	if err != nil {
		if ctx.Err() != nil {
			return reqID, nil, ctx.Err()
		}
		return reqID, nil, c.Transport(err)
	}
	return reqID, data, nil
}

// DecodeJSON reads a whole 2xx body (Read) and decodes it into v; a body
// that does not decode is Malformed.
func (c *Client) DecodeJSON(ctx context.Context, resp *http.Response, v any) (reqID string, data []byte, err error) {
	reqID, data, err = c.Read(ctx, resp)
	if err != nil {
		return reqID, nil, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return reqID, data, c.Malformed(reqID, err)
	}
	return reqID, data, nil
}

// Events reads the event stream of a 2xx response for a provider's
// llm.EventSource: the events that carry data, the errors a stream ends
// with, and a queue of the llm events decoded from them.
type Events struct {
	ctx  context.Context
	c    *Client
	body io.Closer
	rd   *sse.Reader
	// ReqID is the response's request id.
	ReqID string
	queue []llm.Event
	done  bool
}

// Events starts reading resp's event stream.
func (c *Client) Events(ctx context.Context, resp *http.Response) *Events {
	return &Events{ctx: ctx, c: c, body: resp.Body, rd: sse.NewReader(resp.Body), ReqID: RequestID(resp.Header)}
}

// Read returns the next event that carries data, or io.EOF at the end of
// the stream. A failed read is ctx's error when ctx has ended, else a
// transport error.
func (e *Events) Read() (sse.Event, error) {
	for {
		ev, err := e.rd.Next()
		if errors.Is(err, io.EOF) {
			return ev, io.EOF
		}
		if err != nil {
			if e.ctx.Err() != nil {
				return ev, e.ctx.Err()
			}
			pe := e.c.Transport(err)
			pe.RequestID = e.ReqID
			return ev, pe
		}
		if len(ev.Data) > 0 {
			return ev, nil
		}
	}
}

// Cut is the error of a stream that ended before its last event (named by
// last): a retryable connection_error.
func (e *Events) Cut(last string) *llm.ProviderError {
	return &llm.ProviderError{Provider: e.c.Provider, Type: "connection_error", RequestID: e.ReqID,
		Message: "stream ended before " + last, Retryable: true}
}

// Malformed is the error of an event that cannot be decoded.
func (e *Events) Malformed(err error) *llm.ProviderError { return e.c.Malformed(e.ReqID, err) }

// Close closes the response body.
func (e *Events) Close() error { return e.body.Close() }

// Push queues llm events for Pop.
func (e *Events) Push(evs ...llm.Event) { e.queue = append(e.queue, evs...) }

// End marks the stream done: Pop returns io.EOF once the queue is empty.
func (e *Events) End() { e.done = true }

// Pop returns the next queued llm event, calling fill while none is queued
// and the stream is not done; fill's error is returned.
func (e *Events) Pop(fill func() error) (llm.Event, error) {
	for len(e.queue) == 0 {
		if e.done {
			return nil, io.EOF
		}
		if err := fill(); err != nil {
			return nil, err
		}
	}
	ev := e.queue[0]
	e.queue = e.queue[1:]
	return ev, nil
}
