package lisp

import (
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// BenchmarkPipelinesViewedOnce runs each pipeline over the records as
// FromGo gives them (host records read in place), made once outside the
// loop (the from-Go path without the per-run boundary cost), next to the
// same hand-written Go: it measures the interpreter core over host
// records.
func BenchmarkPipelinesViewedOnce(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		rs := benchRecords(n)
		recs, err := core.FromGo(rs)
		if err != nil {
			b.Fatal(err)
		}
		ctxData := map[string]any{"records": recs}
		for _, p := range pipelines {
			benchPipeline(b, p, n, rs, Options{Context: ctxData, Timeout: time.Minute, MaxMemory: -1, MaxSteps: -1})
		}
	}
}
