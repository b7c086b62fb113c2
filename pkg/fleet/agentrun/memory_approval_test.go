package agentrun_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// startNATSProcess starts a single nats-server process with JetStream.
func startNATSProcess(t testing.TB) *natsNode {
	t.Helper()
	dir := t.TempDir()
	n := &natsNode{name: "solo", url: fmt.Sprintf("nats://127.0.0.1:%d", fleettest.FreePort(t))}
	n.conf = filepath.Join(dir, "solo.conf")
	conf := fmt.Sprintf("server_name: solo\nlisten: %s\njetstream { store_dir: %q }\n", strings.TrimPrefix(n.url, "nats://"), filepath.Join(dir, "js"))
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	n.start(t)
	t.Cleanup(n.kill)
	return n
}

// procRSS is the resident set of process pid in bytes (Linux).
func procRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for process %d", pid)
	return 0
}

// workerMem is what a worker process reports of itself.
type workerMem struct {
	heap                           uint64 // in use after GC
	stack                          uint64 // goroutine stacks
	goroutines, running, suspended int
}

// mem asks worker process p for its memory (SIGUSR1, runWorkerProcess).
func (p *proc) mem(t *testing.T) workerMem {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-p.lines:
		var m workerMem
		if _, err := fmt.Sscanf(line, "mem %d %d %d %d %d", &m.heap, &m.goroutines, &m.running, &m.suspended, &m.stack); err != nil {
			t.Fatalf("worker %s said %q: %v", p.id, line, err)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %s did not report its memory", p.id)
	}
	return workerMem{}
}

// The worker as its own process, the NATS server as another: while many
// missions wait for approval the worker holds no slot, no goroutine and
// no memory for them (its heap stays at its idle level), and nats-server's
// memory and storage are reported apart; then every mission is approved
// at once (32 deciders) and resumes, and the test reports the resume
// latency (the decision asked for → the call reaching the tool's handler)
// of this fleet of processes. PTC_APPROVAL_MISSIONS sizes it (default
// 200) and PTC_APPROVAL_WORKERS gives the number of worker processes of
// 32 slots (default 1); docs/approvals.md has the figures of 10,000
// waiting and of 1,000 decided at once.
func TestWorkerProcessMemoryWhileMissionsAwaitApproval(t *testing.T) {
	n := envInt("PTC_APPROVAL_MISSIONS", 200)
	node := startNATSProcess(t)
	model := newFakeModel()
	model.program = func(k, s int) string {
		if s == 1 {
			return fmt.Sprintf("```clojure\n(def p (tool/pay {:n %d}))\np\n```", k)
		}
		return "```clojure\n(return {:p p})\n```"
	}
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	nc := dial(t, node.url)
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{MaxAckPending: 2 * n}})
	if err != nil {
		t.Fatal(err)
	}
	pay := startPayTools(t, dial(t, node.url), 1)
	ws := make([]*proc, envInt("PTC_APPROVAL_WORKERS", 1))
	for i := range ws {
		ws[i] = startWorkerProc(t, node.url, ms.URL, fmt.Sprintf("mem%d", i+1), []string{envWorkerSlots + "=32"}, true)
	}
	time.Sleep(time.Second) // the workers' start settles
	idle := make([]workerMem, len(ws))
	var idleRSS uint64
	for i, w := range ws {
		idle[i] = w.mem(t)
		idleRSS += procRSS(t, w.cmd.Process.Pid)
	}
	srvIdleRSS := procRSS(t, node.cmd.Process.Pid)

	began := time.Now()
	ids := submitMissions(ctx, t, client, n, func(id string, k int) *messages.Mission {
		return &messages.Mission{ID: id, Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: pay", id, k), Tools: []string{"pay"}, Limits: messages.Limits{MaxTurns: 3}},
			Tools: []string{"pay"}, Approval: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "pay"}}}}
	})
	waiting := make([]workerMem, len(ws))
	for {
		suspended, running := 0, 0
		for i, w := range ws {
			waiting[i] = w.mem(t)
			suspended += waiting[i].suspended
			running += waiting[i].running
		}
		if suspended >= n && running == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d missions suspended", suspended, n)
		}
		time.Sleep(time.Second)
	}
	suspendedIn := time.Since(began)
	var waitRSS uint64
	for _, w := range ws {
		waitRSS += procRSS(t, w.cmd.Process.Pid)
	}
	srvWaitRSS := procRSS(t, node.cmd.Process.Pid)
	js, _ := jetstream.New(nc)
	acct, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		t.Logf("%d missions suspended in %s. Worker process %s: heap after GC %.1f MB idle, %.1f MB while they wait; goroutines %d idle, %d waiting; slots held %d",
			n, suspendedIn.Round(time.Millisecond), w.id, float64(idle[i].heap)/1e6, float64(waiting[i].heap)/1e6, idle[i].goroutines, waiting[i].goroutines, waiting[i].running)
		if waiting[i].goroutines > idle[i].goroutines+20 {
			t.Errorf("worker %s: %d goroutines while missions wait, %d idle: waiting holds goroutines", w.id, waiting[i].goroutines, idle[i].goroutines)
		}
		// nothing per waiting mission: at most 4 MB over the idle heap
		// (buffers and caches warmed by the work), whatever the number waiting
		if waiting[i].heap > idle[i].heap+4<<20 {
			t.Errorf("worker %s: heap %.1f MB while %d missions wait, %.1f MB idle: waiting holds memory", w.id, float64(waiting[i].heap)/1e6, n, float64(idle[i].heap)/1e6)
		}
	}
	t.Logf("worker processes' RSS %.1f MB idle, %.1f MB waiting. nats-server process: RSS %.1f MB idle, %.1f MB while they wait; JetStream storage %.1f MB",
		float64(idleRSS)/1e6, float64(waitRSS)/1e6, float64(srvIdleRSS)/1e6, float64(srvWaitRSS)/1e6, float64(acct.Store)/1e6)

	cpu := func() (workers, server, self time.Duration) {
		for _, w := range ws {
			workers += procCPU(t, w.cmd.Process.Pid)
		}
		return workers, procCPU(t, node.cmd.Process.Pid), procCPU(t, os.Getpid())
	}
	// with envCPUProfiles, the server's profile and the test's own of
	// the decisions and the resumptions (the workers' are cut at their
	// memory reports)
	profiles := os.Getenv(envCPUProfiles)
	if profiles != "" {
		if err := node.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(profiles, "cpu-test.pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	w0, s0, c0 := cpu()
	decided, given := make([]time.Time, n), make([]time.Time, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for k, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			decided[k] = time.Now()
			if _, err := client.Decide(ctx, id, fleet.Decision{Approve: true, By: "mem"}); err != nil {
				t.Error(err)
			}
			given[k] = time.Now()
		}()
	}
	wg.Wait()
	for k, id := range ids {
		step, err := client.Await(ctx, id)
		if err != nil || !step.Ok() || fmt.Sprint(step.Return) != fmt.Sprintf("map[p:%d]", k+1) {
			t.Fatalf("mission %d: %+v %v", k, step, err)
		}
	}
	w1, s1, c1 := cpu()
	if profiles != "" {
		pprof.StopCPUProfile()
		if err := node.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	perMission, _ := pay.counts()
	if len(perMission) != n {
		t.Errorf("pay ran for %d of %d missions", len(perMission), n)
	}
	lat, decision := make([]time.Duration, n), make([]time.Duration, n)
	var lastCall time.Time
	for k, id := range ids {
		at, ok := pay.arrived(id)
		if !ok {
			t.Fatalf("mission %s finished and its approved pay never reached the handler", id)
		}
		lat[k], decision[k] = at.Sub(decided[k]), given[k].Sub(decided[k])
		if at.After(lastCall) {
			lastCall = at
		}
	}
	slices.Sort(lat)
	slices.Sort(decision)
	first := slices.MinFunc(decided, time.Time.Compare)
	t.Logf("%d decisions at once: given in %s (a decision p50 %s), the last call %s after the first decision was asked for",
		n, slices.MaxFunc(given, time.Time.Compare).Sub(first).Round(time.Millisecond), decision[n/2].Round(100*time.Microsecond), lastCall.Sub(first).Round(time.Millisecond))
	t.Logf("%d decisions at once: resume latency (decision → the call reaching its handler) p50 %s, p90 %s, p99 %s, max %s",
		n, lat[n/2].Round(100*time.Microsecond), lat[n*9/10].Round(100*time.Microsecond), lat[n*99/100].Round(100*time.Microsecond), lat[n-1].Round(100*time.Microsecond))
	per := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Microsecond) }
	t.Logf("CPU time a resumption, to its mission's end: workers %s, nats-server %s, the test's process (deciders, awaiters, tool service, model) %s",
		per(w1-w0), per(s1-s0), per(c1-c0))
	var afterRSS uint64
	for _, w := range ws {
		after := w.mem(t)
		afterRSS += procRSS(t, w.cmd.Process.Pid)
		t.Logf("after every mission resumed and finished: worker %s heap %.1f MB, goroutines %d", w.id, float64(after.heap)/1e6, after.goroutines)
	}
	t.Logf("worker processes' RSS %.1f MB, nats-server RSS %.1f MB", float64(afterRSS)/1e6, float64(procRSS(t, node.cmd.Process.Pid))/1e6)
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// submitMissions submits n missions, 32 at a time, made by mission from a
// new id and the mission's number, and returns their ids in that order.
func submitMissions(ctx context.Context, t *testing.T, client *fleet.Client, n int, mission func(id string, k int) *messages.Mission) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for k := range ids {
		ids[k] = messages.NewMissionID()
		m := mission(ids[k], k)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return ids
}
