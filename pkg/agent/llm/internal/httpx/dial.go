package httpx

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// MaxDialsPerHost bounds the connections NewHTTPClient dials at once to a
// host that speaks HTTP/2. net/http dials one connection for every request
// that finds no HTTP/2 connection able to take it, and closes those that
// turn out not to be needed once one is up: 10,000 model calls begun at
// once opened about 5,000 TLS connections to keep 42 (250 streams each),
// thousands of handshakes on both sides. With the bound, requests that
// find every connection full wait for one of these dials instead.
const MaxDialsPerHost = 8

// protoRouter sends HTTPS requests to a host that speaks HTTP/2 through a
// transport that dials at most MaxDialsPerHost connections at once to it,
// and every other request through one with no bound: on HTTP/1.1 every
// request in flight holds a connection of its own, so a bound there would
// bound the calls in flight. A host's protocol is learned from the first
// request to it, which the others wait for until its TLS handshake is
// done (the protocol is known then); a response in the other protocol
// later moves the host.
type protoRouter struct {
	h2 *http.Transport // MaxConnsPerHost = MaxDialsPerHost
	// h2Timely is h2 without its response header timeout, for requests
	// whose context ends no later than that timeout would pass: for them
	// it never fires, and its timer (and channel) would be held for as
	// long as the answer is awaited, about 0.3 KB a call. h2 itself when
	// there is no such timeout.
	h2Timely *http.Transport
	h1       *http.Transport

	mu    sync.Mutex
	hosts map[string]*hostProto
}

// hostProto is what a protoRouter knows of one host.
type hostProto struct {
	known, h1 bool
	// probe, while the first request learns the protocol, is closed once
	// it is known or the request ended without learning it
	probe chan struct{}
}

func newProtoRouter(t *http.Transport) *protoRouter {
	h2 := t.Clone()
	h2.MaxConnsPerHost = MaxDialsPerHost
	h2Timely := h2
	if h2.ResponseHeaderTimeout > 0 {
		// a clone of t, not of h2: cloning a transport sets up its
		// protocols with the TLS configuration it has then
		h2Timely = t.Clone()
		h2Timely.MaxConnsPerHost, h2Timely.ResponseHeaderTimeout = MaxDialsPerHost, 0
	}
	return &protoRouter{h2: h2, h2Timely: h2Timely, h1: t, hosts: map[string]*hostProto{}}
}

// h2For is the HTTP/2 transport for req: h2Timely when req's context ends
// before h2's response header timeout could pass, h2 otherwise.
func (r *protoRouter) h2For(req *http.Request) *http.Transport {
	if d, ok := req.Context().Deadline(); ok && !d.After(time.Now().Add(r.h2.ResponseHeaderTimeout)) {
		return r.h2Timely
	}
	return r.h2
}

// transports are the router's transports.
func (r *protoRouter) transports() []*http.Transport {
	if r.h2Timely == r.h2 {
		return []*http.Transport{r.h1, r.h2}
	}
	return []*http.Transport{r.h1, r.h2, r.h2Timely}
}

// RoundTrip sends req through the transport for its host's protocol.
func (r *protoRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	// this frame stays small: a model call awaits its answer under it
	t, h, err := r.pick(req)
	switch {
	case err != nil:
		return nil, err
	case t == nil:
		return r.learn(req, h)
	}
	return r.send(t, req)
}

// pick is the transport for req: h1 for a host that speaks HTTP/1.1 or a
// request not over HTTPS, an HTTP/2 one for a host that speaks it, or
// none for the first request to a host, whose protocol is not known yet,
// with what the router knows of the host (the others wait for it to be
// learned); the context's error when req's context ends first.
//
//go:noinline
func (r *protoRouter) pick(req *http.Request) (*http.Transport, *hostProto, error) {
	if req.URL == nil || req.URL.Scheme != "https" {
		return r.h1, nil, nil
	}
	host := req.URL.Host
	for {
		r.mu.Lock()
		h := r.hosts[host]
		if h == nil {
			h = &hostProto{}
			r.hosts[host] = h
		}
		switch {
		case h.known && h.h1:
			r.mu.Unlock()
			return r.h1, nil, nil
		case h.known:
			r.mu.Unlock()
			return r.h2For(req), nil, nil
		case h.probe == nil:
			h.probe = make(chan struct{})
			r.mu.Unlock()
			return nil, h, nil
		}
		wait := h.probe
		r.mu.Unlock()
		select {
		case <-wait:
		case <-req.Context().Done():
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, nil, context.Cause(req.Context())
		}
	}
}

// learn sends the first request to req's host, h, whose protocol is not
// known yet: once its TLS handshake is done, the protocol it negotiated
// is the host's, and the requests waiting for it go on.
func (r *protoRouter) learn(req *http.Request, h *hostProto) (*http.Response, error) {
	host := req.URL.Host
	trace := &httptrace.ClientTrace{
		TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
			if err == nil {
				r.settle(host, h, cs.NegotiatedProtocol != "h2")
			}
		},
	}
	treq := req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := r.h2For(req).RoundTrip(treq)
	if resp != nil {
		resp.Request = req
		r.settle(host, h, resp.ProtoMajor < 2)
	}
	r.mu.Lock()
	if !h.known && h.probe != nil {
		// no handshake and no answer: the next request learns it
		close(h.probe)
		h.probe = nil
	}
	r.mu.Unlock()
	return resp, err
}

// settle records that host speaks HTTP/1 (h1) or HTTP/2, and lets the
// requests waiting to learn it go on.
func (r *protoRouter) settle(host string, h *hostProto, h1 bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.known, h.h1 = true, h1
	if h.probe != nil {
		close(h.probe)
		h.probe = nil
	}
	r.hosts[host] = h
}

// send sends req through t; an answer in the other protocol than its
// host's moves the host.
func (r *protoRouter) send(t *http.Transport, req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTrip(req)
	if resp != nil && (resp.ProtoMajor < 2) != (t == r.h1) && req.URL != nil {
		r.moved(req.URL.Host, resp.ProtoMajor < 2)
	}
	return resp, err
}

// moved records that host answered in HTTP/1 (h1) or HTTP/2.
func (r *protoRouter) moved(host string, h1 bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hosts[host]; h != nil && h.known {
		h.h1 = h1
	}
}

// CloseIdleConnections closes the transports' idle connections
// (http.Client.CloseIdleConnections calls it).
func (r *protoRouter) CloseIdleConnections() {
	for _, t := range r.transports() {
		t.CloseIdleConnections()
	}
}
