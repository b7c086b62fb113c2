package lisp_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// A data pipeline over host records (string keys): keyword lookups, paths,
// grouping and aggregation all read the keys flexibly, and writes such as
// update keep the host's key spelling.
func ExampleRun_aggregation() {
	orders := []any{
		map[string]any{"id": int64(1), "customer": map[string]any{"region": "eu"}, "total": 30.0},
		map[string]any{"id": int64(2), "customer": map[string]any{"region": "us"}, "total": 12.5},
		map[string]any{"id": int64(3), "customer": map[string]any{"region": "eu"}, "total": 7.5},
		map[string]any{"id": int64(4), "customer": map[string]any{"region": "us"}, "total": nil},
	}
	src := `(let [by-region (group-by [:customer :region] ctx/orders)]
	          {:totals  (update-vals by-region #(sum-by :total %))
	           :biggest (:id (max-by :total ctx/orders))
	           :bumped  (:total (update (first ctx/orders) :total + 1))
	           :ids     (->> ctx/orders (sort-by :total :desc) (take 2) (mapv :id))})`
	step, err := lisp.Run(context.Background(), src, lisp.Options{Context: map[string]any{"orders": orders}})
	if err != nil {
		fmt.Println(step.Fail.Reason, step.Fail.Message)
		return
	}
	m := step.Return.(map[string]any)
	fmt.Println(m["totals"], m["biggest"], m["bumped"], m["ids"])
	// Output:
	// map[eu:37.5 us:12.5] 1 31 [1 2]
}
