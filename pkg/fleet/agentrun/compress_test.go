package agentrun_test

import (
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A fleet mission with compression: true (sent over NATS) runs on a worker
// whose requests hold one user message: turn 3's records turns 1 and 2
// (their tool calls, a firewalled argument masked, their results, no
// program) and ends with memory's names and the turn line; the trace keeps
// every program.
func TestCompressedFleetMission(t *testing.T) {
	model := &script{turns: map[string][]string{"paid orders": {
		"```clojure\n(def paid (tool/list_orders {:status \"paid\"}))\n(def c (tool/get_customer {:id (:customer_id (first paid))}))\n(tool/list_orders {:status (:_phone c)})\n(count paid)\n```",
		"```clojure\n(def total (sum-by :total paid))\ntotal\n```",
		"```clojure\n(return {:n (count paid) :total total})\n```",
	}}}
	env := startFleet(t, model, false)
	step := runMission(t, env, &messages.Mission{
		Agent: &messages.AgentSpec{
			// notes long enough that the prompt alone passes the default
			// strategy's cache prefix: no turn is sent whole
			Prompt:    "Count the paid orders and their total.\n\nNotes: " + strings.Repeat("orders are records with an id, a status and a total. ", 60),
			Signature: "{n :int, total :float}",
			Tools:     []string{"list_orders", "get_customer"}, Compression: true,
		},
		Tools: []string{"list_orders", "get_customer"},
	})
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	if len(step.Trace) != 3 || !strings.Contains(step.Trace[1].Program, "(def total (sum-by :total paid))") {
		t.Fatalf("trace: %+v", step.Trace)
	}
	reqs := model.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[2]
	if len(r.Messages) != 1 || r.CacheHistory {
		t.Fatalf("turn 3: %d messages, CacheHistory %v", len(r.Messages), r.CacheHistory)
	}
	blocks := r.Messages[0].Content
	if len(blocks) != 4 || !blocks[2].(llm.Text).Cache {
		t.Fatalf("turn 3: blocks %+v", blocks)
	}
	summary, tail := blocks[1].(llm.Text).Text, blocks[3].(llm.Text).Text
	for _, want := range []string{"Earlier turns:\n1 (tool/list_orders {:status \"paid\"})\n(tool/get_customer {:id ",
		"\n(tool/list_orders {:status <Firewalled>})\n=> "} {
		if !strings.Contains(summary, want) {
			t.Errorf("turn 1's summary lacks %q:\n%s", want, summary)
		}
	}
	if turn2 := blocks[2].(llm.Text).Text; !strings.HasPrefix(turn2, "2 => ") {
		t.Errorf("turn 2's record = %q", turn2)
	}
	if tail != "Memory: c {6 entries}, paid [490 maps], total (float)\nTurn 3 of 5 (2 remaining)" {
		t.Errorf("turn 3's last block = %q", tail)
	}
	for _, req := range reqs {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "+1-555-") || (strings.Contains(m.Text(), "(def paid") || strings.Contains(m.Text(), "(def total")) && req.Turn == 3 {
				t.Errorf("turn %d: a phone number or an earlier program reached the model:\n%s", req.Turn, m.Text())
			}
		}
	}
}
