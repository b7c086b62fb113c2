package fleet

import (
	"context"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// resumeReads are the two reads a run taking a mission from
// awaiting_approval makes before its approved call leaves: the journal up
// to the message its status names (journalUpTo) and the mission's
// approval records (the gate's first look). The claim starts both as soon
// as it has read that status, while its compare-and-set of the status is
// under way, so a resumption waits for one round trip where it waited for
// three in a row. Neither read depends on the claim: no run wrote the
// journal since the suspension that named its last message (a claim that
// succeeds finds the status that suspension wrote), and the gate treats
// records listed this early as it treats any list made before its look
// (approvalGate.record reads a call pending or missing in it again). A
// claim that fails drops them.
type resumeReads struct {
	journal   *pending[*Journal]
	approvals *pending[approvalList]
}

// approvalList is a mission's approval records and their revisions by
// call, as listApprovals reads them.
type approvalList struct {
	records []*messages.Approval
	revs    map[string]uint64
}

// startResumeReads starts the reads of mission id resumed from the status
// whose journal ends at journalUpTo; journal false reads no journal (a
// worker that runs without one).
func (w *Worker) startResumeReads(ctx context.Context, id string, journalUpTo uint64, journal bool) *resumeReads {
	r := &resumeReads{approvals: startPending(func() (approvalList, error) {
		as, revs, err := listApprovals(ctx, w.replies, w.js, id)
		return approvalList{records: as, revs: revs}, err
	})}
	if journal {
		r.journal = startPending(func() (*Journal, error) {
			return w.openJournal(ctx, id, true, journalUpTo)
		})
	}
	return r
}

// openJournal opens mission id's journal on the worker's connection:
// replayed (a redelivered or resumed mission) up to upTo when known
// (openJournalOn), its writes acknowledged on the worker's reply mux.
func (w *Worker) openJournal(ctx context.Context, id string, replay bool, upTo uint64) (*Journal, error) {
	j, err := openJournalOn(ctx, w.js, w.replies, id, replay, upTo, w.journalDirect)
	if err == nil && w.replies.nc == w.js.Conn() {
		j.acksOn(w.replies)
	}
	return j, err
}

// listedAhead returns the gate's look at records read ahead
// (approvalGate.readAhead): it waits for them (ctx ending first is its
// error).
func listedAhead(ahead *pending[approvalList]) func(context.Context) ([]*messages.Approval, map[string]uint64, error) {
	return func(ctx context.Context) ([]*messages.Approval, map[string]uint64, error) {
		l, err := ahead.wait(ctx)
		return l.records, l.revs, err
	}
}

// pending is the result of a function running on its own goroutine.
type pending[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// startPending runs f on a new goroutine and returns its pending result.
func startPending[T any](f func() (T, error)) *pending[T] {
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.v, p.err = f()
	}()
	return p
}

// wait returns f's result once it returned, or ctx's cause if ctx ends
// first.
func (p *pending[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-p.done:
		return p.v, p.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}
