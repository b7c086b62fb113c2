package agentrun_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// workerLogs is where the worker processes of a chaos test write their
// whole logs (debug level), each process to a file of its own named by
// its worker id and pid: a killed worker's log outlives it, and a failed
// run prints the lines that name its failing missions from every log.
type workerLogs struct{ dir string }

// newWorkerLogs returns the logs of t's worker processes. The files are
// under t.TempDir(), or, when PTC_TEST_WORKER_LOGS_KEEP
// names a directory, in a new directory there that the test leaves.
func newWorkerLogs(t *testing.T) *workerLogs {
	t.Helper()
	keep := os.Getenv(envKeepWorkerLogs)
	if keep == "" {
		return &workerLogs{dir: t.TempDir()}
	}
	dir, err := os.MkdirTemp(keep, t.Name()+"-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker logs kept in %s", dir)
	return &workerLogs{dir: dir}
}

// envKeepWorkerLogs names a directory the chaos tests keep their worker
// logs in (newWorkerLogs).
const envKeepWorkerLogs = "PTC_TEST_WORKER_LOGS_KEEP"

// env is the environment entry that makes a worker process write its
// log there.
func (l *workerLogs) env() string { return envWorkerLogs + "=" + l.dir }

// linesNaming returns the lines of every log that contain id, each
// prefixed with its file's name, at most max of them (the last lines
// kept, with a note of how many were left out).
func (l *workerLogs) linesNaming(id string, max int) string {
	files, _ := filepath.Glob(filepath.Join(l.dir, "*.log"))
	sort.Strings(files)
	var lines []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", filepath.Base(name), err))
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), id) {
				lines = append(lines, filepath.Base(name)+": "+sc.Text())
			}
		}
		if err := sc.Err(); err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", filepath.Base(name), err))
		}
		f.Close()
	}
	var b strings.Builder
	if over := len(lines) - max; over > 0 {
		fmt.Fprintf(&b, "(%d earlier lines left out)\n", over)
		lines = lines[over:]
	}
	for _, s := range lines {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// files returns the names of the log files, for the report.
func (l *workerLogs) files() []string {
	files, _ := filepath.Glob(filepath.Join(l.dir, "*.log"))
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	sort.Strings(files)
	return files
}

// journalTap keeps every journal write published while a chaos test runs
// (a core subscription on mission.journal.>): a finished mission's
// journal is removed from JOURNAL, and a killed worker's last writes may
// never have been stored, so this is what its runs wrote, as published.
type journalTap struct {
	sub *nats.Subscription

	mu     sync.Mutex
	writes map[string][]journalWrite
}

// journalWrite is one journal message as published.
type journalWrite struct {
	at      time.Time
	entries []journalTapEntry
}

type journalTapEntry struct {
	Key  string `msgpack:"k"`
	Data []byte `msgpack:"d"`
}

func startJournalTap(t *testing.T, nc *nats.Conn) *journalTap {
	t.Helper()
	j := &journalTap{writes: map[string][]journalWrite{}}
	sub, err := nc.Subscribe(messages.SubjectJournalPrefix+">", func(m *nats.Msg) {
		id := strings.TrimPrefix(m.Subject, messages.SubjectJournalPrefix)
		w := journalWrite{at: time.Now()}
		switch {
		case m.Header.Get(messages.HeaderJournalKey) != "":
			w.entries = []journalTapEntry{{Key: m.Header.Get(messages.HeaderJournalKey), Data: m.Data}}
		case m.Header.Get(messages.HeaderJournalBatch) != "":
			if err := messages.Unmarshal(m.Data, &w.entries); err != nil {
				w.entries = []journalTapEntry{{Key: "undecodable batch: " + err.Error()}}
			}
		default:
			w.entries = []journalTapEntry{{Key: fmt.Sprintf("marker %v", m.Header)}}
		}
		j.mu.Lock()
		j.writes[id] = append(j.writes[id], w)
		j.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	j.sub = sub
	return j
}

// report lists the journal writes of mission id as published.
func (j *journalTap) report(id string) string {
	j.mu.Lock()
	ws := slices.Clone(j.writes[id])
	j.mu.Unlock()
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "  %s:", w.at.Format("15:04:05.000"))
		for _, e := range w.entries {
			fmt.Fprintf(&b, " [%s %s]", e.Key, clip(strconv.QuoteToASCII(string(e.Data)), 200))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// clip shortens s to at most n bytes, on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// missionReport describes mission id for the log of a failed chaos run:
// its status, approval records, events, result with its trace, the
// journal writes tap heard (nil: none) and the requests model got (nil:
// none), each read on a context of its own so that a slow read does not
// hide the others.
func missionReport(client *fleet.Client, id string, tap *journalTap, model *fakeModel) string {
	var b strings.Builder
	read := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 5*time.Second)
	}
	ctx, cancel := read()
	st, err := client.Status(ctx, id)
	cancel()
	if err != nil {
		fmt.Fprintf(&b, "status: %v\n", err)
	} else {
		fmt.Fprintf(&b, "status: %s attempt %d worker %s suspensions %d journal_seq %d reason %q updated %s\n",
			st.State, st.Attempt, st.Worker, st.Suspensions, st.JournalSeq, st.Reason, st.UpdatedAt.Format("15:04:05.000"))
	}
	ctx, cancel = read()
	as, err := client.Approvals(ctx, id)
	cancel()
	if err != nil {
		fmt.Fprintf(&b, "approvals: %v\n", err)
	}
	for _, a := range as {
		fmt.Fprintf(&b, "approval %s: %s turn %d tool %s args %v requested %s decided %s by %s (%s)\n",
			a.Call, a.State, a.Turn, a.Tool, a.Args, a.RequestedAt.Format("15:04:05.000"), a.DecidedAt.Format("15:04:05.000"), a.DecidedBy, a.Reason)
	}
	ctx, cancel = read()
	evs, err := client.Events(ctx, id)
	cancel()
	if err != nil {
		fmt.Fprintf(&b, "events: %v\n", err)
	}
	for _, ev := range evs {
		fmt.Fprintf(&b, "event %s %s attempt %d worker %s turn %d", ev.Time.Format("15:04:05.000"), ev.Kind, ev.Attempt, ev.Worker, ev.Turn)
		if ev.Tool != "" {
			fmt.Fprintf(&b, " tool %s call %s args %v result %v", ev.Tool, ev.CallID, ev.Args, ev.Result)
		}
		if ev.Error != "" {
			fmt.Fprintf(&b, " error %q", clip(ev.Error, 300))
		}
		if ev.Program != "" {
			fmt.Fprintf(&b, " program %q", clip(ev.Program, 120))
		}
		if len(ev.Data) > 0 {
			fmt.Fprintf(&b, " data %v", ev.Data)
		}
		b.WriteByte('\n')
	}
	ctx, cancel = read()
	step, err := client.Result(ctx, id)
	cancel()
	if err != nil {
		fmt.Fprintf(&b, "result: %v\n", err)
	} else {
		fmt.Fprintf(&b, "result: return %v fail %+v attempts %d replayed %+v\n", step.Return, step.Fail, step.Attempts, step.Replayed)
		for _, turn := range step.Trace {
			fmt.Fprintf(&b, "  turn %d %s program %q error %q\n", turn.Number, turn.StartedAt.Format("15:04:05.000"), clip(turn.Program, 120), clip(turn.Error, 300))
			for _, c := range turn.ToolCalls {
				fmt.Fprintf(&b, "    call %s %v: %v %q\n", c.Name, c.Args, c.Result, clip(c.Error, 300))
			}
		}
	}
	if tap != nil {
		fmt.Fprintf(&b, "journal writes published:\n%s", tap.report(id))
	}
	if model != nil {
		model.mu.Lock()
		heard := slices.Clone(model.heard[id])
		model.mu.Unlock()
		b.WriteString("model requests (turn, step, the last message):\n")
		for _, h := range heard {
			fmt.Fprintf(&b, "  %s\n", h)
		}
	}
	return b.String()
}

// reportMissions logs, for each mission of ids (at most 10), its report
// (missionReport) and the lines of every worker log that name it.
func reportMissions(t *testing.T, client *fleet.Client, logs *workerLogs, tap *journalTap, model *fakeModel, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		return
	}
	t.Logf("worker logs: %s", strings.Join(logs.files(), ", "))
	if len(ids) > 10 {
		t.Logf("%d missions failed; the first 10 reported, the others: %s", len(ids), strings.Join(ids[10:], " "))
		ids = ids[:10]
	}
	for _, id := range ids {
		t.Logf("mission %s:\n%sworker log lines naming it:\n%s", id, missionReport(client, id, tap, model), logs.linesNaming(id, 300))
	}
}

// missionOfKey is the mission id an idempotency key starts with
// ("<mission id>/...").
func missionOfKey(key string) string {
	id, _, _ := strings.Cut(key, "/")
	return id
}

// repeatedKeys returns the idempotency keys add ran more than once for.
func (c *countingTools) repeatedKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k, n := range c.add {
		if n > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
