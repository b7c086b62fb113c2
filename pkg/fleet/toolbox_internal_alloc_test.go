package fleet

import (
	"fmt"
	"testing"
	"time"
)

// A mission's Toolbox allows exactly its tools, from its list of names
// when it has few and from a map when it has many, and makes no map or
// header it does not need: 3 allocations for a mission of two tools (the
// Toolbox, its names and its reference stores), where allowing them in a
// map, with an empty header and call count, made 7.
func TestNewToolboxAllocations(t *testing.T) {
	for _, n := range []int{0, 1, 2, maxListedTools, maxListedTools + 1, 40} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("tool_%d", i)
		}
		b := newToolbox(nil, nil, "m", names, time.Second, time.Second, nil)
		for _, name := range names {
			if !b.mayCall(name) {
				t.Fatalf("%d tools: %s not allowed", n, name)
			}
		}
		for _, name := range []string{"tool", "tool_", fmt.Sprintf("tool_%d", n), ""} {
			if b.mayCall(name) {
				t.Fatalf("%d tools: %q allowed", n, name)
			}
		}
	}
	tools := []string{"get_customer", "list_orders"}
	if n := testing.AllocsPerRun(100, func() { newToolbox(nil, nil, "m", tools, time.Second, time.Second, nil) }); n > 4 {
		t.Errorf("a Toolbox of two tools: %.0f allocations, want at most 4", n)
	}
}
