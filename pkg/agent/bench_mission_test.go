package agent

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
)

// missionRecords builds n order records as plain Go data.
func missionRecords(n int) []any {
	cats := []string{"books", "games", "music", "tools", "food", "toys", "garden", "sports"}
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{
			"id": int64(i), "category": cats[i%len(cats)], "price": float64(i%1000) / 10,
			"qty": int64(i % 37), "active": i%3 != 0, "name": fmt.Sprintf("item-%d", i),
		}
	}
	return out
}

// cpuNow is the process's user+system CPU time (wall time is unreliable
// on a shared machine).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// missionTurns are the programs of a 5-turn mission over ctx/records:
// the records are kept with def in turn 1 and used by the next turns.
var missionTurns = []string{
	`(def rows ctx/records) (count rows)`,
	`(def by-cat (frequencies (map :category rows))) (count by-cat)`,
	`(def top (->> rows (sort-by :price >) (take 5) (map :id))) top`,
	`(def total (->> rows (filter :active) (map :price) (reduce +))) total`,
	`(return {:cats by-cat :top top :total total})`,
}

// BenchmarkMissionTurns runs missions of 1 and 5 turns over 100k records
// given as plain Go data, the way a worker runs them, and converting the
// records alone: the records are converted once per mission, so a turn
// costs its program, not the data: keep/turns=5 minus keep/turns=2 is the
// cost of three turns that read the kept records.
func BenchmarkMissionTurns(b *testing.B) {
	rs := missionRecords(100_000)
	a, err := New(Spec{Prompt: "Summarise the orders", Limits: Limits{MaxTurns: 5}})
	if err != nil {
		b.Fatal(err)
	}
	missions := map[string][]string{
		"turns=1":      {`(return {:n (count ctx/records)})`},
		"turns=5":      missionTurns,
		"keep/turns=2": {`(def rows ctx/records) (count rows)`, `(return {:n (count rows)})`},
		"keep/turns=5": {`(def rows ctx/records) (count rows)`, `(count rows)`, `(:id (first rows))`, `(count (take 10 rows))`, `(return {:n (count rows)})`},
	}
	for _, name := range []string{"turns=1", "turns=5", "keep/turns=2", "keep/turns=5"} {
		progs := missions[name]
		b.Run(name, func(b *testing.B) {
			start, n := cpuNow(), 0
			for b.Loop() {
				replies := make([]llmtest.Reply, len(progs))
				for i, p := range progs {
					replies[i] = llmtest.Code(p)
				}
				st, err := a.Run(context.Background(), RunOptions{Model: llmtest.New(replies...), Context: map[string]any{"records": rs}})
				if err != nil || st.Usage.Turns != len(progs) {
					b.Fatalf("mission: %v (%d turns)", err, st.Usage.Turns)
				}
				n++
			}
			cpu := float64(cpuNow()-start) / float64(n)
			b.ReportMetric(cpu, "cpu-ns/op")
			b.ReportMetric(cpu/float64(len(progs)), "cpu-ns/turn")
		})
	}
	b.Run("convert", func(b *testing.B) {
		start, n := cpuNow(), 0
		for b.Loop() {
			if _, err := lisp.FromGo(rs); err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(cpuNow()-start)/float64(n), "cpu-ns/op")
	})
}
