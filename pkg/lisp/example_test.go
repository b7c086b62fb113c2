package lisp_test

import (
	"context"
	"fmt"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A program that calls a tool and shrinks its result.
func ExampleRun_tool() {
	tools := lisp.Tools{
		"search": lisp.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			return []any{
				map[string]any{"title": "Go", "stars": int64(120)},
				map[string]any{"title": "Lisp", "stars": int64(80)},
				map[string]any{"title": "Rust", "stars": int64(100)},
			}, nil
		}),
	}
	src := `(->> (tool/search {:query "languages"})
	              (filter (fn [r] (> (:stars r) 90)))
	              (map :title))`
	step, err := lisp.Run(context.Background(), src, lisp.Options{Tools: tools})
	if err != nil {
		fmt.Println(step.Fail.Reason, step.Fail.Message)
		return
	}
	fmt.Println(step.Return)
	fmt.Println(step.Trace[0].ToolCalls[0].Name, step.Trace[0].ToolCalls[0].Args)
	// Output:
	// [Go Rust]
	// search map[query:languages]
}

// Inputs arrive as ctx/ (string keys, flex lookup with keywords); the
// returned map's keys become strings with '-' replaced by '_'.
func ExampleRun_context() {
	step, err := lisp.Run(context.Background(),
		`{:order-count (count ctx/orders) :first-id (:id (first-order ctx/orders))}`,
		lisp.Options{Context: map[string]any{"orders": []any{map[string]any{"id": "a1"}}}})
	fmt.Println(step.Fail.Reason, err != nil)

	step, _ = lisp.Run(context.Background(),
		`(let [o ctx/orders] {:order-count (reduce + (map :qty o)) :ids (map :id o)})`,
		lisp.Options{Context: map[string]any{"orders": []any{
			map[string]any{"id": "a1", "qty": int64(2)},
			map[string]any{"id": "b2", "qty": int64(3)},
		}}})
	fmt.Println(step.Return)
	// Output:
	// unbound_symbol true
	// map[ids:[a1 b2] order_count:5]
}

// Errors come back with a position, a caret snippet and a hint.
func ExampleExec_error() {
	res, err := lisp.Exec(context.Background(), "(fitler odd? [1 2 3])", lisp.Options{})
	fmt.Println(res.Signal, res.Err.Reason())
	fmt.Println(err.(*lisp.Error).Detail())
	// Output:
	// fail unbound_symbol
	// 1:2: undefined symbol: fitler
	//   (fitler odd? [1 2 3])
	//    ^
	// hint: did you mean filter
}

func ExamplePreview() {
	res, _ := lisp.Exec(context.Background(), `(map (fn [i] {:id i :_token "secret"}) (range 8))`, lisp.Options{})
	text, omitted := lisp.Preview(res.Value, lisp.PreviewOptions{MaxItems: 2})
	fmt.Println(text)
	fmt.Println(omitted)
	// Output:
	// [{:_token <Firewalled> :id 0} {:_token <Firewalled> :id 1} ...] ... (6 more items omitted)
	// 6
}

// A tool reply as msgpack bytes is decoded straight into interpreter
// values and given to a program as host data.
func ExampleDecodeMsgpack() {
	data, _ := messages.Marshal([]any{
		map[string]any{"sku": "SKU-1", "qty": 2},
		map[string]any{"sku": "SKU-2", "qty": 5},
	})
	rows, err := lisp.DecodeMsgpack(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	step, _ := lisp.Run(context.Background(), `(into {} (map (juxt :sku :qty) ctx/rows))`,
		lisp.Options{Context: map[string]any{"rows": rows}})
	fmt.Println(step.Return, lisp.IsHostData(rows))
	// Output: map[SKU-1:2 SKU-2:5] true
}

// A program compiled once and run on many inputs: each run has its own
// context, and none reads the source again.
func ExampleCompile() {
	p, err := lisp.Compile(`(->> ctx/orders (filter #(> (:total %) 50)) (map :id))`, lisp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, orders := range [][]map[string]any{
		{{"id": "a", "total": 80.0}, {"id": "b", "total": 20.0}},
		{{"id": "c", "total": 51.0}, {"id": "d", "total": 99.5}},
	} {
		res, err := p.Run(context.Background(), lisp.Options{Context: map[string]any{"orders": orders}})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(lisp.ToGo(res.Value))
	}
	// Output:
	// [a]
	// [c d]
}
