package agent

import (
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
