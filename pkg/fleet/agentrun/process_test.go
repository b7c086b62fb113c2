package agentrun_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
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

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Environment of the processes the test binary re-executes as.
const (
	envWorkerNATS    = "PTC_TEST_WORKER_NATS"     // NATS URLs (comma-separated): run as a worker
	envWorkerModel   = "PTC_TEST_WORKER_MODEL"    // OpenAI-wire base URL of the fake model
	envWorkerID      = "PTC_TEST_WORKER_ID"       // worker id
	envWorkerAckWait = "PTC_TEST_WORKER_ACK_WAIT" // consumer AckWait ("" = default)
	envWorkerReplica = "PTC_TEST_WORKER_REPLICAS" // stream replicas
	envWorkerDeliver = "PTC_TEST_WORKER_DELIVER"  // MaxDeliver
	envWorkerSlots   = "PTC_TEST_WORKER_SLOTS"    // slots ("" = 4)
	envWorkerBudget  = "PTC_TEST_WORKER_BUDGET"   // memory budget in bytes ("" = the default)
	envWorkerStalled = "PTC_TEST_WORKER_STALLED"  // StalledAfter ("" = the default)
	envNATSConfig    = "PTC_TEST_NATS_CONFIG"     // nats-server config file: run as a NATS node
	// a directory the worker process writes its heap and goroutine
	// profiles to each time it reports its memory (heap-<n>.pprof,
	// goroutine-<n>.pprof, for `go tool pprof`; goroutine-<n>.txt, every
	// goroutine's stack as a panic prints it)
	envWorkerProfiles = "PTC_TEST_WORKER_PROFILES"
	// a directory the worker and nats-server processes write CPU profiles
	// to: a worker each time it reports its memory, the profile since the
	// report before (cpu-<worker id>-<n>.pprof; the first from the
	// process's start), a node each time it gets SIGUSR1
	// (cpu-nats-<server name>-<n>.pprof); the profile under way when the
	// process is killed stays empty
	envCPUProfiles = "PTC_TEST_CPU_PROFILES"
	// a file the worker process writes its counters and its goroutines,
	// grouped by stack, to on SIGUSR2 (proc.dump)
	envWorkerDump = "PTC_TEST_WORKER_DUMP"
	// a directory the worker process writes its whole log to, at debug
	// level, in a file of its own named <worker id>-<pid>.log (its
	// stderr keeps warnings and errors)
	envWorkerLogs = "PTC_TEST_WORKER_LOGS"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envWorkerNATS) != "":
		os.Exit(runWorkerProcess())
	case os.Getenv(envNATSConfig) != "":
		os.Exit(runNATSNode(os.Getenv(envNATSConfig)))
	case os.Getenv(envBigRead) != "":
		os.Exit(runBigRead(os.Getenv(envBigRead)))
	}
	os.Exit(m.Run())
}

// runWorkerProcess is a worker process: cmd/worker's setup with the fake
// model. It prints "ready" once started; exit code 3 means Start failed
// (a self-exit).
func runWorkerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if os.Getenv(envWorkerProfiles) != "" {
		runtime.MemProfileRate = 4096
	}
	log, closeLog, err := workerLogger()
	if err != nil {
		fmt.Fprintln(os.Stderr, "log:", err)
		return 2
	}
	defer closeLog()
	nc, err := nats.Connect(os.Getenv(envWorkerNATS), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.Name(os.Getenv(envWorkerID)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 2
	}
	defer nc.Close()
	model, err := openai.New(openai.Config{BaseURL: os.Getenv(envWorkerModel) + "/v1", Model: "fake"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "model:", err)
		return 2
	}
	store := fleet.StoreConfig{}
	if d, err := time.ParseDuration(os.Getenv(envWorkerAckWait)); err == nil {
		store.AckWait = d
	}
	store.Replicas, _ = strconv.Atoi(os.Getenv(envWorkerReplica))
	store.MaxDeliver, _ = strconv.Atoi(os.Getenv(envWorkerDeliver))
	slots := 4
	if n, err := strconv.Atoi(os.Getenv(envWorkerSlots)); err == nil && n > 0 {
		slots = n
	}
	budget, _ := strconv.ParseInt(os.Getenv(envWorkerBudget), 10, 64)
	stalled, _ := time.ParseDuration(os.Getenv(envWorkerStalled))
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		ID:     os.Getenv(envWorkerID),
		Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}),
		Slots:  slots, Store: store, Priorities: []string{messages.PriorityNormal},
		IdleWait: 100 * time.Millisecond, NakDelay: 200 * time.Millisecond,
		DrainGrace: time.Second, Logger: &log, MemoryBudget: budget, StalledAfter: stalled,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.Start(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 3
	}
	fmt.Println("ready")
	// SIGUSR1 asks for the worker's memory: a line "mem <heap in use after
	// GC> <goroutines> <slots running> <missions suspended> <goroutine
	// stacks>".
	usr := make(chan os.Signal, 1)
	signal.Notify(usr, syscall.SIGUSR1)
	// SIGUSR2 asks for a dump of where the worker is: its counters and its
	// goroutines grouped by stack, written to the file envWorkerDump
	// names, then a line "dumped" (or "dump failed: <error>").
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	profiles := &cpuProfiles{name: os.Getenv(envWorkerID)}
	profiles.next()
	for {
		select {
		case <-usr2:
			if err := writeDump(os.Getenv(envWorkerDump), w); err != nil {
				fmt.Println("dump failed:", err)
				continue
			}
			fmt.Println("dumped")
		case <-usr:
			profiles.next()
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if dir := os.Getenv(envWorkerProfiles); dir != "" {
				writeProfiles(dir)
				fmt.Fprintf(os.Stderr, "memstats: heap in use %d, heap sys %d, heap released %d, stacks %d, other sys %d, sys %d, next GC %d\n",
					ms.HeapInuse, ms.HeapSys, ms.HeapReleased, ms.StackInuse, ms.MSpanSys+ms.MCacheSys+ms.BuckHashSys+ms.GCSys+ms.OtherSys, ms.Sys, ms.NextGC)
			}
			fmt.Printf("mem %d %d %d %d %d\n", ms.HeapInuse, runtime.NumGoroutine(), w.Running(), w.Stats().Suspended, ms.StackInuse)
		case <-ctx.Done():
			profiles.stop() // the last profile, when one is under way
			_ = w.Stop()
			return 0
		}
	}
}

// workerLogger is a worker process's logger: warnings and errors on
// stderr, and with envWorkerLogs every level from debug on in a file of
// the process's own there too.
func workerLogger() (zerolog.Logger, func(), error) {
	dir := os.Getenv(envWorkerLogs)
	if dir == "" {
		return zerolog.New(os.Stderr).With().Timestamp().Logger().Level(zerolog.WarnLevel), func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", os.Getenv(envWorkerID), os.Getpid())))
	if err != nil {
		return zerolog.Logger{}, nil, err
	}
	w := zerolog.MultiLevelWriter(&zerolog.FilteredLevelWriter{Writer: zerolog.LevelWriterAdapter{Writer: os.Stderr}, Level: zerolog.WarnLevel}, f)
	// each line's time in milliseconds, to order the lines of several
	// workers' logs
	at := zerolog.HookFunc(func(e *zerolog.Event, _ zerolog.Level, _ string) {
		e.Str("at", time.Now().UTC().Format("15:04:05.000"))
	})
	log := zerolog.New(w).Hook(at).Level(zerolog.DebugLevel)
	return log, func() { _ = f.Close() }, nil
}

// cpuProfiles writes a process's CPU profiles, one after another, to
// envCPUProfiles' directory as cpu-<name>-<n>.pprof; nothing without the
// directory.
type cpuProfiles struct {
	name string
	n    int
	f    *os.File
}

// next ends the profile under way and starts the next.
func (p *cpuProfiles) next() {
	dir := os.Getenv(envCPUProfiles)
	if dir == "" {
		return
	}
	p.stop()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%s-%d.pprof", p.name, p.n)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	p.n++
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		_ = f.Close()
		return
	}
	p.f = f
}

// stop ends the profile under way, if any, and closes its file.
func (p *cpuProfiles) stop() {
	if p.f != nil {
		pprof.StopCPUProfile()
		_ = p.f.Close()
		p.f = nil
	}
}

// writeProfiles writes the process's heap and goroutine profiles to dir,
// numbered after those already there, and its goroutines' stacks.
func writeProfiles(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, "heap-*.pprof"))
	n := len(old) + 1
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n)))
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
		}
		f.Close()
	}
	if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("goroutine-%d.txt", n))); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 2)
		f.Close()
	}
}

// writeDump writes the worker's counters and its goroutines, grouped by
// stack, to the file path.
func writeDump(path string, w *fleet.Worker) error {
	if path == "" {
		return fmt.Errorf("no %s", envWorkerDump)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "worker stats: %+v; goroutines %d\n", w.Stats(), runtime.NumGoroutine())
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runNATSNode is a nats-server process for the cluster tests.
func runNATSNode(configFile string) int {
	opts, err := server.ProcessConfigFile(configFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "config:", err)
		return 2
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		return 2
	}
	if os.Getenv("PTC_TEST_NATS_LOG") != "" {
		s.ConfigureLogger()
	}
	s.Start()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// SIGUSR1 (only with envCPUProfiles: without a handler it would end
	// the process) ends the CPU profile under way and starts the next
	usr := make(chan os.Signal, 1)
	profiles := &cpuProfiles{name: "nats-" + opts.ServerName}
	if os.Getenv(envCPUProfiles) != "" {
		signal.Notify(usr, syscall.SIGUSR1)
		profiles.next()
	}
	for {
		select {
		case <-usr:
			profiles.next()
		case <-sig:
			profiles.stop()
			s.Shutdown()
			return 0
		}
	}
}

// proc is a worker process started by a test.
type proc struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{}
	code int
	// lines gets the lines the process prints after "ready" (when the
	// reader keeps up; others are dropped)
	lines chan string
	// stderr keeps the end of what the process wrote on stderr, for the
	// report of a worker that exits by itself
	stderr *tailWriter
	// ready is closed once the worker has started
	ready chan struct{}
}

// isReady reports whether the worker has started.
func (p *proc) isReady() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

// startWorkerProc starts a worker process; wait says whether to wait for
// it to be ready.
func startWorkerProc(t testing.TB, natsURL, modelURL, id string, env []string, wait bool) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorkerNATS+"="+natsURL, envWorkerModel+"="+modelURL, envWorkerID+"="+id)
	cmd.Env = append(cmd.Env, env...)
	tail := &tailWriter{max: 16 << 10}
	cmd.Stderr = tail
	if testing.Verbose() {
		cmd.Stderr = io.MultiWriter(tail, os.Stderr)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	p := &proc{id: id, cmd: cmd, done: make(chan struct{}), lines: make(chan string, 16), ready: ready, stderr: tail}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
				continue
			}
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	if wait {
		select {
		case <-ready:
		case <-p.done:
			t.Fatalf("worker %s exited with %d before it was ready", id, p.code)
		case <-time.After(60 * time.Second):
			t.Fatalf("worker %s not ready", id)
		}
	}
	return p
}

// exitReport says how a process that ended by itself ended, with the end
// of its stderr: what a chaos test logs for a worker that exits on its own.
func (p *proc) exitReport() string {
	return fmt.Sprintf("worker %s exited by itself with code %d; the end of its stderr:\n%s", p.id, p.code, p.stderr.String())
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// dump asks the worker process, started with envWorkerDump naming path,
// where it is (writeDump) and returns what it wrote, or why it could not.
func (p *proc) dump(path string) string {
	if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return fmt.Sprintf("worker %s: no dump: %v", p.id, err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.lines:
			if line != "dumped" {
				if strings.HasPrefix(line, "dump failed") {
					return fmt.Sprintf("worker %s: %s", p.id, line)
				}
				continue // a line asked for before
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Sprintf("worker %s: no dump: %v", p.id, err)
			}
			return string(b)
		case <-p.done:
			return p.exitReport()
		case <-deadline:
			return fmt.Sprintf("worker %s did not dump where it is", p.id)
		}
	}
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// fakeModel speaks the OpenAI chat completions wire format. Each mission's
// prompt carries its id and a number k; turn t's reply is the program
// programFor(k, t). It counts requests and answers per mission and turn.
type fakeModel struct {
	delay time.Duration
	// hold, when set, is asked before answering; true holds the request
	// until the client goes away.
	hold func(id string, turn int) bool
	// gate, when set, holds every request until it is closed (or the
	// client goes away).
	gate chan struct{}
	// waiting counts the requests held at gate.
	waiting atomic.Int64
	// arrived counts the requests that reached the handler.
	arrived atomic.Int64
	// finished, when set, reports whether the mission already has a result.
	finished func(id string) bool
	// program, when set, replaces programFor.
	program func(k, step int) string
	// advanceOn makes a step whose feedback holds one of its strings
	// count as done although it reports an error: the model goes on (a
	// denied call handled by the next program).
	advanceOn []string

	mu         sync.Mutex
	asked      map[string]int
	answered   map[string]int
	afterFinal int
	// afterFinalIDs are the missions asked for after their result was
	// stored, for the report of a failed run
	afterFinalIDs []string
	// heard holds, per mission, each request's turn and its last message
	// (the feedback of the turn before), for the report of a failed run
	heard map[string][]string
}

func newFakeModel() *fakeModel {
	return &fakeModel{asked: map[string]int{}, answered: map[string]int{}, heard: map[string][]string{}}
}

var promptRE = regexp.MustCompile(`mission ([0-9A-Z]{26}) k=(\d+)`)

// programFor is the reply to turn t of a mission with number k: two turns
// of tool calls (add deduplicates, note does not), then the return.
func programFor(k, t int) string {
	switch t {
	case 1:
		return fmt.Sprintf("```clojure\n(def a (tool/add {:n %d}))\na\n```", k)
	case 2:
		return "```clojure\n(def c (tool/add {:n (+ a 10)}))\n(tool/note {:text (str \"a=\" a)})\nc\n```"
	default:
		return "```clojure\n(return {:a a :c c})\n```"
	}
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.arrived.Add(1)
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	// turn counts the model's answers so far; step the ones whose program
	// ran without error (the feedback after it has no "Error"): like a
	// real model, the fake one writes a failed step's program again.
	turn, step, id, k := 1, 1, "", 0
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
			if i+1 < len(req.Messages) && (!strings.Contains(string(req.Messages[i+1].Content), "Error") ||
				slices.ContainsFunc(f.advanceOn, func(s string) bool { return strings.Contains(string(req.Messages[i+1].Content), s) })) {
				step++
			}
		}
		if mm := promptRE.FindStringSubmatch(string(m.Content)); mm != nil && id == "" {
			id = mm[1]
			k, _ = strconv.Atoi(mm[2])
		}
	}
	key := id + "/" + strconv.Itoa(turn)
	f.mu.Lock()
	f.asked[key]++
	if n := len(req.Messages); n > 0 {
		last := string(req.Messages[n-1].Content)
		var text string
		if json.Unmarshal(req.Messages[n-1].Content, &text) == nil {
			last = text
		}
		f.heard[id] = append(f.heard[id], fmt.Sprintf("%s turn %d step %d: %s", time.Now().UTC().Format("15:04:05.000"), turn, step, clip(last, 400)))
	}
	f.mu.Unlock()
	if f.finished != nil && f.finished(id) {
		f.mu.Lock()
		f.afterFinal++
		if !slices.Contains(f.afterFinalIDs, id) {
			f.afterFinalIDs = append(f.afterFinalIDs, id)
		}
		f.mu.Unlock()
	}
	if f.hold != nil && f.hold(id, turn) {
		<-r.Context().Done()
		return
	}
	if f.gate != nil {
		f.waiting.Add(1)
		select {
		case <-f.gate:
			f.waiting.Add(-1)
		case <-r.Context().Done():
			f.waiting.Add(-1)
			return
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return // the caller died: this answer is never delivered
		}
	}
	f.mu.Lock()
	f.answered[key]++
	f.mu.Unlock()
	program := programFor
	if f.program != nil {
		program = f.program
	}
	webtest.ChatCompletion(w, "chatcmpl-"+key, "fake", program(k, step), 100, 10)
}

// repeats returns how many requests (asked) and answers beyond one per
// mission turn the model saw.
func (f *fakeModel) repeats() (asked, answered, afterFinal int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.asked {
		asked += n - 1
	}
	for _, n := range f.answered {
		answered += max(n-1, 0)
	}
	return asked, answered, f.afterFinal
}

// countingTools serves add (deduplicated by idempotency key) and note (not)
// and counts executions per idempotency key.
type countingTools struct {
	mu   sync.Mutex
	add  map[string]int
	note map[string]int
}

func startCountingTools(t *testing.T, nc *nats.Conn, replicas int) *countingTools {
	t.Helper()
	c := &countingTools{add: map[string]int{}, note: map[string]int{}}
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "acct", Dedup: &fleet.DedupConfig{Replicas: replicas}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	count := func(m map[string]int, ctx context.Context) {
		ci, _ := fleet.CallInfoFrom(ctx)
		c.mu.Lock()
		m[ci.IdempotencyKey]++
		c.mu.Unlock()
	}
	_ = svc.Register("add", fleet.ToolSpec{Signature: "(n :int) -> :int"}, func(ctx context.Context, args map[string]any) (any, error) {
		count(c.add, ctx)
		time.Sleep(5 * time.Millisecond)
		n, _ := args["n"].(int64)
		return n + 1, nil
	})
	_ = svc.Register("note", fleet.ToolSpec{Signature: "(text :string) -> :bool"}, func(ctx context.Context, args map[string]any) (any, error) {
		count(c.note, ctx)
		return true, nil
	})
	return c
}

// repeats returns executions beyond one per key, for add and note.
func (c *countingTools) repeats() (add, note, calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.add {
		add += n - 1
		calls += n
	}
	for _, n := range c.note {
		note += n - 1
		calls += n
	}
	return add, note, calls
}

func chaosMission(k int) *messages.Mission {
	id := messages.NewMissionID()
	return &messages.Mission{
		ID:   id,
		Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: add things", id, k),
			Tools: []string{"add", "note"}, Limits: messages.Limits{MaxTurns: 5}},
		Tools: []string{"add", "note"},
	}
}

func wantReturn(k int) map[string]any {
	return map[string]any{"a": int64(k + 1), "c": int64(k + 12)}
}

func reconnecting() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), nats.RetryOnFailedConnect(true)}
}

// statusWorker returns the worker that holds mission id now.
func statusWorker(ctx context.Context, c *fleet.Client, id string) string {
	st, err := c.Status(ctx, id)
	if err != nil {
		return ""
	}
	return st.Worker
}

// joinURLs joins server URLs for nats.Connect.
func joinURLs(urls []string) string { return strings.Join(urls, ",") }

// The stderr tail of a worker process keeps the last bytes written, across
// writes of any size.
func TestTailWriterKeepsTheEnd(t *testing.T) {
	w := &tailWriter{max: 8}
	for _, s := range []string{"abc", "defgh", "ij", "0123456789xyz"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := w.String(); got != "56789xyz" {
		t.Fatalf("tail %q, want %q", got, "56789xyz")
	}
	_, _ = w.Write([]byte("!"))
	if got := w.String(); got != "6789xyz!" {
		t.Fatalf("tail %q, want %q", got, "6789xyz!")
	}
}
