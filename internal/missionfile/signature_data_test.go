package missionfile

import (
	"strings"
	"testing"
)

// A signature may be written in the data form (a Malli schema as a YAML
// list), as the seeds' examples are; the wire carries its canonical
// syntax, which the worker parses as any other.
func TestSignatureDataForm(t *testing.T) {
	f, err := Parse([]byte(`
context_signature: [":map", [region, ":string"]]
agent:
  prompt: "Rate {{text}}"
  # [:=> [:cat :string] [:map [:status [:enum "low" "medium" "high"]]]], inputs named
  signature: [":=>", [":catn", [text, ":string"]],
              [":map", [":status", [":enum", low, medium, high]],
                       [":score", [":and", ":int", [":>", 0], [":<", 100]]],
                       [note, {optional: true}, [":string", {max: 80}]]]]
  tool_catalog:
    - {name: lookup, signature: [":=>", [":catn", [id, [":or", ":int", ":string"]]], [":vector", ":map"]]}
  sub_agents:
    helper:
      prompt: "help"
      signature: "{ok :bool}"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{f.Agent.Signature, `(text :string) -> {status "low" | "medium" | "high", score :int(min 1, max 99), note :string(max 80)?}`},
		{f.ContextSignature, `() -> {region :string}`},
		{f.Agent.ToolCatalog[0].Signature, `(id :int | :string) -> [:map]`},
		{f.Agent.SubAgents["helper"].Signature, `{ok :bool}`},
	} {
		if c.got != c.want {
			t.Errorf("signature = %s\nwant        %s", c.got, c.want)
		}
	}
	if _, err := f.Build(); err != nil {
		t.Fatal(err)
	}
}

func TestSignatureDataFormErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"agent:\n  prompt: x\n  signature: [\":map\", [a, \":integer\"]]\n",
			`line 3: agent.signature[1][1]: unknown schema ":integer"`},
		{"agent:\n  prompt: x\n  signature: [\":enum\"]\n",
			`line 3: agent.signature: [:enum] needs at least one value`},
		{"agent:\n  prompt: \"{{y}}\"\n  signature: [\":=>\", [\":catn\", [x, \":int\"]], \":int\"]\n",
			`agent.prompt: placeholders {{y}} (did you mean {{x}}?) not found in signature`},
		{"agent:\n  prompt: x\n  tools: [\":int\"]\n",
			``}, // a list of strings elsewhere is not a signature
	} {
		_, err := Parse([]byte(c.src))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.src, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want %s", c.src, err, c.want)
		}
	}
}

// A mission file gives an agent the spawn_agent tool over a catalogue of
// tool sets; the sets' tools are remote tools the built mission allows.
func TestSpawnAgentField(t *testing.T) {
	f, err := Parse([]byte(`
agent:
  prompt: Summarise the north region.
  spawn_agent:
    tool_sets: {customers: [list_customers], orders: [list_orders, list_customers]}
    max_turns: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	sp := f.Agent.SpawnAgent
	if sp == nil || len(sp.ToolSets["orders"]) != 2 || sp.MaxTurns != 3 {
		t.Fatalf("spawn_agent = %+v", sp)
	}
	m, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Tools, ",") != "list_customers,list_orders" {
		t.Errorf("tools = %v", m.Tools)
	}
	_, err = Parse([]byte("agent:\n  prompt: p\n  spawn_agent:\n    tool_set: {a: [x]}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 4: agent.spawn_agent.tool_set: unknown field (did you mean tool_sets?)") {
		t.Errorf("misspelled field: %v", err)
	}
}
