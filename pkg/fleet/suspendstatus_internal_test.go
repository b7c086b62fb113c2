package fleet

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run that suspends its mission writes awaiting_approval over its own
// claim only: a status that another delivery claimed or suspended since
// (this run's heartbeats lapsed and another worker took the message) is
// left to that delivery, and a final one is left as it is.
func TestSuspendedStatusLeavesAnotherDeliverysClaim(t *testing.T) {
	own := messages.Status{MissionID: "m1", State: messages.StateRunning, Worker: "w1", Attempt: 2, Suspensions: 1, StreamSeq: 7}
	for _, c := range []struct {
		name          string
		cur           messages.Status
		edits, taken  bool
		wantState     string
		wantSuspended int
	}{
		{"its own claim", own, true, false, messages.StateAwaitingApproval, 2},
		{"its own claim with a cancel asked", func() messages.Status { s := own; s.CancelRequested = true; return s }(), true, false, messages.StateAwaitingApproval, 2},
		{"another worker's claim", func() messages.Status { s := own; s.Worker = "w2"; s.Attempt = 3; return s }(), false, true, messages.StateRunning, 1},
		{"its own worker's later attempt", func() messages.Status { s := own; s.Attempt = 3; return s }(), false, true, messages.StateRunning, 1},
		{"suspended by another delivery", func() messages.Status {
			s := own
			s.State, s.Worker, s.Attempt, s.Suspensions = messages.StateAwaitingApproval, "", 3, 2
			return s
		}(), false, true, messages.StateAwaitingApproval, 2},
		{"finished", func() messages.Status { s := own; s.State = messages.StateCancelled; return s }(), false, false, messages.StateCancelled, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			edit, taken := suspendedStatus("w1", 2, 1, 41, "d1")
			s := c.cur
			if got := edit(&s); got != c.edits || *taken != c.taken {
				t.Fatalf("edit = %v, taken over = %v; want %v, %v", got, *taken, c.edits, c.taken)
			}
			if c.edits {
				if s.State != c.wantState || s.Worker != "" || s.StreamSeq != 0 || s.Suspensions != c.wantSuspended || s.JournalSeq != 41 || s.MissionDigest != "d1" {
					t.Fatalf("edited status %+v", s)
				}
			} else if s.State != c.wantState || s.Suspensions != c.wantSuspended || s.Worker != c.cur.Worker {
				t.Fatalf("status changed though not edited: %+v", s)
			}
		})
	}
}
