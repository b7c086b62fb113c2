package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Captured is one request the server received.
type Captured struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
	Raw          []byte
}

// Reply is one scripted answer.
type Reply struct {
	Status  int               // default 200
	File    string            // testdata file to send
	Body    string            // or a literal body
	Headers map[string]string // extra response headers
	SSE     bool              // send as text/event-stream
}

// Server is an httptest server answering Replies in order. A request
// beyond the script gets 418.
type Server struct {
	*httptest.Server
	// RequestIDHeader names the response header carrying "req_<n>".
	RequestIDHeader string
	mu              sync.Mutex
	reqs            []Captured
	replies         []Reply
}

// New starts a server; it is closed when the test ends.
func New(t *testing.T, requestIDHeader string, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies, RequestIDHeader: requestIDHeader}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not a JSON object: %v: %s", err, raw)
		}
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, Captured{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: raw})
		s.mu.Unlock()
		if n >= len(s.replies) {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		rep := s.replies[n]
		data := []byte(rep.Body)
		if rep.File != "" {
			var err error
			if data, err = os.ReadFile(filepath.Join("testdata", rep.File)); err != nil {
				t.Error(err)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.SSE {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		if s.RequestIDHeader != "" {
			w.Header().Set(s.RequestIDHeader, fmt.Sprintf("req_%d", n+1))
		}
		for k, v := range rep.Headers {
			w.Header().Set(k, v)
		}
		status := rep.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Captured(nil), s.reqs...)
}

// Canonical re-encodes a JSON document with sorted keys and no spaces.
func Canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// Golden compares a JSON request body, indented with sorted keys, with
// testdata/name, rewriting the file first when update is set.
func Golden(t *testing.T, update bool, name string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(v, "", "  ")
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request differs from %s:\n%s", path, got)
	}
}
