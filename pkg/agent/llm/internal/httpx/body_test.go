package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// resendTransport sends each request the way a transport does that must
// send it again (a refused HTTP/2 stream, a connection gone away): it
// reads the body whole, closes it, and sends what GetBody returns. first
// gets the bytes of the first send; held reports whether the body still
// held them once read.
type resendTransport struct {
	next  http.RoundTripper
	first []byte
	held  bool
}

func (rt *resendTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	rt.first = b
	sb, ok := req.Body.(*sentBody)
	rt.held = !ok || sb.b != nil
	_ = req.Body.Close()
	if req.GetBody == nil {
		return nil, io.ErrUnexpectedEOF
	}
	again, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = again
	return rt.next.RoundTrip(r)
}

// A request body is let go once sent, and a request sent again (over
// HTTP/2, as hosted models speak) carries the same bytes.
func TestPostSendsTheSameBytesAgainAndLetsGoOfThem(t *testing.T) {
	var mu sync.Mutex
	var got []byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = b
		mu.Unlock()
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	rt := &resendTransport{next: srv.Client().Transport}
	c := &Client{Provider: "test", HTTP: &http.Client{Transport: rt}}
	body := map[string]any{"model": "m", "messages": []map[string]any{{"role": "system", "content": "a long system prompt é \u2028 <b>"}},
		"temperature": 0.25, "tools": []any{map[string]any{"name": "x", "parameters": map[string]any{"type": "object"}}}}
	resp, err := c.Post(context.Background(), srv.URL, http.Header{}, body, func(int, []byte) (string, string, string) { return "", "", "" })
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	want, _ := json.Marshal(body)
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(rt.first, want) || !bytes.Equal(got, want) {
		t.Errorf("sent %q, then %q; want %q both times", rt.first, got, want)
	}
	if rt.held {
		t.Error("the request body still holds its bytes once they are read")
	}
}

func TestSentBodyReadsInPiecesAndClose(t *testing.T) {
	b := newSentBody([]byte("abcdefg"))
	p := make([]byte, 3)
	var out []byte
	for {
		n, err := b.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(out) != "abcdefg" || b.b != nil {
		t.Fatalf("read %q, left %q", out, b.b)
	}
	c := newSentBody([]byte("xyz"))
	_ = c.Close()
	if n, err := c.Read(p); n != 0 || err != io.EOF || c.b != nil {
		t.Fatalf("after Close: %d %v, holds %q", n, err, c.b)
	}
}

// While the answer is awaited, the request holds the llm.Request its body
// is built from, not the body: a transport that sends it again builds the
// body again, to the same bytes.
func TestCompleteLetsGoOfTheBodyWhileItWaits(t *testing.T) {
	arrived, release := make(chan []byte, 2), make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- b
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(release)
	var mu sync.Mutex
	// the first body's part, which the body holds as long as it is held
	type part struct{ Content string }
	var first weak.Pointer[part]
	built := 0
	rt := &resendTransport{next: srv.Client().Transport}
	e := &Endpoint{HTTP: &Client{Provider: "test", HTTP: &http.Client{Transport: rt}}, URL: srv.URL, Headers: http.Header{},
		Body: func(req llm.Request, stream bool) (map[string]any, error) {
			p := &part{Content: "hi"}
			body := map[string]any{"model": "m", "system": req.System, "messages": []any{p}}
			mu.Lock()
			defer mu.Unlock()
			if built++; built == 1 {
				first = weak.Make(p)
			}
			return body, nil
		},
		DecodeErr: func(int, []byte) (string, string, string) { return "", "", "" },
		Decode:    func(context.Context, *http.Response) (*llm.Response, error) { return &llm.Response{}, nil },
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Complete(context.Background(), llm.Request{System: "a system prompt"})
		done <- err
	}()
	var got []byte
	select {
	case got = <-arrived:
	case err := <-done:
		t.Fatalf("Complete ended before the server held it: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not arrive")
	}
	runtime.GC()
	runtime.GC()
	mu.Lock()
	held, n := first.Value() != nil, built
	mu.Unlock()
	if held {
		t.Error("the body built for the first send is still held while the answer is awaited")
	}
	if want, _ := json.Marshal(map[string]any{"model": "m", "system": "a system prompt", "messages": []any{map[string]any{"Content": "hi"}}}); !bytes.Equal(got, want) || !bytes.Equal(rt.first, want) {
		t.Errorf("sent %q, then %q; want %q both times", rt.first, got, want)
	}
	if n != 2 {
		t.Errorf("the body was built %d times; want 2 (sent, then sent again)", n)
	}
}
