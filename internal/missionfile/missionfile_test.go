package missionfile

import (
	"errors"
	"fmt"
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
	m, err := f.Build()
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
		"agent: {prompt: x}\ncontxt: {}":                         `line 2: contxt: unknown field (did you mean context?)`,
		"agent: {prompt: x, max_turn: 3}":                        `line 1: agent.max_turn: unknown field (did you mean max_turns?)`,
		"agent: {prompt: x, frobnicate: 3}":                      `line 1: agent.frobnicate: unknown field (known: name, description, prompt,`,
		"agent: {prompt: x, max_turns: 3, max_turns: 4}":         `line 1: agent.max_turns: listed twice`,
		"agent:\n  prompt: ''":                                   `line 2: agent.prompt: required`,
		"agent: {prompt: x}\nlimits: {mission_timeout: 5}":       `line 2: limits.mission_timeout: expected a duration string such as "30s" or "5m", got int "5"`,
		"agent: {prompt: x}\nlimits: {mission_timeout: soon}":    `line 2: limits.mission_timeout: "soon" is not a duration`,
		"agent: {prompt: x, max_turns: many}":                    `line 1: agent.max_turns: expected an integer, got str "many"`,
		"agent: {prompt: x, tools: search}":                      `line 1: agent.tools: expected a list, got str "search"`,
		"agent: {prompt: x, tools: [1]}":                         `line 1: agent.tools[0]: expected a string, got int "1"`,
		"agent: {prompt: x}\ncontext: {a: .inf}":                 `line 2: context.a: .inf is not a finite number`,
		"agent: {prompt: x}\ncontext: {a: 99999999999999999999}": `context.a: integer 99999999999999999999 does not fit in 64 bits`,
		"agent: {prompt: x}\nkind: compiled":                     `line 2: kind: unknown field`,
		"agent: {prompt: x, sub_agents: {a: null}}":              "line 1: agent.sub_agents.a: empty",
		"agent: {prompt: x, llm_retry: {backoff: fib}}":          "llm_retry.backoff",
		"agent: {prompt: x, memory_strategy: undo}":              `mission.agent.memory_strategy: "undo" is not "strict" or "rollback"`,
		"agent: {prompt: x, plan: [fetch, '']}":                  "mission.agent.plan[1]: empty",
		"agent: {prompt: x, llm_query: yes}":                     `line 1: agent.llm_query: expected a boolean (true or false), got str "yes"`,
		"context: {}":                                            "agent or compiled is required",
		"agent: [":                                               "mission file",
		"- 1":                                                    "line 1: expected an object",
	}
	for src, want := range cases {
		f, err := Parse([]byte(src))
		if err == nil {
			_, err = f.Build() // the wire validation
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
		if _, err := f.Build(); err != nil {
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

// A misspelled field deep in a file names its line, its path and the field
// meant.
func TestUnknownFieldNamesLineAndSuggestion(t *testing.T) {
	src := `# a mission
context:
  region: north
  limit: 3
  tags: [a, b]
agent:
  name: top
  prompt: |
    Find the {{limit}} best customers of {{region}}.
  signature: "(region :string, limit :int) -> :any"
  tools:
    - list_customers
    - list_orders
  max_turn: 4
`
	_, err := Parse([]byte(src))
	want := "line 14: agent.max_turn: unknown field (did you mean max_turns?)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 14 || fe.Path != "agent.max_turn" {
		t.Fatalf("err = %#v", err)
	}
	// through Read, the file's path comes first
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || err.Error() != path+": "+want {
		t.Fatalf("Read: err = %v", err)
	}
}

// JSON files decode like YAML ones, into the same wire fields.
func TestParseJSON(t *testing.T) {
	f, err := Parse([]byte(`{"agent": {"prompt": "p", "max_turns": 2, "llm_timeout": "90s", "max_steps": -1, "program_memory": 4096},
 "context": {"n": 1, "x": 1.5, "ok": true, "none": null},
 "limits": {"memory_limit": -1, "max_steps": 1000, "program_memory": -1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(1), "x": 1.5, "ok": true, "none": nil}
	if !reflect.DeepEqual(f.Context, want) || f.Agent.MaxTurns != 2 || f.Agent.LLMTimeout != 90*time.Second ||
		f.Agent.MaxSteps != -1 || f.Agent.ProgramMemory != 4096 || f.Limits.MemoryLimit != -1 ||
		f.Limits.MaxSteps != 1000 || f.Limits.ProgramMemory != -1 {
		t.Fatalf("file = %+v, agent = %+v", f, f.Agent)
	}
}

// Every limit is written the same under an agent and under limits:, and an
// unknown one is named with the closest known name.
func TestParseLimits(t *testing.T) {
	f, err := Parse([]byte(`
agent: {prompt: x, max_depth: 2, prompt_limit: {list: 3}}
limits: {llm_timeout: 2m, program_timeout: -1s, max_depth: -1, prompt_limit: {string: 40}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Agent.Limits != (messages.Limits{MaxDepth: 2, PromptLimit: messages.PromptLimit{List: 3}}) {
		t.Errorf("agent limits = %+v", f.Agent.Limits)
	}
	want := messages.Limits{LLMTimeout: 2 * time.Minute, ProgramTimeout: -time.Second, MaxDepth: -1,
		PromptLimit: messages.PromptLimit{String: 40}}
	if f.Limits != want {
		t.Errorf("limits = %+v, want %+v", f.Limits, want)
	}
	_, err = Parse([]byte("agent: {prompt: x}\nlimits: {max_turn: 3}"))
	if err == nil || !strings.Contains(err.Error(), "max_turns") {
		t.Errorf("unknown limit: %v", err)
	}
}

// Aliases cannot expand a small file into billions of values.
func TestAliasBomb(t *testing.T) {
	src := "agent: {prompt: x}\ncontext:\n  a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
	prev := "a"
	for i := range 9 {
		name := fmt.Sprintf("l%d", i)
		src += fmt.Sprintf("  %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	_, err := Parse([]byte(src))
	if err == nil || !strings.Contains(err.Error(), "values (anchors and aliases included)") {
		t.Fatalf("err = %v", err)
	}
}

// Every problem of a file is reported in one run, in line order: unknown
// fields (with the closest name), a bad value, a signature that does not
// parse and a misspelled placeholder (with the closest input).
func TestParseReportsEveryError(t *testing.T) {
	_, err := Parse([]byte(`agent:
  prompt: "Top customers of {{regoin}}"
  signature: "(region :string) -> {top [:int]}"
  max_turn: 4
  program_timeout: soon
  sub_agents:
    helper: {prompt: "help", signature: "(x :int -> :int"}
scirpt: ["(return 1)"]
`))
	var all Errors
	if !errors.As(err, &all) {
		t.Fatalf("err = %v (%T), want Errors", err, err)
	}
	want := []string{
		"line 2: agent.prompt: placeholders {{regoin}} (did you mean {{region}}?) not found in signature",
		"line 4: agent.max_turn: unknown field (did you mean max_turns?)",
		`line 5: agent.program_timeout: "soon" is not a duration`,
		"line 7: agent.sub_agents.helper.signature: ",
		"line 8: scirpt: unknown field (did you mean script?)",
	}
	if len(all) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(all), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(all[i].Error(), w) {
			t.Errorf("problem %d = %q, want %q…", i, all[i].Error(), w)
		}
	}
	if !strings.HasPrefix(err.Error(), "5 problems:\n  line 2: ") {
		t.Errorf("message: %q", err.Error())
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Error("errors.As finds no *FieldError")
	}
}

// The loop options of an agent decode into the wire spec.
func TestParseLoopOptions(t *testing.T) {
	f, err := Parse([]byte(`
agent:
  prompt: Sum the orders
  retry_turns: 2
  memory_strategy: rollback
  llm_query: true
  plan: [Fetch the orders, Sum them]
limits: {max_emit_bytes: 1024, emit_rate: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := f.Agent
	if a.RetryTurns != 2 || a.MemoryStrategy != messages.MemoryRollback || !a.LLMQuery || !reflect.DeepEqual(a.Plan, []string{"Fetch the orders", "Sum them"}) {
		t.Fatalf("agent %+v", a)
	}
	if f.Limits.MaxEmitBytes != 1024 || f.Limits.EmitRate != 5 {
		t.Fatalf("limits %+v", f.Limits)
	}
	if _, err := f.Build(); err != nil {
		t.Fatal(err)
	}
}

// compression: true reaches the wire mission, a sub-agent's too; a value
// that is not a boolean and compression in text mode are errors naming
// the field.
func TestParseCompression(t *testing.T) {
	f, err := Parse([]byte("agent:\n  prompt: x\n  compression: true\n  tools: [helper]\n  sub_agents:\n    helper: {prompt: y, compression: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !m.Agent.Compression || !m.Agent.SubAgents["helper"].Compression {
		t.Errorf("compression lost: %+v", m.Agent)
	}
	for src, want := range map[string]string{
		"agent: {prompt: x, compression: yes}":                `line 1: agent.compression: expected a boolean (true or false), got str "yes"`,
		"agent: {prompt: x, output: text, compression: true}": "agent.compression: compression renders PTC-Lisp turns",
	} {
		f, err := Parse([]byte(src))
		if err == nil {
			_, err = f.Build()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}
