package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// Metrics returns a registry holding the fleet's metrics and the Go
// runtime and process collectors, the fleet.Metrics recording into it and
// the /metrics handler serving it.
func Metrics() (*fleet.Metrics, http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := fleet.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return m, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}), nil
}

// Tracing returns the tracer provider the standard OpenTelemetry
// environment variables describe, exporting spans with OTLP over HTTP
// (protobuf), or nil when tracing is off: no OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
// OTEL_TRACES_EXPORTER is "none" or OTEL_SDK_DISABLED is "true". The
// exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, TLS), the SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*,
// and OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES name the resource
// (service.name defaults to service). shutdown flushes the spans still
// buffered; it is a no-op when tracing is off.
func Tracing(ctx context.Context, getenv func(string) string, service string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, noop, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return nil, noop, nil
	case "", "otlp":
	default:
		return nil, noop, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: only otlp (or none) is supported", exp)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, noop, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, noop, fmt.Errorf("OTLP protocol %q: only http/protobuf is supported (set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's HTTP port, 4318)", proto)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("otlp exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, noop, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(fleet.MissionIDGenerator{}))
	return p, p.Shutdown, nil
}
