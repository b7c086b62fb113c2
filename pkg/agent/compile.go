package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Derive and apply: Compile asks the model once for a PTC-Lisp function
// that fulfils the agent's signature (this file: authoring); the Compiled
// program then runs on any number of inputs with no model at all
// (compiled.go: execution; compiled_validate.go: test cases and reports;
// compiled_persist.go: Load and the JSON document).

// Compile failure reasons and document format.
const (
	// ReasonNotCompilable: the agent has a tool that needs an LLM at run
	// time (a sub-agent or an LLM tool), so it cannot be compiled.
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
// ErrNotCompilable and naming the tool. A sample that does not
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
	st := &messages.Step{Version: messages.StepVersion, Signature: a.sigText, Mode: messages.ModeLisp}
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
	if sp := a.spendLimit(); sp != nil {
		model = llm.WithBudget(model, modelName, sp)
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
			ToolNames: a.toolKeys, Opts: llmOpts, CacheSystem: true, CacheHistory: true, CacheKey: a.cacheKey()}
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
			return fail(llmFail(lerr, ""))
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
	c.lim = a.lim
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
		parts = append(parts, compilePrompt, a.languageSpec())
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

// checkCompilable refuses tools that need an LLM at run time: an
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
		case t.sub != nil || t.spawns:
			return &Error{Kind: KindSpec, Field: "tools[" + name + "]", Reason: ReasonNotCompilable,
				Msg: fmt.Sprintf("tool %q is a sub-agent: it needs an LLM at run time, so the agent cannot be compiled (only pure tools can)", name)}
		case t.fn == nil:
			return &Error{Kind: KindSpec, Field: "tools[" + name + "]", Reason: ReasonNotCompilable,
				Msg: fmt.Sprintf("tool %q has no Go function: only pure tools can be compiled", name)}
		}
	}
	return nil
}
