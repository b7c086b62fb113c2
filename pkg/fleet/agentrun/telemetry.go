package agentrun

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// GenAI semantic convention attributes of model call spans.
const (
	attrGenAIOperation     = attribute.Key("gen_ai.operation.name")
	attrGenAIRequestModel  = attribute.Key("gen_ai.request.model")
	attrGenAIResponseModel = attribute.Key("gen_ai.response.model")
	attrGenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrGenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	attrCacheReadTokens    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrCacheWriteTokens   = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	attrAgentName          = attribute.Key("gen_ai.agent.name")
	attrTurn               = attribute.Key("ptc.turn")
	attrDepth              = attribute.Key("ptc.agent.depth")
	attrErrorReason        = attribute.Key("ptc.error.reason")
)

// limitReasons are the program error reasons that mean a limit stopped the
// program (ptc_program_limit_hits_total).
var limitReasons = map[string]bool{
	lisp.KindTimeout.Reason(): true, lisp.KindMemory.Reason(): true, lisp.KindStepLimit.Reason(): true,
	lisp.KindLoopLimit.Reason(): true, lisp.KindDepthLimit.Reason(): true,
}

// telemetry turns one mission's agent events into metrics and spans: a
// span per turn under the attempt span, and under each turn the program run
// and, started from the run's ctx, the model call (meteredModel) and the
// remote tool calls (the Toolbox); a sub-agent's run is a span under the
// turn that called it, with its own turns below.
//
// The agent loop does not hand observers a context to extend, so the run's
// ctx carries a span whose SpanContext is always the innermost open turn
// (currentSpan): spans started from that ctx — model calls and the
// Toolbox's tool call client spans — become children of the turn that made
// the call.
type telemetry struct {
	metrics *fleet.Metrics
	tracer  trace.Tracer // nil when tracing is off
	// subAgents are the mission's sub-agents by tool name (the mission's
	// own map, only read)
	subAgents map[string]*messages.AgentSpec

	mu     sync.Mutex
	root   trace.Span
	frames []*frame // by depth-1
}

// frame holds the open spans of one agent run.
type frame struct {
	agent, turn, program trace.Span
	// calling is the sub-agent tool this run called last: the name of the
	// next run one level down.
	calling string
}

// currentSpan stands for the innermost open span of a run in its ctx.
type currentSpan struct {
	trace.Span
	t *telemetry
}

func (c currentSpan) SpanContext() trace.SpanContext { return c.t.current().SpanContext() }

// context returns ctx carrying the run's current span (ctx unchanged when
// tracing is off).
func (t *telemetry) context(ctx context.Context) context.Context {
	if t.tracer == nil {
		return ctx
	}
	t.root = trace.SpanFromContext(ctx)
	return trace.ContextWithSpan(ctx, currentSpan{Span: t.root, t: t})
}

func (t *telemetry) current() trace.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.currentLocked()
}

func (t *telemetry) currentLocked() trace.Span {
	for i := len(t.frames) - 1; i >= 0; i-- {
		f := t.frames[i]
		if f == nil {
			continue
		}
		if f.turn != nil {
			return f.turn
		}
		if f.agent != nil {
			return f.agent
		}
	}
	return t.root
}

func (t *telemetry) frame(depth int) *frame {
	for len(t.frames) < depth {
		t.frames = append(t.frames, nil)
	}
	if t.frames[depth-1] == nil {
		t.frames[depth-1] = &frame{}
	}
	return t.frames[depth-1]
}

func (t *telemetry) start(parent trace.Span, name string, attrs ...attribute.KeyValue) trace.Span {
	ctx := trace.ContextWithSpanContext(context.Background(), parent.SpanContext())
	_, s := t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	return s
}

// observe records e. It never blocks on the network.
func (t *telemetry) observe(e agent.Event) {
	if e.Depth < 1 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Kind {
	case agent.EventProgramStop:
		outcome, limit := "ok", ""
		if e.Err != nil {
			outcome = "error"
			var le *lisp.Error
			if errors.As(e.Err, &le) {
				outcome = le.Reason()
			}
			if limitReasons[outcome] {
				limit = outcome
			}
		}
		t.metrics.ProgramRun(e.Duration, outcome, limit)
	}
	switch e.Kind {
	case agent.EventToolStart:
		if _, sub := t.subAgents[e.Tool]; sub {
			t.frame(e.Depth).calling = e.Tool
		}
	case agent.EventRunStart:
		if e.Depth > 1 {
			name := t.frame(e.Depth - 1).calling
			if name == "" {
				name = e.Agent
			}
			f := t.frame(e.Depth)
			*f = frame{}
			if t.tracer != nil {
				f.agent = t.start(t.currentLocked(), "agent "+name, attrAgentName.String(name), attrDepth.Int(e.Depth))
			}
		}
	}
	if t.tracer == nil || e.Depth < 1 {
		return
	}
	switch e.Kind {
	case agent.EventRunStop, agent.EventRunException:
		if e.Depth > len(t.frames) || t.frames[e.Depth-1] == nil {
			return
		}
		f := t.frames[e.Depth-1]
		endAll(f, e.Err)
		if f.agent != nil {
			if e.Step != nil && e.Step.Fail != nil {
				f.agent.SetStatus(codes.Error, e.Step.Fail.Reason)
			}
			f.agent.End()
		}
		t.frames = t.frames[:e.Depth-1]
	case agent.EventTurnStart:
		f := t.frame(e.Depth)
		endAll(f, nil)
		parent := f.agent
		if parent == nil {
			parent = t.root
		}
		f.turn = t.start(parent, "turn "+strconv.Itoa(e.Turn), attrTurn.Int(e.Turn), attrAgentName.String(e.Agent), attrDepth.Int(e.Depth))
	case agent.EventTurnStop:
		f := t.frame(e.Depth)
		endAll(f, nil)
	case agent.EventProgramStart:
		f := t.frame(e.Depth)
		if f.turn == nil {
			return
		}
		f.program = t.start(f.turn, "program", attrTurn.Int(e.Turn))
	case agent.EventProgramStop:
		f := t.frame(e.Depth)
		if f.program == nil {
			return
		}
		endWith(f.program, e.Err)
		f.program = nil
	}
}

// endWith ends s with err as its status.
func endWith(s trace.Span, err error) {
	if err != nil {
		reason := "error"
		var le *lisp.Error
		if errors.As(err, &le) {
			reason = le.Reason()
		}
		s.SetAttributes(attrErrorReason.String(reason))
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}

// endAll ends f's open program and turn spans.
func endAll(f *frame, err error) {
	now := trace.WithTimestamp(time.Now())
	for _, s := range []*trace.Span{&f.program, &f.turn} {
		if *s != nil {
			if err != nil {
				(*s).SetStatus(codes.Error, err.Error())
			}
			(*s).End(now)
			*s = nil
		}
	}
}

// meteredModel measures and traces the requests to one model.
type meteredModel struct {
	name    string
	inner   llm.Model
	metrics *fleet.Metrics
	tracer  trace.Tracer
}

// Unwrap returns the measured model (llm.PricesOf looks through it).
func (m *meteredModel) Unwrap() llm.Model { return m.inner }

// Complete calls the model, recording the request.
func (m *meteredModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	var span trace.Span
	if m.tracer != nil {
		ctx, span = m.tracer.Start(ctx, "chat "+m.name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrGenAIOperation.String("chat"), attrGenAIRequestModel.String(m.name), attrTurn.Int(req.Turn)))
	}
	start := time.Now()
	resp, err := m.inner.Complete(ctx, req)
	m.record(span, start, resp, err)
	return resp, err
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (llm.AsyncModel).
func (m *meteredModel) CompleteAsync(ctx context.Context, req llm.Request, done func(*llm.Response, error)) {
	var span trace.Span
	if m.tracer != nil {
		ctx, span = m.tracer.Start(ctx, "chat "+m.name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrGenAIOperation.String("chat"), attrGenAIRequestModel.String(m.name), attrTurn.Int(req.Turn)))
	}
	start := time.Now()
	llm.CompleteAsync(ctx, m.inner, req, func(resp *llm.Response, err error) {
		m.record(span, start, resp, err)
		done(resp, err)
	})
}

// record records a request started at start that ended with resp or
// err, and ends its span (when traced).
func (m *meteredModel) record(span trace.Span, start time.Time, resp *llm.Response, err error) {
	var u llm.Usage
	if resp != nil {
		u = resp.Usage
	}
	m.metrics.LLMCall(m.name, time.Since(start), u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, err != nil)
	if span != nil {
		span.SetAttributes(attrGenAIInputTokens.Int64(u.InputTokens), attrGenAIOutputTokens.Int64(u.OutputTokens))
		if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
			span.SetAttributes(attrCacheReadTokens.Int64(u.CacheReadTokens), attrCacheWriteTokens.Int64(u.CacheWriteTokens))
		}
		if resp != nil && resp.Model != "" {
			span.SetAttributes(attrGenAIResponseModel.String(resp.Model))
		}
		endWith(span, err)
	}
}
