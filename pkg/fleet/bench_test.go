package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkToolCall compares a call through a Toolbox (what a runner's tool
// call costs: args normalized, request encoded, micro service, response
// decoded and checked) with a raw NATS request/reply of the same encoded
// request to the same service, over TCP loopback as between processes;
// toolbox-live is a worker's call (progress messages asked for, answer on
// the worker's own reply subscription).
func BenchmarkToolCall(b *testing.B) {
	srv, _ := runJetStream(b)
	svcConn, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer svcConn.Close()
	startTools(b, svcConn)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	args := map[string]any{"query": "invoices"}

	for _, live := range []bool{false, true} {
		name := map[bool]string{false: "toolbox", true: "toolbox-live"}[live]
		b.Run(name, func(b *testing.B) {
			box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"search"}})
			if err != nil {
				b.Fatal(err)
			}
			if live {
				fleet.LiveCalls(b, box, 500*time.Millisecond)
			}
			if _, err := box.Call(ctx, "search", args); err != nil { // warm the schema cache
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := box.Call(ctx, "search", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw", func(b *testing.B) {
		body, _ := messages.Marshal(&messages.ToolRequest{Version: 1, CallID: "1", Tool: "search", Args: args})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nc.Request("tool.mail.search", body, 5*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMissions measures missions per second end to end (submit, fetch,
// a zero-latency runner making one tool call, result stored, ack) with one
// and two in-process workers on their own TCP connections, and the
// queue-to-runner-start latency (p50/p99) of those missions, with the turn
// journal on (the default: the tool result is recorded, and dropped
// unwritten once the mission's result is stored, since no outside call
// follows it) and off, in the same run, and the CPU time the whole process
// (server, workers, client) spent per mission.
func BenchmarkMissions(b *testing.B) {
	for _, workers := range []int{1, 2} {
		for _, journal := range []bool{true, false} {
			benchMissions(b, workers, journal)
		}
	}
}

func benchMissions(b *testing.B, workers int, journal bool) {
	onOff := map[bool]string{true: "on", false: "off"}
	{
		b.Run(fmt.Sprintf("workers=%d/journal=%s", workers, onOff[journal]), func(b *testing.B) {
			srv, _ := runJetStream(b)
			dial := func() *nats.Conn { return dialTCP(b, srv.ClientURL()) }
			startTools(b, dial())
			var mu sync.Mutex
			var lat []time.Duration
			runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				d := time.Since(m.CreatedAt)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
				return &messages.Step{Return: r}, err
			})
			for range workers {
				startWorker(b, dial(), runner, func(cfg *fleet.WorkerConfig) { cfg.Slots, cfg.NoJournal = 16, !journal })
			}
			nc := dial()
			c := newClient(b, nc)
			done := resultSignals(b, nc)
			b.ReportAllocs()
			cpu0, cpuOK := fleettest.ProcessCPU()
			start := time.Now()
			n := submitAndWait(b, c, done)
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "missions/s")
			if cpu1, ok := fleettest.ProcessCPU(); ok && cpuOK && n > 0 {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(n), "cpu-µs/mission")
			}
			mu.Lock()
			reportStartLatency(b, lat)
			mu.Unlock()
		})
	}
}

// dialTCP connects to url over TCP (as another process would), closing the
// connection when tb ends.
func dialTCP(tb testing.TB, url string) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// BenchmarkDispatchLatency runs one mission at a time on an idle worker:
// the time from Submit to the runner starting, and the full round trip.
func BenchmarkDispatchLatency(b *testing.B) {
	srv, _ := runJetStream(b)
	wnc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer wnc.Close()
	var mu sync.Mutex
	var lat []time.Duration
	startWorker(b, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		lat = append(lat, time.Since(m.CreatedAt))
		mu.Unlock()
		return &messages.Step{Return: true}, nil
	}))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	c := newClient(b, nc)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Run(ctx, newMission()); err != nil {
			b.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	reportStartLatency(b, lat)
}

// reportStartLatency sorts lat, the times from submit to the runner
// starting, and reports their median and 99th percentile.
func reportStartLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-start-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-start-µs")
	}
}

const benchWorkerEnv = "PTC_FLEET_BENCH_WORKER_URL"

// runBenchWorker is the body of a worker process for BenchmarkMissionsProcesses:
// a zero-latency runner making one tool call.
func runBenchWorker(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		Slots: 16, Priorities: []string{messages.PriorityNormal}, Store: testStore,
		Runner: fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
			r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
			return &messages.Step{Return: r}, err
		}),
	})
	if err == nil {
		err = w.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	select {}
}

// BenchmarkMissionsProcesses is BenchmarkMissions with each worker in its own
// process (the test binary re-executed), as a deployment runs them.
func BenchmarkMissionsProcesses(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			srv, _ := runJetStream(b)
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			c := newClient(b, nc)
			startTools(b, nc)
			for range workers {
				cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
				cmd.Env = append(os.Environ(), benchWorkerEnv+"="+srv.ClientURL())
				out, err := cmd.StdoutPipe()
				if err != nil {
					b.Fatal(err)
				}
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
				if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
					b.Fatalf("worker process said %q, %v", line, err)
				}
			}
			done := resultSignals(b, nc)
			start := time.Now()
			n := submitAndWait(b, c, done)
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "missions/s")
		})
	}
}

// resultSignals sends on the returned channel once for every result stored
// on nc's server, until the benchmark ends.
func resultSignals(b *testing.B, nc *nats.Conn) <-chan struct{} {
	b.Helper()
	done := make(chan struct{}, 1<<16)
	sub, err := nc.Subscribe(messages.ResultSubject("*", "*"), func(*nats.Msg) { done <- struct{}{} })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	return done
}

// submitAndWait submits a mission calling the search tool for each
// iteration of b.Loop, then waits for as many results on done and returns
// how many missions it submitted.
func submitAndWait(b *testing.B, c *fleet.Client, done <-chan struct{}) int {
	b.Helper()
	ctx := context.Background()
	n := 0
	for b.Loop() {
		if _, err := c.Submit(ctx, newMission("search")); err != nil {
			b.Fatal(err)
		}
		n++
	}
	for range n {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatal("results missing")
		}
	}
	return n
}
