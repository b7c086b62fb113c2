package fleet

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A dead letter of a mission whose result a run stored already (its
// status not yet final: the run's worker died between the two writes)
// keeps that result, and the status it makes final follows the result:
// a success is succeeded with no failure reason, another failure keeps
// its own reason. The final event is the stored run's, not emitted again.
func TestDeadResultFollowsTheStoredResult(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	w := &Worker{nc: nc, js: js, st: st, log: zerolog.Nop()}
	for _, c := range []struct {
		name       string
		stored     *messages.Step
		state      string
		wantReason string
	}{
		{"success", &messages.Step{Return: "done"}, messages.StateSucceeded, ""},
		{"failure", failStep("tool_error", "the shop said no"), messages.StateFailed, "tool_error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := missionKey{sub: "alice", id: messages.NewMissionID()}
			if _, err := casStatus(ctx, st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 3, StreamSeq: 9}, 0); err != nil {
				t.Fatal(err)
			}
			if _, _, err := publishResult(ctx, js, st, k, c.stored, claimFence{}); err != nil {
				t.Fatal(err)
			}
			if err := w.deadResult(ctx, k, nil, 9, ReasonMaxDeliveries, "no worker finished it in 3 deliveries"); err != nil {
				t.Fatal(err)
			}
			cur, err := getStatus(ctx, st, k)
			if err != nil {
				t.Fatal(err)
			}
			if cur.st.State != c.state || cur.st.Reason != c.wantReason {
				t.Errorf("status %s, reason %q; want %s, %q (the stored result's)", cur.st.State, cur.st.Reason, c.state, c.wantReason)
			}
			got, err := readResult(ctx, st, k)
			if err != nil {
				t.Fatal(err)
			}
			if got.Return != c.stored.Return || (got.Fail == nil) != (c.stored.Fail == nil) {
				t.Errorf("result %+v, want the stored %+v", got, c.stored)
			}
		})
	}
}
