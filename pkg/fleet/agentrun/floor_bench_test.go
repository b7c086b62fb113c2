package agentrun_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
//
// With PTC_BENCH_NATS=process the server runs as a process of its own
// (a nats-server on a free port, reached over TCP): cpu-µs/mission and
// the floors' CPU are then the two processes' together, server-cpu-µs/mission
// is the server's part of it, and allocs/op and B/op are the fleet's
// alone (workers, client and tool service, with their NATS clients), the
// server's not counted.
func BenchmarkMissionsAgainstFloor(b *testing.B) {
	for _, kind := range []string{messages.KindAgent, messages.KindCompiled} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d/inflight=32", kind, workers), func(b *testing.B) {
				benchAgainstFloor(b, kind, workers, 32)
			})
		}
	}
}

// benchServer is the NATS server a benchmark runs on: embedded in the
// benchmark's process, or a process of its own (PTC_BENCH_NATS=process).
type benchServer struct {
	tb   testing.TB
	emb  *fleettest.Server
	node *natsNode
}

func startBenchServer(tb testing.TB) *benchServer {
	if os.Getenv("PTC_BENCH_NATS") == "process" {
		return &benchServer{tb: tb, node: startNATSProcess(tb)}
	}
	return &benchServer{tb: tb, emb: fleettest.Start(tb)}
}

// Conn opens a connection closed when the benchmark ends.
func (s *benchServer) Conn() *nats.Conn {
	s.tb.Helper()
	if s.emb != nil {
		return s.emb.Conn()
	}
	nc, err := nats.Connect(s.node.url, reconnecting()...)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(nc.Close)
	return nc
}

// cpu is the CPU time used so far by the benchmark's process and, when
// the server is a process of its own, by the server (its part in server).
func (s *benchServer) cpu() (total, server time.Duration, ok bool) {
	own, ok := fleettest.ProcessCPU()
	if s.node == nil || !ok {
		return own, 0, ok
	}
	server, ok = childCPU(s.node.cmd.Process.Pid)
	return own + server, server, ok
}

// childCPU is the CPU time process pid's threads used so far: the sum of
// the first field of /proc/<pid>/task/*/schedstat, in nanoseconds (Linux;
// ok false elsewhere). A thread that ended is not counted; the Go runtime
// keeps its threads.
func childCPU(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}

func benchAgainstFloor(b *testing.B, kind string, workers, inflight int) {
	srv := startBenchServer(b)
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
	pubRate, pubCPU := publishFloor(ctx, b, srv, pnc, encoded, "before")
	reqRate, reqCPU := requestFloor(b, srv, rnc, cnc, inflight)

	b.ReportAllocs()
	b.ResetTimer()
	cpu0, srv0, cpuOK := srv.cpu()
	elapsed := run(b.N)
	b.StopTimer()
	cpu1, srv1, ok := srv.cpu()
	// the floors again, after the missions: a load that changed during
	// the run weighs on both sides of the ratio alike
	pubRate2, pubCPU2 := publishFloor(ctx, b, srv, pnc, encoded, "after")
	reqRate2, reqCPU2 := requestFloor(b, srv, rnc, cnc, inflight)
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
		if srv.node != nil {
			b.ReportMetric(float64((srv1-srv0).Microseconds())/float64(b.N), "server-cpu-µs/mission")
		}
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
// their acks, and returns the publishes per second and the CPU per
// publish in µs (the server's included, srv.cpu).
func publishFloor(ctx context.Context, b *testing.B, srv *benchServer, nc *nats.Conn, body []byte, idPrefix string) (perSec, cpuMicros float64) {
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
	cpu0, _, _ := srv.cpu()
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
	cpu1, _, _ := srv.cpu()
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
// returns the requests per second and the CPU per request in µs (the
// server's included, srv.cpu).
func requestFloor(b *testing.B, srv *benchServer, rnc, nc *nats.Conn, concurrency int) (perSec, cpuMicros float64) {
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
	cpu0, _, _ := srv.cpu()
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
	cpu1, _, _ := srv.cpu()
	if err := failed.Load(); err != nil {
		b.Fatalf("floor request: %v", *err)
	}
	return floorOps / elapsed.Seconds(), float64((cpu1 - cpu0).Microseconds()) / floorOps
}
