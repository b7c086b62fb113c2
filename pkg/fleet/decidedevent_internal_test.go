package fleet

import (
	"reflect"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A decision's approval_decided event carries the approval's data, made
// once (no map around it to take it out of), the same data a tool result
// event of the call carries under "approval".
func TestDecidedEventAllocations(t *testing.T) {
	a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: messages.NewMissionID(), Call: "1.d0.0",
		State: messages.ApprovalApproved, Tool: "refund", Turn: 1, DecidedBy: "ops", Reason: "fine",
		DecidedAt: time.Unix(2000, 5).UTC()}
	ev := decidedEvent(a)
	want := map[string]any{"call": "1.d0.0", "state": messages.ApprovalApproved, "decided_by": "ops",
		"decided_at": "1970-01-01T00:33:20.000000005Z", "reason": "fine"}
	if ev.Kind != messages.EventApprovalDecided || ev.CallID != a.Call || !reflect.DeepEqual(ev.Data, want) {
		t.Fatalf("decided event %+v, want data %v", ev, want)
	}
	if got := withApproval(nil, a)["approval"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("a tool result's approval %v, want %v", got, want)
	}
	n := testing.AllocsPerRun(100, func() { _ = decidedEvent(a) })
	t.Logf("%.0f allocations a decided event", n)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if n > decidedEventAllocs {
		t.Errorf("%.0f allocations a decided event, want at most %d", n, decidedEventAllocs)
	}
}

// decidedEventAllocs bounds TestDecidedEventAllocations.
const decidedEventAllocs = 7
