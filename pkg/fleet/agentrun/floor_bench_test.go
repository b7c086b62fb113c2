package agentrun_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// floorOps is how many publishes (and requests) measure a floor: enough
// for a stable rate, a fraction of a second on an idle 2-core machine.
const floorOps = 5000

// oneCallProgram is the program both kinds of mission run: one tool call.
const oneCallProgram = "(count (tool/get_customer {:id 1}))"

// BenchmarkMissionsAgainstFloor measures, in one process and one run,
// missions through the fleet and the NATS floors they stand on, so that
// their ratio holds however busy the machine is. Each case starts an
// embedded nats-server, the shop tool service, the workers (each 32
// slots) and the client, each on its own connection, runs 32 warm-up
// missions, then measures:
//
//   - the JetStream publish+ack floor: floorOps asynchronous publishes of
//     an encoded mission, each with a message id, to a file-backed stream
//     with a duplicate window (as MISSIONS stores submissions), at most 256
//     unacknowledged, every ack awaited (floor-pub/s, floor-cpu-µs/pub);
//   - the request/reply floor: floorOps requests of a tool call's size from
//     32 goroutines on one connection to a responder on another
//     (floor-req/s, floor-cpu-µs/req);
//   - b.N missions, 32 in flight (32 client goroutines, each running one
//     mission after another), each with one tool call: agent missions (a
//     zero-latency scripted model answering with a one-call program) or
//     compiled missions (a compiled program applied to one input, no
//     model), with one and two workers (missions/s, cpu-µs/mission, and
//     allocs/op and B/op of the whole process per mission).
//
// The floors are measured before and after the missions, on connections
// of their own, and each is reported as the mean of the two, so that a
// load that changes during the run weighs on both sides of the ratios:
// cpu/floor-pub is the CPU per mission over the CPU per floor publish
// (docs/performance.md: the target is ≤ 10), floor-pub/mission-rate the floor's
// publishes per second over the missions per second. CPU is the whole
// process's (server, workers, client, tools: fleettest.ProcessCPU).
func BenchmarkMissionsAgainstFloor(b *testing.B) {
	for _, kind := range []string{messages.KindAgent, messages.KindCompiled} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d/inflight=32", kind, workers), func(b *testing.B) {
				benchAgainstFloor(b, kind, workers, 32)
			})
		}
	}
}

func benchAgainstFloor(b *testing.B, kind string, workers, inflight int) {
	srv := fleettest.Start(b)
	ctx := context.Background()
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: shop.ServiceName})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Stop(ctx)
	if err := shop.Generate(100, 10, 10).Register(svc); err != nil {
		b.Fatal(err)
	}
	model := constModel("```clojure\n(return {:n " + oneCallProgram + "})\n```")
	for range workers {
		w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{
			Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}),
			Slots:  inflight,
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
	}
	cnc := srv.Conn()
	client, err := fleet.NewClient(ctx, cnc, fleet.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	mission := func(i int) *messages.Mission {
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: kind, Tools: []string{"get_customer"}}
		if kind == messages.KindCompiled {
			m.Compiled = &messages.CompiledSpec{Program: "(fn [{:keys [n]}] " + oneCallProgram + ")",
				Signature: "(n :int) -> :int", Inputs: []map[string]any{{"n": int64(i)}}}
		} else {
			m.Agent = &messages.AgentSpec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int}", Tools: m.Tools}
			m.Context = map[string]any{"n": int64(i)}
		}
		return m
	}
	run := func(n int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Pointer[error]
		var next atomic.Int64
		for range inflight {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					if err := checkOneCall(client.Run(ctx, mission(i))); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			b.Fatalf("%s mission: %v", kind, *err)
		}
		return time.Since(start)
	}
	run(inflight) // discovery, consumers, caches and connections warm

	encoded, err := messages.Marshal(mission(0))
	if err != nil {
		b.Fatal(err)
	}
	pnc, rnc := srv.Conn(), srv.Conn()
	pubRate, pubCPU := publishFloor(ctx, b, pnc, encoded, "before")
	reqRate, reqCPU := requestFloor(b, rnc, cnc, inflight)

	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := fleettest.ProcessCPU()
	elapsed := run(b.N)
	b.StopTimer()
	cpu1, ok := fleettest.ProcessCPU()
	// the floors again, after the missions: a load that changed during
	// the run weighs on both sides of the ratio alike
	pubRate2, pubCPU2 := publishFloor(ctx, b, pnc, encoded, "after")
	reqRate2, reqCPU2 := requestFloor(b, rnc, cnc, inflight)
	pubRate, pubCPU = (pubRate+pubRate2)/2, (pubCPU+pubCPU2)/2
	reqRate, reqCPU = (reqRate+reqRate2)/2, (reqCPU+reqCPU2)/2
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "missions/s")
	b.ReportMetric(pubRate, "floor-pub/s")
	b.ReportMetric(reqRate, "floor-req/s")
	b.ReportMetric(pubRate/rate, "floor-pub/mission-rate")
	if ok && cpuOK && pubCPU > 0 {
		perMission := float64((cpu1 - cpu0).Microseconds()) / float64(b.N)
		b.ReportMetric(perMission, "cpu-µs/mission")
		b.ReportMetric(pubCPU, "floor-cpu-µs/pub")
		b.ReportMetric(reqCPU, "floor-cpu-µs/req")
		b.ReportMetric(perMission/pubCPU, "cpu/floor-pub")
	}
}

// constModel is a zero-latency model that gives every request the same
// reply.
type constModel string

func (m constModel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: string(m)}, nil
}

// checkOneCall says what is wrong with a benchmark mission's outcome: an
// error, a failure, or other than one tool call.
func checkOneCall(step *messages.Step, err error) error {
	switch {
	case err != nil:
		return err
	case step.Fail != nil:
		return fmt.Errorf("failed: %s", step.Fail.Error())
	case step.Usage.ToolCalls != 1:
		return fmt.Errorf("%d tool calls, want 1 (return %v, warnings %q)", step.Usage.ToolCalls, step.Return, step.Warnings)
	}
	return nil
}

// publishFloor publishes floorOps copies of body, each with its own
// message id (idPrefix and a number), to a file-backed stream of its own
// (created when missing), at most 256 awaiting
// their acks, and returns the publishes per second and the process's CPU
// per publish in µs.
func publishFloor(ctx context.Context, b *testing.B, nc *nats.Conn, body []byte, idPrefix string) (perSec, cpuMicros float64) {
	b.Helper()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.pub.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	acks := make([]jetstream.PubAckFuture, 0, floorOps)
	cpu0, _ := fleettest.ProcessCPU()
	start := time.Now()
	for i := range floorOps {
		f, err := js.PublishAsync("floor.pub.lane", body, jetstream.WithMsgID(idPrefix+"-"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		acks = append(acks, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("floor publishes not acknowledged within a minute")
	}
	elapsed := time.Since(start)
	cpu1, _ := fleettest.ProcessCPU()
	for i, f := range acks {
		select {
		case err := <-f.Err():
			b.Fatalf("floor publish %d: %v", i, err)
		case ack := <-f.Ok():
			if ack.Duplicate {
				b.Fatalf("floor publish %d stored as a duplicate", i)
			}
		}
	}
	return floorOps / elapsed.Seconds(), float64((cpu1 - cpu0).Microseconds()) / floorOps
}

// requestFloor sends floorOps requests of a tool call's size from
// concurrency goroutines on nc to a responder on rnc echoing them, and
// returns the requests per second and the process's CPU per request in µs.
func requestFloor(b *testing.B, rnc, nc *nats.Conn, concurrency int) (perSec, cpuMicros float64) {
	b.Helper()
	sub, err := rnc.Subscribe("floor.req", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := rnc.Flush(); err != nil {
		b.Fatal(err)
	}
	body, err := messages.Marshal(map[string]any{"id": int64(1)})
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	cpu0, _ := fleettest.ProcessCPU()
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for next.Add(1) <= floorOps {
				if _, err := nc.Request("floor.req", body, 10*time.Second); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, _ := fleettest.ProcessCPU()
	if err := failed.Load(); err != nil {
		b.Fatalf("floor request: %v", *err)
	}
	return floorOps / elapsed.Seconds(), float64((cpu1 - cpu0).Microseconds()) / floorOps
}
