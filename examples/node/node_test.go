// Package node holds a Node.js caller and tool service of the fleet
// (submit.mjs, toolservice.mjs), written from docs/wire.md alone; this
// test runs them against an embedded fleet.
package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/internal/testnode"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// program is what the scripted model writes: it calls both Node tools.
const program = `(let [s (tool/shout {:text ctx/greeting})
      w (tool/word_stats {:text ctx/text})
      r (tool/records {:n 20000})]
  (return {:loud (:loud s) :words (:words w) :top (:top w) :n (inc ctx/n)
           :records (count r) :last (:body (last r))}))`

// A Node service submits missions (msgpack and JSON) and awaits their
// Steps; a Node tool service on the micro protocol is discovered by a Go
// worker and called by the missions, and sends a large result out of band
// through its object store bucket.
func TestNodeCallerAndToolService(t *testing.T) {
	dir := testnode.Folder(t, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	nc := srv.Conn()
	env := append(os.Environ(), "PTC_NATS_URL="+srv.ClientURL())

	tools := exec.CommandContext(ctx, "node", "toolservice.mjs")
	tools.Dir, tools.Env = dir, env
	var toolErr bytes.Buffer
	tools.Stderr = &toolErr
	stdout, err := tools.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tools.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = tools.Process.Signal(os.Interrupt)
		_ = tools.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("tool service did not start: %q, %v\n%s", line, err, toolErr.String())
	}
	found, err := fleet.Discover(ctx, nc, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string]fleet.ToolInfo{}
	for _, ti := range found {
		sigs[ti.Name] = ti
	}
	if s := sigs["shout"]; s.Service != "nodetools" || s.Signature != "(text :string) -> {loud :string, length :int}" {
		t.Errorf("shout discovered as %+v", s)
	}
	if s := sigs["word_stats"]; s.ContentType != "application/json" {
		t.Errorf("word_stats discovered as %+v", s)
	}

	agentworker.Start(ctx, t, srv.Conn(), llmtest.NewT(t, llmtest.Code(program), llmtest.Code(program)))

	for _, args := range [][]string{{"submit.mjs"}, {"submit.mjs", "--json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.CommandContext(ctx, "node", args...)
			cmd.Dir, cmd.Env = dir, env
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %v\n%s\ntool service:\n%s", args, err, errOut.String(), toolErr.String())
			}
			var got struct {
				ID   string
				Step struct {
					Type   string
					Return map[string]any
					Fail   map[string]any
					Usage  map[string]any
				}
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			if got.Step.Fail != nil {
				t.Fatalf("mission %s failed: %v", got.ID, got.Step.Fail)
			}
			// records: 20,000 records (about 700 KB) sent out of band
			// through the Node service's results bucket
			want := map[string]any{"loud": "HELLO FROM NODE!", "words": float64(11), "top": "the", "n": float64(42),
				"records": float64(20000), "last": "record number 19999 of 20000"}
			for k, v := range want {
				if got.Step.Return[k] != v {
					t.Errorf("return[%s] = %#v, want %#v (return %v)", k, got.Step.Return[k], v, got.Step.Return)
				}
			}
			if got.Step.Usage["tool_calls"] != float64(3) {
				t.Errorf("usage = %v, want 3 tool calls", got.Step.Usage)
			}
			// The Go client reads the same result.
			client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			step, err := client.Result(ctx, got.ID)
			if err != nil || !step.Ok() || step.Return.(map[string]any)["n"] != int64(42) {
				t.Errorf("Go client reads %v, %v", step, err)
			}
		})
	}
}
