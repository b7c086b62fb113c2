package lisp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// TestPureSeqsInChunks: range, repeat and cycle realise their items a
// chunk at a time; what a program reads is the same item by item, around
// chunk boundaries and at the end of a finite range.
func TestPureSeqsInChunks(t *testing.T) {
	const big = builtins.EagerRangeMax + 1 // larger ranges are lazy
	cases := map[string]string{}
	for _, n := range []int{big, big + core.LazyChunk - 1, big + core.LazyChunk, big + core.LazyChunk + 1} {
		cases[fmt.Sprintf(`(count (range %d))`, n)] = fmt.Sprint(n)
		cases[fmt.Sprintf(`(last (range %d))`, n)] = fmt.Sprint(n - 1)
		cases[fmt.Sprintf(`(reduce + (range %d))`, n)] = fmt.Sprint(n * (n - 1) / 2)
		cases[fmt.Sprintf(`(let [r (range 7 %d 3)] [(count r) (last r) (nth r 300)])`, 7+3*n)] = fmt.Sprintf("[%d %d 907]", n, 7+3*(n-1))
		cases[fmt.Sprintf(`(count (range 0.5 %d))`, n)] = fmt.Sprint(n)
		cases[fmt.Sprintf(`(nth (range) %d)`, n)] = fmt.Sprint(n)
		cases[fmt.Sprintf(`(nth (cycle [1 2 3]) %d)`, n)] = fmt.Sprint(n%3 + 1)
		cases[fmt.Sprintf(`(count (take %d (repeat :x)))`, n)] = fmt.Sprint(n)
	}
	cases[`(take 3 (range))`] = `[0 1 2]`
	cases[`(let [r (range)] [(nth r 1000) (first r) (nth r 255) (nth r 256) (vec (take 2 (drop 255 r)))])`] = `[1000 0 255 256 [255 256]]`
	cases[`(take 5 (cycle [:a :b]))`] = `[:a :b :a :b :a]`
	cases[`(take 4 (range 0.5 1e9 0.25))`] = `[0.5 0.75 1.0 1.25]`
	cases[`(take 3 (range 1000000000 0 -1))`] = `[1000000000 999999999 999999998]`
	for src, want := range cases {
		res, err := Exec(context.Background(), src, Options{Timeout: time.Minute})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := core.PrStr(res.Value); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// TestLazySeqCharges: a realised cache is charged while it is built (a
// pure sequence a chunk ahead), so its realisation stops at the limit.
func TestLazySeqCharges(t *testing.T) {
	n := builtins.EagerRangeMax + 10
	cache := int64(n) * core.LazyItemBytes
	ahead := int64(core.LazyChunk) * core.LazyItemBytes
	taken := int64(n)*core.SlotBytes + core.VectorBytes // take's result
	for _, c := range []struct {
		src   string
		limit int64
		ok    bool
	}{
		{fmt.Sprintf(`(let [r (range %d)] (count r))`, n), cache + ahead, true},
		{fmt.Sprintf(`(let [r (range %d)] (count r))`, n), cache - 1, false},
		{fmt.Sprintf(`(count (take %d (range)))`, n), cache + ahead + taken, true},
		{fmt.Sprintf(`(count (take %d (range)))`, n), cache - 1, false},
		{fmt.Sprintf(`(count (take %d (iterate inc 0)))`, n), cache + taken, true},
		{fmt.Sprintf(`(count (take %d (iterate inc 0)))`, n), cache - 1, false},
	} {
		_, err := Exec(context.Background(), c.src, Options{Timeout: time.Minute, MaxMemory: c.limit})
		if c.ok != (err == nil) {
			t.Errorf("%s under %d bytes: %v", c.src, c.limit, err)
		}
	}
}
