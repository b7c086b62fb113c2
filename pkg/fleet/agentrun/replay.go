package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Replaying a recorded mission (dispatcher replay, docs/replay.md).
//
// A finished mission leaves its record (messages.MissionRecord: the
// mission as it ran and its tools' schemas) and its Step, whose trace
// holds every model reply (Turn.Raw) and every tool call with its
// arguments and result, sub-agents' runs nested (ToolCall.Child). Replay
// rebuilds the agent as a worker does and runs it again with the
// recording answering: the recorded model answers each agent's turn N
// with that turn's reply, and a tool call gets the recorded result of the
// call of the same tool with the same arguments in the same agent run.
// Nothing leaves the process. The replayed Step is then compared with the
// recorded one.

// ReplayModel is the registry name of the recorded model: the model that
// answers from the recording.
const ReplayModel = "recorded"

// ReplayOptions change what a replay runs with. The zero value replays
// the recording as it is, with no model and no tool call.
type ReplayOptions struct {
	// Model names the model in Models that the top-level agent (and each
	// sub-agent that names no model of its own) asks instead of the
	// recording; empty: the recorded replies.
	Model  string
	Models llm.Registry
	// Prompt, when not empty, replaces the top-level agent's prompt
	// template; LanguageSpec its language reference (text or a preset
	// name such as "minimal").
	Prompt       string
	LanguageSpec string
	// Output, when not empty, replaces the top-level agent's output mode
	// (messages.ModeLisp or messages.ModeText): the same task in the
	// other mode, with a model (the recording answers only its own mode).
	Output string
	// Live calls the tools whose call the recording does not hold (same
	// tool, same arguments, in the same agent run); nil: such a call fails
	// with ReasonNotRecorded.
	Live *fleet.Toolbox
}

// ReasonNotRecorded is the error a replayed tool call or model request
// gets when the recording holds no answer to it and nothing else may
// answer.
const ReasonNotRecorded = "not_recorded"

// Replayed is the outcome of a replay.
type Replayed struct {
	// Step is the replayed run's Step.
	Step *messages.Step `json:"step"`
	// Divergences lists where the replayed Step differs from the recorded
	// one: the first differing value of each turn, and of the Step's own
	// fields (Turn 0). Empty: the replay reproduced the recording.
	Divergences []Divergence `json:"divergences"`
	// Served counts the tool calls the recording answered, Live those a
	// live tool answered, Missed those that failed as not recorded.
	Served int `json:"served"`
	Live   int `json:"live"`
	Missed int `json:"missed"`
}

// Divergence is one difference between a recorded and a replayed Step.
type Divergence struct {
	// Agent is the path of the agent run: "" for the top-level agent,
	// "turn 2 tool_calls[0] (summarize)" and so on for sub-agents.
	Agent string `json:"agent,omitempty"`
	// Turn is the turn (from 1), or 0 for the Step's own fields.
	Turn int `json:"turn"`
	// Path names the value ("return", "program", "tool_calls[1].result").
	Path string `json:"path"`
	// Recorded and Replayed are the two values (nil when absent).
	Recorded any `json:"recorded"`
	Replayed any `json:"replayed"`
}

// String reads "turn 2: tool_calls[0].result: recorded 3, replayed 4".
func (d Divergence) String() string {
	where := "step"
	if d.Turn > 0 {
		where = "turn " + strconv.Itoa(d.Turn)
	}
	if d.Agent != "" {
		where = d.Agent + ": " + where
	}
	return fmt.Sprintf("%s: %s: recorded %s, replayed %s", where, d.Path, showValue(d.Recorded), showValue(d.Replayed))
}

func showValue(v any) string {
	b, err := json.Marshal(messages.JSONFloats(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// Replay runs the mission rec records again against its recorded Step and
// compares the outcome with it. An error means the replay could not run
// (a compiled mission, an agent that does not build); a run that differs
// from the recording is a Replayed with Divergences.
func Replay(ctx context.Context, rec *messages.MissionRecord, recorded *messages.Step, opts ReplayOptions) (*Replayed, error) {
	if err := rec.Validate(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if recorded == nil {
		return nil, errors.New("replay: no recorded Step")
	}
	m := *rec.Mission
	if m.Kind != messages.KindAgent || m.Agent == nil {
		return nil, fmt.Errorf("replay: mission %s is of kind %q; only agent missions are replayed", m.ID, m.Kind)
	}
	spec := *m.Agent
	if opts.Prompt != "" {
		spec.Prompt = opts.Prompt
	}
	if opts.LanguageSpec != "" {
		spec.LanguageSpec = opts.LanguageSpec
	}
	if opts.Output != "" {
		spec.Output = opts.Output
	}
	m.Agent = &spec
	if opts.Model != "" {
		if _, ok := opts.Models[opts.Model]; !ok {
			return nil, fmt.Errorf("replay: model %q is not configured (configured: %s)", opts.Model, modelList(opts.Models))
		}
	}
	r := &recording{root: newScope(recorded), scopes: map[*agent.SubAgentCall]*scope{}, opts: opts}
	schemas := map[string]messages.ToolSchema{}
	for _, t := range rec.Tools {
		schemas[t.Name] = t
	}
	resolve := func(name string) (agent.Tool, bool) {
		call := func(ctx context.Context, args map[string]any) (any, error) { return r.callTool(ctx, name, args) }
		s := schemas[name]
		if s.Signature == "" {
			return agent.Skip(call).WithDescription(s.Description), true
		}
		return agent.FuncSig(s.Signature, call).WithDescription(s.Description), true
	}
	if names := m.UnallowedTools(); len(names) > 0 {
		return nil, fmt.Errorf("replay: the agent names tools the mission does not allow: %v", names)
	}
	as, err := agent.FromWire(m.Agent, resolve)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	as.Limits = m.EffectiveLimits()
	a, err := agent.New(as)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	// Every model name the mission uses answers from the recording, but
	// for the model asked for instead (which the top-level agent and the
	// sub-agents naming no model of their own ask).
	models := maps.Clone(opts.Models)
	if models == nil {
		models = llm.Registry{}
	}
	recModel := llm.Func(r.complete)
	for _, name := range modelNames(m.Agent, m.Model) {
		if name != opts.Model {
			models[name] = recModel
		}
	}
	models[ReplayModel] = recModel
	model := ReplayModel
	if opts.Model != "" {
		model = opts.Model
	}
	step, runErr := a.Run(ctx, agent.RunOptions{LLM: model, Registry: models, Context: m.Context, ContextSignature: m.ContextSignature})
	if step == nil {
		return nil, fmt.Errorf("replay: %w", runErr)
	}
	// Compared as every reader sees a Step: decoded from its encoding.
	if data, err := messages.MarshalStep(step); err == nil {
		if s, err := messages.UnmarshalStep(data); err == nil {
			step = s
		}
	}
	out := &Replayed{Step: step, Divergences: CompareSteps(recorded, step)}
	r.mu.Lock()
	out.Served, out.Live, out.Missed = r.served, r.live, r.missed
	r.mu.Unlock()
	return out, nil
}

// modelNames lists the model names a mission's agents use.
func modelNames(a *messages.AgentSpec, model string) []string {
	names := []string{"default"}
	if model != "" {
		names = append(names, model)
	}
	var walk func(a *messages.AgentSpec, depth int)
	walk = func(a *messages.AgentSpec, depth int) {
		if a == nil || depth > messages.MaxSpecDepth {
			return
		}
		if a.LLM != "" {
			names = append(names, a.LLM)
		}
		for _, s := range a.SubAgents {
			walk(s, depth+1)
		}
	}
	walk(a, 0)
	return names
}

// recording answers a replay's model requests and tool calls.
type recording struct {
	opts ReplayOptions

	mu                   sync.Mutex
	root                 *scope
	scopes               map[*agent.SubAgentCall]*scope
	served, live, missed int
}

// scope is the recording of one agent run: its Step (nil when the
// recording has no such run) and the calls its tools made, by content.
type scope struct {
	step  *messages.Step
	turns map[int]*messages.Turn
	calls map[string][]*messages.ToolCall
	next  map[string]int
}

func newScope(step *messages.Step) *scope {
	s := &scope{step: step, turns: map[int]*messages.Turn{}, calls: map[string][]*messages.ToolCall{}, next: map[string]int{}}
	if step == nil {
		return s
	}
	for i := range step.Trace {
		t := &step.Trace[i]
		s.turns[t.Number] = t
		for j := range t.ToolCalls {
			c := &t.ToolCalls[j]
			k := callKey(c.Name, c.Args)
			s.calls[k] = append(s.calls[k], c)
		}
	}
	return s
}

// take returns the next recorded call of tool with args, or nil.
func (s *scope) take(tool string, args map[string]any) *messages.ToolCall {
	k := callKey(tool, args)
	n := s.next[k]
	if n >= len(s.calls[k]) {
		return nil
	}
	s.next[k] = n + 1
	return s.calls[k][n]
}

// callKey identifies a call by content: the tool and its arguments in
// canonical JSON (keys sorted, numbers as their text).
func callKey(tool string, args map[string]any) string {
	b, err := json.Marshal(messages.JSONFloats(args))
	if err != nil {
		b = fmt.Appendf(nil, "%v", args)
	}
	return tool + "\x00" + string(b)
}

// scopeOf returns the recording of the agent run c is the call of (the
// top-level run for nil); r.mu is held.
func (r *recording) scopeOf(c *agent.SubAgentCall) *scope {
	if c == nil {
		return r.root
	}
	if s, ok := r.scopes[c]; ok {
		return s
	}
	var child *messages.Step
	if tc := r.scopeOf(c.Parent).take(c.Tool, c.Args); tc != nil {
		child = tc.Child
	}
	s := newScope(child)
	r.scopes[c] = s
	return s
}

// complete answers a model request with the recorded reply of the same
// agent run's same turn.
func (r *recording) complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	s := r.scopeOf(agent.SubAgentCallFrom(ctx))
	t := s.turns[req.Turn]
	r.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("%s: the recording holds no model reply for turn %d of this agent", ReasonNotRecorded, req.Turn)
	}
	resp := &llm.Response{Content: t.Raw, Model: ReplayModel, Usage: llm.Usage{
		InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens,
		CacheReadTokens: t.Usage.CacheReadTokens, CacheWriteTokens: t.Usage.CacheWriteTokens, CostUSD: t.Usage.CostUSD,
	}}
	if s.step.Mode == messages.ModeText {
		// the model's native tool calls, which the turn recorded
		for i, c := range t.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", req.Turn, i+1)
			}
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolUse{ID: id, Name: c.Name, Input: c.Args})
		}
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = llm.StopToolUse
		}
	}
	return resp, nil
}

// callTool answers a tool call from the recording, else from the live
// tool, else fails it.
func (r *recording) callTool(ctx context.Context, name string, args map[string]any) (any, error) {
	r.mu.Lock()
	c := r.scopeOf(agent.SubAgentCallFrom(ctx)).take(name, args)
	switch {
	case c != nil:
		r.served++
	case r.opts.Live != nil:
		r.live++
	default:
		r.missed++
	}
	r.mu.Unlock()
	switch {
	case c != nil && c.Error != "":
		return nil, errors.New(c.Error)
	case c != nil:
		return c.Result, nil
	case r.opts.Live != nil:
		return r.opts.Live.CallAs(ctx, name, args, decodeResult)
	}
	return nil, fmt.Errorf("%s: the recording holds no call of %s with these arguments", ReasonNotRecorded, name)
}

// CompareSteps lists where got differs from want (see
// Replayed.Divergences): the Step's return, failure, signature, mode,
// text, memory, warnings and token counts (those of its trace,
// Step.TraceUsage), then each turn's program, reply, result, error,
// feedback, prints and tool calls, sub-agents' Steps compared the same
// way. Times and durations are not compared.
func CompareSteps(want, got *messages.Step) []Divergence {
	var out []Divergence
	compareStep(&out, "", want, got)
	return out
}

func compareStep(out *[]Divergence, agentPath string, want, got *messages.Step) {
	if want == nil || got == nil {
		if (want == nil) != (got == nil) {
			*out = append(*out, Divergence{Agent: agentPath, Path: "step", Recorded: want != nil, Replayed: got != nil})
		}
		return
	}
	type field struct {
		path string
		w, g any
	}
	fail := func(f *messages.Fail) any {
		if f == nil {
			return nil
		}
		return f.Reason + ": " + f.Message
	}
	// The replies earlier attempts paid for and the recorded run did not
	// use are not in its trace: a replay cannot ask for them.
	wu, gu := want.TraceUsage(), got.TraceUsage()
	fields := []field{
		{"fail", fail(want.Fail), fail(got.Fail)},
		{"return", want.Return, got.Return},
		{"signature", want.Signature, got.Signature},
		{"mode", want.Mode, got.Mode},
		{"text", want.Text, got.Text},
		{"memory", want.Memory, got.Memory},
		{"warnings", want.Warnings, got.Warnings},
		{"usage.turns", int64(wu.Turns), int64(gu.Turns)},
		{"usage.tool_calls", int64(wu.ToolCalls), int64(gu.ToolCalls)},
		{"usage.input_tokens", wu.InputTokens, gu.InputTokens},
		{"usage.output_tokens", wu.OutputTokens, gu.OutputTokens},
		{"usage.cache_read_tokens", wu.CacheReadTokens, gu.CacheReadTokens},
	}
	for _, f := range fields {
		if !sameValue(f.w, f.g) {
			*out = append(*out, Divergence{Agent: agentPath, Path: f.path, Recorded: f.w, Replayed: f.g})
			break
		}
	}
	n := max(len(want.Trace), len(got.Trace))
	for i := range n {
		if i >= len(want.Trace) || i >= len(got.Trace) {
			d := Divergence{Agent: agentPath, Turn: i + 1, Path: "turn"}
			if i < len(want.Trace) {
				d.Recorded = want.Trace[i].Program
			} else {
				d.Replayed = got.Trace[i].Program
			}
			*out = append(*out, d)
			continue
		}
		compareTurn(out, agentPath, &want.Trace[i], &got.Trace[i])
	}
}

func compareTurn(out *[]Divergence, agentPath string, w, g *messages.Turn) {
	add := func(path string, wv, gv any) bool {
		if sameValue(wv, gv) {
			return false
		}
		*out = append(*out, Divergence{Agent: agentPath, Turn: w.Number, Path: path, Recorded: wv, Replayed: gv})
		return true
	}
	if add("raw", w.Raw, g.Raw) || add("program", w.Program, g.Program) {
		return
	}
	for i := range max(len(w.ToolCalls), len(g.ToolCalls)) {
		p := "tool_calls[" + strconv.Itoa(i) + "]"
		if i >= len(w.ToolCalls) || i >= len(g.ToolCalls) {
			var wv, gv any
			if i < len(w.ToolCalls) {
				wv = w.ToolCalls[i].Name
			} else {
				gv = g.ToolCalls[i].Name
			}
			add(p, wv, gv)
			return
		}
		wc, gc := &w.ToolCalls[i], &g.ToolCalls[i]
		if add(p+".name", wc.Name, gc.Name) || add(p+".args", wc.Args, gc.Args) ||
			add(p+".error", wc.Error, gc.Error) || add(p+".result", wc.Result, gc.Result) {
			return
		}
		if wc.Child != nil || gc.Child != nil {
			before := len(*out)
			compareStep(out, fmt.Sprintf("%sturn %d %s (%s)", prefix(agentPath), w.Number, p, wc.Name), wc.Child, gc.Child)
			if len(*out) > before {
				return
			}
		}
	}
	_ = add("result", w.Result, g.Result) || add("error", w.Error, g.Error) ||
		add("prints", w.Prints, g.Prints) || add("feedback", w.Feedback, g.Feedback)
}

func prefix(agentPath string) string {
	if agentPath == "" {
		return ""
	}
	return agentPath + " > "
}

// sameValue compares two decoded values; nil, an empty list and an empty
// map are the same absent value (the encoding omits some of them).
func sameValue(a, b any) bool {
	if empty(a) && empty(b) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func empty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return rv.Len() == 0
	case reflect.Pointer:
		return rv.IsNil()
	}
	return false
}
