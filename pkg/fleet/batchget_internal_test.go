package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A batch direct get of a mission's approval records, in the process
// (the server's work and nats.go's included), with and without a
// deadline of the caller's: the answers gathered by one value and the
// wait on a pooled timer.
func TestLastPerSubjectAllocations(t *testing.T) {
	ctx, _, js, st := embeddedStores(t)
	id := messages.NewMissionID()
	for i := range 2 {
		a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: id, Call: "1.d" + string(rune('0'+i)) + ".0",
			State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1,
			RequestedAt: time.Unix(1000, 0).UTC(), Deadline: time.Unix(5000, 0).UTC()}
		data, err := messages.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Approvals.Create(ctx, messages.ApprovalKey(id, a.Call), data); err != nil {
			t.Fatal(err)
		}
	}
	replies := newReplyMux(js.Conn())
	filter := "$KV." + messages.BucketApprovals + "." + id + ".>"
	get := func(ctx context.Context) func() {
		return func() {
			msgs, err := lastPerSubject(ctx, replies, "KV_"+messages.BucketApprovals, filter)
			if err != nil || len(msgs) != 2 {
				t.Fatalf("batch direct get: %d messages, %v; want 2", len(msgs), err)
			}
		}
	}
	withDeadline, withoutDeadline := fewestAllocs(get(ctx), get(context.Background()))
	t.Logf("%.0f allocations a batch direct get of two records (%.0f without a deadline)", withDeadline, withoutDeadline)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if withDeadline > batchGetAllocs || withoutDeadline > batchGetAllocs {
		t.Errorf("%.0f and %.0f allocations a batch direct get of two records, want at most %d", withDeadline, withoutDeadline, batchGetAllocs)
	}
}

// batchGetAllocs bounds TestLastPerSubjectAllocations.
const batchGetAllocs = 150
