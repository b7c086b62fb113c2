package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A status read before a result was stored, settled by that result,
// reports what was written to the status before the result: a cancel's
// request and reason, which a caller polling Status while a cancel lands
// would otherwise see missing from a cancelled mission.
func TestSettledStatusReadsTheStatusAgainAfterTheResult(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	k := c.key(id)
	stale := messages.Status{MissionID: id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 1}
	if _, err := casStatus(ctx, c.st, stale, 0); err != nil {
		t.Fatal(err)
	}
	// the cancel's write, then the cancelled run's result
	if _, err := updateStatus(ctx, c.st, k, func(s *messages.Status) bool {
		s.CancelRequested, s.CancelReason = true, "stop it"
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := publishResult(ctx, c.js, c.st, k, failStep(ReasonCancelled, "stop it"), claimFence{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.settledStatus(ctx, &stale)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != messages.StateCancelled || !got.CancelRequested || got.CancelReason != "stop it" {
		t.Fatalf("settled %s, cancel requested %v, reason %q; want cancelled with the cancel's reason", got.State, got.CancelRequested, got.CancelReason)
	}
}
