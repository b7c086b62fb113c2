package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// runState is the state of one agent run (one level of the tree).
type runState struct {
	tree       *tree
	name       string
	depth      int
	turn       int
	model      llm.Model
	modelName  string
	missionCtx context.Context
	start      time.Time      // when the run started
	st         *messages.Step // the run's Step
}

// run runs the agent at the level of l (nil for the top). Its frame, and
// loop's under it, stay small: a run waits on its model under them, and
// what the goroutine's stack holds then sets the stack's size while
// thousands of runs wait. Setting up the run (newRun, begin) and ending it
// (end) are functions of their own.
func (a *Agent) run(ctx context.Context, opts RunOptions, l *link) (step *messages.Step, err error) {
	rs := a.newRun(&opts, l)
	st := rs.st
	defer rs.stamp()
	if lisp.MeterFrom(ctx) == nil {
		// what the mission holds from its tools, across its turns and
		// sub-agents (a fleet worker hands its own meter in ctx)
		ctx = lisp.WithMeter(ctx, a.missionMeter())
	}
	in, fail := resolveInput(opts)
	rs.emitRunStart(ctx, in)
	defer rs.end(ctx, &step, &err)
	missionCtx, cancel, step, err := a.begin(ctx, rs, in, fail, &opts, l)
	if missionCtx == nil {
		return step, err
	}
	defer cancel()
	t, step, err := a.newTurns(ctx, missionCtx, rs, in, &opts, st)
	if t == nil {
		return step, err
	}
	defer t.end()
	return a.loop(missionCtx, rs, t)
}

// newRun starts the state of a run at the level of l (nil for the top,
// which starts the tree's shared state) and its Step.
func (a *Agent) newRun(opts *RunOptions, l *link) *runState {
	start := time.Now()
	st := &messages.Step{Version: messages.StepVersion, Signature: a.sigText, Mode: messages.ModeLisp}
	// shared tree state
	var t *tree
	depth := 1
	if l != nil {
		t, depth = l.tree, l.depth+1
	} else {
		t = &tree{registry: opts.Registry, deadline: start.Add(a.missionTimeout()), maxDepth: a.maxDepth(),
			observer: opts.Observer, debug: opts.Debug, trace: opts.Trace, secrets: &secrets{}, emitLimits: &a.lim}
		t.budget.Store(int64(a.turnBudget()))
		t.spend = a.spendLimit()
	}
	return &runState{tree: t, name: a.Name(), depth: depth, start: start, st: st}
}

// stamp sets the Step's duration.
func (rs *runState) stamp() { rs.st.Usage.Duration = time.Since(rs.start) }

// emitRunStart tells observers the run starts with input in.
func (rs *runState) emitRunStart(ctx context.Context, in *runInput) {
	var data map[string]any
	if in != nil {
		data = in.data
	}
	rs.tree.emit(ctx, Event{Kind: EventRunStart, Agent: rs.name, Depth: rs.depth, Context: data})
}

// end ends the run, deferred: a panic fails its Step (*step, *err), the
// Step keeps its trace as the tree's trace mode says, and observers hear
// the run stop.
func (rs *runState) end(ctx context.Context, step **messages.Step, err *error) {
	rs.ended(ctx, recover(), step, err)
}

// ended ends the run as end does, p the panic that ended it (nil: none).
func (rs *runState) ended(ctx context.Context, p any, step **messages.Step, err *error) {
	t, st := rs.tree, rs.st
	if p != nil {
		perr := fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		t.emit(ctx, Event{Kind: EventRunException, Agent: rs.name, Depth: rs.depth, Duration: time.Since(rs.start), Err: perr})
		*step, *err = failStep(st, &messages.Fail{Reason: "internal_error", Message: fmt.Sprintf("panic: %v", p)})
	}
	st.Usage.Duration = time.Since(rs.start)
	if t.trace == TraceOff || (t.trace == TraceOnError && st.Fail == nil) {
		st.Trace = nil
	}
	status := "ok"
	if st.Fail != nil {
		status = "error"
	}
	t.emit(ctx, Event{Kind: EventRunStop, Agent: rs.name, Depth: rs.depth, Duration: time.Since(rs.start), Step: st, Status: status})
}

// begin checks what the run needs before its first turn (its input, its
// depth, its model, its input's validation) and opens its mission
// context, which cancel ends; a nil context comes with the run's failed
// Step.
func (a *Agent) begin(ctx context.Context, rs *runState, in *runInput, fail *messages.Fail, opts *RunOptions, l *link) (context.Context, context.CancelFunc, *messages.Step, error) {
	t, st := rs.tree, rs.st
	stop := func(f *messages.Fail) (context.Context, context.CancelFunc, *messages.Step, error) {
		step, err := failStep(st, f)
		return nil, nil, step, err
	}
	if fail != nil {
		return stop(fail)
	}
	if rs.depth > t.maxDepth {
		return stop(&messages.Fail{Reason: ReasonMaxDepth,
			Message: fmt.Sprintf("max nesting depth %d exceeded (agent %s at depth %d)", t.maxDepth, rs.name, rs.depth)})
	}
	model, modelName, merr := a.resolveModel(*opts, l, t.registry)
	if merr != nil {
		return stop(&messages.Fail{Reason: reasonOf(merr), Message: llmMessage(merr)})
	}
	rs.model, rs.modelName = model, modelName

	mode := a.spec.Validation
	if len(a.sig.Inputs) > 0 && mode != signature.Disabled {
		if verr := a.sig.ValidateInputs(in.data, mode); verr != nil {
			if mode.Fatal() {
				return stop(&messages.Fail{Reason: ReasonInputValidation, Message: "input validation failed:\n" + verr.Error()})
			}
			st.Warnings = append(st.Warnings, prefixLines("input ", verr.Error())...)
		}
	}

	deadline := rs.start.Add(a.missionTimeout())
	if l != nil && t.deadline.Before(deadline) {
		deadline = t.deadline
	}
	if d, ok := ctx.Deadline(); ok && !d.After(deadline) {
		// the caller's deadline comes first: the mission context is ctx
		// as it is (context.WithDeadline would only add a cancel, which
		// every context the run derives from it has of its own), so a
		// run waiting on its model holds no context, done channel and
		// child entry of its own for it
		rs.missionCtx = callersDeadline{ctx}
		return rs.missionCtx, func() {}, nil, nil
	}
	missionCtx, cancel := context.WithDeadline(ctx, deadline)
	rs.missionCtx = missionCtx
	return missionCtx, cancel, nil, nil
}

func llmMessage(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Message
	}
	return err.Error()
}

// turns is the state of a run's turns: a PTC-Lisp run's (turnLoop) or a
// text-mode run's (textLoop).
type turns interface {
	// request starts turn n and builds its model request (model); done
	// when the run ends instead, with its Step
	request(n int) (step *messages.Step, err error, done bool)
	// model is the request of the turn in flight and its retry policy
	model() (*llm.Request, *llm.RetryPolicy)
	// answer plays the model's answer to turn n's request; done when the
	// run ends, with its Step
	answer(n int, resp *llm.Response, requests int, lerr error) (step *messages.Step, err error, done bool)
	// last is the run's last turn (it may grow while the run goes on)
	last() int
	// outOfTurns is the Step of a run whose turns ran out
	outOfTurns() (*messages.Step, error)
	// end fills in what the Step holds of the turns' state once the run
	// ends
	end()
}

func (l *turnLoop) model() (*llm.Request, *llm.RetryPolicy) { return &l.req, l.policy }
func (l *turnLoop) last() int                               { return l.limitT }
func (l *textLoop) model() (*llm.Request, *llm.RetryPolicy) { return &l.req, l.policy }
func (l *textLoop) last() int                               { return l.maxT }
func (l *textLoop) end()                                    {}

// newTurns sets up the state of the run's turns: a text-mode run's
// (textLoop) or a PTC-Lisp run's (turnLoop). Nil when the run ends
// before its first turn, with its Step.
func (a *Agent) newTurns(ctx, missionCtx context.Context, rs *runState, in *runInput, opts *RunOptions, st *messages.Step) (turns, *messages.Step, error) {
	if a.spec.Output == OutputText {
		l, step, err := a.newTextLoop(ctx, missionCtx, rs, in, opts, st)
		if l == nil {
			return nil, step, err
		}
		return l, nil, nil
	}
	l, step, err := a.newTurnLoop(ctx, missionCtx, rs, in, opts, st)
	if l == nil {
		return nil, step, err
	}
	return l, nil, nil
}

// loop plays the turns t sets up on this goroutine. Its own frame is
// small: a run waits on its model from here (callAndAnswer, callModel), and
// what the goroutine's stack holds below the model call sets the stack's
// size while thousands of runs wait, so the turn's setup and the handling
// of the model's answer live in t's methods, which have returned by then.
func (a *Agent) loop(missionCtx context.Context, rs *runState, t turns) (*messages.Step, error) {
	for n := 1; n <= t.last(); n++ {
		if step, err, done := t.request(n); done {
			return step, err
		}
		if step, err, done := a.callAndAnswer(missionCtx, rs, t, n); done {
			return step, err
		}
	}
	return t.outOfTurns()
}

// callAndAnswer makes turn n's model call and plays the model's answer; done
// when the run ends, with its Step.
func (a *Agent) callAndAnswer(missionCtx context.Context, rs *runState, t turns, n int) (*messages.Step, error, bool) {
	req, policy := t.model()
	resp, requests, lerr := a.callModel(missionCtx, rs, policy, req)
	rs.st.Usage.Requests += requests
	return t.answer(n, resp, requests, lerr)
}

// turnLoop is the state of a PTC-Lisp run's turns (loop), kept on the heap
// so that the frames under a waiting model call stay small.
type turnLoop struct {
	a               *Agent
	ctx, missionCtx context.Context
	rs              *runState
	st              *messages.Step
	t               *tree

	single    bool
	lim       PromptLimit
	policy    *llm.RetryPolicy // the agent's (retryPolicyOf)
	llmOpts   map[string]any
	sec       *secrets
	mission   string // the mission as the model reads it
	sysStatic string // the system prompt, when it does not change by turn
	msgs      []llm.Message
	hist      *historyOf // a compressed run renders each request from it
	strategy  HistoryStrategy
	prog      *programParts // what programs call, built for the first
	plan      *planState
	hasSub    bool           // programs make model calls (sub-agents, llm-query)
	inputs    map[string]any // the inputs as interpreter values
	mem       map[string]any
	lastFail  map[string]any
	lastErr   string
	// limitT is the last turn: maxT, one more for each retry turn granted
	// (retry_turns) to fix a return that failed validation.
	limitT, retries int
	rollback        bool

	// the turn in flight: its request and when it started
	req       llm.Request
	turnStart time.Time
}

// newTurnLoop sets up the turns of a run; a nil turnLoop comes with the
// run's failed Step.
func (a *Agent) newTurnLoop(ctx, missionCtx context.Context, rs *runState, in *runInput, opts *RunOptions, st *messages.Step) (*turnLoop, *messages.Step, error) {
	t := rs.tree
	l := &turnLoop{a: a, ctx: ctx, missionCtx: missionCtx, rs: rs, st: st, t: t,
		single: a.singleTurn(), lim: a.promptLimit(), policy: a.retryPolicyOf(), llmOpts: a.llmOpts(opts.LLMOpts), sec: t.secrets}
	sec := l.sec
	sec.collect(in.data, false)
	// the mission as the model reads it (also Request.Prompt, for custom
	// models and observers)
	l.mission = sec.scrub(a.tmpl.render(in.data, sec.hook()))
	if a.spec.SystemPrompt.LanguageSpecFunc == nil {
		l.sysStatic = a.sysPrompt()
	}
	body := a.missionBody(in, sec)
	l.msgs = []llm.Message{llm.UserText(sec.scrub(a.withTurnOne(body)))}
	// a compressed run renders each request from its history instead
	l.hist = a.newHistory(body, sec)
	l.strategy = a.strategy()
	l.plan = newPlan(a.spec.Plan)
	if l.plan != nil {
		t.emit(ctx, Event{Kind: EventPlan, Agent: rs.name, Depth: rs.depth, Plan: l.plan.snapshot()})
	}
	// with sub-agents or llm-query, programs make model calls
	l.hasSub = a.spec.LLMQuery
	for _, bt := range a.tools {
		l.hasSub = l.hasSub || bt.tool.sub != nil || bt.tool.spawns
	}

	// Convert the inputs to interpreter values once, not on every turn
	// (no map for none: a program reads them, none writes them).
	if len(in.data) > 0 {
		l.inputs = make(map[string]any, len(in.data))
	}
	for k, v := range in.data {
		lv, err := lisp.FromGo(v)
		if err != nil {
			step, err := failStep(st, &messages.Fail{Reason: "invalid_context", Message: fmt.Sprintf("context key %s: %v", k, err)})
			return nil, step, err
		}
		l.inputs[k] = lv
	}
	// l.mem stays nil until a turn stores memory (answer makes a new
	// map then): a program reads it, and a run that writes none, as most
	// single-turn missions, makes none
	l.limitT, l.retries = a.maxTurns(), a.retryTurns()
	l.rollback = a.spec.MemoryStrategy == MemoryRollback
	return l, nil, nil
}

// programParts is what a run's programs call: the agent's tools through
// the run's tool runner, and the host services (emit, step-done,
// llm-query).
type programParts struct {
	tr       toolRunner
	tools    lisp.Tools
	services lisp.HostFuncs
}

// newProgramParts builds what the programs of run rs of a call, with the
// run's plan.
func newProgramParts(a *Agent, rs *runState, plan *planState) *programParts {
	p := &programParts{tr: toolRunner{a: a, run: rs, mode: a.spec.Validation}}
	p.tools = p.tr.lispTools()
	p.services = p.tr.services(plan)
	return p
}

// end fills in what the Step holds of the run's state once it ends: its
// memory (converted once, when the run ends) and its plan.
func (l *turnLoop) end() {
	l.st.Memory = toGoMemory(l.mem)
	if l.plan != nil {
		l.st.Plan = l.plan.snapshot()
	}
}

// withPlan ends a turn's feedback with the plan's state.
func (l *turnLoop) withPlan(feedback string) string {
	if l.plan == nil {
		return feedback
	}
	return feedback + "\n\n" + l.plan.render(l.sec)
}

// request starts turn n and builds its model request (l.req); done when
// the run ends instead, with its Step.
func (l *turnLoop) request(turn int) (step *messages.Step, err error, done bool) {
	a, rs, st := l.a, l.rs, l.st
	if f := rs.beginTurn(l.ctx, l.missionCtx, turn); f != nil {
		step, err = failStep(st, f)
		return step, err, true
	}
	l.turnStart = time.Now()
	reqMsgs := l.msgs
	if l.hist != nil {
		if reqMsgs = l.hist.messages(l.strategy, turn); len(reqMsgs) == 0 {
			step, err = failStep(st, &messages.Fail{Reason: "internal_error", Message: fmt.Sprintf("the history strategy %T rendered no message for turn %d", l.strategy, turn)})
			return step, err, true
		}
	}
	sys := l.sysStatic
	if l.sysStatic == "" {
		sys = a.systemPrompt(PromptContext{Turn: turn, Model: rs.modelName, Memory: sortedKeys(l.mem), Messages: reqMsgs})
	}
	l.req = llm.Request{System: sys, Messages: reqMsgs, Turn: turn, Prompt: l.mission, ToolNames: a.toolKeys, Opts: l.llmOpts,
		CacheSystem: true, CacheHistory: l.hist == nil, CacheKey: a.cacheKey()}
	return nil, nil, false
}

// outOfTurns is the Step of a run whose turns ran out.
func (l *turnLoop) outOfTurns() (*messages.Step, error) {
	return turnsRanOut(l.st, fmt.Sprintf("no return or fail after %d turns", l.limitT), l.lastErr)
}

// turnsRanOut fails st for max_turns with msg, naming the last turn's
// error when there was one; both loops end a run that ran out of turns
// with it.
func turnsRanOut(st *messages.Step, msg, lastErr string) (*messages.Step, error) {
	f := &messages.Fail{Reason: ReasonMaxTurns, Message: msg}
	if lastErr != "" {
		f.Details = map[string]any{"last_error": lastErr}
	}
	return failStep(st, f)
}

// openTurn starts turn n's record, with its request's prompt in debug
// runs, and lets go of the request, which the answer no longer needs.
func openTurn(n int, start time.Time, req *llm.Request, debug bool) messages.Turn {
	rec := messages.Turn{Number: n, StartedAt: start}
	if debug {
		rec.Messages = promptMessages(req.System, req.Messages)
	}
	*req = llm.Request{}
	return rec
}

// answer plays the model's answer to turn n's request (l.req): it records
// the turn and runs its program; done when the run ends, with its Step.
func (l *turnLoop) answer(turn int, resp *llm.Response, requests int, lerr error) (step *messages.Step, err error, done bool) {
	a, rs, st, t, sec := l.a, l.rs, l.st, l.t, l.sec
	ctx, missionCtx, single, turnStart := l.ctx, l.missionCtx, l.single, l.turnStart
	rec := openTurn(turn, turnStart, &l.req, t.debug)
	stop := func(f *messages.Fail) (*messages.Step, error, bool) {
		step, err := failStep(st, f)
		return step, err, true
	}
	if lerr != nil {
		if f := missionEnd(ctx, missionCtx); f != nil {
			return stop(f)
		}
		rec.Error = lerr.Error()
		rec.Duration = time.Since(turnStart)
		st.Trace = append(st.Trace, rec)
		prev := ""
		if l.lastFail != nil {
			prev = l.lastErr
		}
		step, err := failStepCause(st, llmFail(lerr, prev), lerr)
		return step, err, true
	}
	u := resp.Usage
	recordTurn(st, &rec, resp, requests)
	l.msgs = append(l.msgs, llm.AssistantText(resp.Content))

	code, ok := ParseResponse(resp.Content)
	// feedback is the message sent after the turn; report what it
	// says of the turn (no memory line, turn line or plan), for a
	// compressed history
	var feedback, report string
	var value lisp.Value // the program's value, when it ran to one
	endTurn := func() {
		rec.Duration = time.Since(turnStart)
		rec.Feedback = feedback
		st.Trace = append(st.Trace, rec)
		if l.hist != nil {
			planText := ""
			if l.plan != nil {
				planText = l.plan.render(sec)
			}
			l.hist.add(&rec, report, planText, value, l.mem)
		}
		t.emit(ctx, Event{Kind: EventTurnStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: rec.Duration, Usage: u, Program: rec.Program})
	}
	if !ok {
		rec.Error = "no code found in the response"
		l.lastErr = rec.Error
		if single {
			endTurn()
			return stop(&messages.Fail{Reason: ReasonNoCode, Message: "the model's answer holds no PTC-Lisp program"})
		}
		feedback = BoundaryReminder
		report = BoundaryReminder + "\n"
		if turn < l.limitT {
			feedback = l.withPlan(feedback + "\n" + turnLine(turn+1, l.limitT))
		}
		endTurn()
		l.msgs = append(l.msgs, llm.UserText(feedback))
		return nil, nil, false
	}
	rec.Program = code

	// the program's own time and step budget; the mission's deadline
	// (missionCtx) still cuts it short. With sub-agents a program may
	// run until the mission ends: a sub-agent makes model calls.
	timeout := a.programTimeout()
	if l.hasSub {
		if md, ok := missionCtx.Deadline(); ok {
			timeout = max(time.Until(md), time.Millisecond)
		}
	}
	ctxData := l.inputs
	if l.lastFail != nil {
		ctxData = make(map[string]any, len(l.inputs)+1)
		maps.Copy(ctxData, l.inputs)
		ctxData["fail"] = l.lastFail
	}
	if l.prog == nil {
		// what programs call is built for the first program: a run
		// waiting on its first model call holds none of it
		l.prog = newProgramParts(a, rs, l.plan)
	}
	prog := l.prog
	tt := &turnTools{turn: turn}
	prog.tr.cur.Store(tt)
	progStart := time.Now()
	t.emit(ctx, Event{Kind: EventProgramStart, Agent: rs.name, Depth: rs.depth, Turn: turn, Program: code})
	res, xerr := lisp.Exec(missionCtx, code, a.programOptions(ctxData, l.mem, prog.tools, prog.services, timeout, sec))
	t.emit(ctx, Event{Kind: EventProgramStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: time.Since(progStart), Err: xerr})
	calls, warnings, subUsage := tt.snapshot()
	rec.ToolCalls = calls
	rec.Prints = res.Prints
	st.Usage.ToolCalls += len(calls)
	st.Usage.AddTokens(subUsage)
	st.Usage.Requests += subUsage.Requests
	st.Warnings = append(st.Warnings, warnings...)
	last := turn == l.limitT

	if xerr != nil {
		var le *lisp.Error
		if !errors.As(xerr, &le) {
			le = &lisp.Error{Kind: lisp.KindInternal, Msg: xerr.Error(), Err: xerr}
		}
		if f := missionEnd(ctx, missionCtx); f != nil {
			rec.Error = lispErrorText(le)
			endTurn()
			return stop(f)
		}
		if le.Kind == lisp.KindFail {
			rec.Error = le.Msg
			endTurn()
			return stop(programFail(le))
		}
		text := lispErrorText(le)
		rec.Error = text
		l.lastErr = text
		l.lastFail = map[string]any{"reason": le.Reason(), "message": le.Error()}
		if le.Op != "" {
			l.lastFail["op"] = le.Op
		}
		if single {
			endTurn()
			return stop(&messages.Fail{Reason: le.Reason(), Message: text, Op: le.Op})
		}
		if !last {
			report = errorReport(sec, res.Prints, text, warnings)
			feedback = l.withPlan(report + turnLine(turn+1, l.limitT))
		}
		if t.debug {
			rec.Memory = toGoMemory(l.mem)
		}
		endTurn()
		if !last {
			l.msgs = append(l.msgs, llm.UserText(feedback))
		}
		return nil, nil, false
	}

	// committed memory; prevMem is memory before the turn (the
	// rollback strategy restores it when the turn fails)
	prevMem := l.mem
	if res.Memory != nil {
		if size := memorySize(res.Memory, a.memoryLimit()); a.spec.MemoryLimit >= 0 && size > a.memoryLimit() {
			rec.Error = fmt.Sprintf("memory limit exceeded: %d > %d bytes", size, a.memoryLimit())
			if !l.rollback || single {
				endTurn()
				return stop(&messages.Fail{Reason: ReasonMemoryLimit, Message: rec.Error})
			}
			// rollback: the turn fails, memory stays as it was
			text := rec.Error + "\nMemory is as it was before this program; store less data in memory, keep only what later turns need."
			rec.Error, l.lastErr = text, text
			l.lastFail = map[string]any{"reason": ReasonMemoryLimit, "message": text}
			if !last {
				report = errorReport(sec, res.Prints, text, warnings)
				feedback = l.withPlan(report + turnLine(turn+1, l.limitT))
				l.msgs = append(l.msgs, llm.UserText(feedback))
			}
			endTurn()
			return nil, nil, false
		}
		l.mem = make(map[string]any, len(res.Memory))
		for k, v := range res.Memory {
			l.mem[k] = v
			sec.collect(v, signature.IsFirewalled(k))
		}
	}
	if t.debug {
		rec.Memory = toGoMemory(l.mem)
	}
	value = res.Value
	result := messages.RoundFloats(lisp.ToGo(res.Value), FloatPrecision)
	rec.Result = result

	if res.Signal == lisp.SignalReturn || single {
		if verr := a.validateReturn(result); verr != nil {
			text := validationText(verr, outputType(a.sig.Output))
			if a.spec.Validation.Fatal() {
				rec.Error = text
				l.lastErr = text
				l.lastFail = map[string]any{"reason": ReasonValidation, "message": text, "op": "return"}
				if l.rollback {
					l.mem = prevMem
					if t.debug {
						rec.Memory = toGoMemory(l.mem)
					}
				}
				retry := turn == l.limitT && l.retries > 0
				if retry {
					// a retry turn, granted only to fix this return
					l.limitT++
					l.retries--
					last = false
				}
				if single && !retry {
					endTurn()
					return stop(&messages.Fail{Reason: ReasonValidation, Message: text, Op: "return"})
				}
				if !last {
					if retry {
						text += "\n" + retryTurnNote
					}
					report = errorReport(sec, res.Prints, text, warnings)
					feedback = l.withPlan(report + turnLine(turn+1, l.limitT))
					l.msgs = append(l.msgs, llm.UserText(feedback))
				}
				endTurn()
				return nil, nil, false
			}
			st.Warnings = append(st.Warnings, prefixLines("return ", verr.Error())...)
		}
		endTurn()
		st.Return = result
		return st, nil, true
	}

	l.lastFail = nil
	if !last {
		feedback = l.withPlan(resultFeedback(sec, res, l.lim, warnings, turn+1, l.limitT))
		if l.hist != nil {
			report = resultReport(sec, res, l.lim, warnings, forRecord)
		}
		l.msgs = append(l.msgs, llm.UserText(feedback))
	}
	endTurn()
	return nil, nil, false
}

// callModel calls the model with *req under *policy. Each attempt is
// bounded by the LLM timeout; an attempt that runs out of it is an
// infrastructure error (class timeout) and uses the retry budget, not a
// turn. It returns the response and the number of requests made.
// It and the attempt it runs keep small frames (the events are built in
// emitLLMStart and emitLLMStop): a run waits on its model under them.
func (a *Agent) callModel(missionCtx context.Context, rs *runState, policy *llm.RetryPolicy, req *llm.Request) (*llm.Response, int, error) {
	c := a.newModelCall(rs, req)
	return c.end(policy.Do(missionCtx, c.attempt))
}

// startModelCall is callModel without holding this goroutine while the
// model's answer is awaited, when the model can start a call so
// (llm.AsyncModel): the first attempt starts here and its answer comes on
// the model's goroutine, which makes any further attempts of the policy
// and calls done with what callModel returns. With any other model it
// calls callModel, then done.
func (a *Agent) startModelCall(missionCtx context.Context, rs *runState, policy *llm.RetryPolicy, req *llm.Request, done func(*llm.Response, int, error)) {
	c := a.newModelCall(rs, req)
	if _, ok := c.model.(llm.AsyncModel); !ok {
		done(c.end(policy.Do(missionCtx, c.attempt)))
		return
	}
	if err := policy.Validate(); err != nil {
		done(c.end(err))
		return
	}
	if err := missionCtx.Err(); err != nil {
		done(c.end(err))
		return
	}
	actx, cancel := context.WithTimeout(missionCtx, c.limit)
	start := c.begin(missionCtx)
	llm.CompleteAsync(actx, c.model, *req, func(r *llm.Response, err error) {
		err = c.answered(missionCtx, actx, cancel, start, r, err)
		done(c.end(policy.After(missionCtx, 1, err, c.attempt)))
	})
}

// modelCall is a model call of callModel: its attempts and their outcome.
type modelCall struct {
	rs       *runState
	req      *llm.Request
	model    llm.Model
	limit    time.Duration
	resp     *llm.Response
	requests int
}

// newModelCall is a call of rs's model with *req, under the tree's budget
// when it has one.
func (a *Agent) newModelCall(rs *runState, req *llm.Request) *modelCall {
	c := &modelCall{rs: rs, req: req, model: rs.model, limit: a.llmTimeout()}
	if rs.tree.spend != nil {
		c.model = llm.WithBudget(c.model, rs.modelName, rs.tree.spend)
	}
	return c
}

// attempt makes attempt number n of the call under ctx and waits for its
// answer.
func (c *modelCall) attempt(ctx context.Context, _ int) error {
	actx, cancel := context.WithTimeout(ctx, c.limit)
	start := c.begin(ctx)
	r, err := c.model.Complete(actx, *c.req)
	return c.answered(ctx, actx, cancel, start, r, err)
}

// begin counts an attempt and tells observers it starts; it returns when.
func (c *modelCall) begin(ctx context.Context) time.Time {
	start := time.Now()
	c.requests++
	c.rs.emitLLMStart(ctx, c.req)
	return start
}

// answered ends an attempt begun at start under ctx, bounded by actx
// (cancel ends it), that the model answered with r or err: an attempt
// that ran out of the LLM timeout fails with a retryable timeout, and
// observers hear how it ended.
func (c *modelCall) answered(ctx, actx context.Context, cancel context.CancelFunc, start time.Time, r *llm.Response, err error) error {
	defer cancel()
	if err == nil && r == nil {
		err = errors.New("model returned no response")
	}
	if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = llm.MarkRetryable(fmt.Errorf("llm call exceeded the llm_timeout of %s: %w", c.limit, err), llm.ClassTimeout)
	}
	c.rs.emitLLMStop(ctx, c.req, start, r, err)
	if err != nil {
		return err
	}
	c.resp = r
	return nil
}

// end is what callModel returns once the policy ended the call with err:
// a budget that refused it ends the tree's calls.
func (c *modelCall) end(err error) (*llm.Response, int, error) {
	if err == nil {
		// (errors.As's target would be made on the heap for nothing)
		return c.resp, c.requests, nil
	}
	var be *llm.BudgetError
	if errors.As(err, &be) {
		c.rs.tree.exceeded.CompareAndSwap(nil, be)
	}
	return nil, c.requests, err
}

// emitLLMStart tells observers a model call of req starts.
//
//go:noinline
func (rs *runState) emitLLMStart(ctx context.Context, req *llm.Request) {
	rs.tree.emit(ctx, Event{Kind: EventLLMStart, Agent: rs.name, Depth: rs.depth, Turn: req.Turn, Messages: req.Messages})
}

// emitLLMStop tells observers a model call of req, started at start,
// ended with r or err.
//
//go:noinline
func (rs *runState) emitLLMStop(ctx context.Context, req *llm.Request, start time.Time, r *llm.Response, err error) {
	ev := Event{Kind: EventLLMStop, Agent: rs.name, Depth: rs.depth, Turn: req.Turn, Duration: time.Since(start), Err: err}
	if r != nil {
		ev.Usage, ev.Response = r.Usage, r.Content
	}
	rs.tree.emit(ctx, ev)
}

// missionEnd reports why the run must stop now: the caller canceled, or
// the mission deadline passed.
// beginTurn starts turn n of a run (PTC-Lisp or text mode): it fails when
// the mission has ended or the agent tree's shared turn budget is spent,
// and otherwise announces the turn to observers.
func (rs *runState) beginTurn(ctx, missionCtx context.Context, n int) *messages.Fail {
	rs.turn = n
	if f := missionEnd(ctx, missionCtx); f != nil {
		return f
	}
	if be := rs.tree.exceeded.Load(); be != nil {
		return &messages.Fail{Reason: ReasonBudgetExceeded, Message: be.Error(), Op: "llm"}
	}
	if rs.tree.budget.Add(-1) < 0 {
		return &messages.Fail{Reason: ReasonTurnBudget, Message: "the agent tree's turn budget is exhausted"}
	}
	rs.tree.emit(ctx, Event{Kind: EventTurnStart, Agent: rs.name, Depth: rs.depth, Turn: n})
	return nil
}

// callersDeadline is the mission context of a run whose caller's
// context ends first (Agent.begin): that context as it is.
type callersDeadline struct{ context.Context }

func missionEnd(ctx, missionCtx context.Context) *messages.Fail {
	d, ok := missionCtx.Deadline()
	timedOut := ok && !time.Now().Before(d)
	// a mission context that is the caller's own (its deadline came
	// first, Agent.begin) ends only when the caller's does
	_, callers := missionCtx.(callersDeadline)
	if ctx.Err() != nil && (!timedOut || callers) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &messages.Fail{Reason: ReasonMissionTimeout, Message: "the caller's deadline passed"}
		}
		return &messages.Fail{Reason: ReasonCanceled, Message: "the run was canceled"}
	}
	if missionCtx.Err() != nil || timedOut {
		return &messages.Fail{Reason: ReasonMissionTimeout, Message: "the mission timeout passed"}
	}
	return nil
}

func (a *Agent) validateReturn(v any) error {
	if a.spec.Validation == signature.Disabled || a.sig.Output == nil {
		return nil
	}
	return a.sig.ValidateOutput(v, a.spec.Validation)
}

// programFail converts the program's (fail ...) into the Step's Fail,
// keeping its reason, message, op and details.
func programFail(le *lisp.Error) *messages.Fail {
	f := &messages.Fail{Reason: le.Reason(), Message: le.Msg, Op: le.Op}
	if m, ok := le.Fail.(map[string]any); ok {
		if s, ok := m["message"].(string); ok {
			f.Message = s
		}
		if s, ok := m["op"].(string); ok {
			f.Op = s
		}
		if d, ok := m["details"].(map[string]any); ok {
			f.Details = d
		}
	}
	if f.Reason == "" {
		f.Reason = "failed"
	}
	return f
}

// recordTurn records a model answer: its usage on the turn and the run,
// and its raw text on the turn.
func recordTurn(st *messages.Step, rec *messages.Turn, resp *llm.Response, requests int) {
	u := resp.Usage
	rec.Usage = messages.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.Total(),
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Requests: requests, Turns: 1}
	st.Usage.AddTokens(rec.Usage)
	st.Usage.Turns++
	rec.Raw = resp.Content
}

func promptMessages(sys string, msgs []llm.Message) []messages.PromptMessage {
	out := make([]messages.PromptMessage, 0, len(msgs)+1)
	out = append(out, messages.PromptMessage{Role: "system", Content: sys})
	for _, m := range msgs {
		out = append(out, messages.PromptMessage{Role: string(m.Role), Content: m.Text()})
	}
	return out
}

func toGoMemory(mem map[string]any) map[string]any {
	if len(mem) == 0 {
		return nil
	}
	out := make(map[string]any, len(mem))
	for k, v := range mem {
		out[k] = lisp.ShareToGo(v)
	}
	return out
}

// memorySize is the printed size of memory (names plus values), stopping
// early past limit.
func memorySize(mem map[string]lisp.Value, limit int64) int64 {
	var size int64
	maxLen := int(min(limit, math.MaxInt32)) + 1
	for k, v := range mem {
		if lisp.IsHostData(v) {
			// the host's data (ctx, tool results) kept by reference: its
			// name only, so (def rows ctx/rows) costs nothing per turn
			size += int64(len(k))
			continue
		}
		size += int64(len(k) + len(lisp.Sprint(v, lisp.PrintOptions{NoFirewall: true, MaxLen: maxLen})))
		if size > limit {
			return size
		}
	}
	return size
}

// retryPolicy is the agent's llm_retry (the default policy when unset).
func (a *Agent) retryPolicy() llm.RetryPolicy {
	if a.spec.LLMRetry != nil {
		return *a.spec.LLMRetry
	}
	return llm.RetryPolicy{}
}

// noRetryPolicy is the policy of an agent whose spec sets none (the
// defaults); it is only read.
var noRetryPolicy llm.RetryPolicy

// retryPolicyOf is the agent's retry policy, which its turn loops point
// to rather than copy (96 bytes a run waiting on its model): the agent's
// own copy of its spec's (New), or the defaults.
func (a *Agent) retryPolicyOf() *llm.RetryPolicy {
	if a.spec.LLMRetry != nil {
		return a.spec.LLMRetry
	}
	return &noRetryPolicy
}

// llmOpts merges run-time llm_opts over the spec's (the spec's map is not
// modified).
func (a *Agent) llmOpts(run map[string]any) map[string]any {
	if len(run) == 0 {
		return a.spec.LLMOpts
	}
	out := maps.Clone(a.spec.LLMOpts)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, run)
	return out
}
