package httpx

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// startCalls starts n calls of e with CompleteAsync, each from a goroutine
// of its own that ends once its call is started; the calls' outcomes come
// on the returned channel.
//
//go:noinline
func startCalls(e *Endpoint, n int) (started chan struct{}, outcomes chan error) {
	started, outcomes = make(chan struct{}, n), make(chan error, n)
	for range n {
		go func() {
			llm.CompleteAsync(context.Background(), e, llm.Request{System: "s"}, func(r *llm.Response, err error) {
				if err == nil && r == nil {
					err = errors.New("no response")
				}
				outcomes <- err
			})
			started <- struct{}{}
		}()
	}
	return started, outcomes
}

// A call started with CompleteAsync does not hold its caller while the
// answer is awaited: the caller's goroutine goes on (here it ends), and
// the call awaits its answer on a goroutine of its own whose stack holds
// the send and nothing of the caller's frames; the answer comes to done
// there.
func TestCallStartedAsyncHoldsNoCallersFrames(t *testing.T) {
	const n = 50
	rt := &holdTransport{arrived: make(chan struct{}, n), release: make(chan struct{})}
	e := holdEndpoint(rt, http.Header{})
	started, outcomes := startCalls(e, n)
	for range n {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("CompleteAsync did not return while its call awaits the answer")
		}
	}
	for range n {
		<-rt.arrived
	}
	buf := make([]byte, 1<<20)
	for {
		if k := runtime.Stack(buf, true); k < len(buf) {
			buf = buf[:k]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	waiting := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "holdTransport).RoundTrip") {
			continue
		}
		waiting++
		if strings.Contains(g, "startCalls") || strings.Contains(g, "CompleteAsync(") {
			t.Fatalf("a call awaits its answer under its caller's frames:\n%s", g)
		}
	}
	if waiting != n {
		t.Fatalf("%d goroutines await the answers of %d calls", waiting, n)
	}
	close(rt.release)
	for range n {
		if err := <-outcomes; err != nil {
			t.Fatal(err)
		}
	}
}

// A call started with CompleteAsync reports what Complete would: a
// provider's error for a failed status, and a provider whose decoding
// panics fails the call rather than the process.
func TestCallStartedAsyncEndsAsComplete(t *testing.T) {
	rt := &holdTransport{arrived: make(chan struct{}, 1), release: make(chan struct{})}
	close(rt.release)
	e := holdEndpoint(rt, http.Header{})
	e.Decode = func(context.Context, *http.Response) (*llm.Response, error) { panic("bad answer") }
	_, outcomes := startCalls(e, 1)
	<-rt.arrived
	if err := <-outcomes; err == nil || !strings.Contains(err.Error(), "panic while decoding the answer: bad answer") {
		t.Errorf("a call whose decoding panicked: %v", err)
	}

	failing := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	e = holdEndpoint(failing, http.Header{})
	_, outcomes = startCalls(e, 1)
	var pe *llm.ProviderError
	if err := <-outcomes; !errors.As(err, &pe) || pe.StatusCode != http.StatusServiceUnavailable || !pe.Retryable {
		t.Errorf("a call answered 503: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
