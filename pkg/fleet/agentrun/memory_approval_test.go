package agentrun_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
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
// memory and storage are reported apart; then every decision resumes its
// mission, which finishes. PTC_APPROVAL_MISSIONS sizes it (default 200;
// docs/approvals.md has the figures of 10,000).
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
	w := startWorkerProc(t, node.url, ms.URL, "mem1", []string{envWorkerSlots + "=32"}, true)
	time.Sleep(time.Second) // the worker's start settles
	idle := w.mem(t)
	idleRSS, srvIdleRSS := procRSS(t, w.cmd.Process.Pid), procRSS(t, node.cmd.Process.Pid)

	began := time.Now()
	ids := submitMissions(ctx, t, client, n, func(id string, k int) *messages.Mission {
		return &messages.Mission{ID: id, Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: pay", id, k), Tools: []string{"pay"}, Limits: messages.Limits{MaxTurns: 3}},
			Tools: []string{"pay"}, Approval: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "pay"}}}}
	})
	var waiting workerMem
	for {
		waiting = w.mem(t)
		if waiting.suspended >= n && waiting.running == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d missions suspended", waiting.suspended, n)
		}
		time.Sleep(time.Second)
	}
	suspendedIn := time.Since(began)
	waitRSS, srvWaitRSS := procRSS(t, w.cmd.Process.Pid), procRSS(t, node.cmd.Process.Pid)
	js, _ := jetstream.New(nc)
	acct, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d missions suspended in %s. Worker process: heap after GC %.1f MB idle, %.1f MB while they wait; goroutines %d idle, %d waiting; slots held %d; RSS %.1f MB idle, %.1f MB waiting. "+
		"nats-server process: RSS %.1f MB idle, %.1f MB while they wait; JetStream storage %.1f MB",
		n, suspendedIn.Round(time.Millisecond), float64(idle.heap)/1e6, float64(waiting.heap)/1e6, idle.goroutines, waiting.goroutines, waiting.running,
		float64(idleRSS)/1e6, float64(waitRSS)/1e6, float64(srvIdleRSS)/1e6, float64(srvWaitRSS)/1e6, float64(acct.Store)/1e6)
	if waiting.goroutines > idle.goroutines+20 {
		t.Errorf("%d goroutines while missions wait, %d idle: waiting holds goroutines", waiting.goroutines, idle.goroutines)
	}
	// nothing per waiting mission: at most 4 MB over the idle heap
	// (buffers and caches warmed by the work), whatever the number waiting
	if waiting.heap > idle.heap+4<<20 {
		t.Errorf("worker heap %.1f MB while %d missions wait, %.1f MB idle: waiting holds memory", float64(waiting.heap)/1e6, n, float64(idle.heap)/1e6)
	}

	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := client.Decide(ctx, id, fleet.Decision{Approve: true, By: "mem"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for k, id := range ids {
		step, err := client.Await(ctx, id)
		if err != nil || !step.Ok() || fmt.Sprint(step.Return) != fmt.Sprintf("map[p:%d]", k+1) {
			t.Fatalf("mission %d: %+v %v", k, step, err)
		}
	}
	after := w.mem(t)
	perMission, _ := pay.counts()
	if len(perMission) != n {
		t.Errorf("pay ran for %d of %d missions", len(perMission), n)
	}
	t.Logf("after every mission resumed and finished: worker heap %.1f MB, goroutines %d, RSS %.1f MB; nats-server RSS %.1f MB",
		float64(after.heap)/1e6, after.goroutines, float64(procRSS(t, w.cmd.Process.Pid))/1e6, float64(procRSS(t, node.cmd.Process.Pid))/1e6)
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
