package lisp

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// A tool learns where in the program it was called: the position of the
// (tool/name ...) form, of a (call "name" ...) form, of the form that
// calls a tool passed as a value, also in pmap branches and in a
// function defined earlier in the program.
func TestToolCallPosition(t *testing.T) {
	var mu sync.Mutex
	var got []string
	tool := core.ToolFunc(func(ctx context.Context, args map[string]any) (any, error) {
		pos, ok := core.CallPos(ctx)
		if !ok {
			t.Errorf("call with %v: no position", args)
		}
		mu.Lock()
		got = append(got, pos.String()+" "+args["at"].(string))
		mu.Unlock()
		return true, nil
	})
	src := `(tool/pay {:at "a"})
(defn f [x]
  (tool/pay {:at x}))
  (call "pay" {:at "b"})
(f "c")
(pmap (fn [x] (tool/pay {:at x})) ["d" "e"])
(map tool/pay [{:at "f"}])`
	if _, err := Run(context.Background(), src, Options{Tools: core.Tools{"pay": tool}}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"1:1 a", "3:3 c", "4:3 b", "6:15 d", "6:15 e", "7:1 f"}
	if !slices.Equal(got, want) {
		t.Errorf("positions %q, want %q", got, want)
	}
	if _, ok := core.CallPos(context.Background()); ok {
		t.Error("a context of no tool call has a position")
	}
}
