package lisp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// stringRows builds n rows with a CSV-ish line, a key and a float.
func stringRows(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{
			"line": fmt.Sprintf("id-%d,Name %d,%d,lorem ipsum", i, i%97, i*7),
			"k":    fmt.Sprintf("key%d", i%50),
			"v":    float64(i) / 3,
		}
	}
	return out
}

var stringPipelines = []pipeline{
	{"split_join", `(->> ctx/rows (map #(join "|" (split (:line %) ","))) (map count) (reduce +))`,
		func(rs []map[string]any) any {
			n := 0
			for _, r := range rs {
				n += len(strings.Join(strings.Split(r["line"].(string), ","), "|"))
			}
			return n
		}},
	{"format", `(->> ctx/rows (map #(format "%s=%.2f" (:k %) (:v %))) (map count) (reduce +))`,
		func(rs []map[string]any) any {
			n := 0
			for _, r := range rs {
				n += len(fmt.Sprintf("%s=%.2f", r["k"], r["v"]))
			}
			return n
		}},
	{"re_find_parse", `(->> ctx/rows (keep #(extract-int #",(\d+)," (:line %))) (reduce +))`,
		func(rs []map[string]any) any {
			re := regexp.MustCompile(`,(\d+),`)
			var s int64
			for _, r := range rs {
				if m := re.FindStringSubmatch(r["line"].(string)); m != nil {
					n, _ := strconv.ParseInt(m[1], 10, 64)
					s += n
				}
			}
			return s
		}},
	{"upper_replace_includes", `(->> ctx/rows (map #(upper-case (replace (:line %) "lorem" "x"))) (filter #(includes? % "NAME 1")) count)`,
		func(rs []map[string]any) any {
			n := 0
			for _, r := range rs {
				if strings.Contains(strings.ToUpper(strings.ReplaceAll(r["line"].(string), "lorem", "x")), "NAME 1") {
					n++
				}
			}
			return n
		}},
}

// BenchmarkStringBuiltins runs string pipelines over 10k rows next to the
// same work written in Go over []map[string]any (cpu-ns/op is the figure
// to compare on a shared machine).
func BenchmarkStringBuiltins(b *testing.B) {
	const n = 10_000
	rs := stringRows(n)
	rows, err := core.FromGo(rs)
	if err != nil {
		b.Fatal(err)
	}
	ctxData := map[string]any{"rows": rows}
	for _, p := range stringPipelines {
		b.Run(fmt.Sprintf("%s/%d/lisp", p.name, n), func(b *testing.B) {
			opts := Options{Context: ctxData, Timeout: time.Minute, MaxMemory: -1, MaxSteps: -1}
			res, err := Exec(context.Background(), p.src, opts)
			if err != nil {
				b.Fatal(err.(*core.Error).Detail())
			}
			if got, want := core.PrStr(res.Value), fmt.Sprint(p.goFn(rs)); got != want {
				b.Fatalf("lisp gave %s, go gave %s", got, want)
			}
			loopCPU(b, func() { Exec(context.Background(), p.src, opts) })
		})
		b.Run(fmt.Sprintf("%s/%d/go", p.name, n), func(b *testing.B) {
			loopCPU(b, func() { p.goFn(rs) })
		})
	}
}
