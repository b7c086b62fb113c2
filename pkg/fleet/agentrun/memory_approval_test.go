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

	"github.com/nats-io/nats.go"
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
func procRSS(t testing.TB, pid int) uint64 {
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
func (p *proc) mem(t testing.TB) workerMem {
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

// approvalProcFleet is a fleet of processes: nats-server and worker
// processes (sized as startApprovalProcFleet says), and in the test's
// process a client, the deduplicating pay service and a scripted model
// (answering at once unless PTC_APPROVAL_MODEL_DELAY, a duration, says
// otherwise) whose agent missions pay in their first turn, a call that
// waits for approval, and return what pay answered in their second.
type approvalProcFleet struct {
	node *natsNode
	ws   []*proc
	// slots is each worker's slots
	slots int
	// programMemory is each mission's limits.program_memory
	programMemory int64
	// pace, when set, is the time between two decisions of approveAll
	pace time.Duration
	// batch: approveAll gives its decisions with one DecidePending
	batch  bool
	nc     *nats.Conn
	client *fleet.Client
	pay    *payTools
}

// Approval fleet sizing: PTC_APPROVAL_SLOTS slots per worker process,
// default approvalSlots, and missions whose limits.program_memory is
// PTC_APPROVAL_PROGRAM_MEMORY bytes, by default the worker's default
// memory budget shared by its slots (4 MiB at 256), so that every slot
// can run at once, as docs/approvals.md ("Sizing a fleet for approvals
// at once") advises. At the default program_memory of 64 MiB a 1 GiB
// budget runs 16 missions at once however many slots there are.
// PTC_APPROVAL_WORKER_ENV adds variables (space-separated NAME=VALUE) to
// the worker processes' environment only: GOGC=400 measures the workers'
// garbage collection apart (docs/operations.md, "Memory").
const approvalSlots = 256

// startApprovalProcFleet starts a fleet of the given number of worker
// processes whose client lets pending missions queue up to maxPending
// (at least the fleet's slots, so that none stays idle).
func startApprovalProcFleet(ctx context.Context, tb testing.TB, workers, maxPending int) *approvalProcFleet {
	tb.Helper()
	slots := envInt("PTC_APPROVAL_SLOTS", approvalSlots)
	maxPending = max(maxPending, workers*slots)
	f := &approvalProcFleet{node: startNATSProcess(tb), slots: slots,
		programMemory: int64(envInt("PTC_APPROVAL_PROGRAM_MEMORY", int(fleet.DefaultMemoryBudget/int64(slots))))}
	if rate := envInt("PTC_APPROVAL_DECISION_RATE", 0); rate > 0 {
		f.pace = time.Second / time.Duration(rate)
	}
	f.batch = os.Getenv("PTC_APPROVAL_BATCH") != ""
	model := newFakeModel()
	if d, err := time.ParseDuration(os.Getenv("PTC_APPROVAL_MODEL_DELAY")); err == nil && d > 0 {
		model.delay = d
	}
	model.program = func(k, s int) string {
		if s == 1 {
			return fmt.Sprintf("```clojure\n(def p (tool/pay {:n %d}))\np\n```", k)
		}
		return "```clojure\n(return {:p p})\n```"
	}
	ms := httptest.NewServer(model)
	tb.Cleanup(ms.Close)
	f.nc = dial(tb, f.node.url)
	var err error
	if f.client, err = fleet.NewClient(ctx, f.nc, fleet.ClientConfig{Store: fleet.StoreConfig{MaxAckPending: maxPending}}); err != nil {
		tb.Fatal(err)
	}
	f.pay = startPayTools(tb, dial(tb, f.node.url), 1)
	f.ws = make([]*proc, workers)
	for i := range f.ws {
		f.ws[i] = startWorkerProc(tb, f.node.url, ms.URL, fmt.Sprintf("mem%d", i+1), append([]string{envWorkerSlots + "=" + strconv.Itoa(slots)}, strings.Fields(os.Getenv("PTC_APPROVAL_WORKER_ENV"))...), true)
	}
	time.Sleep(time.Second) // the workers' start settles
	return f
}

// submit submits n missions, numbered from 0, and returns their ids.
func (f *approvalProcFleet) submit(ctx context.Context, tb testing.TB, n int) []string {
	tb.Helper()
	return submitMissions(ctx, tb, f.client, n, func(id string, k int) *messages.Mission {
		return &messages.Mission{ID: id, Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: pay", id, k), Tools: []string{"pay"}, Limits: messages.Limits{MaxTurns: 3, ProgramMemory: f.programMemory}},
			Tools: []string{"pay"}, Approval: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "pay"}}}}
	})
}

// submitSuspended submits n missions and waits until the workers have
// suspended them (and every mission before).
func (f *approvalProcFleet) submitSuspended(ctx context.Context, tb testing.TB, n int) []string {
	tb.Helper()
	before := 0
	for _, w := range f.ws {
		before += w.mem(tb).suspended
	}
	ids := f.submit(ctx, tb, n)
	f.awaitSuspended(ctx, tb, before+n)
	return ids
}

// awaitSuspended waits until the workers have suspended total missions
// in all and run none, and returns what each reported of itself then.
func (f *approvalProcFleet) awaitSuspended(ctx context.Context, tb testing.TB, total int) []workerMem {
	tb.Helper()
	mem := make([]workerMem, len(f.ws))
	for {
		suspended, running := 0, 0
		for i, w := range f.ws {
			mem[i] = w.mem(tb)
			suspended += mem[i].suspended
			running += mem[i].running
		}
		if suspended >= total && running == 0 {
			return mem
		}
		if ctx.Err() != nil {
			tb.Fatalf("%d of %d missions suspended", suspended, total)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cpu is the CPU time the worker processes, the server and the test's
// process have used.
func (f *approvalProcFleet) cpu(tb testing.TB) (workers, server, self time.Duration) {
	for _, w := range f.ws {
		workers += procCPU(tb, w.cmd.Process.Pid)
	}
	return workers, procCPU(tb, f.node.cmd.Process.Pid), procCPU(tb, os.Getpid())
}

// approveAll approves the missions ids at once, awaits each one's result
// (mission k returns what pay answered for k, k+1), and returns when each
// decision was asked for and when it was given. The decisions are given
// by 32 deciders, each asking for the next as soon as its last is given,
// or, with PTC_APPROVAL_DECISION_RATE (decisions a second), each asked
// for at its time at that rate whatever the others' progress, or, with
// PTC_APPROVAL_BATCH, all asked for at once with one DecidePending, each
// given when its record says it was decided.
func (f *approvalProcFleet) approveAll(ctx context.Context, tb testing.TB, ids []string) (decided, given []time.Time) {
	tb.Helper()
	decided, given = make([]time.Time, len(ids)), make([]time.Time, len(ids))
	if f.batch {
		start := time.Now()
		out, err := f.client.DecidePending(ctx, fleet.PendingFilter{Tool: "pay"}, fleet.Decision{Approve: true, By: "mem"})
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
		for k, id := range ids {
			decided[k], given[k] = start, at[id]
		}
		f.awaitPaid(ctx, tb, ids)
		return decided, given
	}
	var wg sync.WaitGroup
	deciders := 32
	if f.pace > 0 {
		deciders = len(ids)
	}
	sem := make(chan struct{}, deciders)
	start := time.Now()
	for k, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		if f.pace > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(k) * f.pace)))
		}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			decided[k] = time.Now()
			if _, err := f.client.Decide(ctx, id, fleet.Decision{Approve: true, By: "mem"}); err != nil {
				tb.Error(err)
			}
			given[k] = time.Now()
		}()
	}
	wg.Wait()
	f.awaitPaid(ctx, tb, ids)
	return decided, given
}

// awaitPaid awaits each mission's result: mission k returns what pay
// answered for k, k+1.
func (f *approvalProcFleet) awaitPaid(ctx context.Context, tb testing.TB, ids []string) {
	tb.Helper()
	for k, id := range ids {
		step, err := f.client.Await(ctx, id)
		if err != nil || !step.Ok() || fmt.Sprint(step.Return) != fmt.Sprintf("map[p:%d]", k+1) {
			tb.Fatalf("mission %d: %+v %v", k, step, err)
		}
	}
}

// latencies returns each mission's resume latency, its decision asked
// for → its pay reaching the handler, and each pay's time after the
// first decision was asked for (the latency had every decision been
// given at that instant), both sorted.
func (f *approvalProcFleet) latencies(tb testing.TB, ids []string, decided []time.Time) (lat, burst []time.Duration) {
	tb.Helper()
	lat, burst = make([]time.Duration, len(ids)), make([]time.Duration, len(ids))
	first := slices.MinFunc(decided, time.Time.Compare)
	for k, id := range ids {
		at, ok := f.pay.arrived(id)
		if !ok {
			tb.Fatalf("mission %s finished and its approved pay never reached the handler", id)
		}
		lat[k], burst[k] = at.Sub(decided[k]), at.Sub(first)
	}
	slices.Sort(lat)
	slices.Sort(burst)
	return lat, burst
}

// The worker as its own process, the NATS server as another: while many
// missions wait for approval the worker holds no slot, no goroutine and
// no memory for them (its heap stays at its idle level), and nats-server's
// memory and storage are reported apart; then every mission is approved
// at once (approveAll) and resumes, and the test reports the resume
// latency (the decision asked for → the call reaching the tool's handler)
// of this fleet of processes (BenchmarkApprovalsAtOnceProcesses measures
// it over runs). PTC_APPROVAL_MISSIONS sizes it (default 200),
// PTC_APPROVAL_WORKERS gives the number of worker processes (default 1)
// and PTC_APPROVAL_SLOTS their slots (approvalSlots; the other knobs are
// startApprovalProcFleet's and approveAll's); docs/approvals.md
// has the figures of 10,000 waiting and of 1,000 decided at once.
func TestWorkerProcessMemoryWhileMissionsAwaitApproval(t *testing.T) {
	n := envInt("PTC_APPROVAL_MISSIONS", 200)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	f := startApprovalProcFleet(ctx, t, envInt("PTC_APPROVAL_WORKERS", 1), 2*n)
	cold := make([]workerMem, len(f.ws))
	for i, w := range f.ws {
		cold[i] = w.mem(t)
	}
	// the idle baseline is a worker's after it ran every slot at once:
	// what a burst of that many runs warms (caches, pools, the heap's
	// spans) stays, whatever waits later
	warm := f.slots * len(f.ws)
	f.approveAll(ctx, t, f.submitSuspended(ctx, t, warm))
	idle := make([]workerMem, len(f.ws))
	var idleRSS uint64
	for i, w := range f.ws {
		idle[i] = w.mem(t)
		idleRSS += procRSS(t, w.cmd.Process.Pid)
	}
	srvIdleRSS := procRSS(t, f.node.cmd.Process.Pid)

	began := time.Now()
	ids := f.submit(ctx, t, n)
	waiting := f.awaitSuspended(ctx, t, n)
	suspendedIn := time.Since(began)
	var waitRSS uint64
	for _, w := range f.ws {
		waitRSS += procRSS(t, w.cmd.Process.Pid)
	}
	srvWaitRSS := procRSS(t, f.node.cmd.Process.Pid)
	js, _ := jetstream.New(f.nc)
	acct, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range f.ws {
		t.Logf("%d missions suspended in %s. Worker process %s: heap after GC %.1f MB idle (%.1f MB when it started), %.1f MB while they wait; goroutines %d idle, %d waiting; slots held %d",
			n, suspendedIn.Round(time.Millisecond), w.id, float64(idle[i].heap)/1e6, float64(cold[i].heap)/1e6, float64(waiting[i].heap)/1e6, idle[i].goroutines, waiting[i].goroutines, waiting[i].running)
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

	// with envCPUProfiles, the server's profile and the test's own of
	// the decisions and the resumptions (the workers' are cut at their
	// memory reports)
	profiles := os.Getenv(envCPUProfiles)
	if profiles != "" {
		if err := f.node.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		pf, err := os.Create(filepath.Join(profiles, "cpu-test.pprof"))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			t.Fatal(err)
		}
	}
	w0, s0, c0 := f.cpu(t)
	decided, given := f.approveAll(ctx, t, ids)
	w1, s1, c1 := f.cpu(t)
	if profiles != "" {
		pprof.StopCPUProfile()
		if err := f.node.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	perMission, _ := f.pay.counts()
	if len(perMission) != warm+n {
		t.Errorf("pay ran for %d of %d missions", len(perMission), warm+n)
	}
	lat, burst := f.latencies(t, ids, decided)
	decision := make([]time.Duration, n)
	for k := range ids {
		decision[k] = given[k].Sub(decided[k])
	}
	slices.Sort(decision)
	first := slices.MinFunc(decided, time.Time.Compare)
	t.Logf("%d decisions at once: given in %s (a decision p50 %s); after the first decision was asked for, the call p50 %s, the last %s",
		n, slices.MaxFunc(given, time.Time.Compare).Sub(first).Round(time.Millisecond), decision[n/2].Round(100*time.Microsecond),
		burst[n/2].Round(time.Millisecond), burst[n-1].Round(time.Millisecond))
	t.Logf("%d decisions at once: resume latency (decision → the call reaching its handler) p50 %s, p90 %s, p99 %s, max %s",
		n, lat[n/2].Round(100*time.Microsecond), lat[n*9/10].Round(100*time.Microsecond), lat[n*99/100].Round(100*time.Microsecond), lat[n-1].Round(100*time.Microsecond))
	per := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Microsecond) }
	t.Logf("CPU time a resumption, to its mission's end: workers %s, nats-server %s, the test's process (deciders, awaiters, tool service, model) %s",
		per(w1-w0), per(s1-s0), per(c1-c0))
	var afterRSS uint64
	for _, w := range f.ws {
		after := w.mem(t)
		afterRSS += procRSS(t, w.cmd.Process.Pid)
		t.Logf("after every mission resumed and finished: worker %s heap %.1f MB, goroutines %d", w.id, float64(after.heap)/1e6, after.goroutines)
	}
	t.Logf("worker processes' RSS %.1f MB, nats-server RSS %.1f MB", float64(afterRSS)/1e6, float64(procRSS(t, f.node.cmd.Process.Pid))/1e6)
}

// BenchmarkApprovalsAtOnceProcesses gives 1,000 approvals at once
// (approveAll) on a fleet of processes (approvalProcFleet: nats-server and
// PTC_APPROVAL_WORKERS worker processes, default 2, of PTC_APPROVAL_SLOTS
// slots, default approvalSlots, sized as startApprovalProcFleet says; the
// client, the pay service and the scripted model in this process) whose
// agent missions each wait at a call that needs approval. An op is one
// batch: its missions are submitted and suspended before the timer
// starts, and it ends when every mission has finished. Over all the
// resumptions of a run it reports the resume latency (the decision asked
// for → its call reaching the pay handler), p50-ms and p90-ms; the
// call's time after the batch's first decision was asked for, as though
// every decision had been given at that instant, burst-p50-ms and
// burst-max-ms (they do not depend on how fast the decisions came);
// decisions-ms, how long the 1,000 decisions took to be given; and the
// CPU time of a resumption to its mission's end in each process
// (workers-, server- and client-cpu-µs/resumption; the client's process
// also holds the pay service and the model) and in all
// (cpu-µs/resumption). With PTC_APPROVAL_BATCH the decisions are one
// DecidePending, every one asked for at its start: p50-ms is then
// burst-p50-ms, and decisions-ms runs to the batch's last decision.
// Compare trees with -benchtime 1x -count 8 and benchstat.
func BenchmarkApprovalsAtOnceProcesses(b *testing.B) {
	const atOnce = 1000
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	f := startApprovalProcFleet(ctx, b, envInt("PTC_APPROVAL_WORKERS", 2), 2*atOnce)
	// warm: ten missions approved one batch first (the workers' first
	// resumptions set up what the rest reuse)
	f.approveAll(ctx, b, f.submitSuspended(ctx, b, 10))
	var lat, burst []time.Duration
	var workers, server, client, decisions time.Duration
	for range b.N {
		ids := f.submitSuspended(ctx, b, atOnce)
		w0, s0, c0 := f.cpu(b)
		b.StartTimer()
		decided, given := f.approveAll(ctx, b, ids)
		b.StopTimer()
		w1, s1, c1 := f.cpu(b)
		workers, server, client = workers+w1-w0, server+s1-s0, client+c1-c0
		decisions += slices.MaxFunc(given, time.Time.Compare).Sub(slices.MinFunc(decided, time.Time.Compare))
		l, bl := f.latencies(b, ids, decided)
		lat, burst = append(lat, l...), append(burst, bl...)
	}
	n := float64(b.N * atOnce)
	fleettest.ReportResumeLatencies(b, lat, burst)
	b.ReportMetric(float64(decisions.Microseconds())/1e3/float64(b.N), "decisions-ms")
	b.ReportMetric(float64((workers+server+client).Microseconds())/n, "cpu-µs/resumption")
	b.ReportMetric(float64(workers.Microseconds())/n, "workers-cpu-µs/resumption")
	b.ReportMetric(float64(server.Microseconds())/n, "server-cpu-µs/resumption")
	b.ReportMetric(float64(client.Microseconds())/n, "client-cpu-µs/resumption")
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
func submitMissions(ctx context.Context, t testing.TB, client *fleet.Client, n int, mission func(id string, k int) *messages.Mission) []string {
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
