package lisp

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// cpuTime is the process's user+system CPU time. Benchmarks report it per
// op ("cpu-ns/op", GC included) because wall time is unreliable on a
// shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs fn in a b.Loop and reports CPU time per op. It collects
// garbage first: CPU time is the whole process's, so GC work left over
// from the benchmark before (a background mark of its heap on the other
// core) would otherwise be charged to this one.
func loopCPU(b *testing.B, fn func()) {
	b.ReportAllocs()
	runtime.GC()
	start := cpuTime()
	n := 0
	for b.Loop() {
		fn()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
	}
}

// benchRecords builds n JSON-like records (deterministic).
func benchRecords(n int) []map[string]any {
	cats := []string{"books", "games", "music", "tools", "food", "toys", "garden", "sports"}
	words := []string{"foo", "bar", "baz", "qux", "lorem", "ipsum", "dolor", "amet"}
	out := make([]map[string]any, n)
	for i := range out {
		var text strings.Builder
		for j := 0; j < 6; j++ {
			if j > 0 {
				text.WriteByte(' ')
			}
			text.WriteString(words[(i*7+j*3)%len(words)])
		}
		out[i] = map[string]any{
			"id":       int64(i),
			"name":     fmt.Sprintf("item-%d", i),
			"category": cats[i%len(cats)],
			"price":    float64(i%1000) / 10,
			"qty":      int64(i % 37),
			"active":   i%3 != 0,
			"text":     text.String(),
			"user": map[string]any{
				"name":    fmt.Sprintf("user-%d", i%500),
				"address": map[string]any{"city": cats[(i/3)%len(cats)], "zip": int64(10000 + i%900)},
			},
		}
	}
	return out
}

var benchSizes = []int{1_000, 10_000, 100_000}

type pipeline struct {
	name string
	src  string
	goFn func(rs []map[string]any) any
}

var pipelines = []pipeline{
	{"filter_map_reduce", `(->> ctx/records (filter :active) (map :price) (reduce +))`,
		func(rs []map[string]any) any {
			s := 0.0
			for _, r := range rs {
				if r["active"].(bool) {
					s += r["price"].(float64)
				}
			}
			return s
		}},
	{"group_by_frequencies", `(let [g (group-by :category ctx/records)] [(count g) (frequencies (map :category ctx/records))])`,
		func(rs []map[string]any) any {
			g := map[string][]map[string]any{}
			f := map[string]int{}
			for _, r := range rs {
				c := r["category"].(string)
				g[c] = append(g[c], r)
			}
			for _, r := range rs {
				f[r["category"].(string)]++
			}
			return []any{len(g), f}
		}},
	{"sort_by_take", `(->> ctx/records (sort-by :price >) (take 10) (map :id))`,
		func(rs []map[string]any) any {
			cp := make([]map[string]any, len(rs))
			copy(cp, rs)
			sort.SliceStable(cp, func(i, j int) bool { return cp[i]["price"].(float64) > cp[j]["price"].(float64) })
			ids := make([]any, 0, 10)
			for _, r := range cp[:10] {
				ids = append(ids, r["id"])
			}
			return ids
		}},
	{"reduce_assoc", `(count (reduce (fn [m r] (assoc m (:id r) (:price r))) {} ctx/records))`,
		func(rs []map[string]any) any {
			m := map[int64]float64{}
			for _, r := range rs {
				m[r["id"].(int64)] = r["price"].(float64)
			}
			return len(m)
		}},
	{"reduce_update_counts", `(reduce (fn [m r] (update m (:category r) (fnil + 0) (:qty r))) {} ctx/records)`,
		func(rs []map[string]any) any {
			m := map[string]int64{}
			for _, r := range rs {
				m[r["category"].(string)] += r["qty"].(int64)
			}
			return m
		}},
	{"string_includes_split", `(->> ctx/records (filter #(includes? (:text %) "lorem")) (map #(count (split (:text %) " "))) (reduce +))`,
		func(rs []map[string]any) any {
			n := 0
			for _, r := range rs {
				t := r["text"].(string)
				if strings.Contains(t, "lorem") {
					n += len(strings.Split(t, " "))
				}
			}
			return n
		}},
	{"get_in_update_in", `(->> ctx/records (map #(update-in % [:user :address :zip] inc)) (map #(get-in % [:user :address :zip])) (reduce +))`,
		func(rs []map[string]any) any {
			var s int64
			out := make([]map[string]any, len(rs))
			for i, r := range rs {
				cp := make(map[string]any, len(r))
				for k, v := range r {
					cp[k] = v
				}
				u := r["user"].(map[string]any)
				ucp := make(map[string]any, len(u))
				for k, v := range u {
					ucp[k] = v
				}
				a := u["address"].(map[string]any)
				acp := make(map[string]any, len(a))
				for k, v := range a {
					acp[k] = v
				}
				acp["zip"] = a["zip"].(int64) + 1
				ucp["address"] = acp
				cp["user"] = ucp
				out[i] = cp
			}
			for _, r := range out {
				s += r["user"].(map[string]any)["address"].(map[string]any)["zip"].(int64)
			}
			return s
		}},
	{"distinct_sets", `[(count (distinct (map :qty ctx/records))) (count (clojure.set/intersection (set (map :category ctx/records)) #{"books" "toys" "cars"}))]`,
		func(rs []map[string]any) any {
			d := map[int64]bool{}
			var order []int64
			for _, r := range rs {
				q := r["qty"].(int64)
				if !d[q] {
					d[q] = true
					order = append(order, q)
				}
			}
			cs := map[string]bool{}
			for _, r := range rs {
				cs[r["category"].(string)] = true
			}
			n := 0
			for _, c := range []string{"books", "toys", "cars"} {
				if cs[c] {
					n++
				}
			}
			return []any{len(order), n}
		}},
	{"loop_recur", `(loop [rs ctx/records acc 0] (if (empty? rs) acc (recur (rest rs) (+ acc (:qty (first rs))))))`,
		func(rs []map[string]any) any {
			var s int64
			for _, r := range rs {
				s += r["qty"].(int64)
			}
			return s
		}},
}

func BenchmarkPipelines(b *testing.B) { benchPipelines(b, pipelines) }

// benchPipelines runs each pipeline as PTC-Lisp and as hand-written Go
// over 1k, 10k and 100k records, converted once to interpreter maps laid
// out as the wire decoders lay them out (not FromGo's views: this measures
// the interpreter core).
func benchPipelines(b *testing.B, ps []pipeline) {
	for _, n := range benchSizes {
		rs := benchRecords(n)
		cv := core.Converter{Shapes: &core.ShapeCache{}}
		cv.Intern = true
		recs, err := cv.From(rs)
		if err != nil {
			b.Fatal(err)
		}
		ctxData := map[string]any{"records": recs}
		for _, p := range ps {
			benchPipeline(b, p, n, rs, Options{Context: ctxData, Timeout: time.Minute, MaxMemory: -1, MaxSteps: -1})
		}
	}
}

// benchPipeline runs p as PTC-Lisp with opts (its records in
// opts.Context) and as hand-written Go over rs, as the sub-benchmarks
// name/n/lisp and name/n/go.
func benchPipeline(b *testing.B, p pipeline, n int, rs []map[string]any, opts Options) {
	b.Run(fmt.Sprintf("%s/%d/lisp", p.name, n), func(b *testing.B) {
		if _, err := Exec(context.Background(), p.src, opts); err != nil {
			b.Fatal(err.(*core.Error).Detail())
		}
		loopCPU(b, func() { Exec(context.Background(), p.src, opts) })
	})
	b.Run(fmt.Sprintf("%s/%d/go", p.name, n), func(b *testing.B) {
		loopCPU(b, func() { p.goFn(rs) })
	})
}

// BenchmarkPipelinesFromGo measures from the caller's starting point:
// each op is a lisp.Exec with the records in Options.Context as plain Go
// data ([]map[string]any, viewed by the run), next to the same
// computation hand-written in Go over the same records. convert is FromGo
// of the records alone (the vector of views).
func BenchmarkPipelinesFromGo(b *testing.B) { benchFromGo(b, benchRecords) }

// benchFromGo is BenchmarkPipelinesFromGo over the records records makes.
func benchFromGo(b *testing.B, records func(n int) []map[string]any) {
	for _, n := range []int{10_000, 100_000} {
		rs := records(n)
		ctxData := map[string]any{"records": rs}
		for _, p := range pipelines {
			benchPipeline(b, p, n, rs, Options{Context: ctxData, Timeout: time.Minute})
		}
		b.Run(fmt.Sprintf("convert/%d", n), func(b *testing.B) {
			loopCPU(b, func() { core.FromGo(rs) })
		})
	}
}

// BenchmarkPipelinesFromGoWide is BenchmarkPipelinesFromGo over records
// of 12 fields (the same records with four more): more than the eight a
// small Go map holds, so the programs read them with Go's map lookup (no
// slot cache, no prefetch) and a record's form is a trie.
func BenchmarkPipelinesFromGoWide(b *testing.B) { benchFromGo(b, wideRecords) }

// wideRecords is benchRecords with four more fields per record.
func wideRecords(n int) []map[string]any {
	rs := benchRecords(n)
	for i, r := range rs {
		r["sku"] = fmt.Sprintf("SKU-%d", i%977)
		r["discount"] = float64(i%7) / 10
		r["warehouse"] = int64(i % 13)
		r["status"] = []string{"new", "paid", "shipped"}[i%3]
	}
	return rs
}

// TestPipelinesAgree checks that each benchmark program computes what its
// hand-written Go version computes, so the ratios compare equal work.
func TestPipelinesAgree(t *testing.T) {
	for _, rs := range [][]map[string]any{benchRecords(1000), wideRecords(1000)} {
		recs, err := core.FromGo(rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pipelines {
			res, err := Exec(context.Background(), p.src, Options{Context: map[string]any{"records": recs}, Timeout: time.Minute})
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			got, _ := json.Marshal(core.ToGo(res.Value))
			want, _ := json.Marshal(p.goFn(rs))
			if string(got) != string(want) {
				t.Errorf("%s (%d fields): lisp %s, go %s", p.name, len(rs[0]), got, want)
			}
		}
	}
}

var tinyPrograms = []struct{ name, src string }{
	{"arith", `(+ 1 (* 2 3) (- 10 4))`},
	{"let", `(let [x 1 y 2 z (+ x y)] (* x y z))`},
	{"closure", `(let [add (fn [a] (fn [b] (+ a b)))] ((add 2) 3))`},
	{"map_access", `(let [m {:a 1 :b {:c 2}}] (+ (:a m) (get-in m [:b :c])))`},
	{"string_ops", `(str "hello" " " (upper-case "world") (count "abc"))`},
	{"defn_loop", `(defn sq [x] (* x x)) (loop [i 0 acc 0] (if (< i 10) (recur (inc i) (+ acc (sq i))) acc))`},
}

func BenchmarkTiny(b *testing.B) {
	for _, p := range tinyPrograms {
		b.Run(p.name, func(b *testing.B) {
			if _, err := Exec(context.Background(), p.src, Options{}); err != nil {
				b.Fatal(err.(*core.Error).Detail())
			}
			loopCPU(b, func() { Exec(context.Background(), p.src, Options{}) })
		})
	}
}
