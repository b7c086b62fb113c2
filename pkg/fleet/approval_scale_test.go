package fleet_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
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
// waits, and the worker's heap comes back to its idle level; then many
// decisions given at once each resume their mission, which finishes with
// its call run once (the service deduplicates by idempotency key). PTC_APPROVAL_MISSIONS and PTC_APPROVAL_DECISIONS
// size it (default 300 and 100; the figures in docs/approvals.md were
// taken with 10,000 and 1,000).
func TestManyMissionsAwaitApprovalAtOnce(t *testing.T) {
	n := envInt("PTC_APPROVAL_MISSIONS", 300)
	decisions := min(envInt("PTC_APPROVAL_DECISIONS", 100), n)
	_, nc := runJetStream(t)
	// the service deduplicates: each approved call runs exactly once, also
	// when a loaded worker's mission is redelivered and sends it again
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	var workers []*fleet.Worker
	for range 2 {
		workers = append(workers, startWorker(t, nc, refundRunner(nil), func(cfg *fleet.WorkerConfig) {
			cfg.Slots = 32
			cfg.Store.MaxAckPending = 2000
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
	if waitG > idleG+20 {
		t.Errorf("%d goroutines while missions wait, %d idle: waiting holds goroutines", waitG, idleG)
	}

	// Decisions at once: each resumes its mission.
	decided := make([]time.Time, decisions)
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
	_, refunds, keys := shop.counts()
	if len(refunds) != decisions {
		t.Fatalf("%d refunds ran for %d approvals", len(refunds), decisions)
	}
	if slices.Sort(keys); len(slices.Compact(keys)) != decisions {
		t.Fatalf("an approved call ran twice: %d distinct keys of %d", len(keys), decisions)
	}
	// Resume latency: a decision to its call reaching the tool service.
	var lat []time.Duration
	for j := range decisions {
		if at, ok := shop.arrived(ids[j]); ok {
			lat = append(lat, at.Sub(decided[j]))
		}
	}
	slices.Sort(lat)
	t.Logf("%d decisions at once: all %d missions finished; resume latency (decision → tool call) p50 %s, p90 %s, max %s",
		decisions, decisions, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	afterHeap, afterG := heapAfterGC()
	t.Logf("after: heap %.1f MB, goroutines %d", float64(afterHeap)/1e6, afterG)
}
