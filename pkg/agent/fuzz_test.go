package agent

import (
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// FuzzFromWire decodes arbitrary msgpack as a wire AgentSpec, rebuilds the
// Spec, validates it and renders its prompts: every step must either work
// or return an error, never panic or hang.
func FuzzFromWire(f *testing.F) {
	child := Spec{Name: "c", Prompt: "Find {{q}}", Signature: "(q :string) -> {id :int}"}
	ca, _ := New(child)
	seeds := []Spec{
		{Prompt: "x"},
		{Name: "a", Prompt: "Hi {{user.name}} {{#items}}{{.}}{{/items}}", Signature: "(user {name :string}, items [:string]) -> {n :int, _ids [:int]}",
			Limits: Limits{MaxTurns: 3, ProgramTimeout: time.Second, LLMTimeout: time.Minute, MaxSteps: 1000}, Validation: signature.Strict, ToolCatalog: []messages.ToolSchema{{Name: "p", Signature: ":int"}},
			Tools: map[string]Tool{"search": FuncSig("(q :string) -> :any", noop), "child": ca.AsTool(ToolOptions{LLM: "haiku"})}},
		{Prompt: "{{", Signature: "(x"},
		{Prompt: "Rate {{text}}", Signature: `(text :string(min 1)) -> {level "low" | "high", score :int(min 0, max 100) | :string}`,
			Tools: map[string]Tool{SpawnToolName: SpawnTool(map[string]map[string]Tool{"s": {"search": FuncSig("(q :string) -> :any", noop)}}, SpawnOptions{Limits: Limits{MaxTurns: 2}})}},
	}
	for _, s := range seeds {
		raw, err := messages.Marshal(s.ToWire())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var w messages.AgentSpec
		if err := messages.Unmarshal(raw, &w); err != nil {
			return
		}
		s, err := FromWire(&w, func(name string) (Tool, bool) { return FuncSig("(q :string) -> :any", noop), name != "" })
		if err != nil {
			return
		}
		a, err := New(s)
		if err != nil {
			return
		}
		p, err := PreviewPrompt(a, map[string]any{"q": "x", "user": map[string]any{"name": "n"}})
		if err != nil || p.System == "" || p.User == "" {
			t.Fatalf("preview: %v", err)
		}
		// the round trip is stable
		w2 := s.ToWire()
		if w2.Prompt != w.Prompt || w2.Signature != w.Signature {
			t.Fatal("round trip changed the spec")
		}
	})
}
