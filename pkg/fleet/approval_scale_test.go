package fleet_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// heapAfterGC is the Go heap in use after a collection, and the
// goroutines running.
func heapAfterGC() (heap uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, runtime.NumGoroutine()
}

// rss is the process's resident set in bytes (Linux), 0 elsewhere.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestManyMissionsAwaitApprovalAtOnce suspends many missions at a call
// that needs approval: none holds a worker slot or a goroutine while it
// waits. Then a few decisions one at a time and many given at once each
// resume their mission, which finishes with its call run once (the
// service deduplicates by idempotency key); it reports the resume latency
// of both, where the time of those at once goes and the CPU time of a
// resumption. PTC_APPROVAL_MISSIONS and PTC_APPROVAL_DECISIONS size it
// (default 300 and 100; docs/approvals.md has figures of 1,000 at once),
// PTC_APPROVAL_WORKERS and PTC_APPROVAL_SLOTS the fleet (default 2
// workers of 32 slots), PTC_APPROVAL_CPUPROFILE names a file for a CPU
// profile of the decisions. The worker's memory apart from the server's is measured by
// TestWorkerProcessMemoryWhileMissionsAwaitApproval (pkg/fleet/agentrun).
func TestManyMissionsAwaitApprovalAtOnce(t *testing.T) {
	n := envInt("PTC_APPROVAL_MISSIONS", 300)
	decisions := min(envInt("PTC_APPROVAL_DECISIONS", 100), n)
	f := startApprovalFleet(t, envInt("PTC_APPROVAL_WORKERS", 2), envInt("PTC_APPROVAL_SLOTS", 32))
	nc, shop, c, workers := f.nc, f.shop, f.c, f.workers
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	idleHeap, idleG := heapAfterGC()

	start := time.Now()
	ids := f.submit(ctx, t, n)
	suspended := f.suspended
	// A run counts as suspended before its handler returns the slot, so
	// the last runs may hold theirs a moment longer; a slot still held
	// once every mission waits fails here.
	running := f.running
	// a mission that ended before it suspended never will: no need to
	// wait for the rest
	ended := func() int64 {
		var e int64
		for _, w := range workers {
			st := w.Stats()
			e += st.Succeeded + st.Failed + st.Cancelled + st.DeadLettered + st.Invalid
		}
		return e
	}
	for deadline := time.Now().Add(8 * time.Minute); suspended() < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || ended() > 0 {
			t.Fatal(describeUnsuspended(ctx, c, workers, ids))
		}
	}
	waited := time.Since(start)
	eventually(t, 30*time.Second, "no slot held while missions wait", func() bool { return running() == 0 })
	// The goroutines a worker and a tool service keep waiting a fetch's
	// time for more work end moments after the last suspension; a
	// goroutine kept by each waiting mission would be n more.
	goroutineLimit := idleG + max(20, n/10)
	eventually(t, 10*time.Second, "goroutines back near idle while missions wait", func() bool {
		return runtime.NumGoroutine() <= goroutineLimit
	})
	waitHeap, waitG := heapAfterGC()
	js, _ := jetstream.New(nc)
	acct, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parked, err := c.Stores().Parked.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d missions suspended in %s: process heap after GC %.1f MB idle, %.1f MB while they wait; goroutines %d idle, %d waiting; RSS %.1f MB; JetStream storage %.1f MB (PARKED %d messages, %.1f MB); slots held 0",
		n, waited.Round(time.Millisecond), float64(idleHeap)/1e6, float64(waitHeap)/1e6, idleG, waitG, float64(rss())/1e6,
		float64(acct.Store)/1e6, parked.State.Msgs, float64(parked.State.Bytes)/1e6)
	if waitG > goroutineLimit {
		t.Errorf("%d goroutines while missions wait, %d idle: waiting holds goroutines", waitG, idleG)
	}

	// What one tick of the workers' sweep for stalled decisions reads
	// while they all wait: none is stalled (each call is pending).
	sweepStart := time.Now()
	if stalled, err := c.StalledApprovals(ctx, 0); err != nil || len(stalled) != 0 {
		t.Fatalf("stalled while every call waits: %d %v", len(stalled), err)
	}
	t.Logf("a sweep for stalled decisions over %d waiting missions: %s", n, time.Since(sweepStart).Round(time.Millisecond))

	// Decisions one at a time, each once the one before reached its tool
	// service: the resume latency of a decision that waits for nothing
	// (missions beyond those decided at once, at most 10).
	paced := min(10, n-decisions)
	// each decided mission's Step and when its Await returned, by its
	// index in ids: a refund that did not run is described from them
	steps := make([]*messages.Step, decisions+paced)
	finished := make([]time.Time, decisions+paced)
	var pacedLat []time.Duration
	for j, id := range ids[decisions : decisions+paced] {
		at := time.Now()
		if _, err := c.Decide(ctx, id, fleet.Decision{Approve: true, By: "one"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the approved call reaches its service", func() bool { _, ok := shop.arrived(id); return ok })
		arrived, _ := shop.arrived(id)
		pacedLat = append(pacedLat, arrived.Sub(at))
		step, err := c.Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		steps[decisions+j], finished[decisions+j] = step, time.Now()
	}
	if paced > 0 {
		slices.Sort(pacedLat)
		t.Logf("%d decisions one at a time: resume latency (decision → tool call) p50 %s, max %s",
			paced, pacedLat[paced/2].Round(100*time.Microsecond), pacedLat[paced-1].Round(100*time.Microsecond))
	}

	// Decisions at once: each resumes its mission. PTC_APPROVAL_CPUPROFILE
	// names a file for a CPU profile of this part, PTC_APPROVAL_MEMPROFILE
	// one for the allocations made in it (an allocs profile, with the
	// allocations before it in <file>.base: go tool pprof -base).
	stopCPU := func() {}
	if f := os.Getenv("PTC_APPROVAL_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			t.Fatal(err)
		}
		stopCPU = sync.OnceFunc(func() { pprof.StopCPUProfile(); out.Close() })
		defer stopCPU()
	}
	memProfile := os.Getenv("PTC_APPROVAL_MEMPROFILE")
	if memProfile != "" {
		writeAllocs(t, memProfile+".base")
	}
	resumeStart := time.Now()
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	cpu0, _ := fleettest.ProcessCPU()
	decided, decideDone := f.decide(ctx, t, ids[:decisions])
	each32(decisions, func(i int) {
		step, err := c.Await(ctx, ids[i])
		steps[i], finished[i] = step, time.Now()
		if err != nil || !step.Ok() {
			t.Errorf("mission %s: %+v %v", ids[i], step, err)
		}
	})
	cpu1, _ := fleettest.ProcessCPU()
	runtime.ReadMemStats(&mem1)
	stopCPU()
	if memProfile != "" {
		writeAllocs(t, memProfile)
	}
	cpuUsed := cpu1 - cpu0
	t.Logf("%d resumptions in %s, CPU time of the process (server, workers, client) %s: %s a resumption; allocated %.1f KB in %d allocations a resumption, %d collections",
		decisions, time.Since(resumeStart).Round(time.Millisecond), cpuUsed.Round(time.Millisecond), (cpuUsed / time.Duration(decisions)).Round(10*time.Microsecond),
		float64(mem1.TotalAlloc-mem0.TotalAlloc)/1e3/float64(decisions), (mem1.Mallocs-mem0.Mallocs)/uint64(decisions), mem1.NumGC-mem0.NumGC)
	// Each approved refund ran, and its answer is what the mission
	// returned: a refund answered with a tool error (which the runner
	// returns as the Step's value) or never run is described, with what
	// its mission's records say happened to it.
	var lost []int
	for j, step := range steps {
		_, ran := shop.arrived(ids[j])
		var ret map[string]any
		if step != nil {
			ret, _ = step.Return.(map[string]any)
		}
		if !ran || ret["refunded"] != int64(500) {
			lost = append(lost, j)
		}
	}
	if len(lost) > 0 {
		// a call that reached its service late runs moments later; one
		// lost never does
		for late := time.Now().Add(10 * time.Second); time.Now().Before(late); time.Sleep(50 * time.Millisecond) {
			if !slices.ContainsFunc(lost, func(j int) bool { _, ran := shop.arrived(ids[j]); return !ran }) {
				break
			}
		}
		for _, j := range lost {
			t.Error(describeRefund(ctx, c, shop, ids[j], steps[j], finished[j]))
		}
		t.FailNow()
	}
	_, refunds, keys := shop.counts()
	if len(refunds) != decisions+paced {
		t.Fatalf("%d refunds ran for %d approvals", len(refunds), decisions+paced)
	}
	if slices.Sort(keys); len(slices.Compact(keys)) != decisions+paced {
		t.Fatalf("an approved call ran twice: %d distinct keys of %d", len(keys), decisions+paced)
	}
	// Resume latency: a decision to its call reaching the tool service.
	var lat []time.Duration
	for j := range decisions {
		if at, ok := shop.arrived(ids[j]); ok {
			lat = append(lat, at.Sub(decided[j]))
		}
	}
	slices.Sort(lat)
	// Where the time goes: the decision itself (Client.Decide), its end to
	// the resumed run's start on a worker (the wake through PARKED and
	// MISSIONS, the fetch), that start to the call (the run replaying its
	// journal up to the call).
	var decide, queue, replay, refundCall []time.Duration
	for j := range decisions {
		evs, err := c.Events(ctx, ids[j])
		if err != nil {
			continue
		}
		var started time.Time
		for _, ev := range evs {
			switch {
			case ev.Kind == messages.EventStarted:
				started = ev.Time
			case ev.Kind == messages.EventToolResult && ev.Tool == "refund":
				refundCall = append(refundCall, ev.Duration)
			}
		}
		at, ok := shop.arrived(ids[j])
		if !ok || started.IsZero() {
			continue
		}
		decide = append(decide, decideDone[j].Sub(decided[j]))
		queue = append(queue, started.Sub(decideDone[j]))
		replay = append(replay, at.Sub(started))
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2].Round(100 * time.Microsecond)
	}
	t.Logf("p50 of the parts: the decision %s, decided → run started %s, run started → call %s", med(decide), med(queue), med(replay))
	if len(refundCall) > 0 {
		slices.Sort(refundCall)
		t.Logf("the refund call (sent → answered, the service's dedup claim and outcome writes included): p50 %s, max %s",
			refundCall[len(refundCall)/2].Round(time.Millisecond), refundCall[len(refundCall)-1].Round(time.Millisecond))
	}
	t.Logf("%d decisions at once: all %d missions finished; resume latency (decision → tool call) p50 %s, p90 %s, p99 %s, max %s",
		decisions, decisions, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond),
		lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	afterHeap, afterG := heapAfterGC()
	t.Logf("after: heap %.1f MB, goroutines %d", float64(afterHeap)/1e6, afterG)
}

// describeRefund says what happened to mission id's approved refund:
// the Step its Await returned (at finished), whether and when the refund
// reached the service (shop nil: not asked), and the mission's status,
// approval records and events.
func describeRefund(ctx context.Context, c *fleet.Client, shop *shopTools, id string, step *messages.Step, finished time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mission %s", id)
	if shop != nil {
		if at, ok := shop.arrived(id); ok && at.After(finished) {
			fmt.Fprintf(&b, ": approved refund reached the service %s after the mission finished", at.Sub(finished).Round(time.Millisecond))
		} else if ok {
			fmt.Fprintf(&b, ": approved refund reached the service %s before the mission finished", finished.Sub(at).Round(time.Millisecond))
		} else {
			b.WriteString(": approved refund never reached the service")
		}
	}
	if step != nil {
		fmt.Fprintf(&b, "; step return %v, fail %+v, attempts %d", step.Return, step.Fail, step.Attempts)
	}
	if st, err := c.Status(ctx, id); err != nil {
		fmt.Fprintf(&b, "; status: %v", err)
	} else {
		fmt.Fprintf(&b, "; status %s attempt %d worker %s suspensions %d reason %q", st.State, st.Attempt, st.Worker, st.Suspensions, st.Reason)
	}
	if as, err := c.Approvals(ctx, id); err != nil {
		fmt.Fprintf(&b, "; approvals: %v", err)
	} else {
		for _, a := range as {
			fmt.Fprintf(&b, "; approval %s %s by %s (%s) requested %s decided %s deadline %s",
				a.Call, a.State, a.DecidedBy, a.Reason, a.RequestedAt.Format(time.StampMilli), a.DecidedAt.Format(time.StampMilli), a.Deadline.Format(time.StampMilli))
		}
	}
	evs, err := c.Events(ctx, id)
	if err != nil {
		fmt.Fprintf(&b, "; events: %v", err)
	}
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s attempt %d worker %s", ev.Time.Format(time.StampMilli), ev.Kind, ev.Attempt, ev.Worker)
		if ev.Tool != "" {
			fmt.Fprintf(&b, " tool %s call %s", ev.Tool, ev.CallID)
		}
		if ev.Duration > 0 {
			fmt.Fprintf(&b, " in %s", ev.Duration.Round(time.Millisecond))
		}
		if ev.Error != "" {
			fmt.Fprintf(&b, " error %q", ev.Error)
		}
		if ev.Data != nil {
			fmt.Fprintf(&b, " data %v", ev.Data)
		}
	}
	return b.String()
}

// describeUnsuspended says why not every mission of ids suspended: the
// workers' counts, the missions counted by state, and what happened to
// the first few not awaiting approval.
func describeUnsuspended(ctx context.Context, c *fleet.Client, workers []*fleet.Worker, ids []string) string {
	var b strings.Builder
	b.WriteString("not every mission suspended:")
	for _, w := range workers {
		fmt.Fprintf(&b, " worker %+v;", w.Stats())
	}
	states := map[string]int{}
	var others []string
	for _, id := range ids {
		st, err := c.Status(ctx, id)
		state := "no status"
		if err == nil {
			state = st.State
		}
		states[state]++
		if state != messages.StateAwaitingApproval {
			others = append(others, id)
		}
	}
	fmt.Fprintf(&b, " missions by state %v", states)
	for _, id := range others[:min(5, len(others))] {
		b.WriteString("\n")
		b.WriteString(describeRefund(ctx, c, nil, id, nil, time.Time{}))
	}
	return b.String()
}

// writeAllocs writes the allocs profile to the file named.
func writeAllocs(t *testing.T, name string) {
	t.Helper()
	out, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		t.Fatal(err)
	}
}

// approvalFleet is the fleet TestManyMissionsAwaitApprovalAtOnce and
// BenchmarkApprovalsAtOnce run in one process: the embedded server, a
// tool service "shop" that deduplicates (each approved call runs exactly
// once, also when a loaded worker's mission is redelivered and sends it
// again), a client and workers running refundRunner, each party on a
// connection of its own, as in a fleet (one connection would carry every
// message through one read loop on each side, which leaves part of the
// process's CPU idle and lengthens the latencies measured).
type approvalFleet struct {
	nc      *nats.Conn
	shop    *shopTools
	c       *fleet.Client
	workers []*fleet.Worker
}

func startApprovalFleet(tb testing.TB, workers, slots int) *approvalFleet {
	srv, nc := runJetStream(tb)
	f := &approvalFleet{nc: nc, shop: startShop(tb, connect(tb, srv), true), c: newClient(tb, nc)}
	for range workers {
		f.workers = append(f.workers, startWorker(tb, connect(tb, srv), refundRunner(nil), func(cfg *fleet.WorkerConfig) {
			cfg.Slots = slots
			cfg.Store.MaxAckPending = 2000
			// many runs at once under -race on a loaded machine: a run's
			// heartbeat may come late, and a redelivery is not what this
			// fleet is measured for
			cfg.Store.AckWait, cfg.Store.MaxDeliver = 5*time.Second, 10
			// and a tool call may take seconds there: the helper's 2 s
			// is too tight, a lookup answered with a timeout ends its
			// mission before it suspends (runner_error) and a refund's
			// leaves an approved call unrun. A call answered with an
			// error still fails the test, named.
			cfg.ToolTimeout = 30 * time.Second
		}))
	}
	return f
}

// submit submits n refund missions of 500, each of which suspends at its
// refund, 32 at a time, and returns their ids.
func (f *approvalFleet) submit(ctx context.Context, tb testing.TB, n int) []string {
	ids := make([]string, n)
	each32(n, func(i int) {
		m := refundMission(500)
		ids[i] = m.ID
		if _, err := f.c.Submit(ctx, m); err != nil {
			tb.Error(err)
		}
	})
	return ids
}

// suspended counts the suspensions of the fleet's workers so far.
func (f *approvalFleet) suspended() int64 {
	var s int64
	for _, w := range f.workers {
		s += w.Stats().Suspended
	}
	return s
}

// running counts the runs holding a slot of one of the fleet's workers.
func (f *approvalFleet) running() int {
	r := 0
	for _, w := range f.workers {
		r += w.Running()
	}
	return r
}

// decide approves the waiting call of each mission of ids at once, 32
// deciders at a time, and returns when each decision was asked for and
// when Client.Decide returned it, by index in ids. With
// PTC_APPROVAL_BATCH it gives them with one Client.DecidePending of the
// longest waiting len(ids) calls (ids must be those): each is asked for
// at its start and given when its record says it was decided.
func (f *approvalFleet) decide(ctx context.Context, tb testing.TB, ids []string) (decided, decideDone []time.Time) {
	decided, decideDone = make([]time.Time, len(ids)), make([]time.Time, len(ids))
	if os.Getenv("PTC_APPROVAL_BATCH") != "" {
		start := time.Now()
		out, err := f.c.DecidePending(ctx, fleet.PendingFilter{Tool: "refund", Max: len(ids)}, fleet.Decision{Approve: true, By: "load"})
		if err != nil || len(out) != len(ids) {
			tb.Fatalf("a batch of %d decisions: %d outcomes, %v", len(ids), len(out), err)
		}
		at := map[string]time.Time{}
		for _, o := range out {
			if o.Err != nil {
				tb.Fatalf("mission %s: %v", o.Call.MissionID, o.Err)
			}
			at[o.Call.MissionID] = o.Decided.DecidedAt
		}
		for i, id := range ids {
			if at[id].IsZero() {
				tb.Fatalf("mission %s: not among the batch's longest waiting calls", id)
			}
			decided[i], decideDone[i] = start, at[id]
		}
		return decided, decideDone
	}
	each32(len(ids), func(i int) {
		decided[i] = time.Now()
		if _, err := f.c.Decide(ctx, ids[i], fleet.Decision{Approve: true, By: "load"}); err != nil {
			tb.Error(err)
		}
		decideDone[i] = time.Now()
	})
	return decided, decideDone
}

// each32 calls do(i) for each i below n, 32 calls at a time, each on a
// goroutine of its own, and returns once all have returned.
func each32(n int, do func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			do(i)
		})
	}
	wg.Wait()
}

// BenchmarkApprovalsAtOnce gives 1,000 decisions at once (32 deciders),
// each to a mission suspended at a call that needs approval, on 2 workers
// of 32 slots, all in one process with the embedded server, after ten
// decisions one at a time. An op is one such batch: its missions are submitted and suspended before the timer
// starts, and it ends when every mission has finished. Over all the
// resumptions of a run it reports the resume latency (the decision asked
// for → its call reaching the tool service), p50-ms and p90-ms; the
// call's time after the batch's first decision was asked for, as though
// every decision had been given at that instant, burst-p50-ms (it does
// not depend on how fast the decisions came), and burst-max-ms, the last
// call's; and the process's CPU time (server, workers, client), allocations and bytes a
// resumption; decisions-ms, how long the 1,000 decisions took to be
// given, which the p50 follows (the faster they come, the more of them
// wait for CPU behind the others). With PTC_APPROVAL_BATCH the decisions
// are one DecidePending (decide), every one asked for at its start:
// p50-ms is then burst-p50-ms. Compare trees with -benchtime 1x
// -count 16 and benchstat.
func BenchmarkApprovalsAtOnce(b *testing.B) {
	const atOnce = 1000
	// the timer runs from the start: the fleet's setup and the warm-up
	// are not an op's
	b.StopTimer()
	f := startApprovalFleet(b, 2, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// warm: ten decisions one at a time first, as the test makes them
	// (the client's first decision asks whether it may publish wakes
	// into MISSIONS; the workers' first resumptions set up what the rest
	// reuse)
	warm := f.submit(ctx, b, 10)
	eventually(b, time.Minute, "the warm-up missions suspended", func() bool { return f.suspended() >= 10 })
	for _, id := range warm {
		if _, err := f.c.Decide(ctx, id, fleet.Decision{Approve: true, By: "one"}); err != nil {
			b.Fatal(err)
		}
		if _, err := f.c.Await(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	var lat, burst []time.Duration
	var cpu, decisions time.Duration
	var mallocs, bytes uint64
	cpuOK := true
	for range b.N {
		before := f.suspended()
		ids := f.submit(ctx, b, atOnce)
		eventually(b, time.Minute, "every mission suspended", func() bool { return f.suspended() >= before+atOnce })
		eventually(b, 30*time.Second, "no slot held while missions wait", func() bool { return f.running() == 0 })
		runtime.GC()
		var mem0, mem1 runtime.MemStats
		runtime.ReadMemStats(&mem0)
		cpu0, ok0 := fleettest.ProcessCPU()
		b.StartTimer()
		decided, decideDone := f.decide(ctx, b, ids)
		decisions += slices.MaxFunc(decideDone, time.Time.Compare).Sub(slices.MinFunc(decided, time.Time.Compare))
		each32(len(ids), func(i int) {
			if step, err := f.c.Await(ctx, ids[i]); err != nil || !step.Ok() {
				b.Errorf("mission %s: %+v %v", ids[i], step, err)
			}
		})
		b.StopTimer()
		cpu1, ok1 := fleettest.ProcessCPU()
		runtime.ReadMemStats(&mem1)
		cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		mallocs += mem1.Mallocs - mem0.Mallocs
		bytes += mem1.TotalAlloc - mem0.TotalAlloc
		first := slices.MinFunc(decided, time.Time.Compare)
		for j, id := range ids {
			at, ok := f.shop.arrived(id)
			if !ok {
				b.Fatalf("mission %s finished and its approved refund never reached the service", id)
			}
			lat, burst = append(lat, at.Sub(decided[j])), append(burst, at.Sub(first))
		}
	}
	n := float64(b.N * atOnce)
	fleettest.ReportResumeLatencies(b, lat, burst)
	b.ReportMetric(float64(decisions.Microseconds())/1e3/float64(b.N), "decisions-ms")
	if cpuOK {
		b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/resumption")
	}
	b.ReportMetric(float64(mallocs)/n, "allocs/resumption")
	b.ReportMetric(float64(bytes)/n, "B/resumption")
}
