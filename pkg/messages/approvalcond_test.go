package messages_test

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Meets errs on the side of asking (a call it cannot judge needs
// approval); Holds, which selects calls to decide at once, the other way
// (a call it cannot judge is not selected). Both agree on every call they
// can judge.
func TestApprovalCondMeetsAndHolds(t *testing.T) {
	args := map[string]any{"amount": int64(250), "order": map[string]any{"id": "A-1", "total": 99.5}, "note": "x"}
	cases := []struct {
		cond        *messages.ApprovalCond
		meets, hold bool
	}{
		{nil, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: ">", Value: int64(100)}, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: "<=", Value: 100.0}, false, false},
		{&messages.ApprovalCond{Arg: "amount", Op: ">=", Value: int64(250)}, true, true},
		{&messages.ApprovalCond{Arg: "amount", Op: "<", Value: 250}, false, false},
		{&messages.ApprovalCond{Arg: "order.total", Op: "<", Value: int64(100)}, true, true},
		{&messages.ApprovalCond{Arg: "order.id", Op: "=", Value: "A-1"}, true, true},
		{&messages.ApprovalCond{Arg: "order.id", Op: "!=", Value: "A-1"}, false, false},
		{&messages.ApprovalCond{Arg: "note", Op: ">", Value: "a"}, true, true},
		// cannot be judged: a missing key, a path through a non-map, a
		// string ordered against a number
		{&messages.ApprovalCond{Arg: "currency", Op: "=", Value: "EUR"}, true, false},
		{&messages.ApprovalCond{Arg: "currency", Op: "!=", Value: "EUR"}, true, false},
		{&messages.ApprovalCond{Arg: "amount.cents", Op: ">", Value: int64(1)}, true, false},
		{&messages.ApprovalCond{Arg: "note", Op: "<", Value: int64(5)}, true, false},
		{&messages.ApprovalCond{Arg: "order.id", Op: ">", Value: int64(5)}, true, false},
	}
	for _, c := range cases {
		if got := c.cond.Meets(args); got != c.meets {
			t.Errorf("%+v Meets = %v, want %v", c.cond, got, c.meets)
		}
		if got := c.cond.Holds(args); got != c.hold {
			t.Errorf("%+v Holds = %v, want %v", c.cond, got, c.hold)
		}
	}
}
