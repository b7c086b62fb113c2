package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// holdVector keeps a vector of 100,000 numbers: about 1.6 MB by the
// interpreter's count, far below the default program memory.
const holdVector = `(count (vec (range 100000)))`

// ProgramMemory bounds what one program run holds: over it the program
// stops with memory_limit, fed back to the model like any program error;
// the same program passes under the default.
func TestProgramMemory(t *testing.T) {
	small := mustNew(t, Spec{Prompt: "x", Limits: Limits{ProgramMemory: 64 << 10, MaxTurns: 2}})
	st, err, _ := run(t, small, RunOptions{},
		llmtest.Code(holdVector),
		llmtest.Code(`(return (:reason ctx/fail))`))
	if err != nil || st.Return != "memory_limit" {
		t.Fatalf("return %v, err %v; want the program stopped with memory_limit", st.Return, err)
	}
	if got := st.Trace[0].Error; !strings.Contains(got, "memory limit exceeded: the program holds more than 65536 bytes") {
		t.Fatalf("turn 1 error = %q, want the program memory limit named", got)
	}

	def := mustNew(t, Spec{Prompt: "x"})
	if s := def.Spec(); s.ProgramMemory != messages.DefaultProgramMemory {
		t.Fatalf("Spec().ProgramMemory = %d, want the default %d", s.ProgramMemory, messages.DefaultProgramMemory)
	}
	st, err, _ = run(t, def, RunOptions{}, llmtest.Code(`(return `+holdVector+`)`))
	if err != nil || st.Return != int64(100000) {
		t.Fatalf("default limit: return %v, err %v", st.Return, err)
	}
}

// A negative ProgramMemory is unlimited: a program holding more than the
// default limit runs to its end.
func TestProgramMemoryUnlimited(t *testing.T) {
	over := `(let [mb (apply str (repeat 1048576 "x"))
      big (apply str (repeat 65 mb))]
  (return (count big)))`
	want := int64(65 << 20)
	st, err, _ := run(t, mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}}), RunOptions{}, llmtest.Code(over))
	if err == nil {
		t.Fatalf("default limit: returned %v, want the run stopped by the program memory limit", st.Return)
	}
	if st.Fail.Reason != "memory_limit" {
		t.Fatalf("default limit: fail %+v, want memory_limit", st.Fail)
	}
	st, err, _ = run(t, mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1, ProgramMemory: -1}}), RunOptions{}, llmtest.Code(over))
	if err != nil || st.Return != want {
		t.Fatalf("unlimited: return %v, err %v", st.Return, err)
	}
	if s := mustNew(t, Spec{Prompt: "x", Limits: Limits{ProgramMemory: -1}}).Spec(); s.ProgramMemory != -1 {
		t.Fatalf("Spec().ProgramMemory = %d, want -1 kept", s.ProgramMemory)
	}
}

// A sub-agent received over the wire holds its own program_memory; its
// parent keeps the default.
func TestProgramMemorySubAgent(t *testing.T) {
	w := &messages.AgentSpec{Prompt: "Parent",
		SubAgents: map[string]*messages.AgentSpec{"helper": {
			Prompt: "Helper", Description: "helps", Signature: ":string", Limits: messages.Limits{MaxTurns: 2, ProgramMemory: 64 << 10},
		}}}
	spec, err := FromWire(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, spec)
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(return {:parent `+holdVector+` :child (tool/helper {})})`),
		llmtest.Code(holdVector),
		llmtest.Code(`(return (:reason ctx/fail))`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.Return.(map[string]any)
	if got["parent"] != int64(100000) || got["child"] != "memory_limit" {
		t.Fatalf("return %v, want the parent's count and the child's memory_limit", st.Return)
	}
}

// order is a record of the typed tool in TestToolResultsHeldByMission.
type order struct {
	ID       int     `json:"id"`
	Customer string  `json:"customer"`
	Status   string  `json:"status"`
	Total    float64 `json:"total"`
	Note     string  `json:"note"`
}

// What a mission holds from its tools counts against its program_memory
// across turns: each turn keeps one more result of about 0.7 MB, and the
// turn whose result takes the mission past 4 MiB stops with memory_limit
// naming the limit and how to raise it, fed back to the model, which
// then ends the run.
func TestToolResultsHeldByMission(t *testing.T) {
	orders := make([]order, 3000)
	for i := range orders {
		orders[i] = order{ID: i, Customer: fmt.Sprintf("customer-%05d", i%500), Status: "shipped", Total: float64(i) * 1.5,
			Note: fmt.Sprintf("order %d was placed through the web shop", i)}
	}
	tool := Typed(func(context.Context, struct{}) ([]order, error) { return orders, nil })
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"orders": tool},
		Limits: Limits{ProgramMemory: 4 << 20, MaxTurns: 12}})
	replies := []llmtest.Reply{}
	for i := range 10 {
		replies = append(replies, llmtest.Code(fmt.Sprintf(`(if ctx/fail (return (:reason ctx/fail)) (def r%d (count (tool/orders))))`, i)))
	}
	st, err, _ := run(t, a, RunOptions{Model: llmtest.New(replies...)})
	if err != nil || st.Return != "memory_limit" {
		t.Fatalf("return %v, err %v; want a turn stopped with memory_limit", st.Return, err)
	}
	var failed string
	for _, tr := range st.Trace {
		if tr.Error != "" {
			failed = tr.Error
		}
	}
	if !strings.Contains(failed, "tool results and the record of tool calls") || !strings.Contains(failed, "4194304") ||
		!strings.Contains(failed, "raise limits.program_memory") {
		t.Fatalf("the failed turn's error = %q; want the limit named with how to raise it", failed)
	}
	// the results held before the limit: more than one, fewer than 4 MiB
	// worth of 0.7 MB ones
	if n := len(st.Trace); n < 3 || n > 8 {
		t.Fatalf("the limit stopped turn %d", n-1)
	}
}
