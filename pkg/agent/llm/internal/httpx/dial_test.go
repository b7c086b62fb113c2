package httpx

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldCalls starts a TLS server (HTTP/2 when h2, taking at most streams
// requests a connection when streams > 0) that holds every request until
// the test ends it, sends n requests at once through NewHTTPClient
// trusting the server, and waits for all n to arrive. It returns how many
// connections the server saw opened, then lets the requests go and checks
// their answers and protocol.
func heldCalls(t *testing.T, n int, h2 bool, streams int) (opened int64) {
	t.Helper()
	var arrived, conns atomic.Int64
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		_, _ = w.Write([]byte("ok"))
	}))
	ts.EnableHTTP2 = h2
	if streams > 0 {
		ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: streams}
	}
	ts.Config.ConnState = func(_ net.Conn, cs http.ConnState) {
		if cs == http.StateNew {
			conns.Add(1)
		}
	}
	ts.StartTLS()
	defer ts.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	hc := NewHTTPClient()
	r := hc.Transport.(*protoRouter)
	trustServer(r, ts)
	defer hc.CloseIdleConnections()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	protos := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Get(ts.URL)
			if err != nil {
				errs <- err
				return
			}
			protos <- resp.ProtoMajor
			resp.Body.Close()
		}()
	}
	for deadline := time.Now().Add(60 * time.Second); arrived.Load() < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests arrived; the server saw %d connections", arrived.Load(), n, conns.Load())
		}
	}
	opened = conns.Load()
	close(release)
	released = true
	wg.Wait()
	close(errs)
	close(protos)
	for err := range errs {
		t.Fatal(err)
	}
	want := 1
	if h2 {
		want = 2
	}
	for p := range protos {
		if p != want {
			t.Fatalf("an answer in HTTP/%d, want HTTP/%d", p, want)
		}
	}
	return opened
}

// Calls begun at once to a host that speaks HTTP/2 open about the
// connections they need (250 streams each here), not one each: net/http
// dials a connection for every request that finds none able to take it.
func TestCallsAtOnceToAnHTTP2HostDialFewConnections(t *testing.T) {
	const n = 1000
	opened := heldCalls(t, n, true, 0)
	t.Logf("%d calls held by an HTTP/2 server over %d connections", n, opened)
	// 4 needed, and up to MaxDialsPerHost dialed each time they are all
	// full; without the bound, 300 to 900
	if opened > 5*MaxDialsPerHost {
		t.Errorf("%d calls opened %d connections", n, opened)
	}
}

// On HTTP/1.1 every call in flight holds a connection of its own: calls to
// such a host are not bounded by MaxDialsPerHost.
func TestCallsAtOnceToAnHTTP1HostAllArrive(t *testing.T) {
	n := 5 * MaxDialsPerHost
	opened := heldCalls(t, n, false, 0)
	if opened < int64(n) {
		t.Errorf("%d calls held over %d connections", n, opened)
	}
}

// The bound is on dials, not on connections: once a connection is full it
// no longer counts, so calls to a host taking few streams a connection
// all arrive, over as many connections as they need.
func TestCallsAtOnceToAnHTTP2HostOfFewStreamsAllArrive(t *testing.T) {
	const n, streams = 200, 10
	opened := heldCalls(t, n, true, streams)
	t.Logf("%d calls held by an HTTP/2 server of %d streams a connection over %d connections", n, streams, opened)
	if opened < n/streams {
		t.Errorf("%d calls held over %d connections of %d streams", n, opened, streams)
	}
}

// An HTTP/2 call whose context ends before the response header timeout
// could pass goes through a transport without that timeout, so it holds
// no timer (and channel) for it while its answer is awaited, about 0.3 KB
// a call; a call without a deadline, or with a later one, keeps the
// timeout and runs out of it.
func TestHTTP2CallWithADeadlineHoldsNoHeaderTimer(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	defer close(release)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = 200 * time.Millisecond
	r := newProtoRouter(base)
	if r.h2Timely.ResponseHeaderTimeout != 0 || r.h2Timely.MaxConnsPerHost != MaxDialsPerHost || r.h2.ResponseHeaderTimeout != base.ResponseHeaderTimeout {
		t.Fatalf("HTTP/2 transports with header timeouts %s and %s", r.h2Timely.ResponseHeaderTimeout, r.h2.ResponseHeaderTimeout)
	}
	trustServer(r, ts)
	defer r.CloseIdleConnections()
	hc := &http.Client{Transport: r}
	call := func(timeout time.Duration) (*http.Transport, error) {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := r.h2For(req)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return tr, err
	}
	for _, c := range []struct {
		name    string
		timeout time.Duration
		timely  bool
		err     string
	}{
		{"a deadline before the header timeout", 100 * time.Millisecond, true, "context deadline exceeded"},
		{"no deadline", 0, false, "timeout awaiting response headers"},
		{"a deadline after the header timeout", 5 * time.Second, false, "timeout awaiting response headers"},
	} {
		tr, err := call(c.timeout)
		if (tr == r.h2Timely) != c.timely {
			t.Errorf("%s: through the transport with a header timeout of %s", c.name, tr.ResponseHeaderTimeout)
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// trustServer makes each of r's transports trust ts's certificate.
func trustServer(r *protoRouter, ts *httptest.Server) {
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	for _, tr := range r.transports() {
		tr.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		tr.TLSClientConfig.RootCAs = roots
	}
}

// Calls made at once to a host over HTTP/1.1 (a model server on the local
// network), each holding a connection, give their connections back to
// the client's pool when they end (net/http's default keeps 2 and closes
// the rest), so the next burst of as many calls dials none.
func TestCallsAtOnceToAnHTTP1HostKeepTheirConnections(t *testing.T) {
	const n = 64
	var arrived, conns atomic.Int64
	release := make(chan struct{}, n)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		_, _ = w.Write([]byte("ok"))
	}))
	ts.Config.ConnState = func(_ net.Conn, cs http.ConnState) {
		if cs == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	hc := NewHTTPClient()
	defer hc.CloseIdleConnections()

	var kept atomic.Int64
	notKept := make(chan error, 2*n)
	trace := &httptrace.ClientTrace{PutIdleConn: func(err error) {
		if err != nil {
			notKept <- err
			return
		}
		kept.Add(1)
	}}
	burst := func(round int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", ts.URL, nil)
				if err != nil {
					errs <- err
					return
				}
				resp, err := hc.Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
				}
			})
		}
		// every call holds its connection at once, then all end
		for deadline := time.Now().Add(30 * time.Second); arrived.Load() < int64(round*n); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of %d calls arrived", round, arrived.Load()-int64((round-1)*n), n)
			}
		}
		for range n {
			release <- struct{}{}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// a connection goes back to the pool once its body is read,
		// on the transport's own goroutine
		for deadline := time.Now().Add(30 * time.Second); kept.Load()+int64(len(notKept)) < int64(round*n); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d connections given back of %d", round, kept.Load()+int64(len(notKept)), round*n)
			}
		}
		if len(notKept) > 0 {
			t.Fatalf("round %d: %d of %d connections not kept for the next calls: %v", round, len(notKept), n, <-notKept)
		}
	}
	burst(1)
	burst(2)
	if opened := conns.Load(); opened != n {
		t.Fatalf("two bursts of %d calls opened %d connections, want %d (the second reusing the first's)", n, opened, n)
	}
}
