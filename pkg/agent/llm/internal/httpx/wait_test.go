package httpx

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// holdTransport holds every request until release is closed, then answers
// it with an empty JSON object; it records each request's header.
type holdTransport struct {
	mu      sync.Mutex
	headers []http.Header
	arrived chan struct{}
	release chan struct{}
}

func (h *holdTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	h.mu.Lock()
	h.headers = append(h.headers, req.Header)
	h.mu.Unlock()
	h.arrived <- struct{}{}
	select {
	case <-h.release:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(strings.NewReader(`{}`)), Request: req}, nil
}

func holdEndpoint(rt http.RoundTripper, headers http.Header) *Endpoint {
	return &Endpoint{HTTP: &Client{Provider: "test", HTTP: &http.Client{Transport: rt}, Key: "k-secret", AuthHeader: "Authorization", AuthPrefix: "Bearer "},
		URL: "https://model.test/v1/chat", Headers: headers,
		Body: func(req llm.Request, stream bool) (map[string]any, error) {
			return map[string]any{"model": "m", "system": req.System}, nil
		},
		DecodeErr: func(int, []byte) (string, string, string) { return "", "", "" },
		Decode: func(_ context.Context, resp *http.Response) (*llm.Response, error) {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return &llm.Response{}, nil
		},
	}
}

// The calls of one endpoint send one header, built once and never changed,
// and the endpoint's own headers stay as they were.
func TestAnEndpointsCallsShareOneHeader(t *testing.T) {
	rt := &holdTransport{arrived: make(chan struct{}, 3), release: make(chan struct{})}
	close(rt.release)
	headers := http.Header{"Anthropic-Version": {"2023-06-01"}}
	e := holdEndpoint(rt, headers)
	for range 3 {
		if _, err := e.Complete(context.Background(), llm.Request{System: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(rt.headers) != 3 {
		t.Fatalf("%d requests sent, want 3", len(rt.headers))
	}
	first := reflect.ValueOf(rt.headers[0]).UnsafePointer()
	for i, h := range rt.headers[1:] {
		if reflect.ValueOf(h).UnsafePointer() != first {
			t.Errorf("call %d sent a header of its own", i+2)
		}
	}
	want := http.Header{"Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"},
		"User-Agent": {UserAgent()}, "Authorization": {"Bearer k-secret"}}
	if !reflect.DeepEqual(rt.headers[0], want) {
		t.Errorf("sent header %v, want %v", rt.headers[0], want)
	}
	if !reflect.DeepEqual(headers, http.Header{"Anthropic-Version": {"2023-06-01"}}) {
		t.Errorf("the endpoint's headers became %v", headers)
	}
}

// What a call awaiting its answer holds beyond its request, its body's
// builder and its goroutine: the header and the parsed URL are the
// endpoint's, and the request goes to the transport without
// http.Client's copy of its header and URL (kept for redirects).
func TestCallAwaitingItsAnswerHoldsLittle(t *testing.T) {
	const n = 500
	rt := &holdTransport{arrived: make(chan struct{}, n), release: make(chan struct{})}
	e := holdEndpoint(rt, http.Header{"Anthropic-Version": {"2023-06-01"}})
	// one call first, so what every call shares is built
	close(rt.release)
	if _, err := e.Complete(context.Background(), llm.Request{System: "s"}); err != nil {
		t.Fatal(err)
	}
	<-rt.arrived
	rt.release = make(chan struct{})
	req := llm.Request{System: "s"}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := e.Complete(context.Background(), req); err != nil {
				errs <- err
			}
		})
	}
	for range n {
		select {
		case <-rt.arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the calls did not all reach the transport")
		}
	}
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	close(rt.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	per := float64(int64(during.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f bytes of heap a waiting call", per)
	// measured 1,130–1,141 bytes (its goroutine, the request, its context,
	// body and body builder), against 2,450 when each call built its own
	// header and went through http.Client, and 1,274 when each call parsed
	// the endpoint's URL again
	const limit = 1200.0
	if per > limit {
		t.Errorf("%.0f bytes of heap a waiting call, want at most %.0f", per, limit)
	}
}

// An answer that redirects is followed as http.Client follows it: the
// request arrives where it points, with the same body, and is not sent to
// the first address twice (a model call sent again is paid for again).
func TestCallFollowsARedirect(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	var hits []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		mu.Lock()
		got = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	e := holdEndpoint(srv.Client().Transport, http.Header{})
	e.URL = srv.URL + "/old"
	if _, err := e.Complete(context.Background(), llm.Request{System: "follow me"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := `{"model":"m","system":"follow me"}`; !bytes.Equal(got, []byte(want)) {
		t.Errorf("the redirected request carried %q, want %q", got, want)
	}
	if want := []string{"POST /old", "POST /new"}; !slices.Equal(hits, want) {
		t.Errorf("requests %v, want %v", hits, want)
	}
}

// A redirect to another host does not carry the key: http.Client drops
// Authorization there, and the provider's own key header is dropped too,
// also through a client the caller gave with a timeout or a redirect
// policy of its own (which still runs, and never sees the key leave).
func TestRedirectToAnotherHostDropsTheKey(t *testing.T) {
	for _, authHeader := range []string{"Authorization", "X-Api-Key"} {
		for _, client := range []string{"default", "timeout", "policy"} {
			t.Run(authHeader+"/"+client, func(t *testing.T) {
				var mu sync.Mutex
				var keys []string
				other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					keys = append(keys, r.Header.Get(authHeader))
					mu.Unlock()
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{}`))
				}))
				defer other.Close()
				srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					keys = append(keys, r.Header.Get(authHeader))
					mu.Unlock()
					http.Redirect(w, r, other.URL+"/new", http.StatusTemporaryRedirect)
				}))
				defer srv.Close()
				e := holdEndpoint(srv.Client().Transport, http.Header{})
				e.HTTP.AuthHeader, e.HTTP.AuthPrefix = authHeader, ""
				var seen []string
				switch client {
				case "timeout":
					e.HTTP.HTTP.Timeout = time.Minute
				case "policy":
					e.HTTP.HTTP.CheckRedirect = func(next *http.Request, via []*http.Request) error {
						seen = append(seen, next.URL.Path+" key="+next.Header.Get(authHeader))
						return nil
					}
				}
				given := *e.HTTP.HTTP
				e.URL = srv.URL + "/old"
				if _, err := e.Complete(context.Background(), llm.Request{System: "s"}); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if want := []string{"k-secret", ""}; !slices.Equal(keys, want) {
					t.Errorf("the key's header at the first host and the other: %q, want %q", keys, want)
				}
				if client == "policy" {
					if want := []string{"/new key="}; !slices.Equal(seen, want) {
						t.Errorf("the caller's redirect policy saw %q, want %q", seen, want)
					}
				}
				if e.HTTP.HTTP.Timeout != given.Timeout || (e.HTTP.HTTP.CheckRedirect == nil) != (given.CheckRedirect == nil) {
					t.Error("the caller's client was changed")
				}
			})
		}
	}
}
