package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// The host services a program calls (lisp.HostBuiltins: their names,
// arities and docs live in pkg/lisp's builtin table): (emit v) streams a
// value to observers (the fleet's "emit" events), (llm-query {...}) asks
// the agent's model a one-shot question when Spec.LLMQuery is set, and
// (step-done "id" "summary") marks a step of Spec.Plan done.

// llmQueryName names the child agent of an llm-query call in traces and
// events, and its record among the turn's tool calls.
const llmQueryName = "llm-query"

// services returns the host functions of one run's programs: emit always,
// llm-query when the agent enables it, step-done when it has a plan.
func (tr *toolRunner) services(plan *planState) lisp.HostFuncs {
	out := lisp.HostFuncs{"emit": tr.emitValue}
	if tr.a.spec.LLMQuery {
		out[llmQueryName] = tr.llmQuery
	}
	if plan != nil {
		out["step-done"] = func(ctx context.Context, args []any) (any, error) {
			return nil, tr.stepDone(ctx, plan, args)
		}
	}
	return out
}

// serviceNames lists the host services the agent enables, in the order the
// first message shows them; emit, always on, is in the system prompt's
// language reference (emitLine).
func (a *Agent) serviceNames() []string {
	var names []string
	if a.spec.LLMQuery {
		names = append(names, llmQueryName)
	}
	if len(a.spec.Plan) > 0 {
		names = append(names, "step-done")
	}
	return names
}

// writeServices writes the "## Services" section of the first message, when
// the agent enables a service: each with its usage and doc, from the
// builtin table.
func (a *Agent) writeServices(b *strings.Builder) {
	names := a.serviceNames()
	if len(names) == 0 {
		return
	}
	hb := lisp.HostBuiltins()
	b.WriteString("\n## Services\n")
	for _, n := range names {
		fmt.Fprintf(b, "- %s: %s\n", hb[n].Usage, hb[n].Doc)
	}
}

// emitLine is the system prompt's line for emit, after the language
// reference, from the builtin table: every PTC-Lisp agent's programs may
// emit.
var emitLine = sync.OnceValue(func() string {
	e := lisp.HostBuiltins()["emit"]
	return "- " + e.Usage + ": " + e.Doc + ".\n"
})

// emitLimiter bounds what a mission's programs emit: each value's JSON
// size (max_emit_bytes) and their rate (emit_rate a second, in bursts of as
// many), shared by every agent of the tree.
type emitLimiter struct {
	maxBytes int64
	rate     float64 // per second; 0: unlimited
	mu       sync.Mutex
	tokens   float64
	last     time.Time
}

func newEmitLimiter(l Limits) *emitLimiter {
	e := &emitLimiter{maxBytes: unlimitedAs(l.MaxEmitBytes, 0)}
	if r := unlimitedAs(l.EmitRate, 0); r > 0 {
		e.rate, e.tokens = float64(r), float64(r)
	}
	return e
}

// take spends one emit of the rate; false when none is left.
func (e *emitLimiter) take(now time.Time) bool {
	if e.rate == 0 {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.last.IsZero() {
		e.tokens = min(e.rate, e.tokens+now.Sub(e.last).Seconds()*e.rate)
	}
	e.last = now
	if e.tokens < 1 {
		return false
	}
	e.tokens--
	return true
}

// emitValue is (emit v): the value, bounded, with the value of every "_"
// key masked and every secret the firewall's registry recorded (string,
// key or number) replaced, goes to observers at once as EventEmit.
func (tr *toolRunner) emitValue(ctx context.Context, args []any) (any, error) {
	rs := tr.run
	lim := rs.tree.emitLimiter()
	tooLarge := fmt.Errorf("the value takes more than %d bytes as JSON, the max_emit_bytes limit; emit a summary", lim.maxBytes)
	// a walk that stops past the limit first, so a large value is never
	// encoded whole; then the exact size
	if lim.maxBytes > 0 && !jsonSizeWithin(args[0], lim.maxBytes) {
		return nil, tooLarge
	}
	data, err := json.Marshal(args[0])
	if err != nil {
		return nil, fmt.Errorf("the value has no JSON form: %w", err)
	}
	if lim.maxBytes > 0 && int64(len(data)) > lim.maxBytes {
		return nil, tooLarge
	}
	if !lim.take(time.Now()) {
		return nil, fmt.Errorf("more than %d emits a second (the emit_rate limit); emit fewer, larger values", int(lim.rate))
	}
	v := messages.MaskFirewalled(redactDeep(rs.tree.secrets, args[0]))
	rs.tree.emit(ctx, Event{Kind: EventEmit, Agent: rs.name, Depth: rs.depth, Turn: tr.cur.Load().turn, Result: v})
	return nil, nil
}

// jsonSizeWithin reports whether plain data v may take at most limit
// bytes as JSON: it counts a lower bound of its size (strings without
// their escapes) and stops as soon as that passes limit.
func jsonSizeWithin(v any, limit int64) bool {
	var n int64
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			n += int64(len(x)) + 2
		case map[string]any:
			n += 2 + int64(max(len(x)-1, 0)) // braces and commas
			for k, e := range x {
				n += int64(len(k)) + 3 // "k":
				if n > limit || !walk(e) {
					return false
				}
			}
		case []any:
			n += 2 + int64(max(len(x)-1, 0)) // brackets and commas
			for _, e := range x {
				if n > limit || !walk(e) {
					return false
				}
			}
		default:
			n++ // a number, true, false or null: at least 1 byte
		}
		return n <= limit
	}
	return walk(v)
}

// redactDeep returns a copy of plain data v in which every string, map
// key and integer the registry knows as a secret (whole or inside a
// string) is replaced.
func redactDeep(s *secrets, v any) any {
	switch x := v.(type) {
	case string:
		return s.redact(x, false)
	case int64:
		d := strconv.FormatInt(x, 10)
		if s.scrub(d) != d {
			return firewalledText
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.redact(k, true)] = redactDeep(s, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactDeep(s, e)
		}
		return out
	}
	return v
}

// llmQuery is (llm-query {:prompt p :signature s :input x}): a one-shot
// text-mode child of the calling agent (its model, registry, turn budget,
// deadline and firewall registry), whose prompt is p followed by the input
// as JSON and whose answer must be of type s (default :string). The child's
// Step is recorded as a tool call named llm-query and its usage added to
// the turn's; a failed child fails the call.
func (tr *toolRunner) llmQuery(ctx context.Context, args []any) (any, error) {
	q, ok := args[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`takes a map such as {:prompt "..." :signature "{label :string}" :input x}, got %s`, typeName(args[0]))
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if k != "prompt" && k != "signature" && k != "input" {
			return nil, fmt.Errorf("unknown key :%s%s (it takes :prompt, :signature and :input)", k, signature.DidYouMean(k, []string{"prompt", "signature", "input"}))
		}
	}
	prompt, _ := q["prompt"].(string)
	if strings.TrimSpace(prompt) == "" {
		return nil, errors.New(":prompt is required, a non-empty string")
	}
	sigSrc := ":string"
	if s, ok := q["signature"]; ok && s != nil {
		if sigSrc, ok = s.(string); !ok {
			return nil, fmt.Errorf(":signature must be a string such as \"{label :string}\", got %s", typeName(s))
		}
	}
	sig, err := signature.Parse(sigSrc)
	if err != nil {
		return nil, fmt.Errorf(":signature: %w", err)
	}
	if len(sig.Inputs) > 0 || sig.ExtraInputs {
		return nil, fmt.Errorf(":signature is the answer's type alone, such as {label :string}, not %q", sigSrc)
	}
	tmpl, inputs := "{{prompt}}", "prompt :string"
	data := map[string]any{"prompt": prompt}
	if in, ok := q["input"]; ok {
		tmpl += "\n\nInput:\n{{input}}"
		inputs += ", input :any?"
		data["input"] = in
	}
	child, err := New(Spec{Name: llmQueryName, Prompt: tmpl, Signature: "(" + inputs + ") -> " + outputType(sig.Output),
		Output: OutputText, Limits: Limits{MaxTurns: 1}, Validation: tr.a.spec.Validation})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf(":signature: %s", e.Msg)
		}
		return nil, err
	}

	tt := tr.cur.Load()
	rs := tr.run
	rec := messages.ToolCall{Name: llmQueryName, Args: q, StartedAt: time.Now()}
	rs.tree.emit(ctx, Event{Kind: EventToolStart, Agent: rs.name, Depth: rs.depth, Turn: tt.turn, Tool: llmQueryName, Args: q})
	st, cerr := tr.runLinked(ctx, llmQueryName, child, nil, "", data)
	rec.Duration = time.Since(rec.StartedAt)
	rec.Child = st
	var out any
	if cerr != nil {
		f := *st.Fail
		f.Message = rs.tree.secrets.redact(f.Message, false)
		err = fmt.Errorf("the model's answer failed: %s", f.Error())
		rec.Error = err.Error()
		rs.tree.emit(ctx, Event{Kind: EventToolException, Agent: rs.name, Depth: rs.depth, Turn: tt.turn, Tool: llmQueryName, Args: q, Duration: rec.Duration, Err: err})
	} else {
		out = st.Return
		rec.Result = out
		rs.tree.emit(ctx, Event{Kind: EventToolStop, Agent: rs.name, Depth: rs.depth, Turn: tt.turn, Tool: llmQueryName, Result: out, Duration: rec.Duration})
	}
	tt.mu.Lock()
	tt.calls = append(tt.calls, rec)
	tt.usage.AddTokens(st.Usage)
	tt.usage.Requests += st.Usage.Requests
	tt.mu.Unlock()
	return out, err
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// planState is the state of an agent run's plan; programs mark its steps
// done (step-done), from pmap branches too.
type planState struct {
	mu    sync.Mutex
	steps []messages.PlanStep
}

// newPlan returns the state of plan with no step done, or nil for no plan.
func newPlan(plan []string) *planState {
	if len(plan) == 0 {
		return nil
	}
	p := &planState{steps: make([]messages.PlanStep, len(plan))}
	for i, d := range plan {
		p.steps[i] = messages.PlanStep{ID: strconv.Itoa(i + 1), Description: d}
	}
	return p
}

// snapshot returns a copy of the steps.
func (p *planState) snapshot() []messages.PlanStep {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.steps)
}

// render is the plan as the model reads it: each step with its id, state
// and summary, scrubbed by sec.
func (p *planState) render(sec *secrets) string {
	var b strings.Builder
	b.WriteString("## Plan\n")
	for _, s := range p.snapshot() {
		mark := " "
		if s.Done {
			mark = "x"
		}
		fmt.Fprintf(&b, "%s. [%s] %s", s.ID, mark, s.Description)
		if s.Summary != "" {
			b.WriteString(" — " + s.Summary)
		}
		b.WriteByte('\n')
	}
	b.WriteString(`Mark a step done with (step-done "id" "summary").`)
	return sec.scrub(b.String())
}

// stepDone is (step-done id summary): it marks the step done (again: the
// summary is replaced) and reports the plan's state to observers
// (EventPlan, Tool holding the step's id).
func (tr *toolRunner) stepDone(ctx context.Context, p *planState, args []any) error {
	var id string
	switch x := args[0].(type) {
	case string:
		id = x
	case int64:
		id = strconv.FormatInt(x, 10)
	default:
		return fmt.Errorf("the step id must be a string such as \"1\", got %s", typeName(args[0]))
	}
	summary := ""
	if len(args) > 1 && args[1] != nil {
		s, ok := args[1].(string)
		if !ok {
			return fmt.Errorf("the summary must be a string, got %s", typeName(args[1]))
		}
		summary = s
	}
	if len(summary) > messages.MaxPlanText {
		return fmt.Errorf("the summary takes %d bytes, at most %d", len(summary), messages.MaxPlanText)
	}
	sec := tr.run.tree.secrets
	p.mu.Lock()
	i, err := strconv.Atoi(id)
	if err != nil || i < 1 || i > len(p.steps) {
		n := len(p.steps)
		p.mu.Unlock()
		return fmt.Errorf("no step %q in the plan (its steps are 1 to %d)", id, n)
	}
	p.steps[i-1].Done = true
	p.steps[i-1].Summary = sec.scrub(summary)
	steps := slices.Clone(p.steps)
	p.mu.Unlock()
	rs := tr.run
	rs.tree.emit(ctx, Event{Kind: EventPlan, Agent: rs.name, Depth: rs.depth, Turn: tr.cur.Load().turn, Tool: id, Plan: steps})
	return nil
}
