package missionfile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

func TestParse(t *testing.T) {
	// "n" is a key here: under YAML 1.1 it would read as false.
	f, err := Parse([]byte(`
priority: high
limits: {mission_timeout: 90s}
context: {n: 3, x: 2.5, big: 12345678901, list: [1, "a", {k: 2}]}
agent:
  prompt: "count {{n}}"
  signature: "(n :int) -> {c :int}"
  tools: [search, helper]
  program_timeout: 5s
  llm_opts: {temperature: 0.2, max_tokens: 100}
  language_spec: minimal
  llm_retry: {max_attempts: 5, backoff: linear, base_delay: 2s, retryable: [rate_limit]}
  sub_agents:
    helper:
      prompt: "help"
      tools: [fetch, search]
script: ["(return {:c 1})"]
`))
	if err != nil {
		t.Fatal(err)
	}
	wantCtx := map[string]any{"n": int64(3), "x": 2.5, "big": int64(12345678901),
		"list": []any{int64(1), "a", map[string]any{"k": int64(2)}}}
	if !reflect.DeepEqual(f.Context, wantCtx) {
		t.Errorf("context = %#v", f.Context)
	}
	if f.Agent.LLMOpts["max_tokens"] != int64(100) || f.Agent.LLMOpts["temperature"] != 0.2 {
		t.Errorf("llm_opts = %#v", f.Agent.LLMOpts)
	}
	m, err := f.Mission()
	if err != nil {
		t.Fatal(err)
	}
	if !messages.ValidMissionID(m.ID) || m.Priority != "high" || m.Limits.MissionTimeout != 90*time.Second {
		t.Errorf("mission = %+v", m)
	}
	if r := m.Agent.LLMRetry; r == nil || r.MaxAttempts != 5 || r.Backoff != "linear" || r.BaseDelay != 2*time.Second || r.Retryable[0] != "rate_limit" || m.Agent.LanguageSpec != "minimal" {
		t.Errorf("llm_retry / language_spec = %+v / %q", m.Agent.LLMRetry, m.Agent.LanguageSpec)
	}
	if m.Agent.ProgramTimeout != 5*time.Second || m.Agent.SubAgents["helper"].Prompt != "help" {
		t.Errorf("agent spec = %+v", m.Agent)
	}
	// remote tools: the agent's own minus sub-agent names, plus the sub-agent's.
	if strings.Join(m.Tools, ",") != "search,fetch" {
		t.Errorf("tools = %v", m.Tools)
	}
	if len(f.Script) != 1 {
		t.Errorf("script = %v", f.Script)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"agent: {prompt: x}\ncontxt: {}":                      `unknown field "contxt"`,
		"agent: {prompt: x, max_turn: 3}":                     `unknown field "max_turn"`,
		"agent: {prompt: ''}":                                 "agent.prompt is required",
		"agent: {prompt: x}\nlimits: {mission_timeout: 5}":    `duration must be a string`,
		"agent: {prompt: x}\nlimits: {mission_timeout: soon}": `duration "soon"`,
		"agent: {prompt: x, sub_agents: {a: null}}":           "agent.sub_agents.a is empty",
		"agent: {prompt: x, llm_retry: {backoff: fib}}":       "llm_retry.backoff",
		"agent: [": "mission file",
	}
	for src, want := range cases {
		f, err := Parse([]byte(src))
		if err == nil {
			_, err = f.Mission() // the wire validation
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}

func TestExampleMissionsParse(t *testing.T) {
	paths, err := filepath.Glob("../../examples/missions/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example missions found: %v", err)
	}
	for _, p := range paths {
		f, err := Read(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if _, err := f.Mission(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if f.Agent != nil && len(f.Script) == 0 {
			t.Errorf("%s: no script: every example must run without a real model", p)
		}
	}
	if _, err := Read("does-not-exist.yaml"); !os.IsNotExist(err) {
		t.Errorf("missing file: err = %v", err)
	}
}
