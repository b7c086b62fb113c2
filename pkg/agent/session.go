package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Session runs programs one at a time against an agent's tools, context
// and limits, the way the agent's turns run them, without a model: the
// programs come from a person (a REPL) instead. Memory (def, memory/put
// and the Memory Result Contract) carries over from one program to the
// next, tool calls go through the agent's validation, and each outcome is
// rendered with the same preview and firewall as the feedback the model
// reads. The last three successful values are kept in memory as *1, *2
// and *3 (hidden from the rendered memory names). A Session runs one
// program at a time.
type Session struct {
	a     *Agent
	rs    *runState
	tr    *toolRunner
	tools lisp.Tools
	// services are the host services of its programs (services.go)
	services lisp.HostFuncs
	inputs   map[string]any
	sec      *secrets

	mu   sync.Mutex
	mem  map[string]any
	last []lisp.Value // the last values, newest first (*1 *2 *3)
	turn int
	// hist is the history a compressed run would render (nil: the agent
	// does not compress)
	hist *historyOf
}

// Evaluation is the outcome of one Session.Eval.
type Evaluation struct {
	// Shown is the outcome as the model would read it: println output, the
	// firewalled and truncated result preview, memory names and tool
	// warnings, or the error with its caret snippet and hint.
	Shown string
	// Value is the full result in its plain Go form (nil on error). It is
	// not firewalled: it is for the person at the REPL.
	Value any
	// Signal says how the program ended (value, return or fail).
	Signal lisp.Signal
	// Err is the program's error, nil when it ran to a value or return.
	Err *lisp.Error
	// Validation is the return validation failure against the agent's
	// signature, for a program that called return ("" when it matched).
	Validation string
	// ToolCalls are the program's tool calls in order.
	ToolCalls []messages.ToolCall
	// Duration is the program's wall time.
	Duration time.Duration
}

// replNames are the memory names of the last three values.
var replNames = [...]string{"*1", "*2", "*3"}

// NewSession starts a Session of a with the run's context (opts.Context
// and ContextSignature, as for Run) and, for sub-agent tools, its model
// options. A context that does not resolve is an error.
func (a *Agent) NewSession(opts RunOptions) (*Session, error) {
	in, fail := resolveInput(opts)
	if fail != nil {
		return nil, &Error{Kind: KindRun, Reason: fail.Reason, Msg: fail.Message}
	}
	t := &tree{registry: opts.Registry, deadline: time.Now().Add(a.missionTimeout()), maxDepth: a.maxDepth(),
		observer: opts.Observer, trace: TraceOff, secrets: &secrets{}, emitLimits: &a.lim}
	t.budget.Store(int64(a.turnBudget()))
	rs := &runState{tree: t, name: a.Name(), depth: 1, model: opts.Model, modelName: opts.LLM}
	s := &Session{a: a, rs: rs, sec: t.secrets, mem: map[string]any{}, inputs: make(map[string]any, len(in.data))}
	s.sec.collect(in.data, false)
	for k, v := range in.data {
		lv, err := lisp.FromGo(v)
		if err != nil {
			return nil, fmt.Errorf("context key %s: %w", k, err)
		}
		s.inputs[k] = lv
	}
	if s.hist = a.newHistory(a.missionBody(in, s.sec), s.sec); s.hist != nil {
		s.hist.h.session = true
	}
	s.tr = &toolRunner{a: a, run: rs, mode: a.spec.Validation}
	s.tools = s.tr.lispTools()
	s.services = s.tr.services(newPlan(a.spec.Plan))
	return s, nil
}

// Eval runs one program. Cancelling ctx ends the program (and its tool
// calls) with a cancelled error; the Session stays usable.
func (s *Session) Eval(ctx context.Context, src string) *Evaluation {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn++
	a := s.a
	tt := &turnTools{turn: s.turn}
	s.tr.cur.Store(tt)
	s.rs.missionCtx = ctx
	res, xerr := lisp.Exec(ctx, src, a.programOptions(s.inputs, s.mem, s.tools, s.services, a.programTimeout(), s.sec))
	calls, warnings, _ := tt.snapshot()
	ev := &Evaluation{Signal: res.Signal, ToolCalls: calls, Duration: res.Duration}
	// the entry as a turn of a compressed run's history
	rec := messages.Turn{Number: s.turn, Program: src, Raw: src, ToolCalls: calls, Prints: res.Prints}
	if xerr != nil {
		var le *lisp.Error
		if !errors.As(xerr, &le) {
			le = &lisp.Error{Kind: lisp.KindInternal, Msg: xerr.Error(), Err: xerr}
		}
		ev.Err = le
		ev.Shown = s.trimTurn(errorFeedback(s.sec, res.Prints, lispErrorText(le), warnings, 1, 1))
		rec.Error = lispErrorText(le)
		s.record(&rec, ev, func() string { return errorReport(s.sec, res.Prints, lispErrorText(le), warnings) }, nil)
		return ev
	}
	if size := memorySize(res.Memory, a.memoryLimit()); a.spec.MemoryLimit >= 0 && size > a.memoryLimit() {
		msg := fmt.Sprintf("memory limit exceeded: %d > %d bytes", size, a.memoryLimit())
		ev.Err = &lisp.Error{Kind: lisp.KindMemory, Msg: msg}
		ev.Shown = s.trimTurn(errorFeedback(s.sec, res.Prints, msg, warnings, 1, 1))
		rec.Error = msg
		s.record(&rec, ev, func() string { return errorReport(s.sec, res.Prints, msg, warnings) }, nil)
		return ev
	}
	mem := make(map[string]any, len(res.Memory)+len(replNames))
	shownMem := make(map[string]lisp.Value, len(res.Memory))
	for k, v := range res.Memory {
		mem[k] = v
		s.sec.collect(v, signature.IsFirewalled(k))
		if !isReplName(k) {
			shownMem[k] = v
		}
	}
	ev.Value = messages.RoundFloats(lisp.ToGo(res.Value), FloatPrecision)
	s.last = append([]lisp.Value{res.Value}, s.last...)[:min(len(s.last)+1, len(replNames))]
	for i, v := range s.last {
		mem[replNames[i]] = v
	}
	s.mem = mem

	shown := *res
	shown.Memory = shownMem
	ev.Shown = s.trimTurn(resultFeedback(s.sec, &shown, a.promptLimit(), warnings, 1, 1))
	if res.Signal == lisp.SignalReturn {
		if verr := a.validateReturn(ev.Value); verr != nil {
			ev.Validation = validationText(verr, outputType(a.sig.Output))
		}
	}
	s.record(&rec, ev, func() string { return resultReport(s.sec, &shown, a.promptLimit(), warnings, forRecord) }, res.Value)
	return ev
}

// record adds an entry to the session's history (when the agent
// compresses): its outcome as shown, its report (what it did, without the
// memory line), the value it ended with (nil when it failed) and memory
// without *1 *2 *3.
func (s *Session) record(rec *messages.Turn, ev *Evaluation, report func() string, value lisp.Value) {
	if s.hist == nil {
		return
	}
	rec.Feedback = ev.Shown
	mem := make(map[string]any, len(s.mem))
	for k, v := range s.mem {
		if !isReplName(k) {
			mem[k] = v
		}
	}
	s.hist.add(rec, report(), "", value, mem)
}

// History returns the messages a run of the agent with compression would
// send the model after the programs evaluated so far, rendered by its
// HistoryStrategy; nil when the agent does not compress. A session has no
// turn limit, so the last entry's feedback holds no turn line.
func (s *Session) History() []llm.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist == nil {
		return nil
	}
	return s.hist.messages(s.a.strategy(), s.turn+1)
}

// programOptions are the interpreter options of one of a's programs: a
// turn's and a Session's alike, under the agent's program limits with the
// time limit given. The memory limit is the agent's, checked
// on the committed memory after the run (memorySize), so the
// interpreter's own printed-size check is off.
func (a *Agent) programOptions(ctxData, mem map[string]any, tools lisp.Tools, services lisp.HostFuncs, timeout time.Duration, sec *secrets) lisp.Options {
	o := programLimits(lisp.Options{
		Context: ctxData, Memory: mem, Tools: tools, Host: services, Limits: messages.Limits{MemoryLimit: -1},
		MemoryContract: !a.singleTurn(), FloatPrecision: FloatPrecision, Scrub: sec.hook(),
	}, a.lim)
	o.Limits.ProgramTimeout = timeout
	return o
}

// Memory returns the names held in memory (sorted), *1 *2 *3 included.
func (s *Session) Memory() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.mem)
}

// trimTurn drops the turn line that feedback ends with: a session has no
// turns.
func (s *Session) trimTurn(text string) string {
	return strings.TrimRight(strings.TrimSuffix(text, turnLine(1, 1)), "\n")
}

func isReplName(k string) bool {
	for _, n := range replNames {
		if k == n {
			return true
		}
	}
	return false
}

// Inputs returns the names of the session's ctx/ inputs (sorted).
func (s *Session) Inputs() []string {
	return sortedKeys(s.inputs)
}

// ToolSchemas lists the agent's callable tools as the model sees them.
func (a *Agent) ToolSchemas() []ToolSchema { return a.toolSchemas() }
