package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// TracerName is the instrumentation scope of the fleet's spans.
const TracerName = "github.com/ptcfleet/ptc/pkg/fleet"

// Span attribute keys of the fleet's spans.
const (
	AttrMissionID = attribute.Key("ptc.mission.id")
	AttrAttempt   = attribute.Key("ptc.mission.attempt")
	AttrPriority  = attribute.Key("ptc.mission.priority")
	AttrState     = attribute.Key("ptc.mission.state")
	AttrReason    = attribute.Key("ptc.mission.reason")
	AttrOutcome   = attribute.Key("ptc.attempt.outcome")
	AttrWorker    = attribute.Key("ptc.worker.id")
	AttrTool      = attribute.Key("ptc.tool.name")
	AttrToolCode  = attribute.Key("ptc.tool.error_code")
	AttrCallID    = attribute.Key("ptc.tool.call_id")
	AttrReplayed  = attribute.Key("ptc.replayed")
)

// propagator carries trace context in NATS headers (W3C traceparent and
// tracestate).
var propagator = propagation.TraceContext{}

// headerCarrier adapts nats.Header to the propagator. NATS header names are
// case-sensitive; the W3C propagator uses the lower-case names the fleet
// sends (messages.HeaderTraceParent).
type headerCarrier nats.Header

func (h headerCarrier) Get(k string) string { return nats.Header(h).Get(k) }
func (h headerCarrier) Set(k, v string)     { nats.Header(h).Set(k, v) }
func (h headerCarrier) Keys() []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	return out
}

// ExtractTrace returns ctx carrying the remote span context found in hdr's
// traceparent/tracestate headers (ctx unchanged when there is none).
func ExtractTrace(ctx context.Context, hdr nats.Header) context.Context {
	if hdr == nil {
		return ctx
	}
	return propagator.Extract(ctx, headerCarrier(hdr))
}

// InjectTrace writes ctx's span context into hdr as traceparent and
// tracestate; it does nothing when ctx holds no valid span context.
func InjectTrace(ctx context.Context, hdr nats.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagator.Inject(ctx, headerCarrier(hdr))
	}
}

// MissionIDGenerator is the span id generator a tracer provider must use
// (sdktrace.WithIDGenerator) for the fleet's span tree to hold together
// across attempts: a mission's span has an id derived from the mission id,
// so that every attempt, on any worker, can be its child before the span
// itself is recorded by the worker that stores the result. Every other span
// gets random ids. The binaries install it (internal/cli.Tracing); a
// provider built without it records the same spans, but the attempts then
// point at a mission span id that nothing recorded.
type MissionIDGenerator struct{}

type fixedIDsKey struct{}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// NewIDs returns a new trace and span id (the mission's fixed ids when ctx
// asks for them).
func (MissionIDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return f.trace, f.span
	}
	var t trace.TraceID
	var s trace.SpanID
	for !t.IsValid() {
		_, _ = rand.Read(t[:])
	}
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return t, s
}

// NewSpanID returns a new span id (the mission's fixed id when ctx asks for
// it).
func (MissionIDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return f.span
	}
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}

// missionIDs derives a mission span's trace id (used when the submitter
// sent no trace context) and span id from the mission id.
func missionIDs(id string) fixedIDs {
	sum := sha256.Sum256([]byte("ptc-mission/" + id))
	var f fixedIDs
	copy(f.trace[:], sum[:16])
	copy(f.span[:], sum[16:24])
	return f
}

// attempt traces and meters one claimed delivery of a mission: the
// mission span (from submit to stored result, recorded by the worker that
// stores the result) and the attempt span under it.
type attempt struct {
	w         *Worker
	submitted time.Time
	mission   trace.Span // nil when tracing is off
	span      trace.Span
	outcome   string
}

type attemptKey struct{}

// beginAttempt records the start of a claimed delivery and returns ctx
// carrying it (finish reads it there) and the context the run gets.
func (w *Worker) beginAttempt(ctx, runCtx context.Context, m *messages.Mission, msg jetstream.Msg, meta *jetstream.MsgMetadata, n int) (context.Context, context.Context, *attempt) {
	a := &attempt{w: w, submitted: meta.Timestamp, outcome: "finished"}
	prio := m.Priority
	if !messages.ValidPriority(prio) || prio == "" {
		prio = messages.PriorityNormal
	}
	w.cfg.Metrics.missionStarted(prio, n, meta.Timestamp)
	ctx = context.WithValue(ctx, attemptKey{}, a)
	if w.tracer == nil {
		return ctx, runCtx, a
	}
	parent := ExtractTrace(context.Background(), msg.Headers())
	ids := missionIDs(m.ID)
	if psc := trace.SpanContextFromContext(parent); psc.IsValid() {
		ids.trace = psc.TraceID()
	}
	mctx := context.WithValue(parent, fixedIDsKey{}, ids)
	mctx, a.mission = w.tracer.Start(mctx, "mission", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(meta.Timestamp),
		trace.WithAttributes(AttrMissionID.String(m.ID), AttrPriority.String(prio)))
	// Attempts are children of the mission span context, whether or not
	// this worker ends up recording the mission span.
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: ids.trace, SpanID: ids.span,
		TraceFlags: trace.SpanContextFromContext(mctx).TraceFlags(), TraceState: trace.SpanContextFromContext(parent).TraceState()})
	actx := trace.ContextWithSpanContext(context.Background(), sc)
	_, a.span = w.tracer.Start(actx, "attempt "+strconv.Itoa(n), trace.WithAttributes(
		AttrMissionID.String(m.ID), AttrAttempt.Int(n), AttrWorker.String(w.cfg.ID)))
	return ctx, trace.ContextWithSpan(runCtx, a.span), a
}

func attemptFrom(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// setOutcome names how the attempt ended when it stored no result
// (handed_back, retried, fenced, dead_lettered).
func (a *attempt) setOutcome(o string) {
	if a != nil {
		a.outcome = o
	}
}

// stored records the mission's stored result: metrics, and the mission
// span ends.
func (w *Worker) recordStored(ctx context.Context, state string, step *messages.Step) {
	a := attemptFrom(ctx)
	var submitted time.Time
	if a != nil {
		submitted = a.submitted
	}
	w.cfg.Metrics.missionFinished(state, step, submitted)
	if a == nil || a.mission == nil {
		return
	}
	attrs := []attribute.KeyValue{AttrState.String(state)}
	if step != nil && step.Fail != nil {
		attrs = append(attrs, AttrReason.String(step.Fail.Reason))
		a.mission.SetStatus(codes.Error, step.Fail.Reason)
	}
	a.mission.SetAttributes(attrs...)
	a.mission.End()
	a.mission = nil
}

// end ends the attempt span. A mission span not ended by recordStored is
// dropped: a later attempt records it.
func (a *attempt) end() {
	if a == nil || a.span == nil {
		return
	}
	a.span.SetAttributes(AttrOutcome.String(a.outcome))
	if a.outcome != "finished" {
		a.span.SetStatus(codes.Error, a.outcome)
	}
	a.span.End()
}

// startToolSpan starts the client span of a remote tool call; it returns
// ctx unchanged and a nil span when tracing is off.
func startToolSpan(ctx context.Context, tracer trace.Tracer, name, callID string) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, nil
	}
	return tracer.Start(ctx, "tool "+name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrTool.String(name), AttrCallID.String(callID)))
}

// endSpan ends span with err's tool error code as its status.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(AttrToolCode.String(toolErrCode(err)))
		span.SetStatus(codes.Error, strings.TrimSpace(err.Error()))
	}
	span.End()
}
