package fleet_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	// each party on a connection of its own, as in a fleet: one
	// connection would carry every message through one read loop on each
	// side, which leaves part of the process's CPU idle and lengthens the
	// latencies measured here
	srv, nc := runJetStream(t)
	// the service deduplicates: each approved call runs exactly once, also
	// when a loaded worker's mission is redelivered and sends it again
	shop := startShop(t, connect(t, srv), true)
	c := newClient(t, nc)
	var workers []*fleet.Worker
	for range envInt("PTC_APPROVAL_WORKERS", 2) {
		workers = append(workers, startWorker(t, connect(t, srv), refundRunner(nil), func(cfg *fleet.WorkerConfig) {
			cfg.Slots = envInt("PTC_APPROVAL_SLOTS", 32)
			cfg.Store.MaxAckPending = 2000
			// many runs at once under -race on a loaded machine: a run's
			// heartbeat may come late, and a redelivery is not what this
			// test is about
			cfg.Store.AckWait, cfg.Store.MaxDeliver = 5*time.Second, 10
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	idleHeap, idleG := heapAfterGC()

	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	start := time.Now()
	for i := range ids {
		m := refundMission(500)
		ids[i] = m.ID
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.Submit(ctx, m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	suspended := func() int64 {
		var s int64
		for _, w := range workers {
			s += w.Stats().Suspended
		}
		return s
	}
	// A run counts as suspended before its handler returns the slot, so
	// the last runs may hold theirs a moment longer; a slot still held
	// once every mission waits fails here.
	running := func() int {
		r := 0
		for _, w := range workers {
			r += w.Running()
		}
		return r
	}
	eventually(t, 8*time.Minute, "every mission suspended", func() bool { return suspended() >= int64(n) })
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

	// Decisions one at a time, each once the one before reached its tool
	// service: the resume latency of a decision that waits for nothing
	// (missions beyond those decided at once, at most 10).
	paced := min(10, n-decisions)
	var pacedLat []time.Duration
	for _, id := range ids[decisions : decisions+paced] {
		at := time.Now()
		if _, err := c.Decide(ctx, id, fleet.Decision{Approve: true, By: "one"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the approved call reaches its service", func() bool { _, ok := shop.arrived(id); return ok })
		arrived, _ := shop.arrived(id)
		pacedLat = append(pacedLat, arrived.Sub(at))
		if _, err := c.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
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
	var cpu0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	decided := make([]time.Time, decisions)
	decideDone := make([]time.Time, decisions)
	var failed atomic.Int64
	for i := range decisions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			decided[i] = time.Now()
			if _, err := c.Decide(ctx, ids[i], fleet.Decision{Approve: true, By: "load"}); err != nil {
				failed.Add(1)
				t.Error(err)
			}
			decideDone[i] = time.Now()
		}()
	}
	wg.Wait()
	for i := range decisions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			step, err := c.Await(ctx, ids[i])
			if err != nil || !step.Ok() {
				t.Errorf("mission %s: %+v %v", ids[i], step, err)
			}
		}()
	}
	wg.Wait()
	var cpu1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	runtime.ReadMemStats(&mem1)
	stopCPU()
	if memProfile != "" {
		writeAllocs(t, memProfile)
	}
	cpuUsed := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
	t.Logf("%d resumptions in %s, CPU time of the process (server, workers, client) %s: %s a resumption; allocated %.1f KB in %d allocations a resumption, %d collections",
		decisions, time.Since(resumeStart).Round(time.Millisecond), cpuUsed.Round(time.Millisecond), (cpuUsed / time.Duration(decisions)).Round(10*time.Microsecond),
		float64(mem1.TotalAlloc-mem0.TotalAlloc)/1e3/float64(decisions), (mem1.Mallocs-mem0.Mallocs)/uint64(decisions), mem1.NumGC-mem0.NumGC)
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
	var decide, queue, replay []time.Duration
	for j := range decisions {
		evs, err := c.Events(ctx, ids[j])
		if err != nil {
			continue
		}
		var started time.Time
		for _, ev := range evs {
			if ev.Kind == messages.EventStarted {
				started = ev.Time
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
	t.Logf("%d decisions at once: all %d missions finished; resume latency (decision → tool call) p50 %s, p90 %s, p99 %s, max %s",
		decisions, decisions, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond),
		lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	afterHeap, afterG := heapAfterGC()
	t.Logf("after: heap %.1f MB, goroutines %d", float64(afterHeap)/1e6, afterG)
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
