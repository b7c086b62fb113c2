package lisp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// The benchmarks here measure from a library user's starting point: records
// of 8, 12 and 30 fields (nested user and address maps, strings of real
// length) given to lisp.Run as Go data, the program keeping them with
// `def` and computing over what it kept, the Step (its memory included)
// built as Run builds it; next to hand-written Go doing the same work over
// the same maps, in the same run (sub-benchmarks .../lisp and .../go).
// scripts/bench-ratios.sh runs them and prints the lisp/go ratios.

// keptPipelines are the pipelines over the kept records, with an index
// loop (loop/recur with nth) added.
var keptPipelines = append(append([]pipeline(nil), pipelines...), pipeline{
	"index_loop_nth", `(loop [i 0 acc 0] (if (< i (count ctx/records)) (recur (inc i) (+ acc (:qty (nth ctx/records i)))) acc))`,
	func(rs []map[string]any) any {
		var s int64
		for i := 0; i < len(rs); i++ {
			s += rs[i]["qty"].(int64)
		}
		return s
	}})

// keptSource is p's program reading the records it kept with def.
func keptSource(p pipeline) string {
	return "(def data ctx/records) " + strings.ReplaceAll(p.src, "ctx/records", "data")
}

// recordsOfWidth returns n records of the given number of top-level
// fields (8, 12 or 30): benchRecords, wideRecords, and wideRecords with
// 18 more fields of mixed kinds.
func recordsOfWidth(n, width int) []map[string]any {
	switch width {
	case 8:
		return benchRecords(n)
	case 12:
		return wideRecords(n)
	}
	rs := wideRecords(n)
	for i, r := range rs {
		for f := len(r); f < width; f++ {
			key := fmt.Sprintf("attr_%02d", f)
			switch f % 3 {
			case 0:
				r[key] = int64(i*f) % 1000
			case 1:
				r[key] = fmt.Sprintf("value %d of field %d", i%97, f)
			default:
				r[key] = float64(i%113) / float64(f)
			}
		}
	}
	return rs
}

// BenchmarkRunKept runs each kept pipeline through lisp.Run at every
// width and size, with its Go twin.
func BenchmarkRunKept(b *testing.B) {
	for _, width := range []int{8, 12, 30} {
		for _, n := range []int{10_000, 100_000} {
			rs := recordsOfWidth(n, width)
			opts := Options{Context: map[string]any{"records": rs}, Timeout: time.Minute, MaxSteps: -1}
			for _, p := range keptPipelines {
				src := keptSource(p)
				b.Run(fmt.Sprintf("w%d/%s/%d/lisp", width, p.name, n), func(b *testing.B) {
					if _, err := Run(context.Background(), src, opts); err != nil {
						b.Fatal(err.(*core.Error).Detail())
					}
					loopCPU(b, func() { Run(context.Background(), src, opts) })
				})
				b.Run(fmt.Sprintf("w%d/%s/%d/go", width, p.name, n), func(b *testing.B) {
					loopCPU(b, func() { p.goFn(rs) })
				})
			}
		}
	}
}

// BenchmarkRunKeptFixed runs each kept program through lisp.Run over one
// record of 8 fields: what a run costs besides its records (reading and
// compiling the program, the run's setup, the def, the Step), which every
// ratio of BenchmarkRunKept includes once per op.
func BenchmarkRunKeptFixed(b *testing.B) {
	opts := Options{Context: map[string]any{"records": recordsOfWidth(1, 8)}, Timeout: time.Minute, MaxSteps: -1}
	for _, p := range keptPipelines {
		src := keptSource(p)
		b.Run(p.name, func(b *testing.B) {
			if _, err := Run(context.Background(), src, opts); err != nil {
				b.Fatal(err.(*core.Error).Detail())
			}
			loopCPU(b, func() { Run(context.Background(), src, opts) })
		})
	}
}

// TestKeptPipelinesAgree checks that each kept program, run through
// lisp.Run, returns what its Go twin computes at every width, and keeps
// the caller's records.
func TestKeptPipelinesAgree(t *testing.T) {
	for _, width := range []int{8, 12, 30} {
		rs := recordsOfWidth(500, width)
		if len(rs[0]) != width {
			t.Fatalf("records of width %d have %d fields", width, len(rs[0]))
		}
		for _, p := range keptPipelines {
			st, err := Run(context.Background(), keptSource(p), Options{Context: map[string]any{"records": rs}, Timeout: time.Minute})
			if err != nil {
				t.Fatalf("w%d %s: %v", width, p.name, err)
			}
			got, _ := json.Marshal(st.Return)
			want, _ := json.Marshal(p.goFn(rs))
			if string(got) != string(want) {
				t.Errorf("w%d %s: lisp %s, go %s", width, p.name, got, want)
			}
			if kept, ok := st.Memory["data"].([]map[string]any); !ok || len(kept) != len(rs) || &kept[0] != &rs[0] {
				t.Errorf("w%d %s: memory data is not the caller's records", width, p.name)
			}
		}
	}
}
