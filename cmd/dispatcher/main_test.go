package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testEnv(vars map[string]string) env {
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	return env{lookup: cli.MapEnv(vars), environ: environ}
}

func TestLocalRunsTheExampleMissions(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"top-customers.yaml", []string{"model: SCRIPTED", "turn 1: program", "→ list_orders", "RESULT (", `"orders_scanned": 1279`, "turns 2"}},
		// The first program fails; the error goes back to the model, the second fixes it.
		// Each input's run is a turn, in the progress lines and the summary.
		{"apply-compiled.yaml", []string{"model: none (a compiled program applied to 4 inputs)", "turn 4: → list_orders", "turns 4 · llm requests 0"}},
		// 5,000 emails (about 1 MB) sent out of band, kept with def across two turns.
		{"all-emails.yaml", []string{`← search_emails (1083169 bytes, kept in object store tool_results_shop as `, "Memory: emails", `"count": 5000`, `"senders": 1830`, `"urgent": 503`, "tool calls 1"}},
		// A plan marked step by step, a value emitted at once, a retry turn to fix the return.
		// (the plan event at the run's start is not asserted: a live watcher
		// that reads a later event first counts an earlier one as lost)
		{"region-report.yaml", []string{`turn 1: emit {"totals":{"east":287088.49,"north":319732.39,"south":314579.02,"west":316955.19}}`,
			"turn 1: plan: step 1 done, 1/2 steps done\n    [x] 1. Total the paid orders of each region — 4 regions totalled",
			"You get one more turn only to fix this return", "Turn 3 of 3 (0 remaining)",
			"[x] 2. Report the largest region — north leads", `"total": 319732.39`, "turns 3",
			"\nplan, 2/2 steps done\n  [x] 1. Total the paid orders of each region — 4 regions totalled\n  [x] 2. Report the largest region — north leads\n\nRESULT ("}},
		{"urgent-emails.yaml", []string{"turn 1: feedback to the model", `>: expected number, got string`, "Turn 2 of 3 (1 remaining)", `"count": 65`, `"_ids": [10,51,`}},
		// A spawned child and an llm-query, each answered by its script_by_prompt entry.
		{"support-lead.yaml", []string{"replaying 5 replies", "urgent refund emails: 65", `"latest": "Question about refund #234"`, `"urgent": 65`, `"angry": true`, "llm requests 5"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			err := run(ctx, []string{"local", "-workers", "2", "../../examples/missions/" + c.file}, testEnv(nil), &out, &errOut)
			if err != nil {
				t.Fatalf("local: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
			}
			got := out.String()
			for _, want := range c.want {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			// Events are masked: firewalled values never reach the progress output.
			if strings.Contains(got, "+1-555-") || strings.Contains(got, "Hello, this is") {
				t.Errorf("a firewalled value was printed:\n%s", got)
			}
		})
	}
}

func TestLocalFailsClearly(t *testing.T) {
	dir := t.TempDir()
	noScript := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(noScript, []byte("agent: {prompt: hi}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(failing, []byte("agent: {prompt: hi, max_turns: 2}\nscript: ['(fail {:reason :nope :message \"cannot\"})']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"local"}, "local takes one mission file"},
		{[]string{"local", noScript}, `no model "default" is configured`},
		{[]string{"local", failing}, "failed: nope"},
		{[]string{"local", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"status", "not-an-id"}, "no NATS server"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := run(ctx, c.args, testEnv(nil), &out, &errOut)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// A mission whose tool no service provides fails showing that cause, not
// only the scripted model running out of replies.
func TestLocalFailureShowsCause(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("agent: {prompt: hi, tools: [get_weather]}\nscript: ['(tool/get_weather {:city \"Oslo\"})']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"local", file}, testEnv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "failed: llm_error") {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"no reply for turn 2", "the turn before failed: ", "tool get_weather: unavailable"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A typo in a mission's tool list is reported before the mission is
// submitted, with the tool it probably means.
func TestLocalMisspelledToolRefusedAtSubmit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("agent: {prompt: hi, tools: [list_customer]}\nscript: ['(return (count (tool/list_customers {})))']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"local", file}, testEnv(nil), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "tools: list_customer is offered by no tool service (did you mean list_customers?)") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "submitted") {
		t.Errorf("the mission was submitted:\n%s", out.String())
	}
}

func TestPretty(t *testing.T) {
	v := map[string]any{"b": []any{int64(1), int64(2)}, "a": []any{map[string]any{"x": "y"}}, "c": map[string]any{}, "d": nil}
	want := "{\n  \"a\": [\n    {\n      \"x\": \"y\"\n    }\n  ],\n  \"b\": [1,2],\n  \"c\": {},\n  \"d\": null\n}"
	if got := pretty(v, ""); got != want {
		t.Errorf("pretty =\n%s\nwant\n%s", got, want)
	}
}

func TestPreview(t *testing.T) {
	list := []any{map[string]any{"id": int64(1)}, map[string]any{"id": int64(2)}, 3, 4, 5}
	if got := preview(list, 200); !strings.HasPrefix(got, "[5 items] [{\"id\":1},{\"id\":2}") {
		t.Errorf("preview = %q", got)
	}
	long := strings.Repeat("x", 500)
	if got := preview(long, 50); len(got) > 60 || !strings.HasSuffix(got, "…") {
		t.Errorf("preview not cut: %q", got)
	}
	b, _ := json.Marshal("ok")
	if got := preview("ok", 10); got != string(b) {
		t.Errorf("preview = %q", got)
	}
}

// Flags may follow a command's arguments; -h is a request for the usage
// (exit status 0), not an error.
func TestFlagsAfterArguments(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := messages.NewMissionID()
	for _, args := range [][]string{{"trace", id, "-json"}, {"status", id, "-timeout", "10s"}, {"cancel", "-timeout", "10s", id, "-reason", "typo"}} {
		var out, errOut bytes.Buffer
		err := run(ctx, args, testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()}), &out, &errOut)
		if exitCode(err) != exitNotFound {
			t.Errorf("%v: err = %v (exit %d), want the mission not found", args, err, exitCode(err))
		}
	}
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"local", "-h"}, testEnv(nil), &out, &errOut)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "-workers") {
		t.Errorf("local -h: err = %v, usage %q", err, errOut.String())
	}
}

// A tool called with {} shows {} (no arguments travel, not null); a long
// preview is cut on a character boundary; one scripted reply is "1 reply".
func TestProgressLines(t *testing.T) {
	var b strings.Builder
	progress{w: &b}.event(&messages.Event{Kind: messages.EventToolCall, Turn: 1, Tool: "cities"})
	if !strings.HasSuffix(b.String(), "turn 1: → cities {}\n") {
		t.Errorf("call without arguments: %q", b.String())
	}
	b.Reset()
	progress{w: &b}.event(&messages.Event{Kind: messages.EventQuotaWait, Data: map[string]any{"quota": "submitter a's quota",
		"max_running": int64(2), "running": int64(2), "retry_at": "2026-11-28T14:00:02Z"}})
	if !strings.Contains(b.String(), ": waiting for its quota: submitter a's quota allows 2 running, 2 run, queued again at ") {
		t.Errorf("quota wait: %q", b.String())
	}
	if got := preview(strings.Repeat("é", 10), 6); got != `"éé…` {
		t.Errorf("cut preview = %q", got)
	}
	if plural(1, "reply", "replies") != "1 reply" || plural(3, "reply", "replies") != "3 replies" {
		t.Error("plural")
	}
}

// An event too large to carry a tool result (fleet.MaxEventBytes) carries
// its preview and size, which progress lines and trace text show.
func TestProgressShowsCutValues(t *testing.T) {
	var b strings.Builder
	ev := &messages.Event{Kind: messages.EventToolResult, Turn: 1, Tool: "list_orders",
		Data: map[string]any{"cut": map[string]any{"result": map[string]any{"bytes": int64(26000), "preview": `[{"id":1,"total":9.5}`}}}}
	progress{w: &b}.event(ev)
	if !strings.Contains(b.String(), `← list_orders [{"id":1,"total":9.5} (26000 bytes)`) {
		t.Errorf("cut result: %q", b.String())
	}
	if got := eventValue(&messages.Event{Result: int64(7)}, "result", int64(7), 200); got != "7" {
		t.Errorf("a value carried whole: %q", got)
	}
	ref := messages.RefValue(&messages.ObjectRef{Bucket: "tool_results_shop", Name: "m1.list_orders.c1", Size: 386155, Digest: "SHA-256=x"})
	if got := eventValue(&messages.Event{Result: ref}, "result", ref, 200); got != "(386155 bytes, kept in object store tool_results_shop as m1.list_orders.c1)" {
		t.Errorf("a result kept by reference: %q", got)
	}
}

// dispatcher trace shows a finished mission's plan with its Step, and a
// running mission's emits and plan events with its progress.
func TestTraceTextShowsPlanAndEmits(t *testing.T) {
	plan := []messages.PlanStep{{ID: "1", Description: "Fetch", Done: true, Summary: "3 orders"}, {ID: "2", Description: "Sum"}}
	var b strings.Builder
	if err := printTrace(&b, &missionView{ID: "m1", Step: &messages.Step{Return: int64(6), Plan: plan}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "plan, 1/2 steps done\n  [x] 1. Fetch — 3 orders\n  [ ] 2. Sum\nRETURN 6") {
		t.Errorf("finished:\n%s", b.String())
	}
	b.Reset()
	evs := []*messages.Event{{Kind: messages.EventPlan, Tool: "1", Plan: plan}, {Kind: messages.EventEmit, Turn: 1, Result: map[string]any{"n": int64(3), "_k": "x"}}}
	if err := printTrace(&b, &missionView{ID: "m1", Events: evs}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"   plan: step 1 done, 1/2 steps done\n     [x] 1. Fetch — 3 orders\n     [ ] 2. Sum", `   emit {"_k":"<Firewalled>","n":3}`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("running lacks %q:\n%s", want, b.String())
		}
	}
}
