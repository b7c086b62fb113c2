package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// A mission body starts with the room the agent's last body took: the
// same body as one built from nothing, in fewer allocations than one
// whose builder grows to it by doubling.
func TestMissionBodyStartsWithTheLastOnesRoom(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Add {{n}} to the base, for customer {{name}}.", Signature: "(n :int, name :string) -> :int",
		Tools: map[string]Tool{"base": intTool(0), "other": intTool(5)}})
	in, fail := resolveInput(RunOptions{Context: map[string]any{"n": int64(1), "name": "Ada"}})
	if fail != nil {
		t.Fatal(fail)
	}
	sec := &secrets{}
	fresh := a.missionBody(in, sec)
	if got := a.missionBody(in, sec); got != fresh {
		t.Fatalf("body with the last one's room:\n%s\nwant:\n%s", got, fresh)
	}
	sized := testing.AllocsPerRun(100, func() { a.missionBody(in, sec) })
	grown := testing.AllocsPerRun(100, func() {
		a.bodySize.Store(0)
		a.missionBody(in, sec)
	})
	t.Logf("%.0f allocations a mission body of %d bytes started with its room, %.0f grown", sized, len(fresh), grown)
	// the race detector's own allocations vary between runs by as much
	// as the room saves
	if !raceEnabled && sized > grown-3 {
		t.Errorf("%.0f allocations a mission body started with its room, %.0f grown: want at least 3 fewer", sized, grown)
	}
}

// TestMissionBodyAllocations: a mission body's inventory and expected
// output are written without fmt (whose arguments are boxed), and the
// agent's cache key is made once, not for each model call.
func TestMissionBodyAllocations(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Add {{n}} to the base, for customer {{name}}.", Signature: "(n :int, name :string) -> :int",
		Tools: map[string]Tool{"base": intTool(0), "other": intTool(5)}})
	in, fail := resolveInput(RunOptions{Context: map[string]any{"n": int64(1), "name": "Ada"}})
	if fail != nil {
		t.Fatal(fail)
	}
	sec := &secrets{}
	body := a.missionBody(in, sec)
	for _, want := range []string{"- ctx/n :int", "- ctx/name :string", "Return a value of type :int.\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if got := a.cacheKey(); got != "ptc:agent" {
		t.Errorf("cache key %q", got)
	}
	if raceEnabled {
		t.Skip("the race detector's own allocations vary between runs")
	}
	n := testing.AllocsPerRun(100, func() { a.missionBody(in, sec) })
	t.Logf("%.0f allocations a mission body", n)
	if n > missionBodyAllocs {
		t.Errorf("%.0f allocations a mission body, want at most %d", n, missionBodyAllocs)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.cacheKey() }); n != 0 {
		t.Errorf("cacheKey: %v allocations, want 0", n)
	}
}

// missionBodyAllocs bounds TestMissionBodyAllocations' body: 15 on amd64,
// 20 with its lines written by fmt.
const missionBodyAllocs = 15

// TestResolveInputAllocations: a run's context is the copy of the
// mission's map, with no empty map made first that the copy replaces;
// a run with no context gets an empty one.
func TestResolveInputAllocations(t *testing.T) {
	ctxMap := map[string]any{"n": int64(1), "name": "Ada"}
	in, fail := resolveInput(RunOptions{Context: ctxMap})
	if fail != nil || len(in.data) != 2 || in.data["name"] != "Ada" {
		t.Fatalf("resolveInput: %+v, %v", in, fail)
	}
	in.data["n"] = int64(2)
	if ctxMap["n"] != int64(1) {
		t.Fatal("the run's context is the mission's map, not a copy")
	}
	for _, c := range []any{nil, map[string]any(nil)} {
		if in, fail := resolveInput(RunOptions{Context: c}); fail != nil || in.data == nil || len(in.data) != 0 {
			t.Errorf("context %#v: %+v, %v; want an empty map", c, in, fail)
		}
	}
	if raceEnabled {
		t.Skip("the race detector's own allocations vary between runs")
	}
	// the runInput and the copy's map and table
	if n := testing.AllocsPerRun(100, func() { _, _ = resolveInput(RunOptions{Context: ctxMap}) }); n > 3 {
		t.Errorf("resolveInput: %v allocations, want at most 3", n)
	}
}

// TestModelCallEndAllocations: a model call that ended well allocates
// nothing at its end (no errors.As target made for its error); one a
// budget refused still ends the tree's calls.
func TestModelCallEndAllocations(t *testing.T) {
	c := &modelCall{rs: &runState{tree: &tree{}}, resp: &llm.Response{Content: "ok"}, requests: 1}
	if r, n, err := c.end(nil); r != c.resp || n != 1 || err != nil {
		t.Fatalf("end(nil): %v, %d, %v", r, n, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = c.end(nil) }); n != 0 {
		t.Errorf("end(nil): %v allocations, want 0", n)
	}
	be := &llm.BudgetError{}
	if r, _, err := c.end(fmt.Errorf("call: %w", be)); r != nil || !errors.Is(err, be) || c.rs.tree.exceeded.Load() != be {
		t.Errorf("a refused call: %v, %v; exceeded %v", r, err, c.rs.tree.exceeded.Load())
	}
}
