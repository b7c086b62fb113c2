// Package agentrun is the fleet.Runner that runs agent missions: it rebuilds
// the mission's agent from its wire spec, binds the mission's remote tools
// (NATS request/reply through the worker's Toolbox), resolves the model from
// the worker's registry, runs the SubAgent loop and reports progress events.
// Missions of kind messages.KindCompiled ("apply at scale") run a compiled
// PTC-Lisp program over a list of inputs with no LLM at all (see
// runCompiled for the result layout).
//
// It is the one place where pkg/fleet meets pkg/agent; the fleet package
// itself knows nothing of agents, so that tool services and dispatch clients
// importing it do not link the agent loop.
package agentrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Config configures a Runner.
type Config struct {
	// Models are the models missions may name (worker configuration, e.g.
	// llmconfig.RegistryFromEnv). Required for agent missions.
	Models llm.Registry
	// DefaultModel is used when neither the mission nor its agent spec
	// names a model. Default "default".
	DefaultModel string
}

// Runner runs agent missions. It is safe for concurrent use.
type Runner struct {
	cfg Config
	// compiled keeps the programs of compiled missions once loaded
	compiled *compiledCache
	// agents keeps the agents of agent missions once built
	agents *agentCache
}

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = "default"
	}
	return &Runner{cfg: cfg, compiled: newCompiledCache(), agents: newAgentCache()}
}

var _ fleet.Runner = (*Runner)(nil)

// Run executes one mission. Every outcome of the agent (success or a
// failure such as max_turns_exceeded) is a Step; an error is returned only
// when the worker is shutting down (the mission is handed back).
func (r *Runner) Run(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
	// A run waits on its model under this frame: it keeps few words (the
	// set-up is prepare's, the end finish's), so that the stack of a
	// waiting run stays small.
	ar, step, err := r.prepare(ctx, m, &env)
	if ar == nil {
		return step, err
	}
	defer ar.end.cancel()
	step, runErr := ar.agent.Run(ar.runCtx, ar.opts)
	return ar.end.finish(step, runErr)
}

var _ fleet.AsyncRunner = (*Runner)(nil)

// Start runs m as Run does and calls done with Run's results. While its
// agent waits on a model it holds no goroutine but the model call's
// (agent.Agent.RunAsync): a worker with thousands of missions waiting on a
// slow model keeps those calls' shallow goroutines, not one run's deep
// goroutine per mission. done is called on the goroutine of the model call
// the run ended after, or on the caller's when it ended before its first.
func (r *Runner) Start(ctx context.Context, m *messages.Mission, env fleet.RunEnv, done func(*messages.Step, error)) {
	ar, step, err := r.prepare(ctx, m, &env)
	if ar == nil {
		done(step, err)
		return
	}
	// The run keeps its own copy of the options: while it waits on its
	// model, the callback holds the run's end alone, not ar.
	end := ar.end
	ar.agent.RunAsync(ar.runCtx, ar.opts, func(step *messages.Step, runErr error) {
		// as in Run: the result reads the mission context's cause before
		// the context is released
		step, err := end.finish(step, runErr)
		end.cancel()
		done(step, err)
	})
}

// agentRun is an agent mission ready to run (Runner.prepare).
type agentRun struct {
	agent  *agent.Agent
	opts   agent.RunOptions
	runCtx context.Context // end.ctx, with the run's telemetry
	end    runEnd
}

// runEnd is what an agent mission's result is made with once its run
// ends (finish), and the release of its context: all a run waiting on its
// model keeps of agentRun.
type runEnd struct {
	ctx     context.Context // the mission's context, its deadline included
	cancel  context.CancelFunc
	journal *fleet.Journal
}

// prepare builds the agent of mission m and what it runs with; a nil
// agentRun comes with the mission's result (a compiled mission's, or the
// failed Step of a mission that cannot run).
func (r *Runner) prepare(ctx context.Context, m *messages.Mission, env *fleet.RunEnv) (*agentRun, *messages.Step, error) {
	if env.Memory > 0 {
		// what the mission's programs hold from tools, across its turns
		// and sub-agents, within what the worker reserved for it
		ctx, _ = lisp.WithNewMeter(ctx, env.Memory, env.MemoryRaise)
	}
	switch m.Kind {
	case messages.KindAgent:
	case messages.KindCompiled:
		step, err := r.runCompiled(ctx, m, env)
		return nil, step, err
	default:
		return nil, failStep("unsupported_kind", fmt.Sprintf("mission kind %q is not supported by this worker", m.Kind)), nil
	}
	if names := m.UnallowedTools(); len(names) > 0 {
		return nil, failStep(fleet.ReasonInvalid, fmt.Sprintf("the agent names tools the mission does not allow: %s", strings.Join(names, ", "))), nil
	}
	// the run's telemetry, its observer and its turn tracker, which the
	// run keeps while it runs, are one allocation; the observer is
	// handed over by pointer, so it is not copied into a box of its own
	ro := &runObserver{}
	turns := &ro.turns
	a, err := buildAgent(ctx, m, env.Tools, turns, r.agents)
	if err != nil {
		return nil, failStep(agent.ReasonInvalidAgent, err.Error()), nil
	}
	model := m.Model
	if model == "" && m.Agent.LLM == "" {
		model = r.cfg.DefaultModel
	}
	models := r.cfg.Models
	if m.Scripted() {
		// The mission carries its model's replies: any worker runs it.
		models = maps.Clone(models)
		if models == nil {
			models = llm.Registry{}
		}
		models[messages.ModelScripted] = scriptedModel(m)
		model = messages.ModelScripted
	}
	if missing := missingModel(models, model, m.Agent); missing != "" {
		return nil, failStep(string(llm.KindNotFound), fmt.Sprintf("model %q is not configured on this worker (configured: %s); "+
			"a worker reads its models from %s<NAME>=provider:model in its environment when it starts, here %s%s",
			missing, modelList(models), llmconfig.EnvPrefix, llmconfig.EnvPrefix, strings.ToUpper(missing))), nil
	}
	cancel := func() {}
	if !m.Deadline.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, m.Deadline)
	}
	ro.tel = telemetry{metrics: env.Metrics, tracer: env.Tracer, subAgents: m.Agent.SubAgents}
	ro.obs = observer{events: env.Events, subAgents: m.Agent.SubAgents, turns: turns, tel: &ro.tel}
	ar := &agentRun{agent: a, runCtx: ro.tel.context(ctx), end: runEnd{ctx: ctx, cancel: cancel, journal: env.Journal},
		opts: agent.RunOptions{
			LLM:              model,
			Context:          m.Context,
			ContextSignature: m.ContextSignature,
			Observer:         &ro.obs,
		}}
	if inner := models[model]; model != "" && inner != nil && !namesModels(m.Agent) {
		// Every agent of the mission calls the mission's model (none
		// names one of its own, and sub-agents and llm-query take their
		// caller's): the run gets that model alone, wrapped, without a
		// copy of the registry it would keep while it waits on it.
		ar.opts.Model = missionModel(model, inner, env)
	} else {
		ar.opts.Registry = missionModels(models, env)
	}
	return ar, nil, nil
}

// namesModels reports whether an agent of spec a's tree names a model of
// its own (llm): its run looks that model up in the registry.
func namesModels(a *messages.AgentSpec) bool {
	var walk func(a *messages.AgentSpec, depth int) bool
	walk = func(a *messages.AgentSpec, depth int) bool {
		if a == nil {
			return false
		}
		if a.LLM != "" || depth > messages.MaxSpecDepth {
			return true
		}
		for _, s := range a.SubAgents {
			if walk(s, depth+1) {
				return true
			}
		}
		return false
	}
	return walk(a, 0)
}

// finish is the mission's result once its agent ran to step (nil when
// runErr says why not).
func (e runEnd) finish(step *messages.Step, runErr error) (*messages.Step, error) {
	if step != nil {
		if u := unreplayedUsage(e.journal); u != (messages.Usage{}) {
			step.Usage.Add(u)
			step.Replayed = &messages.Replayed{Unused: &u}
		}
	}
	if cause := context.Cause(e.ctx); cause != nil && errors.Is(cause, fleet.ErrWorkerShutdown) {
		return nil, fmt.Errorf("%w: %w", fleet.ErrRetryable, cause)
	}
	if step != nil && step.Fail != nil && errors.Is(runErr, fleet.ErrRetryable) {
		// A model call failed for good on the fleet's own store (a budget
		// that could not be read while a NATS node restarted), not on the
		// model: the mission is handed back, and its next attempt resumes
		// from the journal.
		return nil, runErr
	}
	if step == nil {
		step = failStep("internal_error", fmt.Sprint(runErr))
	}
	return step, nil
}

// missingModel returns the first model name the mission uses that the
// worker does not have, or "": the mission's (or default) model for the
// top-level agent, and each agent's own llm.
func missingModel(models llm.Registry, model string, a *messages.AgentSpec) string {
	if model != "" {
		if _, ok := models[model]; !ok {
			return model
		}
	}
	var walk func(a *messages.AgentSpec, depth int) string
	walk = func(a *messages.AgentSpec, depth int) string {
		if a == nil || depth > messages.MaxSpecDepth {
			return ""
		}
		if a.LLM != "" {
			if _, ok := models[a.LLM]; !ok {
				return a.LLM
			}
		}
		if len(a.SubAgents) == 0 {
			return "" // (sorting no keys allocates)
		}
		for _, name := range slices.Sorted(maps.Keys(a.SubAgents)) {
			if n := walk(a.SubAgents[name], depth+1); n != "" {
				return n
			}
		}
		return ""
	}
	if model != "" {
		// the mission's model overrides the top-level agent's llm
		if len(a.SubAgents) == 0 {
			return ""
		}
		for _, name := range slices.Sorted(maps.Keys(a.SubAgents)) {
			if n := walk(a.SubAgents[name], 1); n != "" {
				return n
			}
		}
		return ""
	}
	return walk(a, 0)
}

// scriptedModel is the model of a mission that carries a script: it
// answers a request of turn N of an agent with the Nth reply of the script
// for that agent's mission text (messages.Mission.ScriptReply). It reads
// only the mission, so it serves any number of concurrent requests, a
// parent's and its children's. Its replies cost nothing (zero prices), so
// a budget admits them.
func scriptedModel(m *messages.Mission) llm.Model {
	return llm.WithPrices(llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		reply, err := m.ScriptReply(req.Prompt, req.Turn)
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		return &llm.Response{Content: reply, Model: messages.ModelScripted}, nil
	}), llm.Prices{})
}

func modelList(reg llm.Registry) string {
	if len(reg) == 0 {
		return "none"
	}
	return strings.Join(reg.Names(), ", ")
}

// remoteTool binds a mission tool name to the worker's Toolbox. When the
// tool's schema is known (discovered through $SRV.INFO), the agent validates
// and coerces inputs against it; when the service cannot be found now the
// tool is still bound, so the model sees "tool unavailable" when it calls it
// and can carry on.
func remoteTool(ctx context.Context, box *fleet.Toolbox, name string, turns *turnTracker) agent.Tool {
	call := func(ctx context.Context, args map[string]any) (any, error) {
		// the reply is decoded once, into interpreter values (and the
		// trace keeps its bytes)
		return box.CallAs(turns.withTurn(ctx), name, args, decodeResult)
	}
	t, err := box.Get(ctx, name)
	if err != nil || t.Signature() == "" {
		tool := agent.Skip(call)
		if err == nil {
			tool = tool.WithDescription(t.Description())
		}
		return tool
	}
	return agent.FuncSig(t.Signature(), call).WithDescription(t.Description())
}

// decodeResult reads a tool's result once into interpreter values, a
// *lisp.WireResult, charging the mission's meter (which ctx carries) as
// the values are built: a large result sent out of band straight from the
// object store's stream, never holding its encoded bytes whole, and
// failing with memory_limit before it is read whole when it would take
// the mission past its program_memory.
func decodeResult(ctx context.Context, r *fleet.ToolResult) (any, error) {
	if r.Ref == nil {
		return lisp.DecodeWireResult(ctx, r.ContentType, r.Data)
	}
	rc, err := r.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return lisp.DecodeWireResultFrom(ctx, r.ContentType, rc, r.Ref.Size, r.Ref)
}

func failStep(reason, msg string) *messages.Step {
	return &messages.Step{Fail: &messages.Fail{Reason: reason, Message: msg}}
}

// runObserver is a run's observer and the telemetry it reports to, made
// together.
type runObserver struct {
	obs   observer
	tel   telemetry
	turns turnTracker
}

// observer turns agent events into fleet progress events. Remote tool calls
// are reported by the Toolbox itself; sub-agent tool calls are reported here.
type observer struct {
	events    fleet.Emitter
	subAgents map[string]*messages.AgentSpec
	turns     *turnTracker
	tel       *telemetry
}

func (o observer) Observe(_ context.Context, e agent.Event) {
	o.turns.observe(e)
	o.tel.observe(e)
	// ev stays on the stack: an event not reported (most of the agent's
	// events) costs no allocation, and one reported is copied into a
	// pooled one.
	ev := messages.Event{Turn: e.Turn, Time: e.Time, Duration: e.Duration}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if e.Depth > 1 {
		ev.Data = map[string]any{"agent": e.Agent, "depth": int64(e.Depth)}
	}
	switch e.Kind {
	case agent.EventTurnStart:
		ev.Kind = messages.EventTurnStarted
	case agent.EventLLMStart:
		// From turn 2 on, the request's last message is the feedback on the
		// previous turn: exactly what the model was told (already
		// firewalled and truncated for the model). Report it as that
		// turn's end, then the new request.
		if e.Turn > 1 && len(e.Messages) > 0 {
			if fb := e.Messages[len(e.Messages)-1].Text(); fb != "" {
				o.events.Emit(&messages.Event{Kind: messages.EventTurnFinished, Turn: e.Turn - 1, Time: ev.Time,
					Data: withData(ev.Data, "feedback", fb)})
			}
		}
		ev.Kind = messages.EventLLMRequest
	case agent.EventLLMStop:
		// The program is known as soon as the model answers: report it
		// before the tool calls it makes.
		code, ok := agent.ParseResponse(e.Response)
		if !ok {
			return
		}
		ev.Kind, ev.Program = messages.EventProgram, code
	case agent.EventEmit:
		// already firewalled by the agent; the emitter masks "_" keys too
		ev.Kind, ev.Result = messages.EventEmit, e.Result
	case agent.EventPlan:
		// Tool: the id of the step marked done, empty at the run's start
		ev.Kind, ev.Plan, ev.Tool = messages.EventPlan, e.Plan, e.Tool
	case agent.EventToolStart, agent.EventToolStop, agent.EventToolException:
		if _, sub := o.subAgents[e.Tool]; !sub || e.Depth > 1 {
			return
		}
		ev.Tool = e.Tool
		if e.Kind == agent.EventToolStart {
			ev.Kind, ev.Args = messages.EventToolCall, e.Args
		} else {
			ev.Kind, ev.Result = messages.EventToolResult, e.Result
			if e.Err != nil {
				ev.Error = e.Err.Error()
			}
		}
	default:
		return
	}
	// Emit keeps no event after it returns (fleet.Emitter): the one handed
	// to it comes back to the pool
	out := reportedEvents.Get().(*messages.Event)
	*out = ev
	o.events.Emit(out)
	*out = messages.Event{}
	reportedEvents.Put(out)
}

// reportedEvents holds the events an observer hands its emitter, so that
// reporting one takes no copy of it on the heap.
var reportedEvents = sync.Pool{New: func() any { return new(messages.Event) }}

// withData returns a copy of d with k set to v.
func withData(d map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(d)+1)
	for dk, dv := range d {
		out[dk] = dv
	}
	out[k] = v
	return out
}

// Compiled missions ("apply at scale", messages.KindCompiled).

// compiledBox is what a compiled mission's tools reach: the mission's
// Toolbox (*fleet.Toolbox).
type compiledBox interface {
	Get(ctx context.Context, name string) (fleet.Tool, error)
	CallAs(ctx context.Context, name string, args map[string]any, decode fleet.ResultDecoder) (any, error)
}

// compiledCall is the mission whose execution calls a compiled program's
// tools: its Toolbox and its turns. An execution's context carries it
// (compiledCallKey), so one loaded program serves every mission that runs
// it, each calling its own tools, with nothing bound per mission. It is
// that context itself, with its parent, made in one allocation.
type compiledCall struct {
	context.Context
	box   compiledBox
	turns turnTracker
}

type compiledCallKey struct{}

// Value returns the compiledCall for compiledCallKey and asks the parent
// for any other key.
func (c *compiledCall) Value(key any) any {
	if key == (compiledCallKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// compiledTool is tool name as a compiled program calls it: through the
// Toolbox of the mission in the call's context, or errUnboundTool outside
// a mission. shape is what the mission's Toolbox said of the tool when the
// program was loaded: a tool with a signature validates and coerces its
// inputs against it; one unknown now (its service not found) is still
// bound, so its call reports it unavailable.
func compiledTool(name string, shape compiledToolShape) agent.Tool {
	call := func(ctx context.Context, args map[string]any) (any, error) {
		cc, _ := ctx.Value(compiledCallKey{}).(*compiledCall)
		if cc == nil {
			return nil, errUnboundTool
		}
		// the reply is decoded once, into interpreter values (and the
		// trace keeps its bytes)
		return cc.box.CallAs(cc.turns.withTurn(ctx), name, args, decodeResult)
	}
	if !shape.found || shape.signature == "" {
		tool := agent.Skip(call)
		if shape.found {
			tool = tool.WithDescription(shape.description)
		}
		return tool
	}
	return agent.FuncSig(shape.signature, call).WithDescription(shape.description)
}

// compiledToolShape is what a Toolbox says of a tool (Toolbox.Get):
// whether it names it, and its signature and description.
type compiledToolShape struct {
	found                  bool
	signature, description string
}

func toolShape(ctx context.Context, box compiledBox, name string) compiledToolShape {
	t, err := box.Get(ctx, name)
	if err != nil {
		return compiledToolShape{}
	}
	return compiledToolShape{found: true, signature: t.Signature(), description: t.Description()}
}

// keptCompiled is a program the Runner keeps: loaded with compiledTools
// of the shapes its tools had then, in the order of its key's names.
type keptCompiled struct {
	c      *agent.Compiled
	shapes []compiledToolShape
}

// loadCompiled returns spec's program calling the tools named (those of
// the mission whose execution context carries its compiledCall), with lim
// bounding each execution: loaded (agent.Load) the first time the Runner
// sees the program with its signature, tool names and the tools' shapes
// as box gives them, and kept: a later mission of the same program whose
// tools have the same shapes runs the kept one, so the source is read and
// the tools are bound once however many missions run it.
func (r *Runner) loadCompiled(ctx context.Context, spec *messages.CompiledSpec, names []string, box compiledBox, lim messages.Limits) (*agent.Compiled, error) {
	if !slices.IsSorted(names) {
		names = slices.Sorted(slices.Values(names))
	}
	names = uniqueSorted(names)
	var k compiledKey
	if r.compiled != nil {
		k = newCompiledKey(spec.Program, spec.Signature, names)
		if kept := r.compiled.get(k); kept != nil && kept.sameShapes(ctx, box, names) {
			return kept.c.WithLimits(lim), nil
		}
	}
	shapes := make([]compiledToolShape, len(names))
	tools := make(map[string]agent.Tool, len(names))
	for i, name := range names {
		shapes[i] = toolShape(ctx, box, name)
		tools[name] = compiledTool(name, shapes[i])
	}
	c, err := agent.Load(spec.Program, spec.Signature, agent.LoadOptions{Tools: tools, Limits: lim})
	if err != nil {
		return nil, err
	}
	if r.compiled != nil {
		r.compiled.set(k, &keptCompiled{c: c, shapes: shapes})
	}
	return c, nil
}

// sameShapes reports whether box gives the tools named the shapes k was
// loaded with.
func (k *keptCompiled) sameShapes(ctx context.Context, box compiledBox, names []string) bool {
	for i, name := range names {
		if toolShape(ctx, box, name) != k.shapes[i] {
			return false
		}
	}
	return true
}

// uniqueSorted returns sorted names without repeats, names itself when it
// has none.
func uniqueSorted(names []string) []string {
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			return slices.Compact(slices.Clone(names))
		}
	}
	return names
}

// CompiledResultSignature is the Signature of a compiled mission's Step:
// Return is a list with one entry per input, in input order, each a map
// holding exactly one of "value" (the program's return for that input) or
// "error" (why that input failed: reason, message and, when known, op).
const CompiledResultSignature = "[{value :any?, error {reason :string, message :string, op :string?}?}]"

// runCompiled runs m.Compiled.Program once per input with no model. The
// program is loaded and checked first (agent.Load: a one-argument function,
// the signature parses, only the mission's tools are called), once per
// Runner for the same program, signature and tools (loadCompiled); a bad
// program fails the whole mission with reason invalid_compiled. Each input
// is a map of named arguments merged over m.Context (shared arguments; the
// input wins); with no inputs the program runs once on m.Context.
//
// A failed input does not fail the mission: its entry is {"error": {...}}
// and a warning "input <i>: <reason>: <message>" is added; the mission
// fails only when it is canceled or its deadline passes, in which case the
// inputs not run yet are reported as errors too (reason canceled or
// mission_timeout). Limits.MissionTimeout bounds the whole mission, and
// the program limits (program_timeout, max_steps, program_memory,
// max_tool_calls) each execution.
func (r *Runner) runCompiled(ctx context.Context, m *messages.Mission, env *fleet.RunEnv) (*messages.Step, error) {
	return r.runCompiledWith(ctx, m, env, env.Tools)
}

// runCompiledWith is runCompiled calling the tools of box, the mission's
// Toolbox.
func (r *Runner) runCompiledWith(ctx context.Context, m *messages.Mission, env *fleet.RunEnv, box compiledBox) (*messages.Step, error) {
	start := time.Now()
	spec := m.Compiled
	// Each input's execution is a turn of its own for the journal and
	// the tool events.
	c, err := r.loadCompiled(ctx, spec, m.Tools, box, m.Limits)
	if err != nil {
		return failStep(agent.ReasonInvalidCompiled, err.Error()), nil
	}
	call := &compiledCall{Context: ctx, box: box}
	turns := &call.turns
	// the calls' positions refer to the source agent.Load compiles: the
	// program without its surrounding space, which the loaded program
	// keeps (Compiled.Source, never written)
	turns.prog.Store(&c.Source)
	ctx = call
	if !m.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, m.Deadline)
		defer cancel()
	}
	if m.Limits.MissionTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Limits.MissionTimeout)
		defer cancel()
	}
	inputs := spec.Inputs
	if len(inputs) == 0 {
		inputs = []map[string]any{nil}
	}
	// the Step and, for one input, its results are one allocation
	sr := &compiledStep{st: messages.Step{Version: messages.StepVersion, Signature: CompiledResultSignature, Mode: messages.ModeLisp}}
	st := &sr.st
	results := sr.one[:]
	if len(inputs) > 1 {
		results = make([]any, len(inputs))
	}
	for i, in := range inputs {
		if ctx.Err() != nil {
			reason := agent.ReasonCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				reason = agent.ReasonMissionTimeout
			}
			results[i] = map[string]any{"error": map[string]any{"reason": reason, "message": "not run: the mission ended"}}
			continue
		}
		turns.n.Store(int64(i + 1))
		args := mergedArgs(m.Context, in)
		runStart := time.Now()
		s, err := c.Execute(ctx, args)
		outcome := "ok"
		if err != nil {
			outcome = s.Fail.Reason
		}
		limit := ""
		if limitReasons[outcome] {
			limit = outcome
		}
		env.Metrics.ProgramRun(time.Since(runStart), outcome, limit)
		st.Usage.ToolCalls += s.Usage.ToolCalls
		st.Usage.Turns++ // an input's run is a turn, as in its events
		for _, w := range s.Warnings {
			st.Warnings = append(st.Warnings, fmt.Sprintf("input %d: %s", i, w))
		}
		if err != nil {
			e := map[string]any{"reason": s.Fail.Reason, "message": s.Fail.Message}
			if s.Fail.Op != "" {
				e["op"] = s.Fail.Op
			}
			results[i] = map[string]any{"error": e}
			st.Warnings = append(st.Warnings, fmt.Sprintf("input %d: %s: %s", i, s.Fail.Reason, s.Fail.Message))
			continue
		}
		results[i] = map[string]any{"value": s.Return}
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, fleet.ErrWorkerShutdown) {
		return nil, fmt.Errorf("%w: %w", fleet.ErrRetryable, cause)
	}
	st.Return = results
	st.Usage.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		reason := agent.ReasonCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			reason = agent.ReasonMissionTimeout
		}
		st.Fail = &messages.Fail{Reason: reason, Message: "the compiled mission ended before every input ran"}
	}
	return st, nil
}

// compiledStep is a compiled mission's Step with room for the result of
// its one input.
type compiledStep struct {
	st  messages.Step
	one [1]any
}

// mergedArgs is an input's arguments: in merged over shared, the input
// winning. An execution only reads them (agent.Compiled.Execute), so when
// either map is empty the other is used as it is, with no copy made.
func mergedArgs(shared, in map[string]any) map[string]any {
	switch {
	case len(shared) == 0 && in != nil:
		return in
	case len(in) == 0 && shared != nil:
		return shared
	}
	args := make(map[string]any, len(shared)+len(in))
	maps.Copy(args, shared)
	maps.Copy(args, in)
	return args
}
