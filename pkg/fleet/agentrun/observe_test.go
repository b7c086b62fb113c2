package agentrun_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// observed is a fleet whose worker and tool service record metrics and
// spans: an embedded server, the shop tools on their own connection and
// one worker.
type observed struct {
	client *fleet.Client
	reg    *prometheus.Registry
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
}

// observeOpts choose what startObserved records.
type observeOpts struct {
	metrics bool
	tracing bool
	// discard exports spans in batches to nowhere (benchmarks) instead of
	// keeping them in memory.
	discard bool
}

func startObserved(t testing.TB, models llm.Registry, opts observeOpts) *observed {
	t.Helper()
	srv := fleettest.Start(t)
	conn := srv.Conn
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	o := &observed{reg: prometheus.NewRegistry()}
	var metrics *fleet.Metrics
	if opts.metrics {
		var err error
		if metrics, err = fleet.NewMetrics(o.reg); err != nil {
			t.Fatal(err)
		}
	}
	var tp trace.TracerProvider
	switch {
	case opts.tracing && opts.discard:
		o.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithIDGenerator(fleet.MissionIDGenerator{}))
	case opts.tracing:
		o.spans = tracetest.NewInMemoryExporter()
		o.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans), sdktrace.WithIDGenerator(fleet.MissionIDGenerator{}))
	}
	if o.tp != nil {
		t.Cleanup(func() { _ = o.tp.Shutdown(context.Background()) })
		tp = o.tp
	}
	store := fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 2}
	svc, err := fleet.NewToolService(conn(), fleet.ToolServiceConfig{Name: shop.ServiceName, Metrics: metrics, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := shop.Generate(200, 1000, 300).Register(svc); err != nil {
		t.Fatal(err)
	}
	w, err := fleet.NewWorker(conn(), fleet.WorkerConfig{
		Runner: agentrun.New(agentrun.Config{Models: models}),
		Slots:  2, Store: store, ToolTimeout: 2 * time.Second, IdleWait: 100 * time.Millisecond,
		Metrics: metrics, TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	if o.client, err = fleet.NewClient(ctx, conn(), fleet.ClientConfig{Store: store}); err != nil {
		t.Fatal(err)
	}
	return o
}

// scrape reads /metrics over HTTP as Prometheus would and returns the
// samples by name and labels ("name{k=v,...}").
func scrape(t *testing.T, h http.Handler) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := webtest.Get(t, srv.URL+"/metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			key := name + labelKey(m.GetLabel())
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labelKey(m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labelKey(m.GetLabel())] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func labelKey(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

func TestMetricsScrapedFromWorker(t *testing.T) {
	model := &script{turns: map[string][]string{
		"paid orders": {
			// turn 1: a program error (type error), fed back
			"```clojure\n(+ 1 \"a\")\n```",
			"```clojure\n(return {:n (count (tool/list_orders {:status \"paid\"}))})\n```",
		},
		"never done": {
			"```clojure\n(def x 1)\n```",
			"```clojure\n(def y 2)\n```",
		},
	}}
	o := startObserved(t, llm.Registry{"default": model}, observeOpts{metrics: true})
	env := &fleetEnv{client: o.client}
	ids := []string{messages.NewMissionID(), messages.NewMissionID()}
	ok := runMission(t, env, &messages.Mission{
		ID:    ids[0],
		Agent: &messages.AgentSpec{Prompt: "Count the paid orders.", Signature: "{n :int}", Tools: []string{"list_orders"}},
		Tools: []string{"list_orders"},
	})
	if ok.Fail != nil {
		t.Fatalf("mission failed: %+v", ok.Fail)
	}
	bad := runMission(t, env, &messages.Mission{
		ID:       ids[1],
		Priority: messages.PriorityHigh,
		Agent:    &messages.AgentSpec{Prompt: "This is never done.", Signature: "{n :int}", Limits: messages.Limits{MaxTurns: 2}},
	})
	if bad.Fail == nil || bad.Fail.Reason != "max_turns_exceeded" {
		t.Fatalf("second mission = %+v, want max_turns_exceeded", bad.Fail)
	}
	// A compiled mission: one program run per input, no model.
	comp := runMission(t, env, &messages.Mission{
		Kind: messages.KindCompiled,
		Compiled: &messages.CompiledSpec{
			Program:   "(fn [{:keys [status]}] (count (tool/list_orders {:status status})))",
			Signature: "(status :string) -> :int",
			Inputs:    []map[string]any{{"status": "paid"}, {"status": int64(42)}},
		},
		Tools: []string{"list_orders"},
	})
	if comp.Fail != nil {
		t.Fatalf("compiled mission failed: %+v", comp.Fail)
	}
	// The final state is counted after the result is published: wait for
	// every mission's.
	var got map[string]float64
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = scrape(t, promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{}))
		if got["ptc_mission_duration_seconds_count{state=failed}"] == 1 && got["ptc_mission_duration_seconds_count{state=succeeded}"] == 2 &&
			got["ptc_worker_slots_busy"] == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := map[string]float64{
		"ptc_missions_started_total{priority=normal}":                         2,
		"ptc_missions_started_total{priority=high}":                           1,
		"ptc_missions_finished_total{reason=,state=succeeded}":                2,
		"ptc_missions_finished_total{reason=max_turns_exceeded,state=failed}": 1,
		"ptc_mission_duration_seconds_count{state=succeeded}":                 2,
		"ptc_mission_duration_seconds_count{state=failed}":                    1,
		// the two missions that asked a model, 2 turns each (a compiled
		// mission's turns are its inputs' runs, not counted here)
		"ptc_mission_turns_count":                                                2,
		"ptc_mission_turns_sum":                                                  4,
		"ptc_mission_fetch_lag_seconds_count{priority=normal}":                   2,
		"ptc_mission_fetch_lag_seconds_count{priority=high}":                     1,
		"ptc_worker_slots":                                                       2,
		"ptc_worker_slots_busy":                                                  0,
		"ptc_llm_requests_total{model=default}":                                  4,
		"ptc_llm_request_duration_seconds_count{model=default}":                  4,
		"ptc_llm_tokens_total{kind=input,model=default}":                         40,
		"ptc_llm_tokens_total{kind=output,model=default}":                        20,
		"ptc_tool_calls_total{code=ok,tool=list_orders}":                         2,
		"ptc_tool_call_duration_seconds_count{tool=list_orders}":                 2,
		"ptc_tool_requests_total{code=ok,service=shop,tool=list_orders}":         2,
		"ptc_tool_request_duration_seconds_count{service=shop,tool=list_orders}": 2,
		"ptc_program_runs_total{outcome=ok}":                                     4,
		"ptc_program_runs_total{outcome=type_error}":                             1,
		"ptc_program_runs_total{outcome=input_validation_error}":                 1,
		"ptc_program_duration_seconds_count":                                     6,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		for _, id := range ids {
			if strings.Contains(k, id) {
				t.Errorf("a mission id in a label: %s", k)
			}
		}
	}
}

func TestTraceSpanTree(t *testing.T) {
	model := &script{turns: map[string][]string{
		"Summarise the region": {
			"```clojure\n(count (tool/list_orders {:status \"paid\"}))\n```",
			"```clojure\n(return {:best (:name (tool/best_customer {:region \"north\"}))})\n```",
		},
		"Find the best customer": {
			"```clojure\n(let [cs (tool/list_customers {:region ctx/region})]\n  (return {:name (:name (first (sort-by :id cs)))}))\n```",
		},
	}}
	o := startObserved(t, llm.Registry{"default": model}, observeOpts{metrics: true, tracing: true})
	ctx, submit := o.tp.Tracer("test").Start(context.Background(), "submit")
	id := messages.NewMissionID()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	step, err := o.client.Run(rctx, &messages.Mission{
		ID: id, Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{
			Prompt: "Summarise the region.", Signature: "{best :string}",
			Tools: []string{"list_orders", "best_customer"},
			SubAgents: map[string]*messages.AgentSpec{"best_customer": {
				Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}",
				Description: "the best customer of a region", Tools: []string{"list_customers"},
			}},
		},
		Tools: []string{"list_orders", "list_customers"},
	})
	submit.End()
	if err != nil || step.Fail != nil {
		t.Fatalf("mission: %v %+v", err, step)
	}
	// The mission span ends just after the result is stored.
	var spans tracetest.SpanStubs
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		spans = o.spans.GetSpans()
		if spanTree(spans, submit.SpanContext().SpanID()) != "" && strings.Contains(spanTree(spans, submit.SpanContext().SpanID()), "mission") {
			break
		}
	}
	got := spanTree(spans, submit.SpanContext().SpanID())
	want := `mission [consumer]
  attempt 1
    turn 1
      chat default [client]
      program
      tool list_orders [client]
        tool list_orders [server]
    turn 2
      chat default [client]
      program
      agent best_customer
        turn 1
          chat default [client]
          program
          tool list_customers [client]
            tool list_customers [server]
`
	if got != want {
		t.Fatalf("span tree under the submitter's span:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != submit.SpanContext().TraceID() {
			t.Errorf("span %s is in trace %s, not the submitter's", s.Name, s.SpanContext.TraceID())
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		switch {
		case s.Name == "mission":
			if attrs["ptc.mission.id"] != id || attrs["ptc.mission.state"] != "succeeded" {
				t.Errorf("mission span attributes %v", attrs)
			}
		case strings.HasPrefix(s.Name, "chat "):
			if attrs["gen_ai.request.model"] != "default" || attrs["gen_ai.usage.input_tokens"] != "10" || attrs["gen_ai.usage.output_tokens"] != "5" {
				t.Errorf("model call span attributes %v", attrs)
			}
		case s.Name == "tool list_customers" && s.SpanKind == trace.SpanKindServer:
			if attrs["ptc.mission.id"] != id || attrs["ptc.tool.name"] != "list_customers" {
				t.Errorf("tool server span attributes %v", attrs)
			}
		}
	}
}

// spanTree renders the spans below parent, children in start order.
func spanTree(spans tracetest.SpanStubs, parent trace.SpanID) string {
	var b strings.Builder
	var walk func(p trace.SpanID, indent string)
	walk = func(p trace.SpanID, indent string) {
		var kids tracetest.SpanStubs
		for _, s := range spans {
			if s.Parent.SpanID() == p {
				kids = append(kids, s)
			}
		}
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].StartTime.Before(kids[j].StartTime) })
		for _, s := range kids {
			kind := ""
			if s.SpanKind != trace.SpanKindInternal {
				kind = " [" + s.SpanKind.String() + "]"
			}
			b.WriteString(indent + s.Name + kind + "\n")
			walk(s.SpanContext.SpanID(), indent+"  ")
		}
	}
	walk(parent, "")
	return b.String()
}

// A mission finished by a second worker from its journal: the second
// worker counts only the model request and tool calls it really made, not
// the replies and results it replayed; the first counts what it did before
// handing the mission back.
func TestReplayedWorkIsNotCountedAgain(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	startAddTools(t, nc, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4}})
	if err != nil {
		t.Fatal(err)
	}
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	mA, err := fleet.NewMetrics(regA)
	if err != nil {
		t.Fatal(err)
	}
	mB, err := fleet.NewMetrics(regB)
	if err != nil {
		t.Fatal(err)
	}
	model := &threeTurns{blocked: make(chan struct{}), answered: map[int]int{}}
	model.block.Store(true)
	a := startDurableWorker(t, srv, model, func(c *fleet.WorkerConfig) { c.Metrics = mA })
	m := durableMission()
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	select {
	case <-model.blocked:
	case <-ctx.Done():
		t.Fatal("the first worker never reached turn 3")
	}
	_ = a.Stop()
	startDurableWorker(t, srv, model, func(c *fleet.WorkerConfig) { c.Metrics = mB })
	step, err := client.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("mission: %v %+v", err, step)
	}
	var gotB map[string]float64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if gotB = scrape(t, promhttp.HandlerFor(regB, promhttp.HandlerOpts{})); gotB["ptc_missions_finished_total{reason=,state=succeeded}"] == 1 {
			break
		}
	}
	gotA := scrape(t, promhttp.HandlerFor(regA, promhttp.HandlerOpts{}))
	for _, c := range []struct {
		got  map[string]float64
		key  string
		want float64
	}{
		{gotA, "ptc_llm_requests_total{model=default}", 3}, // turns 1, 2 and the turn 3 cut off
		{gotA, "ptc_llm_request_errors_total{model=default}", 1},
		{gotA, "ptc_tool_calls_total{code=ok,tool=add}", 3},
		{gotA, "ptc_missions_handed_back_total", 1},
		{gotA, "ptc_missions_finished_total{reason=,state=succeeded}", 0},
		{gotB, "ptc_llm_requests_total{model=default}", 1}, // turn 3 only: 1 and 2 replayed
		{gotB, "ptc_llm_tokens_total{kind=input,model=default}", 100},
		{gotB, "ptc_tool_calls_total{code=ok,tool=add}", 0}, // all three replayed
		{gotB, "ptc_mission_redeliveries_total", 1},
		{gotB, "ptc_missions_finished_total{reason=,state=succeeded}", 1},
	} {
		if c.got[c.key] != c.want {
			t.Errorf("%s = %v, want %v", c.key, c.got[c.key], c.want)
		}
	}
}
