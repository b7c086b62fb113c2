package lisp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// wireRecords encodes n records of a list_orders-like shape (12 fields)
// in the content type named.
func wireRecords(t testing.TB, n int, contentType string) []byte {
	t.Helper()
	recs := make([]any, n)
	for i := range recs {
		recs[i] = map[string]any{
			"id": int64(i), "customer_id": int64(i % 97), "status": "shipped", "total": float64(i) * 1.25,
			"currency": "USD", "created_at": "2026-01-02T03:04:05Z", "sku": fmt.Sprintf("SKU-%08d", i),
			"note": fmt.Sprintf("order %d placed through the web shop", i), "qty": int64(i % 7),
			"region": "north", "channel": "web", "paid": true,
		}
	}
	var data []byte
	var err error
	if messages.IsJSON(contentType) {
		data, err = messages.EncodeJSON(recs)
	} else {
		data, err = messages.Marshal(recs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wireTool returns a tool that decodes data on every call as a remote tool
// does (DecodeWireResult with the context it is given), counting calls.
func wireTool(contentType string, data []byte, calls *atomic.Int64) core.Tool {
	return core.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
		calls.Add(1)
		return core.DecodeWireResult(ctx, contentType, data)
	})
}

// TestToolResultsCharged: what a program holds from its tools counts
// against its memory limit as it enters. A program that keeps calling a
// tool whose result is about 1 MB decoded stops with memory_limit, the
// message naming the limit; the same program over three calls passes.
func TestToolResultsCharged(t *testing.T) {
	for _, ct := range []string{"", messages.ContentTypeJSON} {
		data := wireRecords(t, 1500, ct)
		var calls atomic.Int64
		opts := Options{Tools: core.Tools{"orders": wireTool(ct, data, &calls)}, MaxMemory: 8 << 20, Timeout: time.Minute}

		res, err := Exec(context.Background(), `(reduce + (map (fn [_] (count (tool/orders))) (range 3)))`, opts)
		if err != nil || res.Value != int64(4500) {
			t.Fatalf("%q: three calls under 8 MiB: %v, %v", ct, res.Value, err)
		}

		calls.Store(0)
		_, err = Exec(context.Background(), `(loop [i 0] (tool/orders) (recur (inc i)))`, opts)
		var le *core.Error
		if !errors.As(err, &le) || le.Kind != core.KindMemory {
			t.Fatalf("%q: want memory_limit, got %v", ct, err)
		}
		if !strings.Contains(le.Msg, "8388608") || !strings.Contains(le.Msg, "tool results") || le.Op != "orders" || le.Hint == "" {
			t.Errorf("%q: the error names neither the limit nor the tool results: %+v", ct, le)
		}
		// 8 MiB holds a few of these results, not hundreds
		if n := calls.Load(); n < 4 || n > 12 {
			t.Errorf("%q: stopped after %d calls", ct, n)
		}
	}
}

// TestToolCallRecordCharged: the record of each tool call counts too: 100k
// calls of a tool that returns nothing hold 100k records, more than 8 MiB.
func TestToolCallRecordCharged(t *testing.T) {
	tools := core.Tools{"ping": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return nil, nil })}
	opts := Options{Tools: tools, MaxMemory: 8 << 20, Timeout: time.Minute}
	res, err := Exec(context.Background(), `(loop [i 0] (when (< i 1000) (tool/ping {:i i}) (recur (inc i)))) :ok`, opts)
	if err != nil {
		t.Fatalf("1000 calls: %v", err)
	}
	if n := len(res.ToolCalls); n != 1000 {
		t.Fatalf("recorded %d calls", n)
	}
	_, err = Exec(context.Background(), `(loop [i 0] (when (< i 100000) (tool/ping {:i i}) (recur (inc i)))) :ok`, opts)
	if !errors.Is(err, core.ErrMemoryLimit) {
		t.Fatalf("100k calls: want memory_limit, got %v", err)
	}
}

// TestMeterSharedByRunsAndBranches: one meter serves every run of a
// mission and every pmap branch: what earlier runs hold from tools stays
// charged.
func TestMeterSharedByRunsAndBranches(t *testing.T) {
	data := wireRecords(t, 1500, "")
	var calls atomic.Int64
	m := core.NewMeter(8<<20, "raise limits.program_memory")
	opts := Options{Tools: core.Tools{"orders": wireTool("", data, &calls)}, Meter: m, MaxMemory: 8 << 20, Timeout: time.Minute}
	ctx := context.Background()
	twice := `(def kept (mapv (fn [_] (tool/orders)) (range 2))) (count kept)`
	if _, err := Exec(ctx, twice, opts); err != nil {
		t.Fatal(err)
	}
	held := m.Used()
	if held < 2*int64(len(data)) || held > 4<<20 {
		t.Fatalf("two results of %d encoded bytes hold %d bytes charged", len(data), held)
	}
	// the same program alone fits a fresh meter many times over; after
	// runs that hold their results it no longer does
	for i := 0; ; i++ {
		_, err := Exec(ctx, twice, opts)
		if err == nil {
			continue
		}
		if !errors.Is(err, core.ErrMemoryLimit) || i > 4 {
			t.Fatalf("run %d: want memory_limit within a few runs, got %v", i+2, err)
		}
		break
	}
	if _, err := Exec(ctx, twice, Options{Tools: opts.Tools, MaxMemory: 8 << 20}); err != nil {
		t.Fatalf("a run of its own: %v", err)
	}
	// pmap branches charge the same meter
	m = core.NewMeter(8<<20, "raise limits.program_memory")
	opts.Meter = m
	_, err := Exec(ctx, `(count (pmap (fn [_] (count (tool/orders))) (range 200)))`, opts)
	if !errors.Is(err, core.ErrMemoryLimit) || !strings.Contains(err.Error(), "raise limits.program_memory") {
		t.Fatalf("pmap: want memory_limit naming how to raise it, got %v", err)
	}
	if used := m.Used(); used > m.Limit() {
		t.Errorf("the meter holds %d, over its limit %d", used, m.Limit())
	}
}

// TestDecodeWireResultOverLimit: a result over what is left of the limit
// fails while it is decoded, with the meter's error, and what it charged
// is released; a result that fits is charged its Size.
func TestDecodeWireResultOverLimit(t *testing.T) {
	for _, ct := range []string{"", messages.ContentTypeJSON} {
		data := wireRecords(t, 3000, ct)
		m := core.NewMeter(1<<20, "raise it")
		ctx := core.WithMeter(context.Background(), m)
		_, err := core.DecodeWireResult(ctx, ct, data)
		var le *core.Error
		if !errors.As(err, &le) || le.Kind != core.KindMemory || !strings.Contains(le.Msg, "1048576") || !strings.HasSuffix(le.Msg, "(raise it)") {
			t.Fatalf("%q: want memory_limit naming the limit, got %v", ct, err)
		}
		if m.Used() != 0 {
			t.Errorf("%q: a failed decode left %d bytes charged", ct, m.Used())
		}
		big := core.NewMeter(64<<20, "")
		w, err := core.DecodeWireResult(core.WithMeter(context.Background(), big), ct, data)
		if err != nil {
			t.Fatal(err)
		}
		if w.Size() != big.Used() || w.Size() < 2*int64(len(data)) {
			t.Errorf("%q: size %d, charged %d, encoded %d", ct, w.Size(), big.Used(), len(data))
		}
		// without a meter nothing is charged, the size is still known
		u, err := core.NewWireResult(ct, data)
		if err != nil || u.Size() != w.Size() {
			t.Errorf("%q: NewWireResult size %d, want %d (%v)", ct, u.Size(), w.Size(), err)
		}
	}
}

// TestUnchargedWireResultChargedByRun: a tool that builds its result with
// NewWireResult (no meter) is charged by the run when the result arrives.
func TestUnchargedWireResultChargedByRun(t *testing.T) {
	data := wireRecords(t, 500, "")
	tool := core.ToolFunc(func(context.Context, map[string]any) (any, error) { return core.NewWireResult("", data) })
	m := core.NewMeter(0, "")
	if _, err := Exec(context.Background(), `(count (tool/orders))`, Options{Tools: core.Tools{"orders": tool}, Meter: m}); err != nil {
		t.Fatal(err)
	}
	w, _ := core.NewWireResult("", data)
	if m.Used() < w.Size() {
		t.Fatalf("charged %d, the result holds %d", m.Used(), w.Size())
	}
}

// TestOwnMeterMadeOnFirstNeed: a run given no meter makes its own,
// limited to its MaxMemory, when it first calls a tool, and hands that one
// meter to every tool call, pmap branches included.
func TestOwnMeterMadeOnFirstNeed(t *testing.T) {
	var mu sync.Mutex
	var seen []*core.Meter
	probe := core.ToolFunc(func(ctx context.Context, _ map[string]any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, MeterFrom(ctx))
		return int64(1), nil
	})
	opts := Options{Tools: core.Tools{"probe": probe}, MaxMemory: 3 << 20}
	src := `(+ (tool/probe) (reduce + (pmap (fn [_] (tool/probe)) (range 6))))`
	if _, err := Exec(context.Background(), src, opts); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 7 || seen[0] == nil || seen[0].Limit() != 3<<20 {
		t.Fatalf("%d calls, first meter %v", len(seen), seen[0])
	}
	for _, m := range seen {
		if m != seen[0] {
			t.Fatalf("calls saw different meters")
		}
	}
	// the branches alone: the meter is made before they start
	seen = nil
	if _, err := Exec(context.Background(), `(count (pmap (fn [_] (tool/probe)) (range 6)))`, opts); err != nil {
		t.Fatal(err)
	}
	for _, m := range seen {
		if m == nil || m != seen[0] {
			t.Fatalf("branches saw meters %v", seen)
		}
	}
}
