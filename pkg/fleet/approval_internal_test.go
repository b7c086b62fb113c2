package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// lostReplyKV writes every Create and then reports a timeout, as a store
// whose reply was lost on the way back does.
type lostReplyKV struct{ jetstream.KeyValue }

func (kv lostReplyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if _, err := kv.KeyValue.Create(ctx, key, value, opts...); err != nil {
		return 0, err
	}
	return 0, nats.ErrTimeout
}

// A pending approval the store wrote but whose reply was lost suspends
// the run on it, so it is not left pending with no mission waiting for it;
// a store that wrote nothing still makes the call unavailable.
func TestApprovalRecordWrittenWithItsReplyLost(t *testing.T) {
	ctx, _, st := testStores(t)
	gate := func(kv jetstream.KeyValue, suspended *[]*messages.Approval) *approvalGate {
		return &approvalGate{kv: kv, missionID: messages.NewMissionID(), priority: messages.PriorityNormal, timeout: time.Hour,
			mission: []messages.ApprovalRule{{Tool: "refund"}},
			suspend: func(a *messages.Approval) { *suspended = append(*suspended, a) },
			emit:    func(*messages.Event) {}, now: time.Now, next: map[string]int{}}
	}
	args := map[string]any{"amount": int64(500)}

	var suspended []*messages.Approval
	g := gate(lostReplyKV{st.Approvals}, &suspended)
	_, _, err := g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	var se *suspendedError
	if !errors.As(err, &se) || len(suspended) != 1 {
		t.Fatalf("check = %v (suspended %d); want the run suspended on the written record", err, len(suspended))
	}
	stored, _, err := getApproval(ctx, st.Approvals, messages.ApprovalKey(g.missionID, suspended[0].Call))
	if err != nil || stored.State != messages.ApprovalPending || !stored.RequestedAt.Equal(suspended[0].RequestedAt) {
		t.Fatalf("stored record = %+v, %v", stored, err)
	}

	// a store that refuses the write leaves no record and no suspension
	var none []*messages.Approval
	g = gate(refusingKV{st.Approvals}, &none)
	_, _, err = g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	var te *ToolError
	if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable || len(none) != 0 {
		t.Fatalf("check = %v (suspended %d); want the call unavailable", err, len(none))
	}
}

// refusingKV writes nothing and reports a timeout.
type refusingKV struct{ jetstream.KeyValue }

func (refusingKV) Create(context.Context, string, []byte, ...jetstream.KVCreateOpt) (uint64, error) {
	return 0, nats.ErrTimeout
}
