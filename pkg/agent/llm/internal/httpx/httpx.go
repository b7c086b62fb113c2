package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/internal/version"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// MaxBody is the largest response body read into memory (error and
// non-streaming bodies).
const MaxBody = 32 << 20

// Retryable reports whether an HTTP status is worth retrying: 408, 409,
// 429 and every 5xx (including Anthropic's 529 overloaded).
func Retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// RetryAfter reads the delay a response asks for: retry-after-ms
// (milliseconds), then Retry-After as seconds or an HTTP date. It returns 0
// when there is none or it is malformed or in the past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Transport timeouts of NewHTTPClient. A non-streamed answer sends its
// headers only once the whole answer is generated, so the response header
// timeout is the bound of the slowest answer; a call's own deadline
// (llm_timeout in the agent) is usually shorter.
const (
	DialTimeout           = 30 * time.Second
	TLSHandshakeTimeout   = 15 * time.Second
	ResponseHeaderTimeout = 15 * time.Minute
)

// MaxIdleConnsPerHost is how many idle connections NewHTTPClient keeps to
// one host for the next requests. Over HTTP/1.1 (a model server on the
// local network: Ollama, vLLM, llama.cpp) every call in flight holds a
// connection of its own, and a worker makes as many calls at once as it
// runs missions; net/http's default keeps 2, so each burst of calls
// dialed all but 2 of its connections anew and closed them after (about
// 10% of a worker's CPU when 1,000 approved missions resumed, each
// leaving a socket in TIME_WAIT). 256 covers the slots a worker is sized
// with (docs/operations.md); an idle connection closes after the
// transport's IdleConnTimeout.
const MaxIdleConnsPerHost = 256

// NewHTTPClient returns the HTTP client provider clients use when none is
// given: the default transport's proxy settings and idle timeout, with
// dial, TLS handshake and response header timeouts, keeping up to
// MaxIdleConnsPerHost idle connections to a host, and dialing at most
// MaxDialsPerHost connections at once to a host that speaks HTTP/2.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// no bound over all hosts: a model client speaks to one host or few
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 0, MaxIdleConnsPerHost
	t.DialContext = (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = TLSHandshakeTimeout
	t.ResponseHeaderTimeout = ResponseHeaderTimeout
	return &http.Client{Transport: newProtoRouter(t)}
}

// UserAgent names the project and its version, as built:
// "ptc/v1.2.3 (+https://github.com/ptcfleet/ptc)", "ptc/devel+0123456789ab
// (...)" when built from a checkout (version.String).
func UserAgent() string {
	return "ptc/" + version.String() + " (+https://" + version.Module + ")"
}

// Client sends provider requests. Keep it behind a pointer in provider
// structs: fmt prints nested pointers as addresses, so the key cannot leak
// through reflection-based printing of an enclosing struct.
type Client struct {
	Provider string
	HTTP     *http.Client
	// Key is sent in the AuthHeader, after AuthPrefix, when not empty.
	Key        llm.Secret
	AuthHeader string
	AuthPrefix string
	Now        func() time.Time

	// guarded is HTTP with the key's redirect rule added to its own
	// policy (guardedClient), made on first use.
	guardOnce sync.Once
	guarded   *http.Client
}

// Post sends body as JSON to url with headers. On a 2xx answer it returns
// the response (the caller closes its body). Otherwise it returns a
// *llm.ProviderError built by decodeErr from the error body, or from the
// transport failure. ctx's own error is returned as is.
func (c *Client) Post(ctx context.Context, url string, headers http.Header, body any,
	decodeErr func(status int, body []byte) (typ, code, msg string)) (*http.Response, error) {
	newReq := func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	}
	return c.post(ctx, newReq, c.header(headers), body, func() (any, error) { return body, nil }, decodeErr)
}

// header returns headers with the ones every request carries: the content
// type, the user agent (unless headers name one) and the key.
func (c *Client) header(headers http.Header) http.Header {
	h := make(http.Header, len(headers)+3)
	for k, v := range headers {
		h[k] = append([]string(nil), v...)
	}
	h.Set("Content-Type", "application/json")
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", userAgent())
	}
	if c.Key != "" && c.AuthHeader != "" {
		h.Set(c.AuthHeader, c.AuthPrefix+c.Key.Reveal())
	}
	return h
}

// userAgent is UserAgent, read from the build once.
var userAgent = sync.OnceValue(UserAgent)

// post is Post, with newReq making the request (a POST without body or
// header) and again building body again for a transport that must send
// the request again: the request holds again, not body. header is the
// request's whole header, read and never changed: requests to one
// endpoint share it.
func (c *Client) post(ctx context.Context, newReq func(context.Context) (*http.Request, error), header http.Header, body any,
	again func() (any, error), decodeErr func(status int, body []byte) (typ, code, msg string)) (*http.Response, error) {
	req, err := c.request(ctx, newReq, header, body, again)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	return c.answer(ctx, resp, err, decodeErr)
}

// request builds the request post sends: a POST of body, encoded, with
// header and the context ctx.
func (c *Client) request(ctx context.Context, newReq func(context.Context) (*http.Request, error), header http.Header, body any,
	again func() (any, error)) (*http.Request, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", c.Provider, err)
	}
	req, err := newReq(ctx)
	if err != nil {
		return nil, &llm.ProviderError{Provider: c.Provider, Type: "invalid_request", Message: c.Key.Scrub(err.Error())}
	}
	// The encoded body is let go once it is sent: it repeats the whole
	// conversation, which the caller holds anyway, and a model may take
	// minutes to answer. A transport that sends the request again (a
	// refused HTTP/2 stream, a connection gone away) builds the body again
	// and encodes it, to the same bytes.
	req.Body, req.ContentLength = newSentBody(payload), int64(len(payload))
	req.GetBody = func() (io.ReadCloser, error) {
		body, err := again()
		if err != nil {
			return nil, err
		}
		p, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding request: %w", c.Provider, err)
		}
		return newSentBody(p), nil
	}
	req.Header = header
	return req, nil
}

// answer is what post returns for the answer resp, or err, of a request
// sent under ctx: a 2xx answer as it is, any other as a
// *llm.ProviderError.
func (c *Client) answer(ctx context.Context, resp *http.Response, err error, decodeErr func(status int, body []byte) (typ, code, msg string)) (*http.Response, error) {
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.Transport(err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	pe := &llm.ProviderError{
		Provider:   c.Provider,
		StatusCode: resp.StatusCode,
		RequestID:  RequestID(resp.Header),
		Retryable:  Retryable(resp.StatusCode),
	}
	switch resp.Header.Get("X-Should-Retry") { // the provider's own verdict wins
	case "true":
		pe.Retryable = true
	case "false":
		pe.Retryable = false
	}
	if pe.Retryable {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		pe.RetryAfter = RetryAfter(resp.Header, now())
	}
	if rerr != nil {
		pe.Err = rerr
	}
	typ, code, msg := decodeErr(resp.StatusCode, data)
	if typ == "insufficient_quota" || code == "insufficient_quota" {
		// a 429 that waiting does not cure: the account is out of credit
		pe.Retryable, pe.RetryAfter = false, 0
	}
	if msg == "" {
		msg = strings.TrimSpace(string(data))
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
	}
	pe.Type, pe.Code, pe.Message = typ, code, c.Key.Scrub(msg)
	return nil, pe
}

// do sends req. A client that only sends (no cookie jar, no timeout of
// its own, the default redirect policy) hands it to its transport
// directly: http.Client would keep a copy of the request's header and URL,
// for redirects, as long as the answer is awaited, and its frames on the
// waiting goroutine's stack. An answer that redirects is then given to
// http.Client as the answer to its first send (answeredOnce), so the client
// follows it by its own rules (the method, the body, which headers cross
// to another host, the limit of hops) and the request is not sent twice.
// The request's header is shared, so a client that may change it (a jar
// adds cookies) always sends through Client.Do.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	if !c.direct() {
		return c.viaClient(req)
	}
	// this frame stays small: a model call awaits its answer under it
	rt := c.transport()
	resp, err := rt.RoundTrip(req)
	return c.sent(rt, req, resp, err)
}

// viaClient sends req through the client's http.Client (do).
//
//go:noinline
func (c *Client) viaClient(req *http.Request) (*http.Response, error) {
	req.Header = req.Header.Clone()
	return c.guardedClient(c.HTTP).Do(req)
}

// transport is the transport do hands requests to.
func (c *Client) transport() http.RoundTripper {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if hc.Transport == nil {
		return http.DefaultTransport
	}
	return hc.Transport
}

// sent is what do returns once rt answered req with resp or err: the
// error as http.Client reports it, and an answer that redirects followed
// by http.Client.
//
//go:noinline
func (c *Client) sent(rt http.RoundTripper, req *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		// as http.Client reports it: `Post "url": ...`
		return nil, &url.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" {
			return resp, nil
		}
		again := req.Clone(req.Context())
		again.Header = req.Header.Clone()
		again.Body = http.NoBody
		follow := &http.Client{Transport: &answeredOnce{first: resp, next: rt}, CheckRedirect: c.checkRedirect}
		return follow.Do(again)
	}
	return resp, nil
}

// direct reports whether do hands requests to the client's transport
// rather than to http.Client.
func (c *Client) direct() bool {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Jar == nil && hc.Timeout == 0 && hc.CheckRedirect == nil
}

// checkRedirect is http.Client's default policy (at most 10 hops) with
// the key's rule of keyOnRedirect.
func (c *Client) checkRedirect(next *http.Request, via []*http.Request) error {
	return c.keyOnRedirect(nil, next, via)
}

// keyOnRedirect applies policy (http.Client's default, at most 10 hops,
// when nil) after taking the key's header off a redirect to another host:
// http.Client drops Authorization and cookies on the way to another host,
// but not a provider's own key header (x-api-key). The key is dropped
// before policy runs, so no policy of the caller's sees it go elsewhere.
func (c *Client) keyOnRedirect(policy func(*http.Request, []*http.Request) error, next *http.Request, via []*http.Request) error {
	if c.AuthHeader != "" && next.URL.Host != via[0].URL.Host {
		next.Header.Del(c.AuthHeader)
	}
	if policy != nil {
		return policy(next, via)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// guardedClient is hc, a client the caller gave (its jar, timeout and
// redirect policy kept), with the key's rule of keyOnRedirect added to
// its redirect policy. It is made once: the caller's client is not
// changed, and each request shares the copy.
func (c *Client) guardedClient(hc *http.Client) *http.Client {
	c.guardOnce.Do(func() {
		g := *hc
		policy := hc.CheckRedirect
		g.CheckRedirect = func(next *http.Request, via []*http.Request) error {
			return c.keyOnRedirect(policy, next, via)
		}
		c.guarded = &g
	})
	return c.guarded
}

// answeredOnce is a transport whose first round trip returns the answer
// already received for that request, without sending it again; later ones
// (the redirects http.Client follows) go to next.
type answeredOnce struct {
	mu    sync.Mutex
	first *http.Response
	next  http.RoundTripper
}

// RoundTrip returns the first answer once, then sends through next.
func (a *answeredOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	first := a.first
	a.first = nil
	a.mu.Unlock()
	if first == nil {
		return a.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	first.Request = req
	return first, nil
}

// sentBody is a request body that lets go of its bytes once they are all
// read, or it is closed.
type sentBody struct {
	mu  sync.Mutex
	b   []byte
	off int
}

func newSentBody(b []byte) *sentBody { return &sentBody{b: b} }

// Read reads the body; the last read lets go of the bytes.
func (s *sentBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off >= len(s.b) {
		s.b = nil
		return 0, io.EOF
	}
	n := copy(p, s.b[s.off:])
	s.off += n
	if s.off == len(s.b) {
		s.b, s.off = nil, 0
	}
	return n, nil
}

// Close lets go of the bytes not read.
func (s *sentBody) Close() error {
	s.mu.Lock()
	s.b, s.off = nil, 0
	s.mu.Unlock()
	return nil
}

// Transport turns a transport failure into a retryable *llm.ProviderError
// of type "timeout" or "connection_error"; the key is scrubbed from the
// message.
func (c *Client) Transport(err error) *llm.ProviderError {
	typ := "connection_error"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		typ = "timeout"
	}
	return &llm.ProviderError{Provider: c.Provider, Type: typ, Message: c.Key.Scrub(err.Error()), Retryable: true, Err: err}
}

// Malformed returns the error for a 2xx body that could not be decoded. It
// is not retryable: the same request would most likely get the same body.
func (c *Client) Malformed(requestID string, err error) *llm.ProviderError {
	return &llm.ProviderError{Provider: c.Provider, Type: "malformed_response",
		Message: c.Key.Scrub("cannot decode response: " + err.Error()), RequestID: requestID}
}

// RequestID returns the provider's request id header (request-id for
// Anthropic, x-request-id for OpenAI and most compatible servers).
func RequestID(h http.Header) string {
	if v := h.Get("Request-Id"); v != "" {
		return v
	}
	return h.Get("X-Request-Id")
}

// IsJSON reports whether the Content-Type is JSON (application/json or
// a +json type).
func IsJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// ReadBody reads a 2xx body up to MaxBody and closes it.
func ReadBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBody {
		return nil, fmt.Errorf("response body larger than %d bytes", MaxBody)
	}
	return data, nil
}

// MergeOpts copies opts into body as top-level fields, refusing keys the
// client sets itself with a configuration error prefixed with name.
func MergeOpts(name string, body map[string]any, opts map[string]any, reserved ...string) error {
	for k, v := range opts {
		for _, r := range reserved {
			if k == r {
				return ConfigError(name, "llm_opts key %q is set by the client and cannot be overridden", k)
			}
		}
		body[k] = v
	}
	return nil
}

// Endpoint is one provider API endpoint: what differs between providers
// (the request body, the decoding of a whole answer and of a stream), with
// Complete and Stream written once for all of them.
type Endpoint struct {
	HTTP    *Client
	URL     string
	Headers http.Header
	// Body builds the request body of req (stream: a streaming request).
	Body func(req llm.Request, stream bool) (map[string]any, error)
	// DecodeErr reads a non-2xx error body.
	DecodeErr func(status int, body []byte) (typ, code, msg string)
	// Decode reads a whole 2xx answer.
	Decode func(ctx context.Context, resp *http.Response) (*llm.Response, error)
	// Source reads a 2xx event stream.
	Source func(ctx context.Context, resp *http.Response) llm.EventSource
	// Streamed makes Complete stream the answer over the wire and return
	// it whole (see the providers' Config.Stream).
	Streamed bool

	// the whole header of a request and of a streaming one, built from
	// Headers and HTTP at the first of each and shared by all: a call
	// that awaits its answer holds no header of its own
	once, streamOnce sync.Once
	hdr, streamHdr   http.Header

	// a request to URL, built at the first call: each call's request is a
	// copy of it, sharing its parsed URL, read and never changed
	reqOnce sync.Once
	req     *http.Request
	reqErr  error
}

// request returns a POST to the endpoint with ctx, without body or header.
func (e *Endpoint) request(ctx context.Context) (*http.Request, error) {
	e.reqOnce.Do(func() {
		e.req, e.reqErr = http.NewRequestWithContext(context.Background(), http.MethodPost, e.URL, nil)
	})
	if e.reqErr != nil {
		return nil, e.reqErr
	}
	return e.req.WithContext(ctx), nil
}

// header returns the header of every request (stream: streaming ones).
func (e *Endpoint) header(stream bool) http.Header {
	if stream {
		e.streamOnce.Do(func() {
			h := e.Headers.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("Accept", "text/event-stream")
			e.streamHdr = e.HTTP.header(h)
		})
		return e.streamHdr
	}
	e.once.Do(func() { e.hdr = e.HTTP.header(e.Headers) })
	return e.hdr
}

// Complete sends one request and decodes the whole answer.
func (e *Endpoint) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if e.Streamed {
		st, err := e.Stream(ctx, req)
		if err != nil {
			return nil, err
		}
		return llm.Collect(st)
	}
	body, err := e.Body(req, false)
	if err != nil {
		return nil, err
	}
	// while the answer is awaited the request holds req, which its caller
	// holds anyway, rather than the body built from it (a map of the whole
	// request, about 0.5 KB for a short conversation)
	resp, err := e.HTTP.post(ctx, e.request, e.header(false), body, func() (any, error) { return e.Body(req, false) }, e.DecodeErr)
	if err != nil {
		return nil, err
	}
	return e.Decode(ctx, resp)
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (llm.AsyncModel): the request is built and encoded on the
// caller's goroutine, then sent from a new goroutine, which awaits the
// answer with nothing but the send on its stack, decodes it and calls
// done. A streamed endpoint, or a client that sends through http.Client
// (a cookie jar, a timeout or a redirect policy of its own), completes on
// the caller's goroutine.
func (e *Endpoint) CompleteAsync(ctx context.Context, req llm.Request, done func(*llm.Response, error)) {
	if e.Streamed || !e.HTTP.direct() {
		done(e.Complete(ctx, req))
		return
	}
	body, err := e.Body(req, false)
	if err != nil {
		done(nil, err)
		return
	}
	hreq, err := e.HTTP.request(ctx, e.request, e.header(false), body, func() (any, error) { return e.Body(req, false) })
	if err != nil {
		done(nil, err)
		return
	}
	go e.await(ctx, hreq, done)
}

// await sends hreq, a request of CompleteAsync, and calls done with the
// decoded answer. The goroutine awaits the answer in the frames of this
// call and the transport's alone, so its stack stays small.
func (e *Endpoint) await(ctx context.Context, hreq *http.Request, done func(*llm.Response, error)) {
	resp, err := e.HTTP.do(hreq)
	done(e.decode(ctx, resp, err))
}

// decode is Complete's answer for resp, or err, the answer to a request
// sent under ctx.
// A panic while it decodes (in a provider's decoding) is its error: no
// caller's frame is there to recover it.
func (e *Endpoint) decode(ctx context.Context, resp *http.Response, err error) (r *llm.Response, rerr error) {
	defer func() {
		if p := recover(); p != nil {
			r, rerr = nil, fmt.Errorf("%s: panic while decoding the answer: %v", e.HTTP.Provider, p)
		}
	}()
	resp, err = e.HTTP.answer(ctx, resp, err, e.DecodeErr)
	if err != nil {
		return nil, err
	}
	return e.Decode(ctx, resp)
}

// Stream sends a streaming request. The request itself failing (status,
// transport) is reported here; failures after it end the stream with Err.
// A server (or proxy) that ignored the stream flag and sent the whole
// answer as JSON gets that answer replayed as events.
func (e *Endpoint) Stream(ctx context.Context, req llm.Request) (*llm.Stream, error) {
	body, err := e.Body(req, true)
	if err != nil {
		return nil, err
	}
	resp, err := e.HTTP.post(ctx, e.request, e.header(true), body, func() (any, error) { return e.Body(req, true) }, e.DecodeErr)
	if err != nil {
		return nil, err
	}
	if IsJSON(resp.Header) {
		r, err := e.Decode(ctx, resp)
		if err != nil {
			return nil, err
		}
		return llm.StreamOf(llm.ResponseEvents(r)...), nil
	}
	return llm.NewStream(e.Source(ctx, resp)), nil
}
