package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// runLocalMission runs an example mission with "local" on srv (its own
// workers and the example tools) and returns its id.
func runLocalMission(ctx context.Context, t *testing.T, srv *fleettest.Server, file string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"local", "-workers", "1", "-nats-url", srv.ClientURL(), "-example-tools", file}, testEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("local: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	m := regexp.MustCompile(`mission (\w{26}) submitted`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no mission id in:\n%s", out.String())
	}
	return m[1]
}

// A recorded mission (a failing first program, the fix, a firewalled
// field) replays from the fleet and from an exported file, in a process
// with no model and no tool service, and reproduces its Step; re-run with
// a model on a fake OpenAI-wire or Anthropic-wire server, its tool calls
// are served from the recording where they match and the comparison is
// printed.
func TestReplayCommand(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id := runLocalMission(ctx, t, srv, "../../examples/missions/urgent-emails.yaml")
	nats := testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()})

	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"replay", id}, nats, &out, &errOut); err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"replay of mission " + id, "── turn 2", "tool search_emails", "tool calls: 2 from the recording, 0 live, 0 not recorded",
		"REPRODUCED", `"_ids":"<Firewalled>"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("replay output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := run(ctx, []string{"replay", "-json", id}, nats, &out, &errOut); err != nil {
		t.Fatalf("replay -json: %v", err)
	}
	var js struct {
		MissionID   string `json:"mission_id"`
		Reproduced  bool   `json:"reproduced"`
		Served      int    `json:"served"`
		Divergences []any  `json:"divergences"`
		Step        struct {
			Trace []struct {
				Program string `json:"program"`
			} `json:"trace"`
		} `json:"step"`
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatalf("replay -json: %v\n%s", err, out.String())
	}
	if js.MissionID != id || !js.Reproduced || js.Served != 2 || len(js.Divergences) != 0 || len(js.Step.Trace) != 2 {
		t.Errorf("replay -json = %+v", js)
	}

	// Exported, the mission replays with no NATS server at all.
	file := filepath.Join(t.TempDir(), "m.ptcmission")
	out.Reset()
	if err := run(ctx, []string{"mission", "export", id, "-out", file}, nats, &out, &errOut); err != nil {
		t.Fatalf("mission export: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"replay", file}, testEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("replay FILE: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "REPRODUCED") {
		t.Errorf("replay of the export:\n%s", out.String())
	}

	// A recording edited after the fact (turn 2's tool result cut to one
	// email) does not reproduce: exit status 1, naming turn and value.
	x, err := readExport(file)
	if err != nil {
		t.Fatal(err)
	}
	call := &x.Step.Trace[1].ToolCalls[0]
	call.Result = call.Result.([]any)[:1]
	edited := filepath.Join(t.TempDir(), "edited.ptcmission")
	if err := writeExport(edited, x); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run(ctx, []string{"replay", edited}, testEnv(nil), &out, &errOut)
	if !errors.Is(err, errReplayDiverged) || exitCode(err) != 1 || !strings.Contains(out.String(), "DIVERGED") ||
		!strings.Contains(out.String(), "turn 2: result: recorded ") {
		t.Errorf("replay of an edited recording: %v\n%s", err, out.String())
	}

	// Another model: it writes the right program at once. Its tool call
	// matches a recorded one (same tool, same arguments).
	fixed := "```clojure\n(let [emails (tool/search_emails {:query ctx/topic :urgent true :limit 1000})]\n" +
		"  (return {:count (count emails) :senders (count (distinct (map :from emails)))\n" +
		"           :latest (->> emails (sort-by :received_at) reverse (take 3) (mapv :subject)) :_ids (mapv :id emails)}))\n```"
	oai, oaiCalls := webtest.ScriptedChat(t, fixed)
	ant, antCalls := webtest.ScriptedMessages(t, fixed)
	models := testEnv(map[string]string{
		"PTC_MODEL_MINI": "openai:mini-1@" + oai.URL + "/v1", "OPENAI_API_KEY": "k",
		"PTC_MODEL_CLAUDE": "anthropic:claude-test@" + ant.URL, "ANTHROPIC_API_KEY": "k",
	})
	for _, model := range []string{"mini", "claude"} {
		out.Reset()
		if err := run(ctx, []string{"replay", file, "-model", model}, models, &out, &errOut); err != nil {
			t.Fatalf("replay -model %s: %v\n%s\n%s", model, err, out.String(), errOut.String())
		}
		for _, want := range []string{"with model " + model, "tool calls: 1 from the recording, 0 live, 0 not recorded",
			"DIVERGED", "turn 1: raw:", "recorded: RETURN", "replayed: RETURN", "1 turns, 100 in / 7 out tokens"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("replay -model %s lacks %q:\n%s", model, want, out.String())
			}
		}
	}
	if oaiCalls.Load() != 1 || antCalls.Load() != 1 {
		t.Errorf("model requests: openai %d, anthropic %d; want 1 each", oaiCalls.Load(), antCalls.Load())
	}

	// A recording whose Step counts a reply an earlier attempt paid for and
	// the run did not use reproduces; a replay with a change shows the
	// trace's tokens against the replay's, and the unused ones apart.
	if x, err = readExport(file); err != nil {
		t.Fatal(err)
	}
	trace := x.Step.Usage
	unused := messages.Usage{InputTokens: 40, OutputTokens: 4, TotalTokens: 44, Requests: 1}
	x.Step.Usage.Add(unused)
	x.Step.Replayed = &messages.Replayed{Unused: &unused}
	paid := filepath.Join(t.TempDir(), "paid.ptcmission")
	if err := writeExport(paid, x); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"replay", paid}, testEnv(nil), &out, &errOut); err != nil || !strings.Contains(out.String(), "REPRODUCED") {
		t.Errorf("replay of a recording with an unused reply: %v\n%s", err, out.String())
	}
	oai3, _ := webtest.ScriptedChat(t, fixed)
	out.Reset()
	err = run(ctx, []string{"replay", paid, "-model", "mini"},
		testEnv(map[string]string{"PTC_MODEL_MINI": "openai:mini-1@" + oai3.URL + "/v1", "OPENAI_API_KEY": "k"}), &out, &errOut)
	if err != nil {
		t.Fatalf("replay -model mini of a recording with an unused reply: %v\n%s", err, out.String())
	}
	for _, want := range []string{"recorded: RETURN", "replayed: RETURN",
		fmt.Sprintf("%d turns, %d in / %d out tokens\n  and 40 in / 4 out tokens of replies earlier attempts paid for and the run did not use\n",
			trace.Turns, trace.InputTokens, trace.OutputTokens)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("replay -model mini of a recording with an unused reply lacks %q:\n%s", want, out.String())
		}
	}

	// An eval suite names the mission by id: replayed as recorded, and
	// re-run with a model whose tool call the recording serves.
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	body := "models: [scripted, mini]\ntasks:\n  - name: urgent\n    recorded: " + id +
		"\n    expect:\n      fields: {count: {eq: 65}, _ids: {len: 65}}\n      max_turns: 2\n"
	if err := os.WriteFile(suite, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	oai2, _ := webtest.ScriptedChat(t, fixed)
	out.Reset()
	err = run(ctx, []string{"eval", "-json", "-nats-url", srv.ClientURL(), suite},
		testEnv(map[string]string{"PTC_MODEL_MINI": "openai:mini-1@" + oai2.URL + "/v1", "OPENAI_API_KEY": "k"}), &out, &errOut)
	if err != nil {
		t.Fatalf("eval of a recorded mission: %v\n%s", err, out.String())
	}
	var rep evalReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || !rep.Runs[0].OK || !rep.Runs[1].OK || rep.Runs[0].Turns != 2 || rep.Runs[1].Turns != 1 || rep.Runs[1].InputTokens != 100 {
		t.Errorf("eval runs: %+v", rep.Runs)
	}
}

// A replay that does not reproduce the recording fails (exit status 1)
// naming the turn and the first differing value; a file that is not an
// export is refused with its name.
func TestReplayCommandErrors(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	bad := filepath.Join(t.TempDir(), "bad.ptcmission")
	if err := os.WriteFile(bad, []byte("not msgpack"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(ctx, []string{"replay", bad}, testEnv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a mission export") {
		t.Errorf("replay of a bad file: %v", err)
	}
	err = run(ctx, []string{"replay", "nope"}, testEnv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "neither a mission id") {
		t.Errorf("replay nope: %v", err)
	}
}
