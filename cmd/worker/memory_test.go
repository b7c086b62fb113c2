package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The shipped worker pod's memory settings (deploy/k8s/fleet/worker.yaml):
// its memory limit, and its GOMEMLIMIT at about 90% of it.
const (
	podMemoryLimit  = 512 << 20
	shippedMemLimit = 460 << 20
)

// shippedGOMEMLIMIT is the shipped pod's GOMEMLIMIT as the worker's
// environment sets it.
var shippedGOMEMLIMIT = fmt.Sprintf("GOMEMLIMIT=%dMiB", shippedMemLimit>>20)

// envSubprocess makes the test binary run as the worker (run with its
// configuration in the environment), printing "ready" once it serves.
const envSubprocess = "PTC_TEST_WORKER_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(envSubprocess) != "" {
		os.Exit(runWorkerProcess())
	}
	os.Exit(m.Run())
}

func runWorkerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, os.LookupEnv, os.Environ(), os.Stderr, ready) }()
	select {
	case <-ready:
		fmt.Println("ready")
	case err := <-done:
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// workerProc is the worker binary run as a process by a test.
type workerProc struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	exited chan error // receives Wait's error when the process ends
}

// startWorkerProcess runs the test binary as the worker, its environment
// the test's plus no health server, a 2 s drain grace, warn logging and
// env; waits until it prints "ready"; and stops it (SIGTERM, a kill after
// 30 s) when the test ends.
func startWorkerProcess(t *testing.T, env ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSubprocess+"=1", "PTC_HEALTH_ADDR=", "PTC_DRAIN_GRACE=2s", "PTC_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	w := &workerProc{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	cmd.Stderr = w.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		t.Fatalf("worker did not start: %q\n%s", lines.Text(), w.stderr.String())
	}
	go func() { w.exited <- cmd.Wait() }()
	return w
}

// vmHWM reads a process's peak resident set size in bytes
// (/proc/PID/status).
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestWorkerHoldingLargeToolResults runs the worker as its own process
// under the shipped pod's memory settings (GOMEMLIMIT 460MiB of a 512Mi
// limit) with the example tools, and a mission whose program keeps 200
// results of list_orders (each about 0.5 MB of msgpack) under the default
// program_memory (64 MiB): what the program holds
// from its tools is charged as it enters, the program stops with
// memory_limit, and the model (told so) ends the mission with it. The
// worker's peak RSS stays under the pod's 512 MiB, and it then serves the
// next mission.
func TestWorkerHoldingLargeToolResults(t *testing.T) {
	ns := fleettest.Start(t)
	hold := "```clojure\n(def orders (mapv (fn [_] (tool/list_orders {})) (range 200)))\n(return (count orders))\n```"
	giveUp := "```clojure\n(fail ctx/fail)\n```"
	count := "```clojure\n" + `(return {:n (count (tool/list_customers {:region "north"}))})` + "\n```"
	llmSrv, _ := webtest.ScriptedChat(t, hold, giveUp, count)

	w := startWorkerProcess(t,
		shippedGOMEMLIMIT,
		"PTC_NATS_URL="+ns.ClientURL(),
		"PTC_EXAMPLE_TOOLS=true",
		"PTC_MODEL_DEFAULT=openai:test-model@"+llmSrv.URL+"/v1",
	)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	client, err := fleet.NewClient(ctx, ns.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step, err := client.Run(ctx, &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"list_orders"},
		Agent: &messages.AgentSpec{Prompt: "Keep every order list", Tools: []string{"list_orders"},
			// the race detector slows the calls down many times
			Limits: messages.Limits{MaxTurns: 2, ProgramTimeout: 4 * time.Minute}},
	})
	if err != nil {
		t.Fatalf("mission: %v\n%s", err, w.stderr.String())
	}
	if step.Fail == nil || step.Fail.Reason != "memory_limit" ||
		!strings.Contains(step.Fail.Message, "tool results and the record of tool calls would hold") ||
		!strings.Contains(step.Fail.Message, "more than the limit of 67108864") ||
		!strings.Contains(step.Fail.Message, "raise limits.program_memory") {
		t.Fatalf("want the mission ended with memory_limit naming the limit and how to raise it, got return %v fail %+v", step.Return, step.Fail)
	}
	peak := vmHWM(t, w.cmd.Process.Pid)
	calls := 0
	if len(step.Trace) > 0 {
		calls = len(step.Trace[0].ToolCalls)
	}
	t.Logf("%s after %s and %d calls; worker peak RSS %d MiB", step.Fail.Message, time.Since(start).Round(time.Millisecond), calls, peak>>20)
	bound := int64(podMemoryLimit)
	if fleettest.Race {
		bound = 2 << 30 // shadow memory: an unbounded run still goes far past it
	}
	if peak > bound {
		t.Errorf("worker peak RSS %d MiB, over %d MiB", peak>>20, bound>>20)
	}

	// the worker is up and serves the next mission
	next, err := client.Run(ctx, &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"list_customers"},
		Agent: &messages.AgentSpec{Prompt: "How many customers in the north?", Signature: "{n :int}", Tools: []string{"list_customers"}},
	})
	if err != nil || next.Fail != nil || next.Return.(map[string]any)["n"] != int64(499) {
		t.Fatalf("next mission: %+v, %v\n%s", next, err, w.stderr.String())
	}
	select {
	case err := <-w.exited:
		t.Fatalf("worker exited: %v\n%s", err, w.stderr.String())
	default:
	}
}
