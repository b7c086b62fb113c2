package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Derive and apply: Compile asks the model once for a PTC-Lisp function
// that fulfils the agent's signature; the Compiled program then runs on any
// number of inputs with no model at all (the specification's
// SubAgent.compile and CompiledAgent).

// Compile failure reasons and document format.
const (
	// ReasonNotCompilable: the agent has a tool that needs an LLM at run
	// time (a sub-agent or an LLM tool), so it cannot be compiled (DD-8).
	ReasonNotCompilable = "not_compilable"
	// ReasonInvalidCompiled: a compiled program or document does not hold
	// a one-argument function, or its signature or format is bad.
	ReasonInvalidCompiled = "invalid_compiled"

	// CompiledFormat names the persisted document (see Compiled.MarshalJSON).
	CompiledFormat = "ptc-compiled"
	// CompiledVersion is the document version written by MarshalJSON;
	// LoadCompiled accepts versions 1 to CompiledVersion.
	CompiledVersion = 1
	// MaxCompiledSource bounds the source of a compiled program.
	MaxCompiledSource = 64 << 10
)

// Sentinels of compile errors for errors.Is.
var (
	// ErrNotCompilable matches Compile (and Load) refusing an agent or tool
	// set with a tool that needs an LLM at run time.
	ErrNotCompilable = &Error{Kind: KindSpec, Reason: ReasonNotCompilable}
	// ErrInvalidCompiled matches Load and LoadCompiled rejecting a program
	// or document.
	ErrInvalidCompiled = &Error{Kind: KindSpec, Reason: ReasonInvalidCompiled}
)

// Names under which an execution passes the function and its argument to
// the one-line call program. They cannot collide with anything a model
// writes in practice, and a program that defines them is rejected.
const (
	compiledFnName   = "ptc-compiled-fn"
	compiledArgsName = "ptc-compiled-args"
	compiledCall     = "(" + compiledFnName + " " + compiledArgsName + ")"
	// definitionTimeout bounds evaluating a definition and probing it.
	definitionTimeout = time.Second
)

// CompileOptions configure Compile. A model is required: Model, or LLM
// with Registry, or the agent's own Spec.Model / Spec.LLM.
type CompileOptions struct {
	// Model is the model that writes the function (used once).
	Model llm.Model
	// LLM names the model in Registry (used when Model is nil).
	LLM string
	// Registry maps model names to models.
	Registry llm.Registry
	// Samples are example inputs (maps of the signature's named inputs).
	// They are shown to the model (firewalled fields hidden) and every
	// candidate function must run on each of them and return a value that
	// validates against the signature. Each must validate against the
	// signature's inputs.
	Samples []map[string]any
	// MaxTurns bounds the attempts (default: the agent's MaxTurns).
	MaxTurns int
	// LLMOpts are merged over Spec.LLMOpts for every request.
	LLMOpts map[string]any
	// MaxSamplesShown bounds how many samples the prompt shows (default 3);
	// all of them are still run.
	MaxSamplesShown int
	// Observer, if set, receives the compilation's events: run.start, per
	// turn turn.start, llm.start, llm.stop and turn.stop (with the
	// Program), then run.stop, whose Step is the compile Step (on success
	// its Return is the Source). Tool calls of the sample runs are not
	// reported.
	Observer Observer
}

// CompileMetadata describes how a program was derived.
type CompileMetadata struct {
	// CompiledAt is when Compile finished (UTC).
	CompiledAt time.Time `json:"compiled_at"`
	// Model is the registry name of the model, or the provider's model name
	// when the model was given directly; empty when unknown.
	Model string `json:"model,omitempty"`
	// Turns is the number of model answers it took.
	Turns int `json:"turns"`
	// InputTokens, OutputTokens, TotalTokens and Requests sum the
	// compilation's token use and LLM requests.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
	Requests     int   `json:"requests"`
}

// Compiled is a derived PTC-Lisp function with its signature: the
// specification's CompiledAgent. Execute runs it with no model; tools are
// still called. Build one with Compile, Load or LoadCompiled; the zero
// value is not usable. A Compiled is immutable and safe for concurrent use.
type Compiled struct {
	// Name and Description identify the program (from the agent).
	Name        string
	Description string
	// Source is the inspectable PTC-Lisp source: a (fn [args] ...) or a
	// (defn name [args] ...), possibly after helper defns.
	Source string
	// Signature is the contract, in canonical signature syntax.
	Signature string
	// Metadata describes the compilation (zero for Load).
	Metadata CompileMetadata

	sig          *signature.Signature
	mode         signature.Mode
	fn           lisp.Value            // the *lisp.Closure
	defs         map[string]lisp.Value // top-level defs of Source (helpers)
	tools        map[string]*boundTool
	toolNames    []string
	ltools       lisp.Tools
	timeout      time.Duration
	maxToolCalls int
}

// Compile derives a PTC-Lisp function from the agent: the model is asked
// (with the agent's language reference, signature, tools, mission and the
// samples) for a (fn [args] ...) taking one map of the named inputs. Each
// answer is checked: it must parse, evaluate to a function of exactly one
// argument without calling tools, run on every sample and return a value
// that validates against the signature. Failures are fed back and cost a
// turn, up to MaxTurns.
//
// Agents with an LLM tool or a sub-agent tool (Tool.NeedsLLM)
// are refused before any model call with an *Error matching
// ErrNotCompilable and naming the tool (DD-8). A sample that does not
// match the signature's inputs (in the agent's validation mode, when it is
// fatal) is an ErrInvalidSpec error naming samples[i]. When no function passes, the
// error is an *Error of KindRun carrying a Step with the compile trace
// (reason max_turns_exceeded with details.last_error, or llm_error,
// canceled, mission_timeout...). Compile is safe for concurrent use.
func Compile(ctx context.Context, a *Agent, opts CompileOptions) (*Compiled, error) {
	if err := checkCompilable(a.tools); err != nil {
		return nil, err
	}
	if a.spec.Output == OutputText {
		return nil, &Error{Kind: KindSpec, Field: "output", Reason: ReasonNotCompilable, Msg: "text-mode agents cannot be compiled"}
	}
	for i, s := range opts.Samples {
		if len(a.sig.Inputs) == 0 || !a.spec.Validation.Fatal() {
			break
		}
		if err := a.sig.ValidateInputs(s, a.spec.Validation); err != nil {
			return nil, &Error{Kind: KindSpec, Field: fmt.Sprintf("samples[%d]", i), Msg: "sample does not match the signature inputs:\n" + err.Error(), Err: err}
		}
	}
	start := time.Now()
	st := &messages.Step{Version: messages.StepVersion, Signature: a.sig.String(), Mode: messages.ModeLisp}
	ev := &tree{observer: opts.Observer}
	name := a.Name()
	ev.emit(ctx, Event{Kind: EventRunStart, Agent: name, Depth: 1})
	stop := func() {
		status := "ok"
		if st.Fail != nil {
			status = "error"
		}
		ev.emit(ctx, Event{Kind: EventRunStop, Agent: name, Depth: 1, Duration: time.Since(start), Step: st, Status: status})
	}
	fail := func(f *messages.Fail) (*Compiled, error) {
		st.Usage.Duration = time.Since(start)
		st.Fail = f
		stop()
		return nil, &Error{Kind: KindRun, Reason: f.Reason, Msg: f.Message, Step: st}
	}
	model, modelName, err := a.resolveModel(RunOptions{Model: opts.Model, LLM: opts.LLM, Registry: opts.Registry}, nil, opts.Registry)
	if err != nil {
		return fail(&messages.Fail{Reason: reasonOf(err), Message: llmMessage(err)})
	}
	missionCtx, cancel := context.WithTimeout(ctx, a.missionTimeout())
	defer cancel()

	maxT := opts.MaxTurns
	if maxT <= 0 {
		maxT = a.maxTurns()
	}
	llmOpts := a.llmOpts(opts.LLMOpts)
	policy := a.retryPolicy()
	sec := &secrets{}
	for _, s := range opts.Samples {
		sec.collect(s, false)
	}
	sys := a.compileSystemPrompt()
	msgs := []llm.Message{llm.UserText(sec.scrub(a.compileUserMessage(opts)))}
	ltools := compiledLispTools(a.tools, a.spec.Validation)
	var lastErr string

	for turn := 1; turn <= maxT; turn++ {
		if f := missionEnd(ctx, missionCtx); f != nil {
			return fail(f)
		}
		turnStart := time.Now()
		ev.emit(ctx, Event{Kind: EventTurnStart, Agent: name, Depth: 1, Turn: turn})
		endTurn := func(rec *messages.Turn) {
			rec.Duration = time.Since(turnStart)
			st.Trace = append(st.Trace, *rec)
			ev.emit(ctx, Event{Kind: EventTurnStop, Agent: name, Depth: 1, Turn: turn, Duration: rec.Duration,
				Usage: llm.Usage{InputTokens: rec.Usage.InputTokens, OutputTokens: rec.Usage.OutputTokens}, Program: rec.Program})
		}
		rec := messages.Turn{Number: turn, StartedAt: turnStart}
		req := llm.Request{System: sys, Messages: msgs, Turn: turn, Prompt: a.spec.Prompt,
			ToolNames: a.toolKeys, Opts: llmOpts, CacheSystem: true}
		var resp *llm.Response
		requests := 0
		lerr := policy.Do(missionCtx, func(ctx context.Context, _ int) error {
			actx, cancel := context.WithTimeout(ctx, a.llmTimeout())
			defer cancel()
			requests++
			attempt := time.Now()
			ev.emit(ctx, Event{Kind: EventLLMStart, Agent: name, Depth: 1, Turn: turn, Messages: req.Messages})
			r, err := model.Complete(actx, req)
			if err == nil && r == nil {
				err = errors.New("model returned no response")
			}
			if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = llm.MarkRetryable(fmt.Errorf("llm call exceeded the llm_timeout of %s: %w", a.llmTimeout(), err), llm.ClassTimeout)
			}
			e := Event{Kind: EventLLMStop, Agent: name, Depth: 1, Turn: turn, Duration: time.Since(attempt), Err: err}
			if r != nil {
				e.Usage, e.Response = r.Usage, r.Content
			}
			ev.emit(ctx, e)
			resp = r
			return err
		})
		st.Usage.Requests += requests
		if lerr != nil {
			rec.Error = lerr.Error()
			endTurn(&rec)
			if f := missionEnd(ctx, missionCtx); f != nil {
				return fail(f)
			}
			return fail(&messages.Fail{Reason: ReasonLLMError, Message: lerr.Error(), Op: "llm"})
		}
		recordTurn(st, &rec, resp, requests)
		if modelName == "" {
			modelName = resp.Model
		}
		msgs = append(msgs, llm.AssistantText(resp.Content))

		var feedback string
		code, ok := ParseResponse(resp.Content)
		if !ok {
			rec.Error = "no code found in the response"
			feedback = "Your answer holds no program. Answer with one ```clojure block holding the (fn [args] ...)."
		} else {
			rec.Program = code
			c, cerr := a.tryCandidate(missionCtx, code, opts.Samples, ltools, &rec)
			for _, tc := range rec.ToolCalls {
				sec.collect(tc.Result, false)
			}
			if cerr == nil {
				endTurn(&rec)
				c.Metadata = CompileMetadata{CompiledAt: time.Now().UTC(), Model: modelName, Turns: st.Usage.Turns,
					InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens,
					TotalTokens: st.Usage.TotalTokens, Requests: st.Usage.Requests}
				st.Return = c.Source
				st.Usage.Duration = time.Since(start)
				stop()
				return c, nil
			}
			if f := missionEnd(ctx, missionCtx); f != nil {
				rec.Error = modelText(cerr)
				endTurn(&rec)
				return fail(f)
			}
			rec.Error = modelText(cerr)
			feedback = "Error: " + rec.Error
		}
		lastErr = rec.Error
		if turn < maxT {
			feedback = sec.scrub(feedback + "\n" + turnLine(turn+1, maxT))
			rec.Feedback = feedback
			msgs = append(msgs, llm.UserText(feedback))
		}
		endTurn(&rec)
	}
	f := &messages.Fail{Reason: ReasonMaxTurns, Message: fmt.Sprintf("no valid function after %d turns", maxT)}
	if lastErr != "" {
		f.Details = map[string]any{"last_error": lastErr}
	}
	return fail(f)
}

// tryCandidate defines code and runs it on every sample.
func (a *Agent) tryCandidate(ctx context.Context, code string, samples []map[string]any, ltools lisp.Tools, rec *messages.Turn) (*Compiled, error) {
	c, err := newCompiled(code, a.sig, a.spec.Validation, a.tools, ltools)
	if err != nil {
		return nil, err
	}
	c.Name, c.Description = a.Name(), a.spec.Description
	c.timeout, c.maxToolCalls = a.programTimeout(), a.spec.MaxToolCalls
	for i, s := range samples {
		step, err := c.Execute(ctx, s)
		if len(step.Trace) > 0 {
			rec.ToolCalls = append(rec.ToolCalls, step.Trace[0].ToolCalls...)
			rec.Prints = append(rec.Prints, step.Trace[0].Prints...)
		}
		if err != nil {
			return nil, fmt.Errorf("on sample %d: %s%s", i+1, failText(step.Fail), a.argReminder())
		}
		if i == 0 {
			rec.Result = step.Return
		}
	}
	return c, nil
}

// modelText is an error as the model should read it (without the
// "agent: field:" prefix of *Error).
func modelText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Msg != "" {
		return e.Msg
	}
	return err.Error()
}

// argReminder reminds the model of the argument shape after a failure on
// a sample (a common mistake is a function of the input itself instead of
// the map of named inputs).
func (a *Agent) argReminder() string {
	if len(a.sig.Inputs) == 0 {
		return "\nReminder: the function is called with one argument, an empty map."
	}
	names := make([]string, len(a.sig.Inputs))
	for i, p := range a.sig.Inputs {
		names[i] = p.Name
	}
	return fmt.Sprintf("\nReminder: the function's one argument is the map of named inputs; destructure it as (fn [{:keys [%s]}] ...).", strings.Join(names, " "))
}

func failText(f *messages.Fail) string {
	if f == nil {
		return "failed"
	}
	if strings.Contains(f.Message, "\n") || strings.HasPrefix(f.Message, f.Reason) {
		return f.Message
	}
	return f.Reason + ": " + f.Message
}

const compilePrompt = `You are a PTC-Lisp function writer. You write one PTC-Lisp function that fulfils a contract. The function is compiled once and then applied, without you, to many inputs: it must be general, deterministic and correct for every input of the contract, not only for the samples you see.`

const compileOutputFormat = `## Output format
Answer with exactly one ` + "```clojure" + ` block holding the function: (fn [args] ...) or (defn name [args] ...), optionally after helper (defn ...) forms. The function takes exactly one argument: a map of the named inputs (destructure it with {:keys [...]}). Its value is the result; it must match the expected output. It may call the listed tools; it must not call them outside the function. Do not use memory across calls, println or ctx/fail; use (fail {:reason :some_reason :message "why"}) for inputs it cannot handle.`

// compileSystemPrompt is the system prompt of Compile: the compile role,
// the agent's language reference, error recovery and the function format,
// with the agent's Prefix and Suffix (an Override replaces the role and
// reference but keeps the function format).
func (a *Agent) compileSystemPrompt() string {
	sp := a.spec.SystemPrompt
	var parts []string
	if sp.Override != "" {
		parts = append(parts, sp.Override)
	} else {
		if sp.Prefix != "" {
			parts = append(parts, sp.Prefix)
		}
		parts = append(parts, compilePrompt)
		switch {
		case sp.LanguageSpec != "" && !strings.ContainsAny(sp.LanguageSpec, " \n"):
			if f, ok := languagePreset(sp.LanguageSpec); ok {
				parts = append(parts, f(a))
			} else {
				parts = append(parts, sp.LanguageSpec)
			}
		case sp.LanguageSpec != "":
			parts = append(parts, sp.LanguageSpec)
		default:
			parts = append(parts, languageReference(a, false))
		}
	}
	parts = append(parts, "## Error recovery\nIf your function does not parse, is not a one-argument function, fails on a sample or returns a value that does not match the expected output, you get \"Error: ...\" with the position and a hint. Fix the cause and answer with the whole corrected function.")
	parts = append(parts, compileOutputFormat)
	if sp.Override == "" && sp.Suffix != "" {
		parts = append(parts, sp.Suffix)
	}
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], "\n")
	}
	sp.Suffix = "" // appended (and trimmed) above; sp is a copy
	return sp.finish(parts)
}

// compileUserMessage holds the contract, the tools, the samples and the
// mission.
func (a *Agent) compileUserMessage(opts CompileOptions) string {
	var b strings.Builder
	b.WriteString("## Function arguments (one map)\n")
	if len(a.sig.Inputs) == 0 {
		b.WriteString("(no named inputs: the function is called with an empty map)\n")
	}
	for _, p := range a.sig.Inputs {
		ts := signature.PromptType(p.Type)
		if ts == "" {
			ts = ":any"
		}
		fmt.Fprintf(&b, "- :%s %s", p.Name, ts)
		if signature.IsFirewalled(p.Name) {
			b.WriteString(" (firewalled: usable, value hidden)")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\n## Tools the function can call\n")
	if len(a.toolKeys) == 0 {
		b.WriteString("(none)\n")
	}
	for _, ts := range a.toolSchemas() {
		writeToolLine(&b, ts)
	}
	b.WriteString("\n## Expected output\n")
	fmt.Fprintf(&b, "The function's value, of type %s.\n", outputType(a.sig.Output))
	writeFirewallNote(&b, a.sig.Output)
	if len(opts.Samples) > 0 {
		shown := opts.MaxSamplesShown
		if shown <= 0 {
			shown = 3
		}
		fmt.Fprintf(&b, "\n## Sample inputs (%d; your function must work on all of them)\n", len(opts.Samples))
		for i, s := range opts.Samples {
			if i == shown {
				fmt.Fprintf(&b, "... %d more samples not shown\n", len(opts.Samples)-shown)
				break
			}
			fmt.Fprintf(&b, "%d. %s\n", i+1, samplePreview(s, a.promptLimit()))
		}
	}
	b.WriteString("\n## Mission (the inputs appear as {{placeholders}})\n")
	b.WriteString(a.spec.Prompt)
	b.WriteString("\n\nWrite the function now.")
	return b.String()
}

// samplePreview prints a sample truncated like a result preview, with
// firewalled fields shown as <Firewalled>.
func samplePreview(s map[string]any, lim PromptLimit) string {
	v, err := lisp.FromGo(s)
	if err != nil {
		return "?"
	}
	text, _ := lisp.Preview(v, lisp.PreviewOptions{MaxItems: lim.List, MaxString: lim.String})
	return text
}

// checkCompilable refuses tools that need an LLM at run time (DD-8): an
// LLM tool, a sub-agent tool (Tool.NeedsLLM), or a tool with no Go
// function behind it. The error
// names the first such tool in name order.
func checkCompilable(tools map[string]*boundTool) error {
	for _, name := range sortedKeys(tools) {
		t := tools[name].tool
		switch {
		case t.llm:
			return &Error{Kind: KindSpec, Field: "tools[" + name + "]", Reason: ReasonNotCompilable,
				Msg: fmt.Sprintf("tool %q is an LLM tool: it needs an LLM at run time, so the agent cannot be compiled (only pure tools can)", name)}
		case t.sub != nil:
			return &Error{Kind: KindSpec, Field: "tools[" + name + "]", Reason: ReasonNotCompilable,
				Msg: fmt.Sprintf("tool %q is a sub-agent: it needs an LLM at run time, so the agent cannot be compiled (only pure tools can)", name)}
		case t.fn == nil:
			return &Error{Kind: KindSpec, Field: "tools[" + name + "]", Reason: ReasonNotCompilable,
				Msg: fmt.Sprintf("tool %q has no Go function: only pure tools can be compiled", name)}
		}
	}
	return nil
}

// compiledLispTools adapts pure tools for compiled executions: input
// coercion and validation and output validation in mode, like the loop,
// without its recording (lisp.Result.ToolCalls records the calls).
// Coercion warnings go to the execution's collector in ctx.
func compiledLispTools(tools map[string]*boundTool, mode signature.Mode) lisp.Tools {
	out := make(lisp.Tools, len(tools))
	for name, bt := range tools {
		out[name] = lisp.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			return callPure(ctx, bt, args, mode)
		})
	}
	return out
}

type warnKey struct{}

// execWarnings collects the warnings of one execution; tools may run in
// pmap branches, so it is guarded.
type execWarnings struct {
	mu   sync.Mutex
	list []string
}

func (w *execWarnings) add(ws ...string) {
	w.mu.Lock()
	w.list = append(w.list, ws...)
	w.mu.Unlock()
}

func callPure(ctx context.Context, bt *boundTool, args map[string]any, mode signature.Mode) (any, error) {
	validate := bt.sig != nil && mode != signature.Disabled
	if validate {
		coerced, warns, verr := bt.sig.CoerceInputs(args, mode)
		w, _ := ctx.Value(warnKey{}).(*execWarnings)
		if w != nil && len(warns) > 0 {
			w.add(prefixLines(bt.name+": ", strings.Join(warns, "\n"))...)
		}
		if verr != nil {
			if mode.Fatal() {
				return nil, fmt.Errorf("tool validation errors:\n%s", verr.Error())
			}
			if w != nil {
				w.add(prefixLines(bt.name+": ", verr.Error())...)
			}
		}
		args = coerced
	}
	out, err := safeCall(ctx, bt.tool.fn, args)
	if err != nil {
		return nil, err
	}
	if validate && bt.tool.Signature != "" {
		if needsPlain(out) {
			if out, err = messages.FromJSON(out); err != nil {
				return nil, err
			}
		}
		if verr := bt.sig.ValidateOutput(out, mode); verr != nil {
			if mode.Fatal() {
				return nil, fmt.Errorf("tool output validation errors:\n%s", verr.Error())
			}
			if w, _ := ctx.Value(warnKey{}).(*execWarnings); w != nil {
				w.add(prefixLines(bt.name+" output: ", verr.Error())...)
			}
		}
	}
	return out, nil
}

// stubTools has every tool name; calling one is an error. Definitions and
// the arity probe run with them, so that defining a program never calls
// a real tool.
func stubTools(names []string) lisp.Tools {
	out := make(lisp.Tools, len(names))
	for _, n := range names {
		out[n] = lisp.ToolFunc(func(context.Context, map[string]any) (any, error) {
			return nil, fmt.Errorf("tool %s called while defining the function: tools may only be called inside it", n)
		})
	}
	return out
}

// invalidCompiled is a Load / definition error.
func invalidCompiled(field, format string, args ...any) error {
	return &Error{Kind: KindSpec, Field: field, Reason: ReasonInvalidCompiled, Msg: fmt.Sprintf(format, args...)}
}

// newCompiled defines source and checks it is a one-argument function.
// The definition runs with stub tools (any call is an error), a short
// timeout and no inputs; its top-level defs (helpers) are kept for every
// execution.
func newCompiled(source string, sig *signature.Signature, mode signature.Mode, tools map[string]*boundTool, ltools lisp.Tools) (*Compiled, error) {
	src := strings.TrimSpace(source)
	if src == "" {
		return nil, invalidCompiled("source", "empty program: want (fn [args] ...)")
	}
	if !utf8.ValidString(src) {
		return nil, invalidCompiled("source", "program is not valid UTF-8")
	}
	if len(src) > MaxCompiledSource {
		return nil, invalidCompiled("source", "program of %d bytes exceeds the limit of %d", len(src), MaxCompiledSource)
	}
	names := sortedKeys(tools)
	stubs := stubTools(names)
	ctx, cancel := context.WithTimeout(context.Background(), definitionTimeout)
	defer cancel()
	res, err := lisp.Exec(ctx, src, lisp.Options{Tools: stubs, Timeout: definitionTimeout, MaxMemoryBytes: -1})
	if err != nil {
		return nil, invalidCompiled("source", "%s", lispDetail(err))
	}
	fn := res.Value
	if v, ok := fn.(*lisp.Var); ok {
		fn = res.Memory[v.Name]
	}
	if _, ok := fn.(*lisp.Closure); !ok {
		return nil, invalidCompiled("source", "the program must evaluate to a function (fn [args] ...), got %s %s",
			lisp.TypeName(fn), lisp.Sprint(fn, lisp.PrintOptions{MaxLen: 60}))
	}
	for _, reserved := range []string{compiledFnName, compiledArgsName} {
		if _, ok := res.Memory[reserved]; ok {
			return nil, invalidCompiled("source", "the name %s is reserved", reserved)
		}
	}
	defs := make(map[string]lisp.Value, len(res.Memory))
	maps.Copy(defs, res.Memory)
	// Probe the arity: calling with no argument must fail at the call
	// itself with "expects 1 arg" (before the body runs).
	probe := make(map[string]any, len(defs)+1)
	maps.Copy(probe, defs)
	probe[compiledFnName] = fn
	_, perr := lisp.Exec(ctx, "("+compiledFnName+")", lisp.Options{Memory: probe, Tools: stubs, Timeout: definitionTimeout, MaxMemoryBytes: -1})
	var le *lisp.Error
	if !errors.As(perr, &le) || le.Kind != lisp.KindArity || le.Pos.Line != 1 || le.Pos.Col != 1 || !strings.Contains(le.Msg, "expects 1 arg,") {
		got := "it accepts no argument"
		if le != nil && le.Kind == lisp.KindArity && le.Pos.Line == 1 && le.Pos.Col == 1 {
			got = le.Msg
		}
		return nil, invalidCompiled("source", "the function must take exactly one argument, a map of the named inputs (%s)", got)
	}
	return &Compiled{Source: src, Signature: sig.String(), sig: sig, mode: mode, fn: fn, defs: defs,
		tools: tools, toolNames: names, ltools: ltools, timeout: messages.DefaultProgramTimeout}, nil
}

func lispDetail(err error) string {
	var le *lisp.Error
	if errors.As(err, &le) {
		return lispErrorText(le)
	}
	return err.Error()
}

// Execute runs the program on args, a map of the signature's named
// inputs (DD-10: always a map, also for one input or none). No model is
// called; tools are. The arguments are also available to the program as
// ctx/name. Inputs are validated against the signature (a failure is
// input_validation_error in the fatal modes, warnings otherwise), the
// result is validated the same way (validation_error); a program's
// (fail ...) keeps its reason; lisp errors keep theirs (type_error,
// timeout, tool_error...).
//
// The Step is never nil: Return is the value, Usage counts tool calls and
// the duration, and Trace holds one turn with the tool calls and println
// output. On failure err is an *Error of KindRun carrying the Step, as
// for Agent.Run. Execute is safe for concurrent use.
func (c *Compiled) Execute(ctx context.Context, args map[string]any) (*messages.Step, error) {
	start := time.Now()
	st := &messages.Step{Version: messages.StepVersion, Signature: c.Signature, Mode: messages.ModeLisp}
	finish := func(f *messages.Fail) (*messages.Step, error) {
		st.Usage.Duration = time.Since(start)
		if f == nil {
			return st, nil
		}
		st.Fail = f
		return st, &Error{Kind: KindRun, Reason: f.Reason, Msg: f.Message, Step: st}
	}
	if args == nil {
		args = map[string]any{}
	}
	if len(c.sig.Inputs) > 0 && c.mode != signature.Disabled {
		if verr := c.sig.ValidateInputs(args, c.mode); verr != nil {
			if c.mode.Fatal() {
				return finish(&messages.Fail{Reason: ReasonInputValidation, Message: "input validation failed:\n" + verr.Error()})
			}
			st.Warnings = append(st.Warnings, prefixLines("input ", verr.Error())...)
		}
	}
	vals := make(map[string]any, len(args))
	for k, v := range args {
		lv, err := lisp.FromGo(v)
		if err != nil {
			return finish(&messages.Fail{Reason: "invalid_context", Message: fmt.Sprintf("argument %s: %v", k, err)})
		}
		vals[k] = lv
	}
	argMap, err := lisp.FromGo(vals)
	if err != nil {
		return finish(&messages.Fail{Reason: "invalid_context", Message: err.Error()})
	}
	mem := make(map[string]any, len(c.defs)+2)
	for k, v := range c.defs {
		mem[k] = v
	}
	mem[compiledFnName] = c.fn
	mem[compiledArgsName] = argMap
	var w *execWarnings
	if len(c.ltools) > 0 && c.mode != signature.Disabled {
		w = &execWarnings{}
		ctx = context.WithValue(ctx, warnKey{}, w)
	}
	res, xerr := lisp.Exec(ctx, compiledCall, lisp.Options{Context: vals, Memory: mem, Tools: c.ltools,
		Timeout: c.timeout, MaxMemoryBytes: -1, MaxToolCalls: c.maxToolCalls, FloatPrecision: FloatPrecision})
	turn := messages.Turn{Number: 1, Program: c.Source, StartedAt: start, ToolCalls: res.ToolCalls, Prints: res.Prints}
	st.Usage.ToolCalls = len(res.ToolCalls)
	if w != nil {
		st.Warnings = append(st.Warnings, w.list...)
	}
	if xerr != nil {
		var le *lisp.Error
		if !errors.As(xerr, &le) {
			le = &lisp.Error{Kind: lisp.KindInternal, Msg: xerr.Error(), Err: xerr}
		}
		var f *messages.Fail
		if le.Kind == lisp.KindFail {
			f = programFail(le)
		} else {
			f = &messages.Fail{Reason: le.Reason(), Message: c.errorText(le), Op: le.Op}
		}
		turn.Error = f.Message
		turn.Duration = time.Since(start)
		st.Trace = []messages.Turn{turn}
		return finish(f)
	}
	value := messages.RoundFloats(lisp.ToGo(res.Value), FloatPrecision)
	turn.Result = value
	turn.Duration = time.Since(start)
	st.Trace = []messages.Turn{turn}
	if c.mode != signature.Disabled && c.sig.Output != nil {
		if verr := c.sig.ValidateOutput(value, c.mode); verr != nil {
			if c.mode.Fatal() {
				text := validationText(verr, outputType(c.sig.Output))
				st.Trace[0].Error = text
				return finish(&messages.Fail{Reason: ReasonValidation, Message: text, Op: "return"})
			}
			st.Warnings = append(st.Warnings, prefixLines("return ", verr.Error())...)
		}
	}
	st.Return = value
	return finish(nil)
}

// errorText renders an execution error for the model like the loop does
// ("line:col: msg", caret snippet, "Hint:"), but with the snippet taken
// from Source: positions inside the function refer to it, not to the
// one-line call program that runs it.
func (c *Compiled) errorText(le *lisp.Error) string {
	var b strings.Builder
	b.WriteString(le.Error())
	b.WriteString(lisp.Snippet(c.Source, le.Pos))
	if le.Hint != "" {
		b.WriteString("\nHint: ")
		b.WriteString(le.Hint)
	}
	return b.String()
}

// WireSpec returns the program as a fleet payload for a mission of kind
// messages.KindCompiled ("apply at scale"), run once per input with no
// LLM. The mission must also list c.Tools() in Mission.Tools so the worker
// binds them:
//
//	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindCompiled,
//		Compiled: c.WireSpec(inputs), Tools: c.Tools()}
func (c *Compiled) WireSpec(inputs []map[string]any) *messages.CompiledSpec {
	return &messages.CompiledSpec{Program: c.Source, Signature: c.Signature, Inputs: inputs}
}

// Tools returns the names of the tools the program may call, sorted.
func (c *Compiled) Tools() []string { return slices.Clone(c.toolNames) }

// AsTool wraps the compiled program as a Tool: calling it runs Execute
// (no model, DD-8); a failed execution is a tool error. The tool carries
// the program's signature for the caller's prompt and is not validated
// again by the caller (Execute validates). It is pure, so agents using it
// can themselves be compiled.
func (c *Compiled) AsTool() Tool {
	desc := c.Description
	if desc == "" {
		desc = "compiled " + c.Name
	}
	name := c.Name
	return Tool{Signature: c.sig.String(), Description: desc, skip: true,
		fn: func(ctx context.Context, args map[string]any) (any, error) {
			st, err := c.Execute(ctx, args)
			if err != nil {
				return nil, fmt.Errorf("compiled %s failed: %s", name, failText(st.Fail))
			}
			return st.Return, nil
		}}
}

// TestCase is one input of Compiled.Validate and what to expect of it.
type TestCase struct {
	// Name labels the case in the report (default "case <n>").
	Name string
	// Args are the named inputs.
	Args map[string]any
	// Want, when non-nil, is the expected Return (compared as plain data,
	// numbers by value: 1 equals 1.0).
	Want any
	// WantFail, when set, expects the execution to fail with this reason.
	WantFail string
	// Check, when set, is called with the Return of a successful execution;
	// an error fails the case.
	Check func(got any) error
}

// CaseFailure is one failed test case.
type CaseFailure struct {
	// Index is the case's position (from 0); Name its label.
	Index int
	Name  string
	// Want and Got are the expected and actual values (Got is nil when the
	// execution failed).
	Want any
	Got  any
	// Reason is the execution's failure reason, if it failed.
	Reason string
	// Message says why the case failed.
	Message string
}

// ValidationReport is the result of Compiled.Validate.
type ValidationReport struct {
	// Total and Passed count the cases.
	Total, Passed int
	// Failures lists the failed cases in order.
	Failures []CaseFailure
}

// OK reports whether every case passed.
func (r ValidationReport) OK() bool { return len(r.Failures) == 0 }

// String summarizes the report, one line per failure.
func (r ValidationReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d cases passed", r.Passed, r.Total)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\n- %s: %s", f.Name, f.Message)
	}
	return b.String()
}

// Validate runs every case and reports
// which failed and why: an unexpected failure (with its reason and
// message), an unexpected success, a different value (want vs got) or a
// failed Check. Cases run one after another; ctx bounds them all.
func (c *Compiled) Validate(ctx context.Context, cases []TestCase) ValidationReport {
	r := ValidationReport{Total: len(cases)}
	for i, tc := range cases {
		name := tc.Name
		if name == "" {
			name = fmt.Sprintf("case %d", i+1)
		}
		cf := CaseFailure{Index: i, Name: name, Want: tc.Want}
		st, err := c.Execute(ctx, tc.Args)
		switch {
		case err != nil && tc.WantFail == "":
			cf.Reason, cf.Message = st.Fail.Reason, "execution failed: "+failText(st.Fail)
		case err != nil && st.Fail.Reason != tc.WantFail:
			cf.Reason, cf.Message = st.Fail.Reason, fmt.Sprintf("failed with %s, want %s: %s", st.Fail.Reason, tc.WantFail, st.Fail.Message)
		case err != nil:
			r.Passed++
			continue
		case tc.WantFail != "":
			cf.Got, cf.Message = st.Return, fmt.Sprintf("succeeded with %s, want failure %s", showValue(st.Return), tc.WantFail)
		case tc.Want != nil && !sameData(tc.Want, st.Return):
			cf.Got, cf.Message = st.Return, fmt.Sprintf("want %s, got %s", showValue(tc.Want), showValue(st.Return))
		case tc.Check != nil:
			if cerr := tc.Check(st.Return); cerr != nil {
				cf.Got, cf.Message = st.Return, "check failed: "+cerr.Error()
				break
			}
			r.Passed++
			continue
		default:
			r.Passed++
			continue
		}
		r.Failures = append(r.Failures, cf)
	}
	return r
}

// sameData compares plain data through the interpreter's equality
// (numbers by value, keys as strings).
func sameData(a, b any) bool {
	la, err1 := lisp.FromGo(a)
	lb, err2 := lisp.FromGo(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return lisp.Equal(la, lb)
}

func showValue(v any) string {
	lv, err := lisp.FromGo(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return lisp.Sprint(lv, lisp.PrintOptions{NoFirewall: true, MaxLen: 300})
}

// LoadOptions configure Load and LoadCompiled.
type LoadOptions struct {
	// Tools are the tools the program may call, by name. Only pure tools
	// are accepted (not sub-agents). A document's listed tools must all be
	// given.
	Tools map[string]Tool
	// Validation is the signature validation mode of executions (default
	// Enabled); a document's own mode is used when this is zero.
	Validation signature.Mode
	// Timeout bounds one execution (default messages.DefaultProgramTimeout).
	Timeout time.Duration
	// MaxToolCalls caps tool calls per execution (0: unlimited).
	MaxToolCalls int
	// Name and Description label the program (a document's own are used
	// when these are empty).
	Name, Description string
}

// Load rebuilds a compiled program from its source and signature: the
// signature must parse (empty means
// "() -> :any"), the source must define
// a function of exactly one argument (checked without calling any tool),
// and every tool must be pure. Errors match ErrInvalidCompiled (or
// ErrNotCompilable) and name the field. Metadata is zero.
func Load(source, sig string, opts LoadOptions) (*Compiled, error) {
	s := &signature.Signature{Output: signature.Any}
	if strings.TrimSpace(sig) != "" {
		var err error
		if s, err = signature.Parse(sig); err != nil {
			return nil, &Error{Kind: KindSpec, Field: "signature", Reason: ReasonInvalidCompiled, Msg: err.Error(), Err: err}
		}
	}
	tools := make(map[string]*boundTool, len(opts.Tools))
	for name, t := range opts.Tools {
		field := "tools[" + name + "]"
		if name == "" || strings.ContainsAny(name, " \t\n()[]{}\"/") || slices.Contains(reservedTools, name) {
			return nil, invalidCompiled(field, "invalid tool name %q", name)
		}
		if t.initErr != nil {
			return nil, invalidCompiled(field+".signature", "%s", t.initErr.Error())
		}
		bt, err := bindTool(name, t)
		if err != nil {
			return nil, invalidCompiled(field+".signature", "%s", err.Error())
		}
		tools[name] = bt
	}
	if err := checkCompilable(tools); err != nil {
		return nil, err
	}
	c, err := newCompiled(source, s, opts.Validation, tools, compiledLispTools(tools, opts.Validation))
	if err != nil {
		return nil, err
	}
	c.Name, c.Description = opts.Name, opts.Description
	if c.Name == "" {
		c.Name = "compiled"
	}
	if opts.Timeout > 0 {
		c.timeout = opts.Timeout
	}
	c.maxToolCalls = opts.MaxToolCalls
	return c, nil
}

// compiledDoc is the persisted form of a Compiled.
type compiledDoc struct {
	Format      string          `json:"format"`
	Version     int             `json:"version"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Signature   string          `json:"signature"`
	Source      string          `json:"source"`
	Tools       []string        `json:"tools,omitempty"`
	Validation  string          `json:"validation,omitempty"`
	Metadata    CompileMetadata `json:"metadata"`
}

// MarshalJSON writes the program as a small versioned JSON document:
// format "ptc-compiled", version, name, description, signature, source,
// the tool names, the validation mode and the metadata. LoadCompiled
// reads it back.
func (c *Compiled) MarshalJSON() ([]byte, error) {
	d := compiledDoc{Format: CompiledFormat, Version: CompiledVersion, Name: c.Name, Description: c.Description,
		Signature: c.Signature, Source: c.Source, Tools: c.toolNames, Metadata: c.Metadata}
	if c.mode != signature.Enabled {
		d.Validation = c.mode.String()
	}
	return json.MarshalIndent(d, "", "  ")
}

// LoadCompiled reads a document written by MarshalJSON and checks it again
// as Load does: format and version, signature, validation mode, a
// one-argument function, and every listed tool given in opts.Tools (the
// error names a missing one). Errors match ErrInvalidCompiled and name the
// field.
func LoadCompiled(data []byte, opts LoadOptions) (*Compiled, error) {
	var d compiledDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, &Error{Kind: KindSpec, Field: "document", Reason: ReasonInvalidCompiled, Msg: err.Error(), Err: err}
	}
	if d.Format != CompiledFormat {
		return nil, invalidCompiled("format", "%q is not %q", d.Format, CompiledFormat)
	}
	if d.Version < 1 || d.Version > CompiledVersion {
		return nil, invalidCompiled("version", "version %d not supported (want 1 to %d)", d.Version, CompiledVersion)
	}
	for _, name := range d.Tools {
		if _, ok := opts.Tools[name]; !ok {
			return nil, invalidCompiled("tools["+name+"]", "the program uses tool %q, which is not given", name)
		}
	}
	if opts.Validation == signature.Enabled && d.Validation != "" {
		m, err := signature.ParseMode(d.Validation)
		if err != nil {
			return nil, invalidCompiled("validation", "%s", err.Error())
		}
		opts.Validation = m
	}
	if opts.Name == "" {
		opts.Name = d.Name
	}
	if opts.Description == "" {
		opts.Description = d.Description
	}
	c, err := Load(d.Source, d.Signature, opts)
	if err != nil {
		return nil, err
	}
	c.Metadata = d.Metadata
	return c, nil
}
