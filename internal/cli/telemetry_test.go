package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestTracingOffWithoutEndpoint(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tp, shutdown, err := Tracing(context.Background(), func(k string) string { return env[k] }, "svc")
		if err != nil || tp != nil || shutdown(context.Background()) != nil {
			t.Errorf("%v: provider %v, err %v; want tracing off", env, tp, err)
		}
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach an OTLP/HTTP collector
// as protobuf on /v1/traces, named by OTEL_SERVICE_NAME.
func TestTracingExportsOTLP(t *testing.T) {
	got := make(chan *coltrace.ExportTraceServiceRequest, 1)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector got %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("not an OTLP export: %v", err)
		}
		select {
		case got <- &req:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer collector.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "ptc-test"}
	for k, v := range env {
		t.Setenv(k, v) // the exporter reads the process environment
	}
	ctx := context.Background()
	tp, shutdown, err := Tracing(ctx, func(k string) string { return env[k] }, "ptc-worker")
	if err != nil || tp == nil {
		t.Fatalf("Tracing: %v %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(ctx, "hello")
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var req *coltrace.ExportTraceServiceRequest
	select {
	case req = <-got:
	default:
		t.Fatal("no export reached the collector")
	}
	var names, services []string
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				services = append(services, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names = append(names, s.Name)
			}
		}
	}
	if strings.Join(names, ",") != "hello" || strings.Join(services, ",") != "ptc-test" {
		t.Errorf("exported spans %v of services %v", names, services)
	}
}

func TestTracingRefusesWhatItCannotDo(t *testing.T) {
	for env, want := range map[[2]string]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}: "only http/protobuf",
		{"OTEL_TRACES_EXPORTER", "jaeger"}:      "only otlp",
	} {
		m := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", env[0]: env[1]}
		_, _, err := Tracing(context.Background(), func(k string) string { return m[k] }, "svc")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", env, err, want)
		}
	}
}
