package agentrun_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The worker as its own process, with as many slots as missions, while
// every mission waits on a slow model: the model speaks HTTP/2 over TLS,
// as hosted providers do, and holds every request until the test lets
// them go. It reports the worker's heap, goroutines, their stacks and RSS
// per waiting mission, its RSS once no mission has started for a while,
// then its RSS in the 20 s after they all finished (a worker whose
// missions stay unchanged for 5 s gives its spare memory back,
// TestQuietWorkerGivesFreedMemoryBack).
// Each mission asks for a small program_memory, which is what lets a
// worker's memory budget admit thousands at once (docs/operations.md).
// PTC_MODEL_WAIT_MISSIONS sizes it (default 200; docs/performance.md has the
// figures of 10,000); PTC_MODEL_WAIT_TEXT=1 makes the missions text-mode
// agents answering in JSON; PTC_MODEL_WAIT_GOMEMLIMIT gives the worker
// that GOMEMLIMIT; PTC_MODEL_WAIT_WATCH=S reports the worker's RSS every
// 5 s for S more seconds while they wait, and its CPU time meanwhile.
func TestWorkerProcessMemoryWhileMissionsWaitOnModels(t *testing.T) {
	n := envInt("PTC_MODEL_WAIT_MISSIONS", 200)
	text := envInt("PTC_MODEL_WAIT_TEXT", 0) == 1
	node := startNATSProcess(t)
	model := newFakeModel()
	model.gate = make(chan struct{})
	model.program = func(k, _ int) string { return fmt.Sprintf("```clojure\n(return {:k %d})\n```", k) }
	if text {
		model.program = func(k, _ int) string { return fmt.Sprintf(`{"k": %d}`, k) }
	}
	ms := httptest.NewUnstartedServer(model)
	ms.EnableHTTP2 = true
	view := watchServer(ms)
	ms.StartTLS()
	t.Cleanup(ms.Close)
	released := false
	t.Cleanup(func() {
		if !released {
			close(model.gate)
		}
	})
	ca := filepath.Join(t.TempDir(), "model-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ms.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	nc := dial(t, node.url)
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{MaxAckPending: 2 * n}})
	if err != nil {
		t.Fatal(err)
	}
	// the worker trusts the model's certificate the way Go programs take a
	// private CA: SSL_CERT_FILE
	dump := filepath.Join(t.TempDir(), "worker-dump.txt")
	env := []string{envWorkerSlots + "=" + strconv.Itoa(n), "SSL_CERT_FILE=" + ca, envWorkerDump + "=" + dump}
	if limit := os.Getenv("PTC_MODEL_WAIT_GOMEMLIMIT"); limit != "" {
		// the worker's soft memory limit alone (the model server, in this
		// process, holds every request and stays unbounded), with a
		// memory budget that admits every mission (by default three
		// quarters of the limit, which 64 KiB reservations fill first)
		env = append(env, "GOMEMLIMIT="+limit, envWorkerBudget+"="+strconv.Itoa(n*64<<10))
	}
	w := startWorkerProc(t, node.url, ms.URL, "modelwait", env, true)
	time.Sleep(time.Second) // the worker's start settles
	idle := w.mem(t)
	idleRSS := procRSS(t, w.cmd.Process.Pid)

	began := time.Now()
	ids := submitMissions(ctx, t, client, n, func(id string, k int) *messages.Mission {
		spec := &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: answer", id, k), Limits: messages.Limits{MaxTurns: 2}}
		if text {
			spec.Output, spec.Signature = messages.ModeText, "{k :int}"
		}
		return &messages.Mission{ID: id, Kind: messages.KindAgent,
			// a mission reserves its program_memory in the worker's budget
			// for its whole run: 64 KiB lets the default budget (1 GiB)
			// hold 16,384 of them
			Limits: messages.Limits{ProgramMemory: 64 << 10},
			Agent:  spec}
	})
	for deadline := time.Now().Add(5 * time.Minute); model.waiting.Load() < int64(n); {
		if time.Now().After(deadline) {
			// say where they stuck: the model server's view, the missions'
			// states, the worker's goroutines and the end of its log
			t.Logf("model server: %s; %d requests arrived, %d held", view, model.arrived.Load(), model.waiting.Load())
			t.Logf("missions by state: %s", missionStates(t, client, ids))
			t.Logf("the worker, where it is:\n%s", w.dump(dump))
			t.Logf("the end of the worker's log:\n%s", w.stderr.String())
			t.Fatalf("%d of %d missions reached the model; the worker runs %d", model.waiting.Load(), n, w.mem(t).running)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitingIn := time.Since(began)
	waiting := w.mem(t)
	waitRSS := procRSS(t, w.cmd.Process.Pid)
	perHeap := float64(int64(waiting.heap)-int64(idle.heap)) / float64(n)
	perStack := float64(int64(waiting.stack)-int64(idle.stack)) / float64(n)
	perRSS := float64(int64(waitRSS)-int64(idleRSS)) / float64(n)
	perG := float64(waiting.goroutines-idle.goroutines) / float64(n)
	t.Logf("%d missions waiting on the model after %s: worker heap after GC %.1f MB idle, %.1f MB waiting (%.1f KB a mission); goroutines %d idle, %d waiting (%.2f a mission), their stacks %.1f KB a mission; RSS %.1f MB idle, %.1f MB waiting (%.1f KB a mission)",
		n, waitingIn.Round(time.Millisecond), float64(idle.heap)/1e6, float64(waiting.heap)/1e6, perHeap/1e3,
		idle.goroutines, waiting.goroutines, perG, perStack/1e3, float64(idleRSS)/1e6, float64(waitRSS)/1e6, perRSS/1e3)
	t.Logf("model server: %s", view)
	if n >= 1000 {
		// once no mission has started for a while, the worker gives back
		// the spare memory the burst of starts left (5 to 10 s after the
		// last; a small burst leaves too little to be worth it)
		var quietRSS uint64
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			time.Sleep(time.Second)
			if quietRSS = procRSS(t, w.cmd.Process.Pid); quietRSS < waitRSS-(waitRSS-idleRSS)/4 {
				break
			}
		}
		perQuiet := float64(int64(quietRSS)-int64(idleRSS)) / float64(n)
		t.Logf("%s after the first mission reached the model: RSS %.1f MB (%.1f KB a mission)",
			time.Since(began).Round(time.Second), float64(quietRSS)/1e6, perQuiet/1e3)
	}
	if watch := envInt("PTC_MODEL_WAIT_WATCH", 0); watch > 0 {
		// RSS while they keep waiting: the garbage of their heartbeats
		// grows the heap toward the collector's goal, and the worker gives
		// it back as it piles up
		var rss []string
		cpu, from := procCPU(t, w.cmd.Process.Pid), time.Now()
		for s := 5; s <= watch; s += 5 {
			time.Sleep(5 * time.Second)
			rss = append(rss, fmt.Sprintf("%ds %.1f MB", int(time.Since(began).Seconds()), float64(procRSS(t, w.cmd.Process.Pid))/1e6))
		}
		cpu, spent := procCPU(t, w.cmd.Process.Pid)-cpu, time.Since(from)
		t.Logf("RSS while they wait: %s; the worker's CPU time %s in %s (%.1f%% of a core)",
			strings.Join(rss, ", "), cpu.Round(time.Millisecond), spent.Round(time.Second), 100*cpu.Seconds()/spent.Seconds())
	}

	close(model.gate)
	released = true
	releasedAt := time.Now()
	for k, id := range ids {
		step, err := client.Await(ctx, id)
		if err != nil || !step.Ok() || fmt.Sprint(step.Return) != fmt.Sprintf("map[k:%d]", k) {
			t.Fatalf("mission %d: %+v %v", k, step, err)
		}
	}
	finished := time.Now()
	t.Logf("all %d finished %s after the model let them go", n, finished.Sub(releasedAt).Round(time.Millisecond))
	// every mission asked its model once: its heartbeats kept it the
	// worker's while it waited (a mission redelivered for want of them
	// runs again and asks again)
	model.mu.Lock()
	again := 0
	for _, c := range model.asked {
		again += c - 1
	}
	asked := len(model.asked)
	model.mu.Unlock()
	if asked != n || again != 0 {
		t.Errorf("%d missions asked the model, %d of their questions again; want %d, none again", asked, again, n)
	}
	rss := []string{}
	for s := 0; s <= 20; s += 10 {
		time.Sleep(time.Until(finished.Add(time.Duration(s) * time.Second)))
		rss = append(rss, fmt.Sprintf("%ds %.1f MB", s, float64(procRSS(t, w.cmd.Process.Pid))/1e6))
	}
	after := w.mem(t)
	t.Logf("after they finished: worker RSS %v; heap %.1f MB, goroutines %d", rss, float64(after.heap)/1e6, after.goroutines)
	// a waiting mission holds its model call: 2 goroutines (the call's
	// and the HTTP/2 request's; the run's frames have returned, and the
	// call's goroutine goes on with the run once the reply comes;
	// heartbeats run on timers and a bounded queue, at most 64 in flight
	// however many come due together) and its agent's state (25–26 KB measured with 2,000
	// and 10,000 missions, up to 36 KB with 200, where what the worker
	// holds for all of them weighs more; 31–37 KB under the race detector)
	if perG >= 3 {
		t.Errorf("%.2f goroutines per waiting mission", perG)
	}
	if perHeap > 44e3 {
		t.Errorf("%.1f KB of heap per waiting mission", perHeap/1e3)
	}
	// the model call awaits its answer on a goroutine that holds the send
	// and net/http's frames alone (llm.AsyncModel), in a 4 KB stack; the
	// HTTP/2 request's takes 4 KB: 8.4 KB a mission measured with 2,000,
	// 8.8–10.2 KB with 200, against 13.5 and 13.9–14.3 KB when the call
	// waited under the agent's, the retry's, the journal's, the budget's
	// and the model client's frames too, in an 8 KB stack. The race
	// detector makes every frame larger: 34–35 KB a mission there with 200
	// waiting under those frames.
	limit := 12e3
	if raceEnabled {
		limit = 42e3
	}
	if perStack > limit {
		t.Errorf("%.1f KB of goroutine stacks per waiting mission; want at most %.0f KB", perStack/1e3, limit/1e3)
	}
}

// procCPU is the CPU time process pid has used, user and system
// (/proc/pid/stat, in clock ticks of 10 ms).
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// the fields after the command's name, which is in parentheses
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("process %d: stat %q", pid, b)
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// serverView counts an HTTP server's connections and the errors it logs
// (failed TLS handshakes among them), for the report of a test whose
// requests do not all arrive.
type serverView struct {
	mu     sync.Mutex
	states map[http.ConnState]int // connections that reached each state
	open   int                    // connections not closed
	errs   int                    // lines the server logged
	last   string                 // the last of them
}

// watchServer makes the unstarted server ms report to the returned view.
func watchServer(ms *httptest.Server) *serverView {
	v := &serverView{states: map[http.ConnState]int{}}
	ms.Config.ConnState = func(_ net.Conn, cs http.ConnState) {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.states[cs]++
		switch cs {
		case http.StateNew:
			v.open++
		case http.StateClosed, http.StateHijacked:
			v.open--
		}
	}
	ms.Config.ErrorLog = log.New(v, "", 0)
	return v
}

// Write takes a line the server logs.
func (v *serverView) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs++
	v.last = strings.TrimSpace(string(b))
	return len(b), nil
}

func (v *serverView) String() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return fmt.Sprintf("%d connections open (%d opened, %d active at some time, %d closed); %d errors logged, the last %q",
		v.open, v.states[http.StateNew], v.states[http.StateActive], v.states[http.StateClosed], v.errs, v.last)
}

// missionStates counts the missions ids by their state (and the reasons
// of those that ended), reading their statuses for at most 30 s.
func missionStates(t *testing.T, client *fleet.Client, ids []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := map[string]int{}
	for _, id := range ids {
		st, err := client.Status(ctx, id)
		switch {
		case err != nil:
			count["error: "+err.Error()]++
		case st.Reason != "":
			r := st.Reason
			if len(r) > 160 {
				r = r[:160] + "..."
			}
			count[st.State+": "+r]++
		default:
			count[st.State]++
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Sprint(count)
}
