package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission that returns NaN and infinities (and shows them in its trace)
// is read by every reader: the viewer's API, trace -json, wait and MCP's
// mission_result each render them as "NaN", "Infinity" and "-Infinity".
func TestReadersShowNonFiniteFloats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	ret := map[string]any{"avg": math.NaN(), "max": math.Inf(1), "min": math.Inf(-1)}
	w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{ID: "floats", Slots: 1, IdleWait: 100 * time.Millisecond,
		Runner: fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: ret, Trace: []messages.Turn{{Number: 1, Program: "(return ...)", Result: ret}}}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	cs, client := serveMCPHTTP(ctx, t, srv.Conn())
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "floats"}}
	if step, err := client.Run(ctx, m); err != nil || step.Fail != nil {
		t.Fatalf("mission: %+v, %v", step, err)
	}
	waitFinal := func() {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if st, err := client.Status(ctx, m.ID); err == nil && st.State == messages.StateSucceeded {
				return
			}
		}
	}
	waitFinal()
	rendered := func(reader, out string) {
		t.Helper()
		compact := strings.Join(strings.Fields(out), "")
		for _, want := range []string{`"avg":"NaN"`, `"max":"Infinity"`, `"min":"-Infinity"`} {
			if !strings.Contains(compact, want) {
				t.Errorf("%s: no %s in\n%.2000s", reader, want, out)
			}
		}
	}

	v, err := newViewer(client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(v.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/api/missions/" + m.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !json.Valid(body) {
		t.Fatalf("viewer: %d %.500s", resp.StatusCode, body)
	}
	rendered("viewer", string(body))

	vars := testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()})
	for _, args := range [][]string{{"trace", m.ID, "-json"}, {"wait", m.ID}} {
		var out, errOut bytes.Buffer
		if err := run(ctx, args, vars, &out, &errOut); err != nil {
			t.Fatalf("dispatcher %v: %v\n%s", args, err, errOut.String())
		}
		rendered("dispatcher "+strings.Join(args, " "), out.String())
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mission_result", Arguments: map[string]any{"mission_id": m.ID}})
	if err != nil || res.IsError {
		t.Fatalf("mission_result: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	rendered("mcp mission_result", string(b))
}
