package fleet

import (
	"context"
	"testing"
)

// TestWithTurnAndCallSite: one context carries what WithTurn over
// WithCallSite carries, a zero site leaving the parent's, in one
// allocation, read back without allocating.
func TestWithTurnAndCallSite(t *testing.T) {
	type other struct{}
	base := context.WithValue(context.Background(), other{}, "v")
	outer := WithCallSite(base, CallSite{Program: "(outer)", Position: "9:9"})
	site := CallSite{Program: "(tool/lookup {:id 1})", Position: "1:1"}
	for _, c := range []struct {
		name   string
		parent context.Context
		turn   int
		site   CallSite
	}{
		{"site", base, 3, site},
		{"site over a site", outer, 4, site},
		{"no site", base, 5, CallSite{}},
		{"no site over a site", outer, 300, CallSite{}},
		{"position only", base, 0, CallSite{Position: "2:5"}},
	} {
		want := c.parent
		if c.site != (CallSite{}) {
			want = WithCallSite(want, c.site)
		}
		want = WithTurn(want, c.turn)
		got := WithTurnAndCallSite(c.parent, c.turn, c.site)
		if g, w := TurnFrom(got), TurnFrom(want); g != w || g != c.turn {
			t.Errorf("%s: TurnFrom = %d, want %d", c.name, g, w)
		}
		if g, w := callSiteFrom(got), callSiteFrom(want); g != w {
			t.Errorf("%s: callSiteFrom = %+v, want %+v", c.name, g, w)
		}
		if g := got.Value(other{}); g != "v" {
			t.Errorf("%s: Value of the parent's key = %v, want v", c.name, g)
		}
	}
	if TurnFrom(base) != 0 || callSiteFrom(base) != (CallSite{}) {
		t.Fatal("a context of neither carries a turn or a site")
	}
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	var kept context.Context // a Toolbox call may keep its context: it escapes
	n := testing.AllocsPerRun(100, func() {
		kept = WithTurnAndCallSite(base, 7, site)
		if TurnFrom(kept) != 7 || callSiteFrom(kept) != site {
			t.Fatal("not carried")
		}
	})
	if n != 1 {
		t.Errorf("a turn and a call site carried and read back: %v allocations, want 1", n)
	}
	_ = kept
}
