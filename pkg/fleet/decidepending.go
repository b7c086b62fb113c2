package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// PendingFilter selects, among the calls waiting for a decision, those
// DecidePending decides. Its zero value selects every call the client
// lists (PendingApprovals's).
type PendingFilter struct {
	// Tool, when set, selects the calls of this tool only.
	Tool string
	// Service, when set, selects the calls served by this tool service
	// only.
	Service string
	// Submitter, when set, selects the calls of this submitter's
	// missions only.
	Submitter string
	// When, when set, selects the calls whose arguments hold it
	// (messages.ApprovalCond.Holds): a call missing the argument, or
	// whose argument the operator cannot compare, is not selected, and is
	// left to a decision of its own.
	When *messages.ApprovalCond
	// Max, when positive, bounds the calls decided: the longest waiting
	// first. 0 decides every call selected.
	Max int
}

// validate checks f; its errors name the field.
func (f *PendingFilter) validate() error {
	switch {
	case f.Tool != "" && !messages.ValidName(f.Tool):
		return fmt.Errorf("tool: %q is not a valid tool name", f.Tool)
	case f.Service != "" && !messages.ValidName(f.Service):
		return fmt.Errorf("service: %q is not a valid service name", f.Service)
	case f.Submitter != "" && !messages.ValidSubmitter(f.Submitter):
		return fmt.Errorf("submitter: %q is not a valid submitter name", f.Submitter)
	case f.Max < 0:
		return fmt.Errorf("max: %d is negative", f.Max)
	}
	return f.When.Validate("when")
}

// selects reports whether f selects the waiting call a.
func (f *PendingFilter) selects(a *messages.Approval) bool {
	return (f.Tool == "" || a.Tool == f.Tool) && (f.Service == "" || a.Service == f.Service) &&
		(f.Submitter == "" || a.Submitter == f.Submitter) && f.When.Holds(a.Args)
}

// SelectPending returns the calls waiting for a decision that f selects,
// of the missions the client reads, the longest waiting first: what
// DecidePending with f would decide now (a listing to check before).
func (c *Client) SelectPending(ctx context.Context, f PendingFilter) ([]*messages.Approval, error) {
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("fleet: pending approvals: %w", err)
	}
	calls, err := c.waitingCalls(ctx, f.selects)
	if err != nil {
		return nil, fmt.Errorf("fleet: pending approvals: %w", err)
	}
	if f.Max > 0 && len(calls) > f.Max {
		calls = calls[:f.Max]
	}
	return calls, nil
}

// DecideOutcome is what DecidePending did with one call.
type DecideOutcome struct {
	// Call is the call as it waited.
	Call *messages.Approval
	// Decided is its record as decided; nil when Err is set.
	Decided *messages.Approval
	// Err says why the call was not decided: another decision came
	// first (it wraps ErrNoPendingCall), a decision before it failed
	// (ErrNotReached), or the decision's own failure.
	Err error
}

// ErrNotReached is wrapped by the Err of a call DecidePending did not
// decide because a decision before it failed.
var ErrNotReached = errors.New("fleet: not decided: a decision before it failed")

// decideInFlight bounds the missions DecidePending decides at once.
const decideInFlight = 32

// DecidePending decides with d every call waiting for a decision that f
// selects, of the missions the client reads (every submitter's for a
// client made with ClientConfig.AllSubmitters), and returns what it did
// with each, the longest waiting first. Each call is decided as Decide
// decides a call it names, so each mission resumes at once; d names no
// call and edits no arguments (an edit is a decision about one call).
// The calls of one mission are decided one after another, those of
// different missions up to 32 at once.
//
// A call another decider decided meanwhile gets an outcome wrapping
// ErrNoPendingCall, and the others go on. Any other failure (a write the
// user may not make, a store without a leader) stops the batch: the
// decisions under way finish, and the calls not reached get outcomes
// wrapping ErrNotReached. The error is for invalid input and the
// listing; each call's fate is in its outcome.
func (c *Client) DecidePending(ctx context.Context, f PendingFilter, d Decision) ([]DecideOutcome, error) {
	if d.Call != "" || d.Args != nil {
		return nil, errors.New("fleet: decide pending: a decision of many calls names no call and edits no arguments")
	}
	if len(d.Reason) > messages.MaxApprovalReason || len(d.By) > messages.MaxApprovalReason {
		return nil, fmt.Errorf("fleet: decide pending: reason or decider is over %d bytes", messages.MaxApprovalReason)
	}
	calls, err := c.SelectPending(ctx, f)
	if err != nil {
		return nil, err
	}
	if c.decidePendingListed != nil {
		c.decidePendingListed()
	}
	out := make([]DecideOutcome, len(calls))
	// each mission's calls, in the order they waited
	byMission := map[string][]int{}
	var missions []string
	for i, a := range calls {
		out[i].Call = a
		if _, ok := byMission[a.MissionID]; !ok {
			missions = append(missions, a.MissionID)
		}
		byMission[a.MissionID] = append(byMission[a.MissionID], i)
	}
	var stopped atomic.Pointer[error]
	var g errgroup.Group
	g.SetLimit(decideInFlight)
	for _, id := range missions {
		g.Go(func() error {
			for _, i := range byMission[id] {
				if first := stopped.Load(); first != nil {
					out[i].Err = fmt.Errorf("%w: %w", ErrNotReached, *first)
					continue
				}
				one := d
				one.Call = out[i].Call.Call
				out[i].Decided, out[i].Err = c.Decide(ctx, id, one)
				if err := out[i].Err; err != nil && !errors.Is(err, ErrNoPendingCall) {
					stopped.CompareAndSwap(nil, &err)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	return out, nil
}
