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
}

func (a *Agent) run(ctx context.Context, opts RunOptions, l *link) (step *messages.Step, err error) {
	start := time.Now()
	st := &messages.Step{Version: messages.StepVersion, Signature: a.sig.String(), Mode: messages.ModeLisp}
	defer func() { st.Usage.Duration = time.Since(start) }()

	// shared tree state
	var t *tree
	depth := 1
	if l != nil {
		t, depth = l.tree, l.depth+1
	} else {
		t = &tree{registry: opts.Registry, deadline: start.Add(a.missionTimeout()), maxDepth: a.maxDepth(),
			observer: opts.Observer, debug: opts.Debug, trace: opts.Trace, secrets: &secrets{}, emits: newEmitLimiter(a.lim)}
		t.budget.Store(int64(a.turnBudget()))
		t.spend = a.spendLimit()
	}
	rs := &runState{tree: t, name: a.Name(), depth: depth}
	if lisp.MeterFrom(ctx) == nil {
		// what the mission holds from its tools, across its turns and
		// sub-agents (a fleet worker hands its own meter in ctx)
		ctx = lisp.WithMeter(ctx, a.missionMeter())
	}

	in, fail := resolveInput(opts)
	t.emit(ctx, Event{Kind: EventRunStart, Agent: rs.name, Depth: depth, Context: func() map[string]any {
		if in != nil {
			return in.data
		}
		return nil
	}()})
	defer func() {
		if p := recover(); p != nil {
			perr := fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			t.emit(ctx, Event{Kind: EventRunException, Agent: rs.name, Depth: depth, Duration: time.Since(start), Err: perr})
			step, err = failStep(st, &messages.Fail{Reason: "internal_error", Message: fmt.Sprintf("panic: %v", p)})
		}
		st.Usage.Duration = time.Since(start)
		if t.trace == TraceOff || (t.trace == TraceOnError && st.Fail == nil) {
			st.Trace = nil
		}
		status := "ok"
		if st.Fail != nil {
			status = "error"
		}
		t.emit(ctx, Event{Kind: EventRunStop, Agent: rs.name, Depth: depth, Duration: time.Since(start), Step: st, Status: status})
	}()

	if fail != nil {
		return failStep(st, fail)
	}
	if depth > t.maxDepth {
		return failStep(st, &messages.Fail{Reason: ReasonMaxDepth,
			Message: fmt.Sprintf("max nesting depth %d exceeded (agent %s at depth %d)", t.maxDepth, rs.name, depth)})
	}
	model, modelName, merr := a.resolveModel(opts, l, t.registry)
	if merr != nil {
		return failStep(st, &messages.Fail{Reason: reasonOf(merr), Message: llmMessage(merr)})
	}
	rs.model, rs.modelName = model, modelName

	mode := a.spec.Validation
	if len(a.sig.Inputs) > 0 && mode != signature.Disabled {
		if verr := a.sig.ValidateInputs(in.data, mode); verr != nil {
			if mode.Fatal() {
				return failStep(st, &messages.Fail{Reason: ReasonInputValidation, Message: "input validation failed:\n" + verr.Error()})
			}
			st.Warnings = append(st.Warnings, prefixLines("input ", verr.Error())...)
		}
	}

	deadline := start.Add(a.missionTimeout())
	if l != nil && t.deadline.Before(deadline) {
		deadline = t.deadline
	}
	missionCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	rs.missionCtx = missionCtx

	if a.spec.Output == OutputText {
		return a.runText(ctx, missionCtx, rs, in, opts, st)
	}
	return a.loop(ctx, missionCtx, rs, in, opts, st)
}

func llmMessage(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return le.Message
	}
	return err.Error()
}

// loop runs the turns.
func (a *Agent) loop(ctx, missionCtx context.Context, rs *runState, in *runInput, opts RunOptions, st *messages.Step) (*messages.Step, error) {
	t := rs.tree
	maxT := a.maxTurns()
	single := a.singleTurn()
	lim := a.promptLimit()
	policy := a.retryPolicy()
	llmOpts := a.llmOpts(opts.LLMOpts)
	sec := t.secrets
	sec.collect(in.data, false)
	// the mission as the model reads it (also Request.Prompt, for custom
	// models and observers)
	mission := sec.scrub(a.tmpl.render(in.data, sec.hook()))
	sysStatic := ""
	if a.spec.SystemPrompt.LanguageSpecFunc == nil {
		sysStatic = a.sysPrompt()
	}
	body := a.missionBody(in, sec)
	msgs := []llm.Message{llm.UserText(sec.scrub(a.withTurnOne(body)))}
	// a compressed run renders each request from its history instead
	hist := a.newHistory(body, sec)
	strategy := a.strategy()
	tr := &toolRunner{a: a, run: rs, mode: a.spec.Validation}
	ltools := tr.lispTools()
	plan := newPlan(a.spec.Plan)
	services := tr.services(plan)
	if plan != nil {
		t.emit(ctx, Event{Kind: EventPlan, Agent: rs.name, Depth: rs.depth, Plan: plan.snapshot()})
	}
	// withPlan ends a turn's feedback with the plan's state
	withPlan := func(feedback string) string {
		if plan == nil {
			return feedback
		}
		return feedback + "\n\n" + plan.render(sec)
	}
	// with sub-agents or llm-query, programs make model calls
	hasSub := a.spec.LLMQuery
	for _, bt := range a.tools {
		hasSub = hasSub || bt.tool.sub != nil || bt.tool.spawns
	}

	// Convert the inputs to interpreter values once, not on every turn.
	inputs := make(map[string]any, len(in.data))
	for k, v := range in.data {
		lv, err := lisp.FromGo(v)
		if err != nil {
			return failStep(st, &messages.Fail{Reason: "invalid_context", Message: fmt.Sprintf("context key %s: %v", k, err)})
		}
		inputs[k] = lv
	}
	mem := map[string]any{}
	// Step.Memory is converted once, when the run ends.
	defer func() { st.Memory = toGoMemory(mem) }()
	if plan != nil {
		defer func() { st.Plan = plan.snapshot() }()
	}
	var lastFail map[string]any
	var lastErr string
	// limitT is the last turn: maxT, one more for each retry turn granted
	// (retry_turns) to fix a return that failed validation.
	limitT, retries := maxT, a.retryTurns()
	rollback := a.spec.MemoryStrategy == MemoryRollback

	for turn := 1; turn <= limitT; turn++ {
		if f := rs.beginTurn(ctx, missionCtx, turn); f != nil {
			return failStep(st, f)
		}
		turnStart := time.Now()
		reqMsgs := msgs
		if hist != nil {
			if reqMsgs = hist.messages(strategy, turn); len(reqMsgs) == 0 {
				return failStep(st, &messages.Fail{Reason: "internal_error", Message: fmt.Sprintf("the history strategy %T rendered no message for turn %d", strategy, turn)})
			}
		}
		sys := sysStatic
		if sysStatic == "" {
			sys = a.systemPrompt(PromptContext{Turn: turn, Model: rs.modelName, Memory: sortedKeys(mem), Messages: reqMsgs})
		}
		req := llm.Request{System: sys, Messages: reqMsgs, Turn: turn, Prompt: mission, ToolNames: a.toolKeys, Opts: llmOpts,
			CacheSystem: true, CacheHistory: hist == nil, CacheKey: a.cacheKey()}
		rec, resp, requests, lerr := a.modelTurn(missionCtx, rs, policy, st, req, turnStart)
		if lerr != nil {
			if f := missionEnd(ctx, missionCtx); f != nil {
				return failStep(st, f)
			}
			rec.Error = lerr.Error()
			rec.Duration = time.Since(turnStart)
			st.Trace = append(st.Trace, rec)
			prev := ""
			if lastFail != nil {
				prev = lastErr
			}
			return failStep(st, llmFail(lerr, prev))
		}
		u := resp.Usage
		recordTurn(st, &rec, resp, requests)
		msgs = append(msgs, llm.AssistantText(resp.Content))

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
			if hist != nil {
				planText := ""
				if plan != nil {
					planText = plan.render(sec)
				}
				hist.add(&rec, report, planText, value, mem)
			}
			t.emit(ctx, Event{Kind: EventTurnStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: rec.Duration, Usage: u, Program: rec.Program})
		}
		if !ok {
			rec.Error = "no code found in the response"
			lastErr = rec.Error
			if single {
				endTurn()
				return failStep(st, &messages.Fail{Reason: ReasonNoCode, Message: "the model's answer holds no PTC-Lisp program"})
			}
			feedback = BoundaryReminder
			report = BoundaryReminder + "\n"
			if turn < limitT {
				feedback = withPlan(feedback + "\n" + turnLine(turn+1, limitT))
			}
			endTurn()
			msgs = append(msgs, llm.UserText(feedback))
			continue
		}
		rec.Program = code

		// the program's own time and step budget; the mission's deadline
		// (missionCtx) still cuts it short. With sub-agents a program may
		// run until the mission ends: a sub-agent makes model calls.
		timeout := a.programTimeout()
		if hasSub {
			if md, ok := missionCtx.Deadline(); ok {
				timeout = max(time.Until(md), time.Millisecond)
			}
		}
		ctxData := inputs
		if lastFail != nil {
			ctxData = maps.Clone(inputs)
			ctxData["fail"] = lastFail
		}
		tt := &turnTools{turn: turn}
		tr.cur.Store(tt)
		progStart := time.Now()
		t.emit(ctx, Event{Kind: EventProgramStart, Agent: rs.name, Depth: rs.depth, Turn: turn, Program: code})
		res, xerr := lisp.Exec(missionCtx, code, a.programOptions(ctxData, mem, ltools, services, timeout, sec))
		t.emit(ctx, Event{Kind: EventProgramStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: time.Since(progStart), Err: xerr})
		calls, warnings, subUsage := tt.snapshot()
		rec.ToolCalls = calls
		rec.Prints = res.Prints
		st.Usage.ToolCalls += len(calls)
		st.Usage.AddTokens(subUsage)
		st.Usage.Requests += subUsage.Requests
		st.Warnings = append(st.Warnings, warnings...)
		last := turn == limitT

		if xerr != nil {
			var le *lisp.Error
			if !errors.As(xerr, &le) {
				le = &lisp.Error{Kind: lisp.KindInternal, Msg: xerr.Error(), Err: xerr}
			}
			if f := missionEnd(ctx, missionCtx); f != nil {
				rec.Error = lispErrorText(le)
				endTurn()
				return failStep(st, f)
			}
			if le.Kind == lisp.KindFail {
				rec.Error = le.Msg
				endTurn()
				return failStep(st, programFail(le))
			}
			text := lispErrorText(le)
			rec.Error = text
			lastErr = text
			lastFail = map[string]any{"reason": le.Reason(), "message": le.Error()}
			if le.Op != "" {
				lastFail["op"] = le.Op
			}
			if single {
				endTurn()
				return failStep(st, &messages.Fail{Reason: le.Reason(), Message: text, Op: le.Op})
			}
			if !last {
				report = errorReport(sec, res.Prints, text, warnings)
				feedback = withPlan(report + turnLine(turn+1, limitT))
			}
			if t.debug {
				rec.Memory = toGoMemory(mem)
			}
			endTurn()
			if !last {
				msgs = append(msgs, llm.UserText(feedback))
			}
			continue
		}

		// committed memory; prevMem is memory before the turn (the
		// rollback strategy restores it when the turn fails)
		prevMem := mem
		if res.Memory != nil {
			if size := memorySize(res.Memory, a.memoryLimit()); a.spec.MemoryLimit >= 0 && size > a.memoryLimit() {
				rec.Error = fmt.Sprintf("memory limit exceeded: %d > %d bytes", size, a.memoryLimit())
				if !rollback || single {
					endTurn()
					return failStep(st, &messages.Fail{Reason: ReasonMemoryLimit, Message: rec.Error})
				}
				// rollback: the turn fails, memory stays as it was
				text := rec.Error + "\nMemory is as it was before this program; store less data in memory, keep only what later turns need."
				rec.Error, lastErr = text, text
				lastFail = map[string]any{"reason": ReasonMemoryLimit, "message": text}
				if !last {
					report = errorReport(sec, res.Prints, text, warnings)
					feedback = withPlan(report + turnLine(turn+1, limitT))
					msgs = append(msgs, llm.UserText(feedback))
				}
				endTurn()
				continue
			}
			mem = make(map[string]any, len(res.Memory))
			for k, v := range res.Memory {
				mem[k] = v
				sec.collect(v, signature.IsFirewalled(k))
			}
		}
		if t.debug {
			rec.Memory = toGoMemory(mem)
		}
		value = res.Value
		result := messages.RoundFloats(lisp.ToGo(res.Value), FloatPrecision)
		rec.Result = result

		if res.Signal == lisp.SignalReturn || single {
			if verr := a.validateReturn(result); verr != nil {
				text := validationText(verr, outputType(a.sig.Output))
				if a.spec.Validation.Fatal() {
					rec.Error = text
					lastErr = text
					lastFail = map[string]any{"reason": ReasonValidation, "message": text, "op": "return"}
					if rollback {
						mem = prevMem
						if t.debug {
							rec.Memory = toGoMemory(mem)
						}
					}
					retry := turn == limitT && retries > 0
					if retry {
						// a retry turn, granted only to fix this return
						limitT++
						retries--
						last = false
					}
					if single && !retry {
						endTurn()
						return failStep(st, &messages.Fail{Reason: ReasonValidation, Message: text, Op: "return"})
					}
					if !last {
						if retry {
							text += "\n" + retryTurnNote
						}
						report = errorReport(sec, res.Prints, text, warnings)
						feedback = withPlan(report + turnLine(turn+1, limitT))
						msgs = append(msgs, llm.UserText(feedback))
					}
					endTurn()
					continue
				}
				st.Warnings = append(st.Warnings, prefixLines("return ", verr.Error())...)
			}
			endTurn()
			st.Return = result
			return st, nil
		}

		lastFail = nil
		if !last {
			feedback = withPlan(resultFeedback(sec, res, lim, warnings, turn+1, limitT))
			if hist != nil {
				report = resultReport(sec, res, lim, warnings, forRecord)
			}
			msgs = append(msgs, llm.UserText(feedback))
		}
		endTurn()
	}
	msg := fmt.Sprintf("no return or fail after %d turns", limitT)
	f := &messages.Fail{Reason: ReasonMaxTurns, Message: msg}
	if lastErr != "" {
		f.Details = map[string]any{"last_error": lastErr}
	}
	return failStep(st, f)
}

// modelTurn opens the trace record of turn req.Turn, started at start, and
// calls the model with req under policy; the record holds the prompt in
// debug runs, and st counts the requests made.
func (a *Agent) modelTurn(missionCtx context.Context, rs *runState, policy llm.RetryPolicy, st *messages.Step, req llm.Request, start time.Time) (messages.Turn, *llm.Response, int, error) {
	rec := messages.Turn{Number: req.Turn, StartedAt: start}
	if rs.tree.debug {
		rec.Messages = promptMessages(req.System, req.Messages)
	}
	resp, requests, err := a.callModel(missionCtx, rs, policy, req)
	st.Usage.Requests += requests
	return rec, resp, requests, err
}

// callModel calls the model under the retry policy. Each attempt is
// bounded by the LLM timeout; an attempt that runs out of it is an
// infrastructure error (class timeout) and uses the retry budget, not a
// turn. It returns the response and the number of requests made.
func (a *Agent) callModel(missionCtx context.Context, rs *runState, policy llm.RetryPolicy, req llm.Request) (*llm.Response, int, error) {
	var resp *llm.Response
	requests := 0
	limit := a.llmTimeout()
	model := rs.model
	if rs.tree.spend != nil {
		model = llm.WithBudget(model, rs.modelName, rs.tree.spend)
	}
	err := policy.Do(missionCtx, func(ctx context.Context, attempt int) error {
		actx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		attemptStart := time.Now()
		requests++
		rs.tree.emit(ctx, Event{Kind: EventLLMStart, Agent: rs.name, Depth: rs.depth, Turn: req.Turn, Messages: req.Messages})
		r, err := model.Complete(actx, req)
		if err == nil && r == nil {
			err = errors.New("model returned no response")
		}
		if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = llm.MarkRetryable(fmt.Errorf("llm call exceeded the llm_timeout of %s: %w", limit, err), llm.ClassTimeout)
		}
		ev := Event{Kind: EventLLMStop, Agent: rs.name, Depth: rs.depth, Turn: req.Turn, Duration: time.Since(attemptStart), Err: err}
		if r != nil {
			ev.Usage, ev.Response = r.Usage, r.Content
		}
		rs.tree.emit(ctx, ev)
		if err != nil {
			return err
		}
		resp = r
		return nil
	})
	var be *llm.BudgetError
	if errors.As(err, &be) {
		rs.tree.exceeded.CompareAndSwap(nil, be)
	}
	return resp, requests, err
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

func missionEnd(ctx, missionCtx context.Context) *messages.Fail {
	d, ok := missionCtx.Deadline()
	timedOut := ok && !time.Now().Before(d)
	if ctx.Err() != nil && !timedOut {
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
