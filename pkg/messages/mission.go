package messages

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// MissionVersion is the version of the Mission layout written by this
// package. Decoders accept any version up to and including it. Version 2
// bounds an LLM call (llm_timeout) and a program run (program_timeout)
// separately.
const MissionVersion = 2

// Mission kinds.
const (
	// KindAgent runs an agent spec: the LLM loop with tools.
	KindAgent = "agent"
	// KindCompiled runs a compiled PTC-Lisp program over a list of inputs
	// with no LLM (pkg/fleet/agentrun runs it; see docs/compile.md).
	KindCompiled = "compiled"
)

// Validation modes of an AgentSpec.
const (
	ValidationEnabled  = "enabled"
	ValidationWarnOnly = "warn_only"
	ValidationDisabled = "disabled"
	ValidationStrict   = "strict"
)

// Memory strategies of an AgentSpec: what a failed turn does to the
// agent's memory.
const (
	// MemoryStrict (the default when empty): a program that fails
	// leaves memory as before its turn, a return that fails validation
	// keeps what its program stored, and memory past memory_limit fails
	// the run (memory_limit_exceeded).
	MemoryStrict = "strict"
	// MemoryRollback: every failed turn leaves memory as it was before the
	// turn, a return that fails validation and memory past memory_limit
	// included; memory past the limit is fed back to the model as the
	// turn's error and the run goes on.
	MemoryRollback = "rollback"
)

// Limits of the wire layout, so that a hostile message cannot make a worker
// loop or allocate without bound.
const (
	// MaxSpecDepth bounds the nesting of sub-agent specs.
	MaxSpecDepth = 16
	// MaxMissionBytes is the largest encoded mission a submitter should
	// publish inline; larger contexts go to the BucketContext object store.
	MaxMissionBytes = 256 << 10
)

// Mission is a request to run one agent (or compiled program) somewhere in
// the fleet. It is plain data: any worker can run it. The zero value is not
// valid; use NewMissionID for the ID and call Validate.
type Mission struct {
	// Version is the layout version; 0 is written as MissionVersion.
	Version int `msgpack:"v"`
	// ID is a ULID; it is the JetStream Msg-Id on submit and the key of the
	// mission's status and result.
	ID string `msgpack:"id"`
	// Kind is KindAgent or KindCompiled.
	Kind string `msgpack:"kind"`
	// Agent is the agent to run (KindAgent).
	Agent *AgentSpec `msgpack:"agent,omitempty"`
	// Compiled is the program to run (KindCompiled).
	Compiled *CompiledSpec `msgpack:"compiled,omitempty"`
	// Context is the input data (ctx/ in programs), plain Go data.
	Context map[string]any `msgpack:"context,omitempty"`
	// ContextRef names an object in BucketContext holding the msgpack
	// encoded context when it was too large to travel inline; Context is
	// then empty.
	ContextRef string `msgpack:"context_ref,omitempty"`
	// ContextDigest is the digest of the ContextRef object as its
	// submitter stored it ("SHA-256=<base64url>"); a worker reads the
	// context only when the object still has it.
	ContextDigest string `msgpack:"context_digest,omitempty"`
	// ContextSignature describes Context in signature syntax.
	ContextSignature string `msgpack:"context_signature,omitempty"`
	// Model is the LLM name to use (worker configuration maps names to
	// providers); empty means the agent spec's LLM or the worker default.
	Model string `msgpack:"model,omitempty"`
	// Tools lists the remote tool names the mission may call; a mission
	// whose agent names any other is invalid, and a worker refuses every
	// other tool before sending any request.
	Tools []string `msgpack:"tools,omitempty"`
	// Limits override the top-level agent's limits for this mission: a
	// non-zero limit replaces the agent spec's (Limits.Override); for a
	// compiled mission they bound each execution and the whole mission.
	Limits Limits `msgpack:"limits,omitempty"`
	// Deadline is when the caller stops caring; zero means none. A worker
	// that picks up a mission past its deadline fails it with "deadline".
	Deadline time.Time `msgpack:"deadline,omitempty"`
	// Priority is PriorityHigh, PriorityNormal (when empty) or PriorityLow.
	Priority string `msgpack:"priority,omitempty"`
	// CreatedAt is when the mission was built.
	CreatedAt time.Time `msgpack:"created_at,omitempty"`
	// Labels are free-form caller annotations (tenant, request id, ...).
	Labels map[string]string `msgpack:"labels,omitempty"`
	// Approval marks tool calls that wait for a person's approval before
	// they run (docs/approvals.md); it adds to the worker's and the tool
	// services' rules.
	Approval *ApprovalPolicy `msgpack:"approval,omitempty"`
	// Script, when set, holds the replies of a scripted model, in turn
	// order: the mission's top-level agent runs on them instead of a
	// configured model (ModelScripted), on any worker. A tool author runs
	// a mission against their tools this way without any model.
	Script []string `msgpack:"script,omitempty"`
	// ScriptByPrompt, when set, holds scripted replies chosen by the
	// request: a model request is answered by the first entry whose
	// Prompt occurs in the requesting agent's mission text, with that
	// entry's reply for the request's turn; a request no entry matches is
	// answered from Script. It scripts the agents a mission starts while
	// it runs (sub-agents, spawned agents, llm-query), each by its own
	// mission text.
	ScriptByPrompt []ScriptEntry `msgpack:"script_by_prompt,omitempty"`
}

// ScriptEntry is the scripted replies for the agents whose mission text
// (the expanded prompt: a sub-agent's prompt, a spawned agent's prompt
// argument, an llm-query's prompt and input) contains Prompt.
type ScriptEntry struct {
	// Prompt is the text to look for in the requesting agent's mission.
	Prompt string `msgpack:"prompt"`
	// Replies are that agent's replies, in turn order.
	Replies []string `msgpack:"replies"`
}

// ModelScripted is the model name of a mission that carries a Script.
const ModelScripted = "scripted"

// Bounds of a mission's script.
const (
	// MaxScriptReplies bounds the replies of a mission's script: Script
	// and every ScriptByPrompt entry's together.
	MaxScriptReplies = 100
)

// Scripted reports whether m runs on a script (Script or ScriptByPrompt).
func (m *Mission) Scripted() bool { return len(m.Script) > 0 || len(m.ScriptByPrompt) > 0 }

// ScriptReply returns the scripted reply to a model request of turn turn
// (from 1) made by an agent whose mission text is mission: from the first
// ScriptByPrompt entry whose Prompt occurs in mission, else from Script.
// The error says which script has no reply for the turn, or that none
// applies.
func (m *Mission) ScriptReply(mission string, turn int) (string, error) {
	for i, e := range m.ScriptByPrompt {
		if !strings.Contains(mission, e.Prompt) {
			continue
		}
		if turn < 1 || turn > len(e.Replies) {
			return "", fmt.Errorf("script_by_prompt[%d] (prompt %q): no reply for turn %d (it has %d)", i, e.Prompt, turn, len(e.Replies))
		}
		return e.Replies[turn-1], nil
	}
	if len(m.Script) == 0 {
		return "", fmt.Errorf("no script_by_prompt entry's prompt occurs in the mission %q, and the mission has no script", cutText(mission, 80))
	}
	if turn < 1 || turn > len(m.Script) {
		return "", fmt.Errorf("no reply for turn %d (the script has %d)", turn, len(m.Script))
	}
	return m.Script[turn-1], nil
}

// cutText cuts s to about n bytes (on a character boundary) for an error
// message.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// AgentSpec is an agent as data: everything a worker needs to rebuild it.
// Zero limits mean the defaults (DefaultLimits).
type AgentSpec struct {
	// Name and Description identify the agent (and describe it when it is
	// a sub-agent tool).
	Name        string `msgpack:"name,omitempty"`
	Description string `msgpack:"description,omitempty"`
	// Prompt is the prompt template ({{name}} placeholders).
	Prompt string `msgpack:"prompt"`
	// Signature is the output contract in signature syntax.
	Signature string `msgpack:"signature,omitempty"`
	// Output is ModeLisp ("ptc_lisp", the default when empty) or
	// ModeText.
	Output string `msgpack:"output,omitempty"`
	// Tools lists the tool names this agent may call (remote tools and
	// SubAgents keys).
	Tools []string `msgpack:"tools,omitempty"`
	// ToolCatalog lists tools shown to the model but not callable.
	ToolCatalog []ToolSchema `msgpack:"tool_catalog,omitempty"`
	// SubAgents are agents callable as tools, by tool name.
	SubAgents map[string]*AgentSpec `msgpack:"sub_agents,omitempty"`
	// SpawnAgent, when set, gives the agent the spawn_agent tool: its
	// model starts child agents at run time with tool sets it chooses
	// from a catalogue.
	SpawnAgent *SpawnSpec `msgpack:"spawn_agent,omitempty"`

	// Limits bound this agent's run (each sub-agent has its own); they
	// travel as fields of the agent spec itself.
	Limits

	// LLM names the model to use; LLMOpts are passed to it.
	LLM     string         `msgpack:"llm,omitempty"`
	LLMOpts map[string]any `msgpack:"llm_opts,omitempty"`
	// SystemPrefix and SystemSuffix wrap the generated system prompt.
	SystemPrefix string `msgpack:"system_prefix,omitempty"`
	SystemSuffix string `msgpack:"system_suffix,omitempty"`
	// LanguageSpec replaces the language reference (text, or a preset name
	// such as "minimal"); OutputFormat replaces the output instructions;
	// SystemOverride replaces the whole system prompt.
	LanguageSpec   string `msgpack:"language_spec,omitempty"`
	OutputFormat   string `msgpack:"output_format,omitempty"`
	SystemOverride string `msgpack:"system_override,omitempty"`
	// LLMRetry is the llm_retry policy; nil means the default (3 attempts,
	// exponential backoff).
	LLMRetry *RetryPolicy `msgpack:"llm_retry,omitempty"`
	// ValidationMode is one of the Validation* constants ("" = enabled).
	ValidationMode string `msgpack:"validation_mode,omitempty"`
	// MemoryStrategy is MemoryStrict ("" = strict) or MemoryRollback.
	MemoryStrategy string `msgpack:"memory_strategy,omitempty"`
	// Compression sends the model a compressed history: the mission, a
	// summary of each earlier turn, memory, and the last turn in full
	// (PTC-Lisp mode only).
	Compression bool `msgpack:"compression,omitempty"`
	// LLMQuery lets the agent's programs ask its model one-shot questions
	// with (llm-query {:prompt ... :signature ... :input ...}).
	LLMQuery bool `msgpack:"llm_query,omitempty"`
	// Plan lists the steps of the mission, in order; step i (from 1) has
	// the id "i". Programs mark steps done with (step-done "id"
	// "summary"); the model sees the plan's state every turn and the
	// fleet reports it in "plan" events.
	Plan []string `msgpack:"plan,omitempty"`
}

// PlanStep is one step of an agent's plan and its state, as "plan"
// events report it.
type PlanStep struct {
	// ID is the step's number in the plan, from "1".
	ID string `msgpack:"id"`
	// Description is the plan's entry.
	Description string `msgpack:"description"`
	// Done is set once a program marked the step done; Summary is what it
	// said.
	Done    bool   `msgpack:"done,omitempty"`
	Summary string `msgpack:"summary,omitempty"`
}

// Bounds of an agent's plan.
const (
	// MaxPlanSteps bounds the steps of a plan.
	MaxPlanSteps = 100
	// MaxPlanText bounds a plan step's description and a step-done
	// summary, in bytes.
	MaxPlanText = 1000
)

// RetryPolicy is an agent's llm_retry as data: how model calls that failed
// with an infrastructure error are retried. Zero fields take the defaults.
type RetryPolicy struct {
	MaxAttempts int `msgpack:"max_attempts,omitempty"`
	// Backoff is "exponential" (default), "linear" or "constant".
	Backoff   string        `msgpack:"backoff,omitempty"`
	BaseDelay time.Duration `msgpack:"base_delay,omitempty"`
	MaxDelay  time.Duration `msgpack:"max_delay,omitempty"`
	// Retryable restricts retries to these error classes (rate_limit,
	// overloaded, server_error, timeout, connection, conflict); empty means
	// all of them.
	Retryable []string `msgpack:"retryable,omitempty"`
}

// SpawnToolName is the tool name of an agent's SpawnAgent.
const SpawnToolName = "spawn_agent"

// SpawnSpec is an agent's spawn_agent tool as data (pkg/agent's
// SpawnTool): a catalogue of named tool sets, of which the model picks
// the sets each child it spawns may call.
type SpawnSpec struct {
	// ToolSets maps a set's name to the remote tool names a child given
	// the set may call; the agent itself cannot call them.
	ToolSets map[string][]string `msgpack:"tool_sets"`
	// Description replaces the tool's description shown to the model.
	Description string `msgpack:"description,omitempty"`
	// Limits bound each spawned child (zero: the defaults); the mission's
	// turn budget, deadline and max_depth bound them all.
	Limits
}

// ToolSchema describes a tool: its name, signature and description.
type ToolSchema struct {
	Name        string `msgpack:"name"`
	Signature   string `msgpack:"signature,omitempty"`
	Description string `msgpack:"description,omitempty"`
}

// CompiledSpec is a compiled PTC-Lisp program run once per input with no LLM.
type CompiledSpec struct {
	// Program is the PTC-Lisp source.
	Program string `msgpack:"program"`
	// Signature is the program's contract.
	Signature string `msgpack:"signature,omitempty"`
	// Inputs are the contexts to run the program on, in order.
	Inputs []map[string]any `msgpack:"inputs,omitempty"`
}

// NewMissionID returns a fresh ULID string. It is safe for concurrent use.
func NewMissionID() string { return ulid.Make().String() }

// ValidMissionID reports whether id is a canonical ULID string.
func ValidMissionID(id string) bool {
	u, err := ulid.ParseStrict(id)
	return err == nil && u.String() == id
}

// Validate checks the invariants a Mission must hold; the error wraps
// ErrInvalid and names the field.
func (m *Mission) Validate() error {
	if m == nil {
		return invalidf("mission is nil")
	}
	if m.Version < 0 || m.Version > MissionVersion {
		return invalidf("mission.v: version %d not supported (max %d)", m.Version, MissionVersion)
	}
	if !ValidMissionID(m.ID) {
		return invalidf("mission.id: %q is not a ULID", m.ID)
	}
	switch m.Kind {
	case KindAgent:
		if m.Agent == nil {
			return invalidf("mission.agent: required for kind %q", KindAgent)
		}
		if m.Compiled != nil {
			return invalidf("mission.compiled: not allowed for kind %q", KindAgent)
		}
		if err := m.Agent.validate("mission.agent", 0); err != nil {
			return err
		}
	case KindCompiled:
		if m.Compiled == nil {
			return invalidf("mission.compiled: required for kind %q", KindCompiled)
		}
		if m.Agent != nil {
			return invalidf("mission.agent: not allowed for kind %q", KindCompiled)
		}
		if m.Compiled.Program == "" {
			return invalidf("mission.compiled.program: empty")
		}
	default:
		return invalidf("mission.kind: %q is not %q or %q", m.Kind, KindAgent, KindCompiled)
	}
	if err := m.Limits.Validate(); err != nil {
		return invalidf("mission.limits.%v", err)
	}
	if m.ContextRef != "" && len(m.Context) > 0 {
		return invalidf("mission.context_ref: set together with an inline context")
	}
	if (m.ContextRef == "") != (m.ContextDigest == "") {
		return invalidf("mission.context_digest: set with context_ref, and only with it")
	}
	if err := validNames("mission.tools", m.Tools); err != nil {
		return err
	}
	if names := m.UnallowedTools(); len(names) > 0 {
		return invalidf("mission.tools: the agent names tools the mission does not allow: %s", strings.Join(names, ", "))
	}
	if err := m.Approval.Validate("mission.approval"); err != nil {
		return err
	}
	if m.Priority != "" && !ValidPriority(m.Priority) {
		return invalidf("mission.priority: %q is not one of %v", m.Priority, Priorities())
	}
	if m.Scripted() {
		field := "mission.script"
		if len(m.Script) == 0 {
			field = "mission.script_by_prompt"
		}
		n := len(m.Script)
		for _, e := range m.ScriptByPrompt {
			n += len(e.Replies)
		}
		switch {
		case m.Kind != KindAgent:
			return invalidf("%s: only an agent mission runs on a script", field)
		case n > MaxScriptReplies:
			return invalidf("%s: %d replies, at most %d", field, n, MaxScriptReplies)
		case m.Model != "" && m.Model != ModelScripted:
			return invalidf("%s: set together with model %q", field, m.Model)
		}
		for i, r := range m.Script {
			if strings.TrimSpace(r) == "" {
				return invalidf("mission.script[%d]: empty", i)
			}
		}
		for i, e := range m.ScriptByPrompt {
			path := fmt.Sprintf("mission.script_by_prompt[%d]", i)
			if strings.TrimSpace(e.Prompt) == "" {
				return invalidf("%s.prompt: empty", path)
			}
			if len(e.Replies) == 0 {
				return invalidf("%s.replies: empty", path)
			}
			for j, r := range e.Replies {
				if strings.TrimSpace(r) == "" {
					return invalidf("%s.replies[%d]: empty", path, j)
				}
			}
		}
	}
	return nil
}

// Validate checks an agent spec and its sub-agents; the error wraps
// ErrInvalid and names the field ("agent.sub_agents[\"x\"].max_turns").
func (a *AgentSpec) Validate() error { return a.validate("agent", 0) }

func (a *AgentSpec) validate(path string, depth int) error {
	if a == nil {
		return invalidf("%s: nil", path)
	}
	if depth > MaxSpecDepth {
		return invalidf("%s: sub-agents nested deeper than %d", path, MaxSpecDepth)
	}
	if a.Prompt == "" {
		return invalidf("%s.prompt: empty", path)
	}
	switch a.Output {
	case "", ModeLisp, ModeText:
	default:
		return invalidf("%s.output: %q is not %q or %q", path, a.Output, ModeLisp, ModeText)
	}
	if a.Compression && a.Output == ModeText {
		return invalidf("%s.compression: compression renders PTC-Lisp turns; output %q keeps its tool-call conversation", path, ModeText)
	}
	switch a.ValidationMode {
	case "", ValidationEnabled, ValidationWarnOnly, ValidationDisabled, ValidationStrict:
	default:
		return invalidf("%s.validation_mode: %q is not one of enabled, warn_only, disabled, strict", path, a.ValidationMode)
	}
	switch a.MemoryStrategy {
	case "", MemoryStrict, MemoryRollback:
	default:
		return invalidf("%s.memory_strategy: %q is not %q or %q", path, a.MemoryStrategy, MemoryStrict, MemoryRollback)
	}
	if err := ValidPlan(a.Plan); err != nil {
		return invalidf("%s.%s", path, err.Error())
	}
	if err := validNames(path+".tools", a.Tools); err != nil {
		return err
	}
	for i, t := range a.ToolCatalog {
		if !ValidName(t.Name) {
			return invalidf("%s.tool_catalog[%d].name: %q is not a valid tool name", path, i, t.Name)
		}
	}
	if err := a.Limits.Validate(); err != nil {
		return invalidf("%s.%v", path, err)
	}
	if r := a.LLMRetry; r != nil {
		switch r.Backoff {
		case "", "exponential", "linear", "constant":
		default:
			return invalidf("%s.llm_retry.backoff: %q is not exponential, linear or constant", path, r.Backoff)
		}
		if r.MaxAttempts < 0 || r.BaseDelay < 0 || r.MaxDelay < 0 {
			return invalidf("%s.llm_retry: negative max_attempts, base_delay or max_delay", path)
		}
	}
	if sp := a.SpawnAgent; sp != nil {
		if err := sp.validate(path+".spawn_agent", a); err != nil {
			return err
		}
	}
	for name, sub := range a.SubAgents {
		p := fmt.Sprintf("%s.sub_agents[%q]", path, name)
		if !ValidName(name) || isReservedTool(name) {
			return invalidf("%s: %q is not a valid tool name", p, name)
		}
		if err := sub.validate(p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// validate checks a spawn_agent spec of agent a: at least one set, set
// names a signature string can quote, each set some valid tool names, the
// tool name spawn_agent not taken by a's tools or sub-agents.
func (sp *SpawnSpec) validate(path string, a *AgentSpec) error {
	if slices.Contains(a.Tools, SpawnToolName) || a.SubAgents[SpawnToolName] != nil {
		return invalidf("%s: the agent already has a tool named %s", path, SpawnToolName)
	}
	if len(sp.ToolSets) == 0 {
		return invalidf("%s.tool_sets: empty (spawn_agent needs at least one tool set)", path)
	}
	for _, name := range slices.Sorted(maps.Keys(sp.ToolSets)) {
		p := fmt.Sprintf("%s.tool_sets[%q]", path, name)
		if name == "" || strings.ContainsAny(name, "\n\"\\") {
			return invalidf("%s: %q is not a valid tool set name", p, name)
		}
		if len(sp.ToolSets[name]) == 0 {
			return invalidf("%s: empty", p)
		}
		if err := validNames(p, sp.ToolSets[name]); err != nil {
			return err
		}
	}
	if err := sp.Limits.Validate(); err != nil {
		return invalidf("%s.%v", path, err)
	}
	return nil
}

func validNames(path string, names []string) error {
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if !ValidName(n) || isReservedTool(n) {
			return invalidf("%s[%d]: %q is not a valid tool name", path, i, n)
		}
		if seen[n] {
			return invalidf("%s[%d]: %q listed twice", path, i, n)
		}
		seen[n] = true
	}
	return nil
}

// UnallowedTools returns, sorted, the remote tools of the mission's agent
// (RemoteTools) that the mission's Tools do not list; such a mission is
// invalid.
func (m *Mission) UnallowedTools() []string {
	if m.Agent == nil {
		return nil
	}
	var out []string
	if a := m.Agent; len(a.SubAgents) == 0 && (a.SpawnAgent == nil || len(a.SpawnAgent.ToolSets) == 0) {
		// the agent's own tools are all its remote tools: read in
		// place, with no list made of them (a mission is checked this
		// way several times on its way)
		for i, n := range a.Tools {
			if !slices.Contains(m.Tools, n) && !slices.Contains(a.Tools[:i], n) {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, n := range m.Agent.RemoteTools() {
		if !slices.Contains(m.Tools, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// RemoteTools lists, once each, the tool names the agent and its
// sub-agents call that are none of their sub-agents: the remote tools a
// mission must allow. The agent's own come first, then those of its
// spawn_agent tool sets (by set name), then each sub-agent's by name.
func (a *AgentSpec) RemoteTools() []string { return a.remoteTools(nil, 0) }

func (a *AgentSpec) remoteTools(acc []string, depth int) []string {
	if a == nil || depth > MaxSpecDepth {
		return acc
	}
	for _, n := range a.Tools {
		if _, sub := a.SubAgents[n]; !sub && !slices.Contains(acc, n) {
			acc = append(acc, n)
		}
	}
	// (a range over slices.Sorted(maps.Keys(m)) allocates even for an
	// empty m: the spec of most missions has no sub-agent)
	if sp := a.SpawnAgent; sp != nil && len(sp.ToolSets) > 0 {
		for _, set := range slices.Sorted(maps.Keys(sp.ToolSets)) {
			for _, n := range sp.ToolSets[set] {
				if !slices.Contains(acc, n) {
					acc = append(acc, n)
				}
			}
		}
	}
	if len(a.SubAgents) == 0 {
		return acc
	}
	for _, name := range slices.Sorted(maps.Keys(a.SubAgents)) {
		acc = a.SubAgents[name].remoteTools(acc, depth+1)
	}
	return acc
}

func isReservedTool(n string) bool { return n == "return" || n == "fail" }

// MarshalMission encodes a mission, setting its Version when zero. It does
// not validate.
func MarshalMission(m *Mission) ([]byte, error) {
	if m.Version == 0 {
		cp := *m
		cp.Version = MissionVersion
		m = &cp
	}
	return Marshal(m)
}

// UnmarshalMission checks bounds (CheckBounds), decodes and validates a
// mission.
func UnmarshalMission(data []byte) (*Mission, error) {
	var m Mission
	if err := Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// ValidPlan checks an agent's plan: at most MaxPlanSteps steps, each a
// non-empty text of at most MaxPlanText bytes. The error names the step
// ("plan[2]: empty").
func ValidPlan(plan []string) error {
	if len(plan) > MaxPlanSteps {
		return fmt.Errorf("plan: %d steps, at most %d", len(plan), MaxPlanSteps)
	}
	for i, p := range plan {
		switch {
		case strings.TrimSpace(p) == "":
			return fmt.Errorf("plan[%d]: empty", i)
		case len(p) > MaxPlanText:
			return fmt.Errorf("plan[%d]: %d bytes, at most %d", i, len(p), MaxPlanText)
		}
	}
	return nil
}
