package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Text mode (Spec.Output == OutputText): the model answers directly, in
// text or JSON, and calls tools through the provider's native tool-calling
// API instead of writing PTC-Lisp. The variant is detected from the tools
// and the return type:
//
//	tools  return type                     variant
//	no     none, :string, :keyword, :any   plain text (raw answer)
//	no     anything else                   JSON (validated)
//	yes    none, :string, :keyword, :any   tool loop, then text
//	yes    anything else                   tool loop, then JSON
//
// Everything else is the PTC-Lisp loop's machinery: model resolution and
// llm_retry (callModel), max_turns, the turn budget, the mission timeout,
// observers, usage and trace, input validation, tool execution with input
// coercion and output validation (toolRunner), the firewall scrubber.

// ReasonPromptTooLarge is the failure reason of a text-mode run whose
// rendered prompt passes 8 MiB (nested sections over large lists).
const ReasonPromptTooLarge = "prompt_too_large"

// Text-mode prompt texts (the exact wording is pinned by tests).
const (
	textCorePrompt  = "You are a helpful assistant. Complete the user's request directly."
	textToolsPrompt = "You can call the provided tools to get the information you need; call several at once when they do not depend on each other. When you have what you need, give your final answer without calling tools."
	textPlainFormat = "Answer in plain text."
	textLastTurn    = "This is your last turn: give your final answer now; tool calls will not be executed."
	textEmptyAnswer = "Your answer was empty. Please answer the request."
)

// textVariant is one of the four text-mode variants.
type textVariant uint8

const (
	variantText textVariant = iota + 1
	variantJSON
	variantToolText
	variantToolJSON
)

func (v textVariant) String() string {
	switch v {
	case variantText:
		return "text"
	case variantJSON:
		return "json"
	case variantToolText:
		return "tool+text"
	case variantToolJSON:
		return "tool+json"
	}
	return "unknown"
}

func (v textVariant) json() bool  { return v == variantJSON || v == variantToolJSON }
func (v textVariant) tools() bool { return v == variantToolText || v == variantToolJSON }

// textReturn reports whether an output type makes text mode answer with
// raw text: none, :string, :keyword or :any (optional or not).
func textReturn(t signature.Type) bool {
	t = unwrapOpt(t)
	if t == nil {
		return true
	}
	p, ok := t.(signature.Prim)
	return ok && (p == signature.String || p == signature.Keyword || p == signature.Any)
}

func (a *Agent) textVariant() textVariant {
	text := textReturn(a.sig.Output)
	switch {
	case len(a.tools) == 0 && text:
		return variantText
	case len(a.tools) == 0:
		return variantJSON
	case text:
		return variantToolText
	}
	return variantToolJSON
}

// checkText validates a text-mode agent (New calls it): the prompt must parse as a
// Mustache template and follow the validation rules of text mode against
// the signature, and the output signature must not have firewalled fields
// (text mode has no sandbox to keep them from the model).
func (a *Agent) checkText() error {
	tm, err := parseMustache(a.spec.Prompt)
	if err != nil {
		return specErr("prompt", err.Error(), err)
	}
	if a.spec.Signature != "" {
		if err := tm.check(a.sig, true); err != nil {
			return specErr("prompt", err.Error(), err)
		}
	}
	if names := firewalledFields(a.sig.Output, ""); len(names) > 0 {
		return specErr("signature", "text mode does not support firewalled fields in the output signature: "+strings.Join(names, ", "), nil)
	}
	return nil
}

// firewalledFields lists the paths of the "_" fields of t.
func firewalledFields(t signature.Type, prefix string) []string {
	var out []string
	switch x := unwrapOpt(t).(type) {
	case signature.List:
		out = append(out, firewalledFields(x.Elem, prefix+"[]")...)
	case signature.Map:
		for _, f := range x.Fields {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			if signature.IsFirewalled(f.Name) {
				out = append(out, p)
				continue
			}
			out = append(out, firewalledFields(f.Type, p)...)
		}
	}
	return out
}

// textSystemPrompt assembles the (static) text-mode system prompt:
// Prefix, core instructions, tool instructions, output format, Suffix;
// then Transform. Override replaces it all; OutputFormat replaces the
// output format. The language reference options do not apply.
func (a *Agent) textSystemPrompt(v textVariant) string {
	return a.spec.SystemPrompt.assemble(func(parts []string) []string {
		parts = append(parts, textCorePrompt)
		if v.tools() {
			parts = append(parts, textToolsPrompt)
		}
		return parts
	}, func() string {
		if v.json() {
			return a.jsonFormat()
		}
		return textPlainFormat
	})
}

// jsonFormat is the output format of the JSON variants: the expected type
// in signature syntax and as JSON Schema.
func (a *Agent) jsonFormat() string {
	var b strings.Builder
	b.WriteString("## Output format\nYour final answer must be a single JSON value of this type:\n\n    ")
	b.WriteString(signature.PromptType(a.sig.Output))
	b.WriteString("\n\nJSON Schema:\n")
	b.WriteString(jsonText(signature.JSONSchema(a.sig.Output)))
	if _, prim := unwrapOpt(a.sig.Output).(signature.Prim); prim {
		b.WriteString("\n\nReply with the JSON value only (a bare number or boolean is fine), no other text.")
	} else {
		b.WriteString("\n\nReply with the JSON only (a ```json block is fine), no other text.")
	}
	return b.String()
}

// nativeToolSpecs converts the agent's tools to provider tool specs,
// sorted by name. A signed tool's public inputs become the JSON Schema
// (optional params are not required) and its output type is appended to
// the description; a tool without a signature gets an open object schema.
//
// Names are sent as the providers accept them (^[a-zA-Z0-9_-]{1,64}$, the
// strictest rule, OpenAI's): other characters become '_' and a clash gets
// a numeric suffix; apiNames maps them back.
func (a *Agent) nativeToolSpecs() []llm.ToolSpec {
	out := make([]llm.ToolSpec, 0, len(a.toolKeys))
	api := a.apiToolNames()
	for _, name := range a.toolKeys {
		bt := a.tools[name]
		ts := llm.ToolSpec{Name: api[name], Description: bt.tool.Description,
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
		if bt.decl != nil {
			pub := bt.decl.Public()
			ts.InputSchema = pub.InputSchema()
			ret := "Returns: " + signature.PromptType(pub.Output)
			if ts.Description == "" {
				ts.Description = ret
			} else {
				ts.Description += "\n" + ret
			}
		}
		out = append(out, ts)
	}
	return out
}

// textTurnLine tells the model which turn comes next in text mode.
func textTurnLine(next, max int) string {
	s := fmt.Sprintf("Turn %d of %d (%d remaining)", next, max, max-next)
	if next == max {
		s += "\n" + textLastTurn
	}
	return s
}

// jsonFeedback is sent when a JSON answer cannot be used.
func (a *Agent) jsonFeedback(problem string, next, max int) string {
	return problem + "\nReply with only a JSON value of type " + signature.PromptType(a.sig.Output) + ".\n" + textTurnLine(next, max)
}

// textLoop is the state of a text-mode run's turns (loop), kept on the
// heap so that the frames under a waiting model call stay small.
type textLoop struct {
	a               *Agent
	ctx, missionCtx context.Context
	rs              *runState
	st              *messages.Step
	t               *tree

	v       textVariant
	maxT    int
	policy  *llm.RetryPolicy // the agent's (retryPolicyOf)
	llmOpts map[string]any
	sec     *secrets
	prompt  string // the rendered prompt, the run's first user message
	sys     string
	specs   []llm.ToolSpec
	msgs    []llm.Message
	tx      *textTools
	lastErr string

	// the turn in flight: its request and when it started
	req       llm.Request
	turnStart time.Time
}

// newTextLoop sets up the turns of a text-mode run; a nil textLoop comes
// with the run's failed Step.
func (a *Agent) newTextLoop(ctx, missionCtx context.Context, rs *runState, in *runInput, opts *RunOptions, st *messages.Step) (*textLoop, *messages.Step, error) {
	st.Mode = messages.ModeText
	tm, err := parseMustache(a.spec.Prompt) // New has checked it (checkText)
	if err != nil {
		step, err := failStep(st, &messages.Fail{Reason: ReasonInvalidAgent, Message: err.Error()})
		return nil, step, err
	}
	t := rs.tree
	l := &textLoop{a: a, ctx: ctx, missionCtx: missionCtx, rs: rs, st: st, t: t,
		v: a.textVariant(), maxT: a.maxTurns(), policy: a.retryPolicyOf(), llmOpts: a.llmOpts(opts.LLMOpts), sec: t.secrets}
	l.prompt, err = textPrompt(tm, in, l.sec)
	if err != nil {
		step, err := failStep(st, &messages.Fail{Reason: ReasonPromptTooLarge, Message: err.Error()})
		return nil, step, err
	}
	l.sys = a.textSystemPrompt(l.v)
	if l.v.tools() {
		l.specs = a.nativeToolSpecs()
	}
	l.msgs = []llm.Message{llm.UserText(l.prompt)}
	l.tx = newTextTools(a, rs, l.sec)
	return l, nil, nil
}

// request starts turn n and builds its model request (l.req); done when
// the run ends instead, with its Step.
func (l *textLoop) request(turn int) (step *messages.Step, err error, done bool) {
	a, rs := l.a, l.rs
	if f := rs.beginTurn(l.ctx, l.missionCtx, turn); f != nil {
		step, err = failStep(l.st, f)
		return step, err, true
	}
	l.turnStart = time.Now()
	l.req = llm.Request{System: l.sys, Messages: l.msgs, Tools: l.specs, Turn: turn, Prompt: l.prompt,
		ToolNames: a.toolKeys, Opts: l.llmOpts, CacheSystem: true, CacheHistory: true, CacheKey: a.cacheKey()}
	return nil, nil, false
}

// outOfTurns is the Step of a run whose turns ran out.
func (l *textLoop) outOfTurns() (*messages.Step, error) {
	return turnsRanOut(l.st, fmt.Sprintf("no final answer after %d turns", l.maxT), l.lastErr)
}

// answer plays the model's answer to turn n's request (l.req): it
// records the turn (with the request's prompt in debug runs), runs the
// tools it calls or takes its final answer; done when the run ends, with
// its Step.
func (l *textLoop) answer(turn int, resp *llm.Response, requests int, lerr error) (step *messages.Step, err error, done bool) {
	a, rs, st, t, sec := l.a, l.rs, l.st, l.t, l.sec
	ctx, missionCtx, maxT, turnStart := l.ctx, l.missionCtx, l.maxT, l.turnStart
	rec := openTurn(turn, turnStart, &l.req, t.debug)
	stop := func(f *messages.Fail) (*messages.Step, error, bool) {
		step, err := failStep(st, f)
		return step, err, true
	}
	if lerr != nil {
		if f := missionEnd(ctx, missionCtx); f != nil {
			return stop(f)
		}
		var pe *llm.ProviderError
		if errors.As(lerr, &pe) && pe.Type == "invalid_tool_call" && turn < maxT {
			// the model's tool-call arguments were not a JSON object: a
			// logic error, fed back at the cost of a turn
			rec.Error = lerr.Error()
			l.lastErr = rec.Error
			st.Usage.Turns++
			feedback := "Your tool call could not be used: " + pe.Message +
				"\nCall the tool again with a JSON object of arguments.\n" + textTurnLine(turn+1, maxT)
			l.msgs = appendUserText(l.msgs, feedback)
			rec.Feedback = feedback
			rec.Duration = time.Since(turnStart)
			st.Trace = append(st.Trace, rec)
			t.emit(ctx, Event{Kind: EventTurnStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: rec.Duration})
			return nil, nil, false
		}
		rec.Error = lerr.Error()
		rec.Duration = time.Since(turnStart)
		st.Trace = append(st.Trace, rec)
		step, err := failStepCause(st, llmFail(lerr, l.lastErr), lerr)
		return step, err, true
	}
	u := resp.Usage
	recordTurn(st, &rec, resp, requests)
	l.msgs = append(l.msgs, resp.Message())
	last := turn == maxT
	endTurn := func(feedback string) {
		rec.Duration = time.Since(turnStart)
		rec.Feedback = feedback
		st.Trace = append(st.Trace, rec)
		t.emit(ctx, Event{Kind: EventTurnStop, Agent: rs.name, Depth: rs.depth, Turn: turn, Duration: rec.Duration, Usage: u})
	}

	if len(resp.ToolCalls) > 0 {
		if last {
			// the turns run out (outOfTurns)
			rec.Error = "tool calls on the last turn were not executed"
			l.lastErr = rec.Error
			endTurn("")
			return nil, nil, false
		}
		results, calls, warnings, subUsage := l.tx.exec(missionCtx, turn, resp.ToolCalls)
		rec.ToolCalls = calls
		st.Usage.ToolCalls += len(calls)
		st.Usage.AddTokens(subUsage)
		st.Usage.Requests += subUsage.Requests
		st.Warnings = append(st.Warnings, warnings...)
		next := llm.ToolResults(results...)
		feedback := ""
		if turn+1 == maxT {
			feedback = textTurnLine(turn+1, maxT)
			next.Content = append(next.Content, llm.Text{Text: feedback})
		}
		l.msgs = append(l.msgs, next)
		endTurn(feedback)
		return nil, nil, false
	}

	// a final answer
	if !l.v.json() {
		if strings.TrimSpace(resp.Content) == "" {
			rec.Error = "empty answer"
			l.lastErr = rec.Error
			feedback := ""
			if !last {
				feedback = textEmptyAnswer + "\n" + textTurnLine(turn+1, maxT)
				l.msgs = append(l.msgs, llm.UserText(feedback))
			}
			endTurn(feedback)
			return nil, nil, false
		}
		rec.Result = resp.Content
		endTurn("")
		st.Return = resp.Content
		return st, nil, true
	}
	_, prim := unwrapOpt(a.sig.Output).(signature.Prim)
	val, perr := extractJSON(resp.Content, prim)
	problem := ""
	if perr != nil {
		problem = "Could not parse a JSON answer: " + perr.Error()
	} else if verr := a.validateReturn(val); verr != nil {
		text := validationText(verr, signature.PromptType(a.sig.Output))
		if a.spec.Validation.Fatal() {
			problem = text
		} else {
			st.Warnings = append(st.Warnings, prefixLines("return ", verr.Error())...)
		}
	}
	if problem != "" {
		rec.Error = problem
		l.lastErr = problem
		feedback := ""
		if !last {
			feedback = sec.scrub(a.jsonFeedback(problem, turn+1, maxT))
			l.msgs = append(l.msgs, llm.UserText(feedback))
		}
		endTurn(feedback)
		return nil, nil, false
	}
	rec.Result = val
	endTurn("")
	st.Return = val
	return st, nil, true
}

// appendUserText adds text to the conversation: as a new block of the
// last message when that is the user's (roles keep alternating), else as
// a new user message.
func appendUserText(msgs []llm.Message, text string) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleUser {
		// copy: earlier requests (and observers) share the slice
		out := slices.Clone(msgs)
		last := out[n-1].Clone()
		last.Content = append(last.Content, llm.Text{Text: text})
		out[n-1] = last
		return out
	}
	return append(msgs, llm.UserText(text))
}

// textPrompt renders the first (and only) user message of a text-mode
// run: the template over the context, converted to plain data, with the
// firewalled strings collected in sec and scrubbed. A prompt past
// maxPromptBytes is an error.
func textPrompt(tm *mustache, in *runInput, sec *secrets) (string, error) {
	data := make(map[string]any, len(in.data))
	for k, val := range in.data {
		data[k] = plainValue(val)
	}
	sec.collect(data, false)
	out, err := tm.renderLimit(sec.redactData(data).(map[string]any), maxPromptBytes)
	if err != nil {
		return "", err
	}
	return sec.scrub(out), nil
}

// textPreview is PreviewPrompt for a text-mode agent: the text-mode
// system prompt and the rendered Mustache prompt.
func (a *Agent) textPreview(in *runInput) (*Preview, error) {
	tm, err := parseMustache(a.spec.Prompt)
	if err != nil {
		return nil, specErr("prompt", err.Error(), err)
	}
	user, err := textPrompt(tm, in, &secrets{})
	if err != nil {
		return nil, &Error{Kind: KindRun, Reason: ReasonPromptTooLarge, Msg: err.Error(), Err: err}
	}
	return &Preview{System: a.textSystemPrompt(a.textVariant()), User: user, ToolSchemas: a.toolSchemas()}, nil
}

// apiToolNames maps each tool name to the name sent to the provider.
func (a *Agent) apiToolNames() map[string]string {
	out := make(map[string]string, len(a.toolKeys))
	taken := make(map[string]bool, len(a.toolKeys))
	for _, name := range a.toolKeys {
		if validAPIName(name) {
			out[name] = name
			taken[name] = true
		}
	}
	for _, name := range a.toolKeys {
		if _, ok := out[name]; ok {
			continue
		}
		b := []byte(name)
		for i, c := range b {
			if !apiNameChar(c) {
				b[i] = '_'
			}
		}
		if len(b) > 60 {
			b = b[:60]
		}
		cand := string(b)
		for n := 2; taken[cand]; n++ {
			cand = fmt.Sprintf("%s_%d", b, n)
		}
		out[name] = cand
		taken[cand] = true
	}
	return out
}

func apiNameChar(c byte) bool {
	return c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func validAPIName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !apiNameChar(s[i]) {
			return false
		}
	}
	return true
}
