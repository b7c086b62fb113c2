package agentrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// envBigRead makes the test binary a process that only reads a large
// tool result (its value: a bigRead in JSON) and reports its memory.
const envBigRead = "PTC_TEST_BIGREAD"

// bigRead is what a reading process reads and how: Mode "ptc" streams the
// object into a program that filters it, "ptc-def" keeps it with def
// first, "go" is the hand-written twin (the object read whole,
// messages.Unmarshal, the same filter in Go).
type bigRead struct {
	URL  string             `json:"url"`
	Ref  messages.ObjectRef `json:"ref"`
	Mode string             `json:"mode"`
	Want int64              `json:"want"`
}

// readPrograms are the programs of BenchmarkLargeToolResult, by mode.
var readPrograms = map[string]string{
	"ptc-def": `(def mail (tool/search_mail {})) (count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) mail))`,
	"ptc":     `(count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) (tool/search_mail {})))`,
}

// readMem is what a reading process reports: its resident set once
// connected and ready to read (base), its peak resident set when the
// answer is computed (peak, VmHWM), and how long the read took.
type readMem struct {
	base, peak uint64
	took       time.Duration
}

// runBigRead is the reading process: it connects, notes its resident
// set, reads the object and computes the answer, and prints
// "rss <base> <peak> <nanoseconds>".
func runBigRead(spec string) int {
	var r bigRead
	if err := json.Unmarshal([]byte(spec), &r); err != nil {
		fmt.Fprintln(os.Stderr, "spec:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, err := nats.Connect(r.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 2
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jetstream:", err)
		return 2
	}
	obs, err := js.ObjectStore(ctx, r.Ref.Bucket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "object store:", err)
		return 2
	}
	runtime.GC()
	base, _, err := selfRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := time.Now()
	var got any
	switch r.Mode {
	case "go":
		obj, err := obs.Get(ctx, r.Ref.Name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "get:", err)
			return 2
		}
		raw, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			return 2
		}
		var recs []any
		if err := messages.Unmarshal(raw, &recs); err != nil {
			fmt.Fprintln(os.Stderr, "unmarshal:", err)
			return 2
		}
		raw = nil
		n := int64(0)
		for _, rec := range recs {
			if m := rec.(map[string]any); m["unread"] == true && m["size"].(int64) > 1500 {
				n++
			}
		}
		got = n
		runtime.KeepAlive(recs)
	default:
		src, ok := readPrograms[r.Mode]
		if !ok {
			fmt.Fprintln(os.Stderr, "no mode", r.Mode)
			return 2
		}
		ref := r.Ref
		tools := lisp.Tools{"search_mail": lisp.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
			obj, err := obs.Get(ctx, ref.Name)
			if err != nil {
				return nil, err
			}
			defer obj.Close()
			return lisp.DecodeWireResultFrom(ctx, "", obj, ref.Size, &ref)
		})}
		step, err := lisp.Run(ctx, src, lisp.Options{Tools: tools, Limits: messages.Limits{ProgramMemory: -1, ProgramTimeout: 5 * time.Minute}})
		if err != nil || step.Fail != nil {
			fmt.Fprintln(os.Stderr, "run:", err, step.Fail)
			return 2
		}
		got = step.Return
		runtime.KeepAlive(step)
	}
	took := time.Since(start)
	if got != r.Want {
		fmt.Fprintf(os.Stderr, "answer %v, want %d\n", got, r.Want)
		return 2
	}
	_, peak, err := selfRSS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("rss %d %d %d\n", base, peak, took.Nanoseconds())
	return 0
}

// selfRSS returns this process's resident set and its peak (VmRSS and
// VmHWM, Linux) in bytes.
func selfRSS() (rss, hwm uint64, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.ParseUint(f[1], 10, 64)
		case "VmHWM:":
			hwm, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("no VmRSS or VmHWM in /proc/self/status")
	}
	return rss << 10, hwm << 10, nil
}

// bigReadFixture is a nats-server process holding large tool results.
type bigReadFixture struct {
	url string
	obs jetstream.ObjectStore
}

func newBigReadFixture(tb testing.TB) *bigReadFixture {
	tb.Helper()
	node := startNATSProcess(tb)
	nc, err := nats.Connect(node.url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var obs jetstream.ObjectStore
	for {
		obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: messages.ToolResultBucket("rss")})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			tb.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &bigReadFixture{url: node.url, obs: obs}
}

// put stores n mail records and returns their reference and how many the
// programs count.
func (f *bigReadFixture) put(tb testing.TB, n int) (messages.ObjectRef, int64) {
	tb.Helper()
	recs := fleettest.MailRecords(n)
	data, err := messages.Marshal(recs)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("records-%d", n)
	info, err := f.obs.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	return messages.ObjectRef{Bucket: info.Bucket, Name: name, Size: int64(info.Size), Digest: info.Digest}, fleettest.BigUnread(recs)
}

// read runs a reading process of mode on ref and returns its memory.
func (f *bigReadFixture) read(tb testing.TB, ref messages.ObjectRef, mode string, want int64, env ...string) readMem {
	tb.Helper()
	spec, err := json.Marshal(bigRead{URL: f.url, Ref: ref, Mode: mode, Want: want})
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envBigRead+"="+string(spec)), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("reading process (%s): %v: %s", mode, err, stderr.String())
	}
	var m readMem
	var ns int64
	if _, err := fmt.Sscanf(string(out), "rss %d %d %d", &m.base, &m.peak, &ns); err != nil {
		tb.Fatalf("reading process (%s) said %q: %v", mode, out, err)
	}
	m.took = time.Duration(ns)
	return m
}

// BenchmarkLargeToolResultRSS measures what issue-sized results cost the
// process that reads them: a nats-server process holds the object (email
// records, as many as make 20 MiB and 80 MiB of msgpack), and each
// iteration starts a process of the test binary that only reads it
// (runBigRead): "ptc" streams it into a program that filters it,
// "ptc-def" keeps it with def first, "go" is the twin (read whole,
// messages.Unmarshal, the same filter). peak-rss/encoded is the reading
// process's peak resident set (VmHWM) above its resident set once
// connected, over the encoded size: the largest of the iterations.
func BenchmarkLargeToolResultRSS(b *testing.B) {
	f := newBigReadFixture(b)
	for _, mib := range []int{20, 80} {
		n, err := mailRecordsFor(mib << 20)
		if err != nil {
			b.Fatal(err)
		}
		ref, want := f.put(b, n)
		for _, mode := range []string{"ptc", "ptc-def", "go"} {
			b.Run(fmt.Sprintf("%s/%dMiB", mode, mib), func(b *testing.B) {
				var worst float64
				var took time.Duration
				for b.Loop() {
					m := f.read(b, ref, mode, want)
					worst = max(worst, float64(m.peak-m.base)/float64(ref.Size))
					took += m.took
				}
				b.ReportMetric(worst, "peak-rss/encoded")
				b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "read-ms/op")
			})
		}
	}
}

// maxPeakRSSRatio bounds the peak resident set of a process reading a
// large tool result into a program, above its resident set before the
// read, over the result's encoded size (issue-sized results measure
// 2.2–2.7; a decoder leaving a builder and a string per record as
// garbage measured 3.4–4.1). Under the race detector, which keeps
// shadow memory for the heap, the bound is raceMaxPeakRSSRatio (5 MiB
// measure 7.6).
const (
	maxPeakRSSRatio     = 3.2
	raceMaxPeakRSSRatio = 12
)

// A process that only reads a large tool result (20 MiB of msgpack, 5
// MiB under the race detector) from a nats-server process's object
// store, streams it into a program that filters it, with and without
// def, peaks at most maxPeakRSSRatio times the encoded size above its
// baseline; the twin reading it whole into Go data is reported beside.
func TestLargeToolResultPeakRSS(t *testing.T) {
	mib, bound := 20, maxPeakRSSRatio
	if fleettest.Race {
		mib, bound = 5, raceMaxPeakRSSRatio
	}
	f := newBigReadFixture(t)
	n, err := mailRecordsFor(mib << 20)
	if err != nil {
		t.Fatal(err)
	}
	ref, want := f.put(t, n)
	for _, mode := range []string{"ptc", "ptc-def", "go"} {
		m := f.read(t, ref, mode, want)
		ratio := float64(m.peak-m.base) / float64(ref.Size)
		t.Logf("%s: %d records, %.1f MiB encoded: base %.1f MiB, peak %.1f MiB, peak-rss/encoded %.2f, read in %v",
			mode, n, float64(ref.Size)/(1<<20), float64(m.base)/(1<<20), float64(m.peak)/(1<<20), ratio, m.took.Round(time.Millisecond))
		if mode != "go" && ratio > bound {
			t.Errorf("%s: the reading process peaked at %.2f× the encoded size above its baseline, more than %.1f×", mode, ratio, bound)
		}
	}
}
