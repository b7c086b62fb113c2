package agent

import (
	"testing"
)

// A turn line is written into a buffer on the stack, not with fmt: a
// body ended with it (the first message's, each turn's feedback) is the
// one string the concatenation makes, not a line made first.
func TestWithTurnOneAllocations(t *testing.T) {
	for _, max := range []int{2, 5, 1000} {
		a := mustNew(t, Spec{Prompt: "Add {{n}}.", Signature: "(n :int) -> :int", Tools: map[string]Tool{"base": intTool(0)},
			Limits: Limits{MaxTurns: max}})
		body := "## Tools\nbase\n\nAdd 1."
		if got, want := a.withTurnOne(body), body+"\n\n"+turnLine(1, max); got != want {
			t.Fatalf("max %d: %q, want %q", max, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { a.withTurnOne(body) }); !raceEnabled && n != 1 {
			t.Errorf("%.0f allocations to end a body with its turn line, want 1", n)
		}
	}
	if got, want := turnLine(1000, 1000), "Turn 1000 of 1000 (0 remaining)\nThis is your last turn: your program must call (return ...) or (fail ...)."; got != want {
		t.Errorf("turnLine(1000, 1000) = %q, want %q", got, want)
	}
}
