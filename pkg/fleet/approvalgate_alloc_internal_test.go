package fleet

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestNoApprovalGateWithoutRules: a call no rule can mark (the mission,
// the worker and the tool's service set none) makes no approval gate;
// one that a rule may mark gets the run's gate, made once.
func TestNoApprovalGateWithoutRules(t *testing.T) {
	rule := messages.ApprovalRule{Tool: "refund"}
	for _, c := range []struct {
		name      string
		mission   *messages.ApprovalPolicy
		worker    []messages.ApprovalRule
		service   *messages.ApprovalRule
		wantAGate bool
	}{
		{name: "no rules"},
		{name: "a mission without rules", mission: &messages.ApprovalPolicy{}},
		{name: "a mission's rule", mission: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{rule}}, wantAGate: true},
		{name: "a worker's rule", worker: []messages.ApprovalRule{rule}, wantAGate: true},
		{name: "a service's rule", service: &rule, wantAGate: true},
	} {
		w := &Worker{cfg: WorkerConfig{ApprovalRules: c.worker}, st: &Stores{}}
		p := &missionRun{w: w, m: &messages.Mission{ID: messages.NewMissionID(), Approval: c.mission}, em: &emitter{sub: "alice"}}
		b := &Toolbox{run: p}
		info := ToolInfo{Service: "shop", Approval: c.service}
		g := b.approvalsFor(info)
		if (g != nil) != c.wantAGate {
			t.Errorf("%s: gate %v, want one: %v", c.name, g != nil, c.wantAGate)
		}
		if g != nil && b.approvalsFor(info) != g {
			t.Errorf("%s: a second call made another gate", c.name)
		}
		if !c.wantAGate {
			if n := testing.AllocsPerRun(100, func() { _ = b.approvalsFor(info) }); n != 0 {
				t.Errorf("%s: %v allocations, want 0", c.name, n)
			}
		}
	}
	// a Toolbox outside a worker's run has no gate
	if g := (&Toolbox{}).approvalsFor(ToolInfo{Approval: &rule}); g != nil {
		t.Error("a Toolbox without a run has a gate")
	}
}
