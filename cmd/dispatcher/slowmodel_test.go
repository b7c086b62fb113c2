package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/internal/webtest"
)

// slowReply is how long the fake model takes for every answer: longer than
// a few seconds, as hosted (reasoning) models routinely take.
const slowReply = 8 * time.Second

// A model that needs 8 s per answer completes the example mission under
// default settings: the model call has its own timeout (minutes), and the
// program's time and step budget do not depend on how long the model took.
func TestSlowModelCompletesExampleMission(t *testing.T) {
	t.Parallel()
	const file = "../../examples/missions/top-customers.yaml"
	f, err := missionfile.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		calls.Add(1)
		turn := 1
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		select {
		case <-time.After(slowReply):
		case <-r.Context().Done():
			return
		}
		if turn > len(f.Script) {
			http.Error(w, `{"error":{"message":"no reply","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		webtest.ChatCompletion(w, fmt.Sprintf("chatcmpl-%d", turn), "slow-1", f.Script[turn-1], 100, 50)
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(f.Script)+2)*slowReply)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	err = run(ctx, []string{"local", "-workers", "1", file},
		testEnv(map[string]string{"PTC_MODEL_DEFAULT": "openai:slow-1@" + srv.URL + "/v1"}), &out, &errOut)
	if err != nil {
		t.Fatalf("local: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{"model: default", "RESULT (", `"orders_scanned": 1279`, "turns 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := calls.Load(); n != int32(len(f.Script)) {
		t.Errorf("model answered %d requests, want %d (one per turn, no retries)", n, len(f.Script))
	}
	if took := time.Since(start); took < time.Duration(len(f.Script))*slowReply {
		t.Errorf("mission took %s; the fake model was not slow", took)
	}
}
