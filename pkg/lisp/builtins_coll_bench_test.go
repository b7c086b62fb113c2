package lisp

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// collPipelines exercise the access/seq/agg/maps/sets builtins over
// benchRecords, each next to the same computation written by hand in Go.
var collPipelines = []pipeline{
	{"sort_by_string_take", `(->> ctx/records (sort-by :name) (take 10) (map :id))`,
		func(rs []map[string]any) any {
			cp := append([]map[string]any(nil), rs...)
			sort.SliceStable(cp, func(i, j int) bool { return cp[i]["name"].(string) < cp[j]["name"].(string) })
			ids := make([]any, 0, 10)
			for _, r := range cp[:min(10, len(cp))] {
				ids = append(ids, r["id"])
			}
			return ids
		}},
	{"group_by_sum_by", `(update-vals (group-by :category ctx/records) #(sum-by :price %))`,
		func(rs []map[string]any) any {
			g := map[string][]map[string]any{}
			for _, r := range rs {
				c := r["category"].(string)
				g[c] = append(g[c], r)
			}
			out := map[string]float64{}
			for c, rows := range g {
				s := 0.0
				for _, r := range rows {
					s += r["price"].(float64)
				}
				out[c] = s
			}
			return out
		}},
	{"max_by", `(:id (max-by :price ctx/records))`,
		func(rs []map[string]any) any {
			var best map[string]any
			for _, r := range rs {
				if best == nil || r["price"].(float64) > best["price"].(float64) {
					best = r
				}
			}
			return best["id"]
		}},
	{"select_keys", `(count (mapv #(select-keys % [:id :name]) ctx/records))`,
		func(rs []map[string]any) any {
			out := make([]map[string]any, len(rs))
			for i, r := range rs {
				out[i] = map[string]any{"id": r["id"], "name": r["name"]}
			}
			return len(out)
		}},
	{"partition_all_sum", `(reduce + (map #(sum-by :qty %) (partition-all 100 ctx/records)))`,
		func(rs []map[string]any) any {
			var total int64
			for i := 0; i < len(rs); i += 100 {
				var s int64
				for _, r := range rs[i:min(i+100, len(rs))] {
					s += r["qty"].(int64)
				}
				total += s
			}
			return total
		}},
	{"into_map", `(count (into {} (map (fn [r] [(:id r) (:qty r)]) ctx/records)))`,
		func(rs []map[string]any) any {
			m := make(map[int64]int64)
			for _, r := range rs {
				m[r["id"].(int64)] = r["qty"].(int64)
			}
			return len(m)
		}},
	{"distinct_by_path", `(count (distinct-by [:user :name] ctx/records))`,
		func(rs []map[string]any) any {
			seen := map[string]bool{}
			n := 0
			for _, r := range rs {
				k := r["user"].(map[string]any)["name"].(string)
				if !seen[k] {
					seen[k] = true
					n++
				}
			}
			return n
		}},
	{"frequencies_sort", `(->> ctx/records (map :qty) frequencies (sort-by val >) (take 3))`,
		func(rs []map[string]any) any {
			f := map[int64]int{}
			for _, r := range rs {
				f[r["qty"].(int64)]++
			}
			type kv struct {
				k int64
				v int
			}
			var es []kv
			for k, v := range f {
				es = append(es, kv{k, v})
			}
			sort.Slice(es, func(i, j int) bool { return es[i].k < es[j].k })
			sort.SliceStable(es, func(i, j int) bool { return es[i].v > es[j].v })
			return es[:min(3, len(es))]
		}},
}

func BenchmarkCollBuiltins(b *testing.B) { benchPipelines(b, collPipelines) }

// TestCollPipelinesAgree checks that each benchmark program computes what
// its hand-written Go version computes (on 1000 records).
func TestCollPipelinesAgree(t *testing.T) {
	rs := benchRecords(1000)
	recs, err := core.FromGo(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"sort_by_string_take": "[0 1 10 100 101 102 103 104 105 106]",
		"max_by":              "999",
		"select_keys":         "1000",
		"partition_all_sum":   fmt.Sprint(collPipelines[4].goFn(rs)),
		"into_map":            "1000",
		"distinct_by_path":    "500",
		"frequencies_sort":    "[[0 28] [1 27] [2 27]]",
	}
	for _, p := range collPipelines {
		res, err := Exec(context.Background(), p.src, Options{Context: map[string]any{"records": recs}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if p.name == "group_by_sum_by" {
			got, _ := core.ToGo(res.Value).(map[string]any)
			gm := p.goFn(rs).(map[string]float64)
			if len(got) != len(gm) {
				t.Fatalf("%s: %d groups, want %d", p.name, len(got), len(gm))
			}
			for k, v := range gm {
				if d := got[k].(float64) - v; d > 1e-6 || d < -1e-6 {
					t.Fatalf("%s: %s = %v, want %v", p.name, k, got[k], v)
				}
			}
			continue
		}
		if got := core.PrStr(res.Value); got != want[p.name] {
			t.Errorf("%s: got %s, want %s", p.name, got, want[p.name])
		}
	}
}
