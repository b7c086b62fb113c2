package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
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
	// Calls, when set, selects these calls only, each named by its
	// mission and call id (at most MaxList): the calls a person ticked
	// in a listing. A call no longer waiting is not selected.
	Calls []CallRef
	// Max, when positive, bounds the calls decided: the longest waiting
	// first. 0 decides every call selected.
	Max int
}

// CallRef names a tool call that needed approval: its mission and its
// call id (messages.Approval's MissionID and Call).
type CallRef struct {
	MissionID string
	Call      string
}

// ErrInvalidSelection is wrapped by the error of SelectPending and
// DecidePending for a PendingFilter or a Decision they cannot apply;
// the error names the field.
var ErrInvalidSelection = errors.New("invalid selection of waiting calls")

// validate checks f; its errors wrap ErrInvalidSelection and name the
// field.
func (f *PendingFilter) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSelection}, args...)...)
	}
	switch {
	case f.Tool != "" && !messages.ValidName(f.Tool):
		return bad("tool: %q is not a valid tool name", f.Tool)
	case f.Service != "" && !messages.ValidName(f.Service):
		return bad("service: %q is not a valid service name", f.Service)
	case f.Submitter != "" && !messages.ValidSubmitter(f.Submitter):
		return bad("submitter: %q is not a valid submitter name", f.Submitter)
	case f.Max < 0:
		return bad("max: %d is negative", f.Max)
	case len(f.Calls) > MaxList:
		return bad("calls: %d named, at most %d", len(f.Calls), MaxList)
	}
	for i, c := range f.Calls {
		if !messages.ValidMissionID(c.MissionID) {
			return bad("calls[%d]: %q is not a mission id (a ULID)", i, c.MissionID)
		}
		if c.Call == "" || !kvKeyValid(messages.ApprovalKey(c.MissionID, c.Call)) {
			return bad("calls[%d]: %q is not a call id", i, c.Call)
		}
	}
	if err := f.When.Validate("when"); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSelection, err)
	}
	return nil
}

// selector returns the test of whether f selects a waiting call.
func (f *PendingFilter) selector() func(*messages.Approval) bool {
	var named map[CallRef]bool
	if len(f.Calls) > 0 {
		named = make(map[CallRef]bool, len(f.Calls))
		for _, c := range f.Calls {
			named[c] = true
		}
	}
	return func(a *messages.Approval) bool {
		return (f.Tool == "" || a.Tool == f.Tool) && (f.Service == "" || a.Service == f.Service) &&
			(f.Submitter == "" || a.Submitter == f.Submitter) && f.When.Holds(a.Args) &&
			(named == nil || named[CallRef{MissionID: a.MissionID, Call: a.Call}])
	}
}

// SelectPending returns the calls waiting for a decision that f selects,
// of the missions the client reads, the longest waiting first: what
// DecidePending with f would decide now (a listing to check before).
func (c *Client) SelectPending(ctx context.Context, f PendingFilter) ([]*messages.Approval, error) {
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("fleet: pending approvals: %w", err)
	}
	calls, err := c.waitingCalls(ctx, f.selector())
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
	// Decided is its record as decided; nil when the decision was not
	// recorded.
	Decided *messages.Approval
	// Err, with Decided nil, says why the call was not decided: another
	// decision came first (it wraps ErrNoPendingCall), a decision before
	// it failed (ErrNotReached), or the decision's own failure. With
	// Decided set, the decision was recorded and queueing its mission
	// failed, as Decide reports it: the mission resumes at its deadline,
	// when the workers' sweep finds it, or when it is decided again.
	Err error
}

// ErrNotReached is wrapped by the Err of a call DecidePending did not
// decide because a decision before it failed.
var ErrNotReached = errors.New("fleet: not decided: a decision before it failed")

// decideInFlight bounds the missions DecidePending decides at once, and
// the status reads it has ahead of them.
const decideInFlight = 32

// DecidePending decides with d every call waiting for a decision that f
// selects, of the missions the client reads (every submitter's for a
// client made with ClientConfig.AllSubmitters), and returns what it did
// with each, the longest waiting first: the calls SelectPending lists. Each
// call is decided as Decide decides a call it names, so each mission
// resumes at once; d names no call and edits no arguments (an edit is a
// decision about one call). The calls of one mission are decided one
// after another, those of different missions up to 32 at once.
//
// A call another decider decided meanwhile gets an outcome wrapping
// ErrNoPendingCall, and the others go on. Any other failure (a write the
// user may not make, a store without a leader) stops the batch: the
// decisions under way finish, and the calls not reached get outcomes
// wrapping ErrNotReached. The error is for invalid input and the
// listing; each call's fate is in its outcome.
//
// It reads the approval bucket once, as SelectPending does, and decides
// each mission as soon as its status says it still waits: a mission with
// one call waiting is decided with the record and revision the listing
// read (a record changed since fails its compare-and-set and is read
// again), so a decision costs the requests of Decide's but its read of
// the mission's records.
func (c *Client) DecidePending(ctx context.Context, f PendingFilter, d Decision) ([]DecideOutcome, error) {
	if d.Call != "" || d.Args != nil {
		return nil, fmt.Errorf("fleet: decide pending: %w: a decision of many calls names no call and edits no arguments", ErrInvalidSelection)
	}
	if len(d.Reason) > messages.MaxApprovalReason || len(d.By) > messages.MaxApprovalReason {
		return nil, fmt.Errorf("fleet: decide pending: %w: reason or decider is over %d bytes", ErrInvalidSelection, messages.MaxApprovalReason)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("fleet: decide pending: %w", err)
	}
	revs := map[*messages.Approval]uint64{}
	selects := f.selector()
	records, err := c.approvalRecords(ctx, func(a *messages.Approval) bool {
		return a.State == messages.ApprovalPending && c.readsApproval(a) && selects(a)
	}, revs)
	if err != nil {
		return nil, fmt.Errorf("fleet: decide pending: %w", err)
	}
	sortWaiting(records)
	// the missions in the order their first call waited
	type mission struct {
		id, sub string
		listed  int   // its calls listed
		calls   []int // the outcomes of its calls decided
		status  chan error
		known   bool  // status read from its channel into err
		err     error // errNotWaiting, or why its status is unknown
	}
	var missions []*mission
	byID := map[string]*mission{}
	for _, a := range records {
		m := byID[a.MissionID]
		if m == nil {
			m = &mission{id: a.MissionID, sub: cmp.Or(a.Submitter, c.readSub), status: make(chan error, 1)}
			byID[a.MissionID] = m
			missions = append(missions, m)
		}
		m.listed++
	}

	// Each mission's status is read ahead, up to decideInFlight at once:
	// errNotWaiting, nil (it waits) or the read's error on its channel.
	rctx, stopReads := context.WithCancel(ctx)
	defer stopReads()
	go func() {
		sem := make(chan struct{}, decideInFlight)
		for _, m := range missions {
			select {
			case sem <- struct{}{}:
			case <-rctx.Done():
				m.status <- rctx.Err()
				continue
			}
			go func() {
				defer func() { <-sem }()
				sctx, cancel := context.WithTimeout(rctx, directGetWait)
				defer cancel()
				ended, err := c.missionEnded(sctx, missionKey{sub: m.sub, id: m.id})
				switch {
				case err != nil:
					m.status <- fmt.Errorf("fleet: %w", err)
				case ended:
					m.status <- errNotWaiting
				default:
					m.status <- nil
				}
			}()
		}
	}()

	// The calls are taken in the order they waited, each once its
	// mission's status is known: those of missions that still wait are
	// decided, up to Max, a mission with one call at once, one with more
	// once all of its calls are taken.
	out := make([]DecideOutcome, len(records))
	n := 0
	var stopped atomic.Pointer[error]
	var hook sync.Once
	var g errgroup.Group
	g.SetLimit(decideInFlight)
	decideMission := func(m *mission) {
		g.Go(func() error {
			for _, j := range m.calls {
				if m.err != nil {
					out[j].Err = m.err
					continue
				}
				if e := stopped.Load(); e != nil {
					out[j].Err = fmt.Errorf("%w: %w", ErrNotReached, *e)
					continue
				}
				one := d
				one.Call = out[j].Call.Call
				var listed []*messages.Approval
				var listedRevs map[string]uint64
				if m.listed == 1 {
					// the record as listed, copied (deciding it changes
					// it): with one call waiting no other decision of
					// the mission can have come since but this call's,
					// which fails the compare-and-set
					cp := *out[j].Call
					listed, listedRevs = []*messages.Approval{&cp}, map[string]uint64{cp.Call: revs[out[j].Call]}
				}
				if c.decidePendingListed != nil {
					hook.Do(c.decidePendingListed)
				}
				out[j].Decided, out[j].Err = c.decide(ctx, m.id, one, listed, listedRevs)
				if err := out[j].Err; err != nil && !errors.Is(err, ErrNoPendingCall) {
					stopped.CompareAndSwap(nil, &err)
				}
			}
			return nil
		})
	}
	for _, a := range records {
		if f.Max > 0 && n == f.Max {
			break
		}
		m := byID[a.MissionID]
		if !m.known {
			m.known = true
			m.err = <-m.status
			if m.err != nil && !errors.Is(m.err, errNotWaiting) {
				stopped.CompareAndSwap(nil, &m.err)
			}
		}
		if errors.Is(m.err, errNotWaiting) {
			continue // ended while its record stayed pending
		}
		out[n] = DecideOutcome{Call: a}
		m.calls = append(m.calls, n)
		n++
		if m.listed == 1 {
			decideMission(m)
		}
	}
	stopReads()
	for _, m := range missions {
		if m.listed > 1 && len(m.calls) > 0 {
			decideMission(m)
		}
	}
	_ = g.Wait()
	return out[:n], nil
}

// errNotWaiting says that a mission with a pending record has ended (its
// record stayed pending when it was cancelled, or its status expired).
var errNotWaiting = errors.New("the mission no longer waits")
