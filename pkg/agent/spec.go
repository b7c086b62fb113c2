package agent

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// FloatPrecision is the number of decimals floats in a returned value are
// rounded to.
const FloatPrecision = 2

// unlimitedTimeout stands for a negative (unlimited) timeout.
const unlimitedTimeout = messages.UnlimitedTimeout

// Output modes of a Spec.
const (
	OutputLisp = messages.ModeLisp // PTC-Lisp programs (the default)
	OutputText = messages.ModeText // plain text / JSON answers, native tool calling (see textmode.go)
)

// Limits bound an agent's run: the wire type messages.Limits, the one
// representation of the limits from mission file to interpreter.
type Limits = messages.Limits

// PromptLimit bounds the result previews fed back to the model: List items
// per collection and String characters per string (0: the defaults 5 and
// 1000).
type PromptLimit = messages.PromptLimit

// Spec is an agent as data: the static definition, separate from the
// runtime options of a run. Zero fields take the defaults listed on each
// field. New validates a Spec; a Spec is a value and may be reused.
//
// Everything but the Go funcs and interfaces (tools, Model, the
// SystemPrompt functions, HistoryStrategy) round-trips through messages.AgentSpec (see ToWire / FromWire), where
// tools are referenced by name.
type Spec struct {
	// Name and Description identify the agent (in traces, observer events
	// and when used as a tool).
	Name        string
	Description string
	// Prompt is the mission template, with {{placeholders}} expanded from
	// the context. Required. Every placeholder must name an input of
	// Signature (when Signature is set).
	Prompt string
	// Signature is the contract: "(inputs) -> output" or just "output".
	// Empty means "() -> :any".
	Signature string
	// Tools are the tools programs may call, by name. "return" and "fail"
	// are reserved.
	Tools map[string]Tool
	// ToolCatalog lists tools shown to the model for planning only (not
	// callable).
	ToolCatalog []messages.ToolSchema
	// Limits bound the run (messages.Limits: max turns, timeouts, step
	// and memory budgets...). Every limit follows one convention: 0 means
	// the default (messages.DefaultLimits), a negative value means
	// unlimited. Embedded, so spec.MaxTurns reads a limit.
	Limits
	// LLMRetry retries infrastructure errors of the model (nil: 3 attempts,
	// exponential backoff from 1 s). Logic errors use turns, not retries.
	LLMRetry *llm.RetryPolicy
	// LLM names the model in the run's registry; it overrides the model
	// the agent would inherit or be bound to.
	LLM string
	// Model is a direct model override (takes precedence over LLM); it
	// does not serialize.
	Model llm.Model
	// LLMOpts are passed to the model with every request (temperature...).
	LLMOpts map[string]any
	// SystemPrompt customizes the system prompt.
	SystemPrompt SystemPrompt
	// Validation is the signature validation mode (default Enabled).
	Validation signature.Mode
	// Output is OutputLisp (default, "") or OutputText: the model answers
	// in text or JSON and calls tools natively (see docs/textmode.md).
	Output string
	// MemoryStrategy says what a failed turn does to memory: MemoryStrict
	// (default, "") or MemoryRollback (every failed turn leaves memory as
	// it was before the turn; memory past memory_limit is a turn error,
	// not the end of the run).
	MemoryStrategy string
	// Compression renders what the model is sent of the earlier turns
	// with HistoryStrategy instead of resending every program and its
	// feedback (docs/agent.md, "Compression"); the trace keeps the turns
	// as they were. PTC-Lisp mode only.
	Compression bool
	// HistoryStrategy renders a compressed history (nil: CoalescedHistory).
	// It needs Compression; it does not serialize.
	HistoryStrategy HistoryStrategy
	// LLMQuery lets programs ask the agent's model one-shot questions
	// with (llm-query {:prompt ... :signature ... :input ...}) (default
	// off; see services.go).
	LLMQuery bool
	// Plan lists the mission's steps, in order (step i, from 1, has the id
	// "i"): programs mark them done with (step-done "id" "summary"), the
	// model sees the plan's state every turn and observers get EventPlan.
	// At most messages.MaxPlanSteps steps of messages.MaxPlanText bytes.
	Plan []string
}

// Memory strategies of a Spec (messages.MemoryStrict, messages.MemoryRollback).
const (
	MemoryStrict   = messages.MemoryStrict
	MemoryRollback = messages.MemoryRollback
)

// SystemPrompt customizes the generated system prompt. With every field
// empty the default prompt is used. Assembly order:
// Prefix, core instructions, language reference, error recovery, output
// format, Suffix; then Transform is applied. Override replaces everything.
type SystemPrompt struct {
	// Prefix is prepended before all generated content.
	Prefix string
	// Suffix is appended after all generated content.
	Suffix string
	// LanguageSpec replaces the language reference: a string used as is,
	// or a preset name (see LanguagePresets).
	LanguageSpec string
	// LanguageSpecFunc, when set, computes the language reference per turn
	// (it makes the system prompt vary across turns, defeating provider
	// caching).
	LanguageSpecFunc func(PromptContext) string
	// OutputFormat replaces the output format instructions.
	OutputFormat string
	// Transform, when set, receives the assembled prompt and returns the
	// one to use.
	Transform func(string) string
	// Override, when set, is the whole system prompt (the caller then owns
	// output format and error recovery instructions).
	Override string
}

// PromptContext is passed to SystemPrompt.LanguageSpecFunc.
type PromptContext struct {
	Turn     int
	Model    string
	Memory   []string // memory names (values are never exposed)
	Messages []llm.Message
}

// Agent is a validated Spec, ready to run. It is immutable and safe for
// concurrent use: any number of runs may share it.
type Agent struct {
	// agentDef is what depends only on the spec: shared by the agents
	// Rebind makes from this one, never written after New
	*agentDef
	// tools are the agent's tools, bound; specTools the same as given
	// (Spec().Tools), nil when RebindEach bound them (each bound tool
	// holds its Tool as given)
	tools     map[string]*boundTool
	specTools map[string]Tool
}

// agentDef is the part of an Agent that depends only on its spec.
type agentDef struct {
	// spec is the spec New was given, without its Tools (the agent's
	// specTools)
	spec Spec
	// lim is spec.Limits with the defaults filled in (unlimited limits
	// stay negative).
	lim Limits
	sig *signature.Signature
	// sigText is sig as written (its String), rendered once for the
	// Steps of every run
	sigText string
	// cacheKeyText is cacheKey's, made once
	cacheKeyText string
	tmpl         *Template
	toolKeys     []string
	// catalog is spec.ToolCatalog sorted by name, signatures in their
	// public form (parsed once, in New).
	catalog []messages.ToolSchema

	// sysPrompt caches the static system prompt (built on first use),
	// one copy for all agents whose prompt is the same.
	sysPrompt func() string

	// bodySize is the length of the last mission body built
	// (missionBody): the room the next one's builder starts with, since
	// the bodies of one spec differ only in their data. A hint, read and
	// written by concurrent runs without order.
	bodySize atomic.Int64
}

type boundTool struct {
	name string
	tool Tool
	decl *signature.Signature // the tool's signature, parsed; nil when it has none
	sig  *signature.Signature // the signature calls are validated with; nil: no validation
	// public is decl rendered for the model (publicSignature), made once
	// with decl by bindTools; "" when not made
	public string
}

// bindTool parses a tool's signature once; the error is the parser's.
func bindTool(name string, t Tool) (*boundTool, error) {
	if t.Signature == "" {
		return &boundTool{name: name, tool: t}, nil
	}
	s, err := signature.Parse(t.Signature)
	if err != nil {
		return nil, err
	}
	return boundWith(name, t, s), nil
}

// boundWith binds t under name with s, its parsed Signature.
func boundWith(name string, t Tool, s *signature.Signature) *boundTool {
	bt := &boundTool{name: name, tool: t, decl: s}
	if !t.skip {
		bt.sig = s
	}
	return bt
}

// publicSignature renders a tool's signature for the model (firewalled
// fields left out), or the signature of a tool that declares none.
func (bt *boundTool) publicSignature() string {
	if bt.decl == nil {
		return "(args :map) -> :any"
	}
	if bt.public != "" {
		return bt.public
	}
	return bt.decl.Public().String()
}

var reservedTools = []string{"return", "fail"}

// New validates spec, fills in defaults and returns the Agent. Errors are
// *Error of KindSpec naming the field: the prompt is required, placeholders
// must name signature inputs ("placeholders {{user}} not found in
// signature"), max_turns must be positive, "return"/"fail" are reserved,
// signatures must parse, strict mode needs a signature on every tool.
func New(spec Spec) (*Agent, error) {
	if strings.TrimSpace(spec.Prompt) == "" {
		return nil, specErr("prompt", "prompt is required", nil)
	}
	tmpl, err := ParseTemplate(spec.Prompt)
	if err != nil {
		return nil, specErr("prompt", err.Error(), err)
	}
	sig := &signature.Signature{Output: signature.Any}
	if spec.Signature != "" {
		sig, err = signature.Parse(spec.Signature)
		if err != nil {
			return nil, specErr("signature", err.Error(), err)
		}
		if err := sig.CheckPlaceholders(spec.Prompt); err != nil {
			return nil, specErr("prompt", err.Error(), err)
		}
	}
	switch spec.Output {
	case "", OutputLisp, OutputText:
	default:
		return nil, specErr("output", fmt.Sprintf("unknown output mode %q (want %q or %q)", spec.Output, OutputLisp, OutputText), nil)
	}
	switch spec.MemoryStrategy {
	case "", MemoryStrict, MemoryRollback:
	default:
		return nil, specErr("memory_strategy", fmt.Sprintf("unknown memory strategy %q (want %q or %q)", spec.MemoryStrategy, MemoryStrict, MemoryRollback), nil)
	}
	if spec.Compression && spec.Output == OutputText {
		return nil, specErr("compression", "compression renders PTC-Lisp turns; text mode keeps the provider's tool-call conversation", nil)
	}
	if spec.HistoryStrategy != nil && !spec.Compression {
		return nil, specErr("history_strategy", "a history strategy needs compression: true", nil)
	}
	if err := messages.ValidPlan(spec.Plan); err != nil {
		return nil, specErr("plan", err.Error(), err)
	}
	if spec.Output == OutputText {
		// the services are builtins of programs; text mode runs none
		switch {
		case len(spec.Plan) > 0:
			return nil, specErr("plan", "a plan is marked done by programs (step-done); text mode runs no program", nil)
		case spec.LLMQuery:
			return nil, specErr("llm_query", "llm-query is called by programs; text mode runs no program", nil)
		}
	}
	if spec.Validation > signature.Strict {
		return nil, specErr("validation", fmt.Sprintf("unknown validation mode %d", spec.Validation), nil)
	}
	if err := spec.Limits.Validate(); err != nil {
		return nil, specErr("limits", err.Error(), err)
	}
	if spec.LLMRetry != nil {
		if err := spec.LLMRetry.Validate(); err != nil {
			return nil, specErr("llm_retry", err.Error(), err)
		}
		// the agent's own copy, which its runs point to: the caller's
		// policy may change after New
		r := *spec.LLMRetry
		r.Retryable = slices.Clone(r.Retryable)
		spec.LLMRetry = &r
	}
	if p := spec.SystemPrompt.LanguageSpec; p != "" && !strings.ContainsAny(p, " \n") {
		if _, ok := languagePreset(p); !ok {
			return nil, specErr("system_prompt.language_spec", fmt.Sprintf("unknown language preset %q (known: %s)", p, strings.Join(LanguagePresets(), ", ")), nil)
		}
	}
	a := &Agent{agentDef: &agentDef{spec: spec, lim: spec.Limits.WithDefaults(), sig: sig, sigText: sig.String(), tmpl: tmpl}, specTools: spec.Tools}
	a.cacheKeyText = "ptc:" + a.Name()
	a.spec.Tools = nil
	if a.tools, err = bindTools(spec.Tools, spec.Validation, nil); err != nil {
		return nil, err
	}
	if len(a.tools) > 0 {
		a.toolKeys = sortedKeys(a.tools)
	}
	// Agents of distinct specs (a mission's own prompt, its own context)
	// mostly build the same system prompt: they share one copy of it, kept
	// while an agent holding its handle lives, so thousands of missions
	// waiting on their models do not each hold the same kilobytes.
	prompt := sync.OnceValue(func() unique.Handle[string] { return unique.Make(a.systemPrompt(PromptContext{Turn: 1})) })
	a.sysPrompt = func() string { return prompt().Value() }
	for i, ts := range spec.ToolCatalog {
		field := fmt.Sprintf("tool_catalog[%d]", i)
		if ts.Name == "" {
			return nil, specErr(field+".name", "tool name is required", nil)
		}
		if ts.Signature != "" {
			s, err := signature.Parse(ts.Signature)
			if err != nil {
				return nil, specErr(field+".signature", err.Error(), err)
			}
			ts.Signature = s.Public().String()
		}
		a.catalog = append(a.catalog, ts)
	}
	slices.SortFunc(a.catalog, func(x, y messages.ToolSchema) int { return strings.Compare(x.Name, y.Name) })
	if spec.Output == OutputText {
		if err := a.checkText(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// bindTools binds every tool of tools under its name, checking it as New
// does (errors are *Error of KindSpec naming "tools[name]"). A tool whose
// Signature is the one of the tool of the same name in prev reuses its
// parsed signature.
func bindTools(tools map[string]Tool, mode signature.Mode, prev map[string]*boundTool) (map[string]*boundTool, error) {
	out := make(map[string]*boundTool, len(tools))
	for name, t := range tools {
		bt, err := bindOne(name, t, mode, prev[name])
		if err != nil {
			return nil, err
		}
		out[name] = bt
	}
	return out, nil
}

// bindOne binds t under name, reusing the parsed signature of prev (the
// tool of that name an agent was built with, nil for none) when t's
// Signature is prev's.
func bindOne(name string, t Tool, mode signature.Mode, prev *boundTool) (*boundTool, error) {
	// the spec's field, named only in an error
	field := func() string { return "tools[" + name + "]" }
	if err := checkToolName(name); err != nil {
		return nil, specErr(field(), err.Error(), nil)
	}
	if t.initErr != nil {
		return nil, specErr(field()+".signature", t.initErr.Error(), t.initErr)
	}
	if t.fn == nil && t.sub == nil {
		return nil, specErr(field(), "tool has no function", nil)
	}
	var bt *boundTool
	if prev != nil && prev.decl != nil && prev.tool.Signature == t.Signature {
		bt = boundWith(name, t, prev.decl)
		bt.public = prev.public
	} else {
		var err error
		if bt, err = bindTool(name, t); err != nil {
			return nil, specErr(field()+".signature", err.Error(), err)
		}
		if bt.decl != nil {
			bt.public = bt.decl.Public().String()
		}
	}
	if bt.decl == nil && mode == signature.Strict {
		return nil, specErr(field(), "strict validation mode requires every tool to have a signature", nil)
	}
	return bt, nil
}

// Rebind returns a copy of a whose tools are tools, which must name the
// same tools as a's. What depends only on the spec (the parsed signature,
// template and tool catalog, the system prompt, built once for both) is
// shared rather than built again, so an agent built once serves many
// callers whose tools differ (such as one per mission, each with its own
// connection and context); a tool whose Signature is the one of a's tool
// of that name reuses its parsed form. a is unchanged. Errors are those
// New gives for such tools (*Error of KindSpec naming "tools[name]").
func (a *Agent) Rebind(tools map[string]Tool) (*Agent, error) {
	if len(tools) != len(a.tools) {
		return nil, specErr("tools", fmt.Sprintf("rebinding needs the agent's %d tools (%s), got %d",
			len(a.tools), strings.Join(a.toolKeys, ", "), len(tools)), nil)
	}
	for name := range tools {
		if _, ok := a.tools[name]; !ok {
			return nil, specErr("tools["+name+"]", fmt.Sprintf("tool %q is not one the agent was built with (%s)", name, strings.Join(a.toolKeys, ", ")), nil)
		}
	}
	bound, err := bindTools(tools, a.spec.Validation, a.tools)
	if err != nil {
		return nil, err
	}
	return &Agent{agentDef: a.agentDef, tools: bound, specTools: tools}, nil
}

// RebindEach is Rebind with the tools named by names, each given by bind:
// no map of the tools is made for the call (Spec builds one from the
// bound tools when asked). names must name the same tools as a's, each
// once.
func (a *Agent) RebindEach(names []string, bind func(name string) Tool) (*Agent, error) {
	if len(names) != len(a.tools) {
		return nil, specErr("tools", fmt.Sprintf("rebinding needs the agent's %d tools (%s), got %d",
			len(a.tools), strings.Join(a.toolKeys, ", "), len(names)), nil)
	}
	bound := make(map[string]*boundTool, len(names))
	for _, name := range names {
		prev, ok := a.tools[name]
		if !ok {
			return nil, specErr("tools["+name+"]", fmt.Sprintf("tool %q is not one the agent was built with (%s)", name, strings.Join(a.toolKeys, ", ")), nil)
		}
		if _, twice := bound[name]; twice {
			return nil, specErr("tools["+name+"]", fmt.Sprintf("tool %q is named twice", name), nil)
		}
		bt, err := bindOne(name, bind(name), a.spec.Validation, prev)
		if err != nil {
			return nil, err
		}
		bound[name] = bt
	}
	return &Agent{agentDef: a.agentDef, tools: bound}, nil
}

// Spec returns a copy of the agent's spec with defaults filled in
// (unlimited limits stay negative).
func (a *Agent) Spec() Spec {
	s := a.spec
	s.Tools = a.specTools
	if s.Tools == nil && len(a.tools) > 0 {
		// rebound by RebindEach: the tools as given are the bound ones'
		s.Tools = make(map[string]Tool, len(a.tools))
		for name, bt := range a.tools {
			s.Tools[name] = bt.tool
		}
	}
	s.Limits = a.lim
	return s
}

// Signature returns the agent's parsed signature.
func (a *Agent) Signature() *signature.Signature { return a.sig }

// Name returns the agent's name ("agent" when unnamed).
func (a *Agent) Name() string {
	if a.spec.Name != "" {
		return a.spec.Name
	}
	return "agent"
}

// The limits to enforce: the spec's value, its default when 0, and the
// largest useful value when negative (unlimited).
func (a *Agent) maxTurns() int             { return unlimitedAs(a.lim.MaxTurns, math.MaxInt) }
func (a *Agent) retryTurns() int           { return unlimitedAs(a.lim.RetryTurns, math.MaxInt) }
func (a *Agent) maxDepth() int             { return unlimitedAs(a.lim.MaxDepth, math.MaxInt) }
func (a *Agent) turnBudget() int           { return unlimitedAs(a.lim.TurnBudget, math.MaxInt) }
func (a *Agent) memoryLimit() int64        { return unlimitedAs(a.lim.MemoryLimit, math.MaxInt64) }
func (a *Agent) llmTimeout() time.Duration { return unlimitedAs(a.lim.LLMTimeout, unlimitedTimeout) }
func (a *Agent) missionTimeout() time.Duration {
	return unlimitedAs(a.lim.MissionTimeout, unlimitedTimeout)
}
func (a *Agent) programTimeout() time.Duration { return programTimeout(a.lim) }

// spendLimit is the run's budget of max_cost_usd and max_tokens, nil when
// neither is set (0 or negative: no bound).
func (a *Agent) spendLimit() *llm.Limit {
	if a.lim.MaxCostUSD <= 0 && a.lim.MaxTokens <= 0 {
		return nil
	}
	return llm.NewLimit("the mission's budget", max(a.lim.MaxCostUSD, 0), max(a.lim.MaxTokens, 0))
}
func (a *Agent) promptLimit() PromptLimit {
	return PromptLimit{List: unlimitedAs(a.lim.PromptLimit.List, math.MaxInt),
		String: unlimitedAs(a.lim.PromptLimit.String, math.MaxInt)}
}

// programTimeout is the time limit of one program run under l (defaults
// filled in or not).
func programTimeout(l Limits) time.Duration {
	t, ok := messages.LimitOr(l.ProgramTimeout, messages.DefaultProgramTimeout)
	if !ok {
		return unlimitedTimeout
	}
	return t
}

// missionMeter returns the meter of a run that is given none: what the
// agent tree holds from its tools (results decoded from wire bytes, the
// record of every call, across turns and sub-agents) is limited to the
// agent's program_memory.
func (a *Agent) missionMeter() *lisp.Meter {
	limit, ok := messages.LimitOr(a.lim.ProgramMemory, messages.DefaultProgramMemory)
	if !ok {
		limit = 0
	}
	return lisp.NewMeter(limit, "the mission's program_memory; raise limits.program_memory")
}

// programLimits returns o with the limits of one program run under l, by
// their wire names: the time limit, the step budget (l.MaxSteps, or 0: the
// interpreter's budget for the program timeout, never derived from what is
// left of a turn or the mission, which a caller may set as the time limit
// after), the memory held and the tool calls. The interpreter applies the
// other defaults. Agents and compiled programs run their programs under
// it.
func programLimits(o lisp.Options, l Limits) lisp.Options {
	o.Limits.ProgramTimeout = l.ProgramTimeout
	o.Limits.MaxSteps = l.MaxSteps
	if l.MaxSteps == 0 {
		o.Limits.MaxSteps = -1
		if t, ok := messages.LimitOr(l.ProgramTimeout, messages.DefaultProgramTimeout); ok {
			o.Limits.MaxSteps = lisp.StepBudget(t)
		}
	}
	o.Limits.ProgramMemory = l.ProgramMemory
	o.Limits.MaxToolCalls = l.MaxToolCalls
	return o
}

// singleTurn reports single-turn mode: max_turns 1
// and no tools; the program's value is the answer.
func (a *Agent) singleTurn() bool { return a.maxTurns() == 1 && len(a.tools) == 0 }

// unlimitedAs is v, or unlimited when v is negative.
func unlimitedAs[T ~int | ~int64](v, unlimited T) T {
	if v < 0 {
		return unlimited
	}
	return v
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// ToWire converts the spec to its wire form. Tools are referenced by name
// (the receiving worker resolves them); sub-agent tools (AsTool) travel as
// SubAgents with their own specs. Go funcs, Model, LLMRetry's funcs and the
// SystemPrompt funcs do not travel; the SystemPrompt strings and the
// LLMRetry policy's data do.
func (s Spec) ToWire() *messages.AgentSpec {
	w := &messages.AgentSpec{
		Name: s.Name, Description: s.Description, Prompt: s.Prompt, Signature: s.Signature,
		Output: s.Output, ToolCatalog: slices.Clone(s.ToolCatalog), Limits: s.Limits, LLM: s.LLM,
		LLMOpts: llm.CloneMap(s.LLMOpts), SystemPrefix: s.SystemPrompt.Prefix, SystemSuffix: s.SystemPrompt.Suffix,
		MemoryStrategy: s.MemoryStrategy, Compression: s.Compression, LLMQuery: s.LLMQuery, Plan: slices.Clone(s.Plan),
	}
	if s.Validation != signature.Enabled {
		w.ValidationMode = s.Validation.String()
	}
	w.LanguageSpec, w.OutputFormat, w.SystemOverride = s.SystemPrompt.LanguageSpec, s.SystemPrompt.OutputFormat, s.SystemPrompt.Override
	if r := s.LLMRetry; r != nil {
		w.LLMRetry = &messages.RetryPolicy{MaxAttempts: r.MaxAttempts, Backoff: string(r.Backoff), BaseDelay: r.BaseDelay, MaxDelay: r.MaxDelay}
		for _, c := range r.Retryable {
			w.LLMRetry.Retryable = append(w.LLMRetry.Retryable, string(c))
		}
	}
	for _, name := range sortedKeys(s.Tools) {
		t := s.Tools[name]
		if sp := t.spawn; sp != nil {
			w.SpawnAgent = &messages.SpawnSpec{ToolSets: maps.Clone(sp.sets), Description: sp.opts.Description, Limits: sp.opts.Limits}
			continue
		}
		if t.sub != nil {
			if w.SubAgents == nil {
				w.SubAgents = map[string]*messages.AgentSpec{}
			}
			cw := t.sub.agent.spec.ToWire()
			if cw.LLM == "" {
				cw.LLM = t.sub.boundName
			}
			w.SubAgents[name] = cw
			continue
		}
		w.Tools = append(w.Tools, name)
	}
	return w
}

// FromWire rebuilds a Spec from its wire form. resolve maps each tool name
// of w.Tools to a Tool (a local func or a remote-tool client); a name it
// does not know is an error naming it. Sub-agents are rebuilt recursively
// (New validates them) and wrapped with AsTool.
func FromWire(w *messages.AgentSpec, resolve func(name string) (Tool, bool)) (Spec, error) {
	return fromWire(w, resolve, 0)
}

func fromWire(w *messages.AgentSpec, resolve func(name string) (Tool, bool), depth int) (Spec, error) {
	if w == nil {
		return Spec{}, specErr("agent", "agent spec is nil", nil)
	}
	if depth > messages.MaxSpecDepth {
		return Spec{}, specErr("sub_agents", "sub-agent specs nested too deeply", nil)
	}
	mode, err := signature.ParseMode(w.ValidationMode)
	if err != nil {
		return Spec{}, specErr("validation_mode", err.Error(), err)
	}
	s := Spec{
		Name: w.Name, Description: w.Description, Prompt: w.Prompt, Signature: w.Signature,
		Output: w.Output, ToolCatalog: slices.Clone(w.ToolCatalog), Limits: w.Limits,
		LLM: w.LLM, LLMOpts: llm.CloneMap(w.LLMOpts),
		SystemPrompt: SystemPrompt{Prefix: w.SystemPrefix, Suffix: w.SystemSuffix, LanguageSpec: w.LanguageSpec,
			OutputFormat: w.OutputFormat, Override: w.SystemOverride},
		Validation: mode, MemoryStrategy: w.MemoryStrategy, Compression: w.Compression, LLMQuery: w.LLMQuery, Plan: slices.Clone(w.Plan),
	}
	if r := w.LLMRetry; r != nil {
		s.LLMRetry = &llm.RetryPolicy{MaxAttempts: r.MaxAttempts, Backoff: llm.Backoff(r.Backoff), BaseDelay: r.BaseDelay, MaxDelay: r.MaxDelay}
		for _, c := range r.Retryable {
			s.LLMRetry.Retryable = append(s.LLMRetry.Retryable, llm.ErrorClass(c))
		}
	}
	if len(w.Tools)+len(w.SubAgents) > 0 {
		s.Tools = map[string]Tool{}
	}
	for _, name := range w.Tools {
		if resolve == nil {
			return Spec{}, specErr("tools["+name+"]", "no tool resolver given", nil)
		}
		t, ok := resolve(name)
		if !ok {
			return Spec{}, specErr("tools["+name+"]", fmt.Sprintf("unknown tool %q", name), nil)
		}
		s.Tools[name] = t
	}
	if w.SpawnAgent != nil {
		if _, taken := s.Tools[SpawnToolName]; taken {
			return Spec{}, specErr("spawn_agent", "the agent already has a tool named "+SpawnToolName, nil)
		}
		t, err := spawnFromWire(w.SpawnAgent, resolve)
		if err != nil {
			return Spec{}, err
		}
		if s.Tools == nil {
			s.Tools = map[string]Tool{}
		}
		s.Tools[SpawnToolName] = t
	}
	for _, name := range sortedKeys(w.SubAgents) {
		cs, err := fromWire(w.SubAgents[name], resolve, depth+1)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Field = "sub_agents[" + name + "]." + e.Field
			}
			return Spec{}, err
		}
		child, err := New(cs)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Field = "sub_agents[" + name + "]." + e.Field
			}
			return Spec{}, err
		}
		s.Tools[name] = child.AsTool(ToolOptions{})
	}
	return s, nil
}

// checkToolName checks a tool's name: not reserved (return, fail), not
// empty, no whitespace, brackets, quotes or "/".
func checkToolName(name string) error {
	if slices.Contains(reservedTools, name) {
		return fmt.Errorf("tool name %q is reserved", name)
	}
	if name == "" || strings.ContainsAny(name, " \t\n()[]{}\"/") {
		return fmt.Errorf("invalid tool name %q", name)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
