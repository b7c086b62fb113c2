// Package missionfile reads mission files: a mission written by a person in
// YAML or JSON (examples/missions/*.yaml), turned into a messages.Mission.
// Unknown fields are errors (a misspelled key must not be silently ignored),
// numbers keep their kind (42 is an int, 4.2 a float), and durations are
// strings such as "30s".
//
// A file may carry a script: the replies of a scripted model, used by the
// dispatcher's local mode when no real model is configured, so that the
// examples run anywhere. Scripted replies are labelled as such in the output.
package missionfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// File is a mission file.
type File struct {
	// ID is the mission id (a ULID); empty means a new one per submission.
	ID       string `json:"id,omitempty"`
	Priority string `json:"priority,omitempty"`
	// Model names the model (worker configuration); empty uses the agent's
	// llm or the worker default.
	Model string `json:"model,omitempty"`
	// Tools are the remote tools the mission may call; empty means the
	// agent's tools (and its sub-agents' tools).
	Tools            []string       `json:"tools,omitempty"`
	Context          map[string]any `json:"context,omitempty"`
	ContextSignature string         `json:"context_signature,omitempty"`
	Limits           struct {
		MissionTimeout Duration `json:"mission_timeout,omitempty"`
		MaxTurns       int      `json:"max_turns,omitempty"`
		MaxToolCalls   int      `json:"max_tool_calls,omitempty"`
		TurnBudget     int      `json:"turn_budget,omitempty"`
		MemoryLimit    int64    `json:"memory_limit,omitempty"`
	} `json:"limits,omitzero"`
	Labels map[string]string `json:"labels,omitempty"`
	// Agent is the agent to run; exactly one of Agent and Compiled is set.
	Agent *Agent `json:"agent,omitempty"`
	// Compiled is a compiled PTC-Lisp program to apply to every input with
	// no model ("apply at scale"; see docs/compile.md).
	Compiled *Compiled `json:"compiled,omitempty"`
	// Script holds scripted model replies, in turn order.
	Script []string `json:"script,omitempty"`
}

// Agent is an agent spec as written in a mission file.
type Agent struct {
	Name           string            `json:"name,omitempty"`
	Description    string            `json:"description,omitempty"`
	Prompt         string            `json:"prompt"`
	Signature      string            `json:"signature,omitempty"`
	Output         string            `json:"output,omitempty"`
	Tools          []string          `json:"tools,omitempty"`
	ToolCatalog    []ToolSchema      `json:"tool_catalog,omitempty"`
	SubAgents      map[string]*Agent `json:"sub_agents,omitempty"`
	MaxTurns       int               `json:"max_turns,omitempty"`
	MaxToolCalls   int               `json:"max_tool_calls,omitempty"`
	LLMTimeout     Duration          `json:"llm_timeout,omitempty"`
	ProgramTimeout Duration          `json:"program_timeout,omitempty"`
	MaxSteps       int64             `json:"max_steps,omitempty"`
	MissionTimeout Duration          `json:"mission_timeout,omitempty"`
	PromptLimit    struct {
		List   int `json:"list,omitempty"`
		String int `json:"string,omitempty"`
	} `json:"prompt_limit,omitzero"`
	LLM            string         `json:"llm,omitempty"`
	LLMOpts        map[string]any `json:"llm_opts,omitempty"`
	SystemPrefix   string         `json:"system_prefix,omitempty"`
	SystemSuffix   string         `json:"system_suffix,omitempty"`
	LanguageSpec   string         `json:"language_spec,omitempty"`
	OutputFormat   string         `json:"output_format,omitempty"`
	SystemOverride string         `json:"system_override,omitempty"`
	LLMRetry       *struct {
		MaxAttempts int      `json:"max_attempts,omitempty"`
		Backoff     string   `json:"backoff,omitempty"`
		BaseDelay   Duration `json:"base_delay,omitempty"`
		MaxDelay    Duration `json:"max_delay,omitempty"`
		Retryable   []string `json:"retryable,omitempty"`
	} `json:"llm_retry,omitempty"`
	MemoryLimit    int64  `json:"memory_limit,omitempty"`
	ValidationMode string `json:"validation_mode,omitempty"`
	MaxDepth       int    `json:"max_depth,omitempty"`
	TurnBudget     int    `json:"turn_budget,omitempty"`
}

// Compiled is a compiled program and its inputs, as written in a mission
// file. Program is a one-argument PTC-Lisp function (agent.Compile writes
// one); it runs once per input, with the input map as its argument.
type Compiled struct {
	Program   string           `json:"program"`
	Signature string           `json:"signature,omitempty"`
	Inputs    []map[string]any `json:"inputs"`
}

// ToolSchema is a tool_catalog entry.
type ToolSchema struct {
	Name        string `json:"name"`
	Signature   string `json:"signature,omitempty"`
	Description string `json:"description,omitempty"`
}

// Duration is a time.Duration written as a string ("30s", "1m30s").
type Duration time.Duration

// UnmarshalJSON parses a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON prints a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Read reads and parses the mission file at path.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses a mission file (YAML or JSON) strictly.
func Parse(data []byte) (*File, error) {
	// YAML 1.2 semantics (go.yaml.in/yaml/v3: only true/false are booleans,
	// so a context key "n" or a value "no" stay strings), then the JSON
	// decoder for strict fields and number kinds, so YAML and JSON files
	// behave the same.
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("mission file: %w", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("mission file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("mission file: %w", err)
	}
	if _, err := messages.JSONNumbers(f.Context); err != nil {
		return nil, fmt.Errorf("mission file: context: %w", err)
	}
	switch {
	case f.Agent == nil && f.Compiled == nil:
		return nil, fmt.Errorf("mission file: agent or compiled is required")
	case f.Agent != nil && f.Compiled != nil:
		return nil, fmt.Errorf("mission file: agent and compiled exclude each other")
	case f.Compiled != nil:
		if strings.TrimSpace(f.Compiled.Program) == "" {
			return nil, fmt.Errorf("mission file: compiled.program is required")
		}
		for i, in := range f.Compiled.Inputs {
			if in == nil {
				return nil, fmt.Errorf("mission file: compiled.inputs[%d] is empty", i)
			}
			if _, err := messages.JSONNumbers(in); err != nil {
				return nil, fmt.Errorf("mission file: compiled.inputs[%d]: %w", i, err)
			}
		}
		return &f, nil
	}
	if err := f.Agent.plainOpts("agent"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.Agent.Prompt) == "" {
		return nil, fmt.Errorf("mission file: agent.prompt is required")
	}
	return &f, nil
}

func (a *Agent) plainOpts(path string) error {
	if _, err := messages.JSONNumbers(a.LLMOpts); err != nil {
		return fmt.Errorf("mission file: %s.llm_opts: %w", path, err)
	}
	for name, sub := range a.SubAgents {
		if sub == nil {
			return fmt.Errorf("mission file: %s.sub_agents.%s is empty", path, name)
		}
		if err := sub.plainOpts(path + ".sub_agents." + name); err != nil {
			return err
		}
	}
	return nil
}

// Mission builds the wire mission. A file without an id gets a new ULID.
// The result is validated.
func (f *File) Mission() (*messages.Mission, error) {
	id := f.ID
	if id == "" {
		id = messages.NewMissionID()
	}
	m := &messages.Mission{
		ID: id, Context: f.Context, ContextSignature: f.ContextSignature,
		Model: f.Model, Tools: f.Tools, Priority: f.Priority,
		Limits: messages.Limits{MissionTimeout: time.Duration(f.Limits.MissionTimeout), MaxTurns: f.Limits.MaxTurns,
			MaxToolCalls: f.Limits.MaxToolCalls, TurnBudget: f.Limits.TurnBudget, MemoryLimit: f.Limits.MemoryLimit},
		CreatedAt: time.Now().UTC(), Labels: f.Labels,
	}
	if f.Compiled != nil {
		m.Kind = messages.KindCompiled
		m.Compiled = &messages.CompiledSpec{Program: f.Compiled.Program, Signature: f.Compiled.Signature, Inputs: f.Compiled.Inputs}
	} else {
		m.Kind, m.Agent = messages.KindAgent, f.Agent.spec()
		if len(m.Tools) == 0 {
			m.Tools = remoteTools(m.Agent, nil)
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func (a *Agent) spec() *messages.AgentSpec {
	s := &messages.AgentSpec{
		Name: a.Name, Description: a.Description, Prompt: a.Prompt, Signature: a.Signature,
		Output: a.Output, Tools: a.Tools, MaxTurns: a.MaxTurns, MaxToolCalls: a.MaxToolCalls,
		LLMTimeout: time.Duration(a.LLMTimeout), ProgramTimeout: time.Duration(a.ProgramTimeout), MaxSteps: a.MaxSteps,
		MissionTimeout: time.Duration(a.MissionTimeout),
		PromptLimit:    messages.PromptLimit{List: a.PromptLimit.List, String: a.PromptLimit.String},
		LLM:            a.LLM, LLMOpts: a.LLMOpts, SystemPrefix: a.SystemPrefix, SystemSuffix: a.SystemSuffix,
		MemoryLimit: a.MemoryLimit, ValidationMode: a.ValidationMode, MaxDepth: a.MaxDepth, TurnBudget: a.TurnBudget,
	}
	s.LanguageSpec, s.OutputFormat, s.SystemOverride = a.LanguageSpec, a.OutputFormat, a.SystemOverride
	if r := a.LLMRetry; r != nil {
		s.LLMRetry = &messages.RetryPolicy{MaxAttempts: r.MaxAttempts, Backoff: r.Backoff,
			BaseDelay: time.Duration(r.BaseDelay), MaxDelay: time.Duration(r.MaxDelay), Retryable: r.Retryable}
	}
	for _, t := range a.ToolCatalog {
		s.ToolCatalog = append(s.ToolCatalog, messages.ToolSchema{Name: t.Name, Signature: t.Signature, Description: t.Description})
	}
	if len(a.SubAgents) > 0 {
		s.SubAgents = map[string]*messages.AgentSpec{}
		for name, sub := range a.SubAgents {
			s.SubAgents[name] = sub.spec()
		}
	}
	return s
}

// remoteTools lists the tool names an agent tree calls that are not its own
// sub-agents: the remote tools a mission must be allowed to use.
func remoteTools(s *messages.AgentSpec, acc []string) []string {
	for _, t := range s.Tools {
		if _, sub := s.SubAgents[t]; !sub && !slices.Contains(acc, t) {
			acc = append(acc, t)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.SubAgents)) {
		acc = remoteTools(s.SubAgents[name], acc)
	}
	return acc
}
