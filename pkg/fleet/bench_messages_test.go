package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkMissionCost runs one mission at a time (submit, a zero-latency
// runner making one tool call, result, Client.Run returning) with the
// workers (one, then two), the client and the tool service each on its
// own connection, and reports what one mission costs: the messages each
// party sends and receives (from the connections' statistics; the
// workers' together), all messages sent, the submit → result latency
// (p50, p99), the goroutines the whole process started per mission, the
// collector's cycles per mission (a mission that runs while the collector
// marks takes longer: the slowest 1% are mostly such missions), and, as
// allocs/op and B/op, the allocations of the whole process (server,
// workers, client, tools).
func BenchmarkMissionCost(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchMissionCost(b, workers) })
	}
}

func benchMissionCost(b *testing.B, workers int) {
	srv, _ := runJetStream(b)
	tnc, cnc := dialTCP(b, srv.ClientURL()), dialTCP(b, srv.ClientURL())
	startTools(b, tnc)
	var wncs []*nats.Conn
	for range workers {
		wnc := dialTCP(b, srv.ClientURL())
		wncs = append(wncs, wnc)
		startWorker(b, wnc, searchOnce)
	}
	wstats := func() (s nats.Statistics) {
		for _, nc := range wncs {
			st := nc.Stats()
			s.OutMsgs += st.OutMsgs
			s.InMsgs += st.InMsgs
		}
		return s
	}
	c := newClient(b, cnc)
	ctx := context.Background()
	slow := newSlowTraces(b)
	run := func() time.Duration {
		d := timedSearch(ctx, b, c)
		slow.took(b, d)
		return d
	}
	timedSearch(ctx, b, c) // discovery, consumers and caches warm
	time.Sleep(100 * time.Millisecond)
	w0, c0, t0 := wstats(), cnc.Stats(), tnc.Stats()
	g0, gc0 := goroutinesCreated(), gcCycles()
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		lat = append(lat, run())
	}
	time.Sleep(100 * time.Millisecond) // the last mission's trailing writes
	w1, c1, t1 := wstats(), cnc.Stats(), tnc.Stats()
	g1, gc1 := goroutinesCreated(), gcCycles()
	n := float64(len(lat))
	b.ReportMetric(float64(w1.OutMsgs-w0.OutMsgs)/n, "worker-sent/mission")
	b.ReportMetric(float64(w1.InMsgs-w0.InMsgs)/n, "worker-recv/mission")
	b.ReportMetric(float64(c1.OutMsgs-c0.OutMsgs)/n, "client-sent/mission")
	b.ReportMetric(float64(c1.InMsgs-c0.InMsgs)/n, "client-recv/mission")
	b.ReportMetric(float64(w1.OutMsgs-w0.OutMsgs+c1.OutMsgs-c0.OutMsgs+t1.OutMsgs-t0.OutMsgs)/n, "sent/mission")
	b.ReportMetric(float64(g1-g0)/n, "goroutines-started/mission")
	b.ReportMetric(float64(gc1-gc0)/n, "gc-cycles/mission")
	reportLatency(b, lat)
}

// goroutinesCreated is how many goroutines the process has started, the
// server's, the connections' and the parties' together.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// slowTraces writes the runtime trace of the last moments of the process
// when a mission was slower than PTC_BENCH_SLOW_US microseconds (2,000
// unless set), for the first maxSlowTraces such missions, into the
// directory PTC_BENCH_SLOW_TRACE: what ran while they waited, each
// mission a task of the trace (timedSearch), read with go tool trace.
// Nil, and nothing traced, unless the directory is set.
type slowTraces struct {
	fr   *trace.FlightRecorder
	dir  string
	over time.Duration
	n    int
}

// maxSlowTraces is how many traces of slow missions a run writes at most.
const maxSlowTraces = 5

func newSlowTraces(b *testing.B) *slowTraces {
	dir := os.Getenv("PTC_BENCH_SLOW_TRACE")
	if dir == "" {
		return nil
	}
	over := 2 * time.Millisecond
	if v := os.Getenv("PTC_BENCH_SLOW_US"); v != "" {
		us, err := strconv.Atoi(v)
		if err != nil || us <= 0 {
			b.Fatalf("PTC_BENCH_SLOW_US=%q: want a positive number of microseconds", v)
		}
		over = time.Duration(us) * time.Microsecond
	}
	// a mission's trace is written once it ended: the last 100 ms hold it
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 100 * time.Millisecond})
	if err := fr.Start(); err != nil {
		b.Fatalf("flight recorder: %v", err)
	}
	b.Cleanup(fr.Stop)
	return &slowTraces{fr: fr, dir: dir, over: over}
}

// took writes a trace when d, a mission's submit → result time, is over
// the bound, for the first maxSlowTraces such missions.
func (s *slowTraces) took(b *testing.B, d time.Duration) {
	if s == nil || d <= s.over || s.n >= maxSlowTraces {
		return
	}
	s.n++
	name := filepath.Join(s.dir, fmt.Sprintf("%s-slow%d-%dus.trace", strings.ReplaceAll(b.Name(), "/", "_"), s.n, d.Microseconds()))
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	_, err = s.fr.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatalf("trace of a slow mission: %v", err)
	}
	b.Logf("a mission of %s: %s", d, name)
}

// gcCycles is how many collections the process has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// searchOnce is the runner of the cost benchmarks: one call of the tool
// search, whose answer is the mission's return.
var searchOnce = fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
	r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
	return &messages.Step{Return: r}, err
})

// timedSearch runs one mission of searchOnce through c and returns its
// submit → result time. While the process is traced (-test.trace) each
// mission is a task of the trace ("mission"), so what ran during a slow
// one can be read off it (docs/performance.md, "The slowest 1% of idle
// missions").
func timedSearch(ctx context.Context, b *testing.B, c *fleet.Client) time.Duration {
	if trace.IsEnabled() {
		var task *trace.Task
		ctx, task = trace.NewTask(ctx, "mission")
		defer task.End()
	}
	start := time.Now()
	st, err := c.Run(ctx, newMission("search"))
	if err != nil || st.Fail != nil {
		b.Fatalf("mission: %v %+v", err, st)
	}
	return time.Since(start)
}

// reportLatency reports the p50 and p99 of lat, submit → result times.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
