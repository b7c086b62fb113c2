package shop_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// guideTools serves the shop's tools to the interpreter as a tool service
// does: arguments and results cross as JSON.
func guideTools(d *shop.Data) lisp.Tools {
	tool := func(call func(ctx context.Context, args []byte) (any, error)) lisp.Tool {
		return lisp.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
			in, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			res, err := call(ctx, in)
			if err != nil {
				return nil, err
			}
			out, err := json.Marshal(res)
			if err != nil {
				return nil, err
			}
			var v any
			if err := json.Unmarshal(out, &v); err != nil {
				return nil, err
			}
			return integers(v), nil
		})
	}
	return lisp.Tools{
		"list_customers": tool(func(ctx context.Context, in []byte) (any, error) {
			var a shop.ListCustomersArgs
			if err := json.Unmarshal(in, &a); err != nil {
				return nil, err
			}
			return d.ListCustomers(ctx, a)
		}),
		"list_orders": tool(func(ctx context.Context, in []byte) (any, error) {
			var a shop.ListOrdersArgs
			if err := json.Unmarshal(in, &a); err != nil {
				return nil, err
			}
			return d.ListOrders(ctx, a)
		}),
		"search_emails": tool(func(ctx context.Context, in []byte) (any, error) {
			var a shop.SearchEmailsArgs
			if err := json.Unmarshal(in, &a); err != nil {
				return nil, err
			}
			return d.SearchEmails(ctx, a)
		}),
		"get_customer": tool(func(ctx context.Context, in []byte) (any, error) {
			var a shop.GetCustomerArgs
			if err := json.Unmarshal(in, &a); err != nil {
				return nil, err
			}
			return d.GetCustomer(ctx, a)
		}),
	}
}

// integers turns the integral floats JSON decoding gives back into
// integers, as a tool service's msgpack reply carries them.
func integers(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case []any:
		for i := range x {
			x[i] = integers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = integers(x[k])
		}
	}
	return v
}

var guideBlock = regexp.MustCompile("(?s)```clojure\n(.*?)```")

// TestGuideExamples runs every clojure block of docs/ptc-lisp-guide.md
// against the default shop, in order, as the turns of one mission (each
// starts with the memory the one before left), and checks the result
// each shows on its last line (";=> value", or ";=> error: text" for a
// failing program, matched as a prefix of the error).
func TestGuideExamples(t *testing.T) {
	src, err := os.ReadFile("../../docs/ptc-lisp-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := guideBlock.FindAllStringSubmatch(string(src), -1)
	if len(blocks) < 10 {
		t.Fatalf("the guide has %d examples, want at least 10", len(blocks))
	}
	tools := guideTools(shop.Default())
	mem := map[string]any{}
	for i, b := range blocks {
		code, want, ok := strings.Cut(b[1], ";=> ")
		if !ok {
			t.Fatalf("example %d has no ;=> line:\n%s", i+1, b[1])
		}
		want = strings.TrimSpace(want)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := lisp.Exec(ctx, code, lisp.Options{Tools: tools, Memory: mem, MemoryContract: true, Limits: messages.Limits{ProgramTimeout: 5 * time.Second}})
		cancel()
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got, _ = lisp.Preview(res.Value, lisp.PreviewOptions{MaxItems: 1000, MaxString: 1000})
			mem = map[string]any{}
			for k, v := range res.Memory {
				mem[k] = v
			}
		}
		if strings.HasPrefix(want, "error: ") && strings.HasPrefix(got, want) {
			continue
		}
		if got != want {
			t.Errorf("example %d:\n%s\ngot  %s\nwant %s", i+1, code, got, want)
		}
	}
}
