package fleet_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A whole fleet in one process: an embedded server, a tool service, a worker
// whose runner calls a tool, and a client that runs a mission.
func Example() {
	srv, err := embedded.Start(embedded.Options{NoListen: true})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	nc, err := srv.Conn()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A tool service with one typed tool; its signature is derived.
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	tools, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "calc"})
	if err != nil {
		log.Fatal(err)
	}
	defer tools.Stop(ctx)
	err = fleet.RegisterTyped(tools, "add", fleet.ToolSpec{Description: "adds two numbers"},
		func(ctx context.Context, in addArgs) (int, error) { return in.A + in.B, nil })
	if err != nil {
		log.Fatal(err)
	}

	// A worker whose runner (pkg/agent in production) calls the tool.
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		add, err := env.Tools.Get(ctx, "add")
		if err != nil {
			return nil, err
		}
		sum, err := add.Call(ctx, map[string]any{"a": m.Context["x"], "b": 2})
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: map[string]any{"sum": sum, "signature": add.Signature()}}, nil
	})
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{Runner: runner, Priorities: []string{messages.PriorityNormal}})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()

	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	step, err := client.Run(ctx, &messages.Mission{
		Kind:    messages.KindAgent,
		Agent:   &messages.AgentSpec{Prompt: "add 2 to {{x}}"},
		Tools:   []string{"add"},
		Context: map[string]any{"x": 40},
	})
	if err != nil {
		log.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	fmt.Println(ret["sum"], ret["signature"])
	// Output: 42 (a :int, b :int) -> :int
}

// Tool errors are values the model can read.
func ExampleToolError() {
	err := &fleet.ToolError{Tool: "search", Code: messages.ToolErrUnavailable, Message: "no tool service is running for it"}
	fmt.Println(err)
	// Output: tool search: unavailable: no tool service is running for it
}

// ExampleNewMetrics records into a registry that a process serves on
// /metrics (promhttp.HandlerFor(reg, promhttp.HandlerOpts{})); workers,
// toolboxes and tool services take the *Metrics in their configs.
func ExampleNewMetrics() {
	reg := prometheus.NewRegistry()
	m, err := fleet.NewMetrics(reg)
	if err != nil {
		panic(err)
	}
	// A Runner reports a model call like this (agentrun does).
	m.LLMCall("default", 1200*time.Millisecond, 1500, 80, 0, 0, false)
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() != "ptc_llm_tokens_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			fmt.Println(f.GetName(), s.GetLabel()[0].GetValue(), s.GetLabel()[1].GetValue(), s.GetCounter().GetValue())
		}
	}
	// Output:
	// ptc_llm_tokens_total input default 1500
	// ptc_llm_tokens_total output default 80
}

// Two services offer a tool of the same name: discovery reports the
// conflict and leaves the tool out until a pin names the service to use.
func ExampleDiscoverTools() {
	nc, stop := exampleNATS()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"crm", "billing"} {
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: name})
		if err != nil {
			log.Fatal(err)
		}
		defer svc.Stop(ctx)
		err = svc.Register("customer", fleet.ToolSpec{Description: "a customer from " + name},
			func(context.Context, map[string]any) (any, error) { return name, nil })
		if err != nil {
			log.Fatal(err)
		}
	}
	d, err := fleet.DiscoverTools(ctx, nc, fleet.DiscoverOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(d.Tools), d.Conflicts[0].Tool, d.Conflicts[0].Services)
	d, err = fleet.DiscoverTools(ctx, nc, fleet.DiscoverOptions{Pins: map[string]string{"customer": "crm"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Tools[0].Subject, d.Rejected[0].Service, d.Rejected[0].Reason)
	// Output:
	// 0 customer [billing crm]
	// tool.crm.customer billing tool "customer" is pinned to service "crm"
}

// exampleNATS starts the embedded server the examples run against, as
// Example does, and connects to it; stop closes both.
func exampleNATS() (nc *nats.Conn, stop func()) {
	srv, err := embedded.Start(embedded.Options{NoListen: true})
	if err != nil {
		log.Fatal(err)
	}
	nc, err = srv.Conn()
	if err != nil {
		srv.Close()
		log.Fatal(err)
	}
	return nc, func() {
		nc.Close()
		srv.Close()
	}
}
