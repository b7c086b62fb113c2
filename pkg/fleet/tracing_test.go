package fleet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A retried mission has one mission span and one attempt span per
// delivery, all attempts children of the mission span, in the trace of the
// submitter's traceparent header.
func TestRetriedMissionIsOneSpanWithAttempts(t *testing.T) {
	_, nc := runJetStream(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithIDGenerator(fleet.MissionIDGenerator{}))
	defer tp.Shutdown(context.Background())
	var runs atomic.Int32
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if env.Tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
			return nil, fmt.Errorf("run without a tracer or an attempt span in ctx")
		}
		if runs.Add(1) == 1 {
			return nil, fmt.Errorf("model overloaded: %w", fleet.ErrRetryable)
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(c *fleet.WorkerConfig) { c.TracerProvider = tp })
	c := newClient(t, nc)
	// The submitter's trace context travels as a W3C traceparent header.
	parentTrace, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	parentSpan, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	m := newMission()
	step, err := c.Run(testCtx(t), m, fleet.SubmitOptions{Header: map[string][]string{
		messages.HeaderTraceParent: {"00-" + parentTrace.String() + "-" + parentSpan.String() + "-01"}}})
	if err != nil || step.Fail != nil {
		t.Fatalf("run: %v %+v", err, step)
	}
	var missions, attempts tracetest.SpanStubs
	// each span is exported as it ends: the mission span may end before
	// the last attempt's
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && (len(missions) == 0 || len(attempts) < 2); time.Sleep(10 * time.Millisecond) {
		missions, attempts = nil, nil
		for _, s := range spans.GetSpans() {
			switch s.Name {
			case "mission":
				missions = append(missions, s)
			case "attempt 1", "attempt 2":
				attempts = append(attempts, s)
			}
		}
	}
	if len(missions) != 1 || len(attempts) != 2 {
		t.Fatalf("%d mission spans and %d attempt spans, want 1 and 2", len(missions), len(attempts))
	}
	ms := missions[0]
	if ms.SpanContext.TraceID() != parentTrace || ms.Parent.SpanID() != parentSpan {
		t.Errorf("mission span %s/%s, parent %s; want trace %s under %s", ms.SpanContext.TraceID(), ms.SpanContext.SpanID(), ms.Parent.SpanID(), parentTrace, parentSpan)
	}
	outcomes := map[string]bool{}
	for _, a := range attempts {
		if a.Parent.SpanID() != ms.SpanContext.SpanID() || a.SpanContext.TraceID() != parentTrace {
			t.Errorf("%s: parent %s, want the mission span %s", a.Name, a.Parent.SpanID(), ms.SpanContext.SpanID())
		}
		for _, kv := range a.Attributes {
			if kv.Key == fleet.AttrOutcome {
				outcomes[a.Name+"="+kv.Value.AsString()] = true
			}
		}
	}
	if !outcomes["attempt 1=retried"] || !outcomes["attempt 2=finished"] {
		t.Errorf("attempt outcomes %v", outcomes)
	}
	if !ms.StartTime.Before(attempts[0].StartTime) || ms.EndTime.Before(attempts[1].StartTime) {
		t.Errorf("mission span %v–%v does not cover its attempts", ms.StartTime, ms.EndTime)
	}
}
