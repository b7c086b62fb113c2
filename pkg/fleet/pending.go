package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// pendingBatch bounds the approval keys one batch direct get names when
// the bucket holds more keys than one batch answers (the server answers
// at most 1,024 subjects at once).
const pendingBatch = 256

// pendingStatusReads bounds the status reads PendingApprovals has in
// flight at once.
const pendingStatusReads = 16

// PendingApprovals returns the tool calls that wait for a decision, the
// longest waiting first: at most limit of them (50 when limit ≤ 0, at
// most MaxList), and how many wait in all. A client made with
// ClientConfig.AllSubmitters (an approver's, a viewer's) lists every
// submitter's; another lists its own submitter's. A call waits when its
// record is pending and its mission has not ended: a mission cancelled
// while it waited, or one whose status expired, leaves its record
// pending and is not listed.
//
// It reads the approval bucket with batch direct gets of the last record
// of each key (one request when the bucket holds at most 1,024 keys), and
// the status of each mission with a pending record with a direct get:
// no consumer, so any role that reads a mission's approvals lists them.
func (c *Client) PendingApprovals(ctx context.Context, limit int) ([]*messages.Approval, int, error) {
	return c.ListPending(ctx, PendingFilter{}, limit)
}

// ListPending is PendingApprovals of the calls f selects (as
// SelectPending selects them): at most limit of them, the longest
// waiting first, and how many f selects in all (f.Max bounds that
// count). It reads the approval bucket as PendingApprovals does, and the
// status of each mission with a pending record f selects.
func (c *Client) ListPending(ctx context.Context, f PendingFilter, limit int) ([]*messages.Approval, int, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxList)
	out, err := c.SelectPending(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	return out[:min(limit, len(out))], len(out), nil
}

// waitingCalls returns the calls that wait for a decision, of the
// missions this client reads, that keep keeps (nil: all), the longest
// waiting first: pending records whose mission has not ended.
func (c *Client) waitingCalls(ctx context.Context, keep func(*messages.Approval) bool) ([]*messages.Approval, error) {
	records, err := c.pendingRecords(ctx)
	if err != nil {
		return nil, err
	}
	// the pending records, by mission, of the missions this client reads
	byMission := map[string][]*messages.Approval{}
	for _, a := range records {
		if !c.readsApproval(a) || keep != nil && !keep(a) {
			continue
		}
		byMission[a.MissionID] = append(byMission[a.MissionID], a)
	}
	// each mission's status says whether it still waits
	ids := slices.Sorted(maps.Keys(byMission))
	ended := make([]bool, len(ids))
	err = c.eachMission(ctx, ids, func(id string) string { return byMission[id][0].Submitter }, func(ctx context.Context, i int, k missionKey) error {
		var err error
		ended[i], err = c.missionEnded(ctx, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []*messages.Approval
	for i, id := range ids {
		if !ended[i] {
			out = append(out, byMission[id]...)
		}
	}
	sortWaiting(out)
	return out, nil
}

// missionEnded reports whether mission k has ended, its status final or
// gone (expired): a pending record outlives a mission cancelled while it
// waited, and such a call no longer waits.
func (c *Client) missionEnded(ctx context.Context, k missionKey) (bool, error) {
	e, err := getStatus(ctx, c.st, k)
	switch {
	case errors.Is(err, ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("status of %s: %w", k.id, err)
	}
	return messages.TerminalState(e.st.State), nil
}

// sortWaiting sorts calls waiting for a decision the longest waiting
// first.
func sortWaiting(as []*messages.Approval) {
	slices.SortFunc(as, func(a, b *messages.Approval) int {
		return cmp.Or(a.RequestedAt.Compare(b.RequestedAt), strings.Compare(a.MissionID, b.MissionID), strings.Compare(a.Call, b.Call))
	})
}

// StalledApprovals returns the calls decided at least after ago whose
// mission still waits for approval with none of its calls pending, each
// mission's most recently decided call: a decision whose wake was lost,
// its decider stopped between writing the record and queueing the
// mission (docs/approvals.md, "Guarantees"). The workers' sweep queues
// such a mission again (WorkerConfig.StalledAfter); Decide on it again
// queues it at once. A client
// made with ClientConfig.AllSubmitters lists every submitter's; another
// its own submitter's.
//
// It reads the approval bucket as PendingApprovals does, keeping the
// records of the missions it lists (StalledDecision picks each one's);
// PARKED's subjects from its stream's info (a waiting
// mission keeps its parked message there, a finished one has none, and
// one with a wake there stored after its parked message is moved into
// MISSIONS by a worker: wakeWaits); and,
// of each decided mission still parked, its status and its queued message
// (a wake queued behind other missions is not lost).
func (c *Client) StalledApprovals(ctx context.Context, after time.Duration) ([]*messages.Approval, error) {
	now := time.Now()
	records, err := c.approvalRecords(ctx, c.readsApproval, nil)
	if err != nil {
		return nil, fmt.Errorf("fleet: stalled approvals: %w", err)
	}
	byMission := map[string][]*messages.Approval{}
	for _, a := range records {
		byMission[a.MissionID] = append(byMission[a.MissionID], a)
	}
	last := map[string]*messages.Approval{} // by mission, the decision it would stall on
	for id, as := range byMission {
		if a := StalledDecision(messages.StateAwaitingApproval, as, after, now); a != nil {
			last[id] = a
		}
	}
	if len(last) == 0 {
		return nil, nil
	}
	info, err := c.st.Parked.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return nil, fmt.Errorf("fleet: stalled approvals: parked missions: %w", err)
	}
	// a wake in PARKED (a deadline's; one MISSIONS refused) is moved
	// into MISSIONS by a worker: not lost (wakeWaits)
	wakes := map[string][]string{}
	for subj := range info.State.Subjects {
		if _, _, id, ok := messages.ParseWakeSubject(subj); ok {
			wakes[id] = append(wakes[id], subj)
		}
	}
	var ids []string
	for id := range last {
		if info.State.Subjects[messages.ParkSubject(id)] > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	stalled := make([]bool, len(ids))
	err = c.eachMission(ctx, ids, func(id string) string { return last[id].Submitter }, func(ctx context.Context, i int, k missionKey) error {
		if subjects := wakes[k.id]; len(subjects) > 0 {
			if waits, err := c.wakeWaits(ctx, k.id, subjects); err != nil || waits {
				return err
			}
		}
		e, err := getStatus(ctx, c.st, k)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("status of %s: %w", k.id, err)
		case e.st.State != messages.StateAwaitingApproval:
			return nil
		}
		_, err = queuedMsg(ctx, c.st.nc, c.st.Missions, k.sub, k.id)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			stalled[i] = true
		case err != nil:
			return fmt.Errorf("queued message of %s: %w", k.id, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: stalled approvals: %w", err)
	}
	var out []*messages.Approval
	for i, id := range ids {
		if stalled[i] {
			out = append(out, last[id])
		}
	}
	slices.SortFunc(out, func(a, b *messages.Approval) int {
		return cmp.Or(a.DecidedAt.Compare(b.DecidedAt), strings.Compare(a.MissionID, b.MissionID))
	})
	return out, nil
}

// wakeWaits reports whether one of the wakes PARKED holds for mission
// id on subjects was stored after the mission's park message, and so is
// still to be moved into MISSIONS. A wake stored before it is left from
// an earlier wait of the mission (a quota's; a decision before the
// mission ran and suspended again): it was moved and acknowledged, and
// its mover stopped before removing it from PARKED, so it queues nothing
// (its TTL removes it). A park message gone meanwhile counts as a wake
// waiting: the mission left PARKED, and is not stalled.
func (c *Client) wakeWaits(ctx context.Context, id string, subjects []string) (bool, error) {
	park, err := getMsgOn(ctx, c.st.nc, c.replies, c.st.Parked, lastOn(messages.ParkSubject(id)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("parked message of %s: %w", id, err)
	}
	for _, subj := range subjects {
		wake, err := getMsgOn(ctx, c.st.nc, c.replies, c.st.Parked, lastOn(subj))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			// moved meanwhile
		case err != nil:
			return false, fmt.Errorf("wake of %s: %w", id, err)
		case wake.Sequence > park.Sequence:
			return true, nil
		}
	}
	return false, nil
}

// StalledDecision returns, of as (one mission's approval records), the
// decision the mission stalls on while it is in state: when it awaits
// approval with no call of as pending, its most recent decision, made at
// least after before now. It returns nil otherwise. A mission so stalled
// whose wake is not queued either lost that wake (StalledApprovals).
func StalledDecision(state string, as []*messages.Approval, after time.Duration, now time.Time) *messages.Approval {
	if state != messages.StateAwaitingApproval {
		return nil
	}
	var last *messages.Approval
	for _, a := range as {
		if a.State == messages.ApprovalPending {
			return nil
		}
		if !a.DecidedAt.IsZero() && (last == nil || a.DecidedAt.After(last.DecidedAt)) {
			last = a
		}
	}
	if last == nil || now.Sub(last.DecidedAt) < after {
		return nil
	}
	return last
}

// readsApproval reports whether the client lists record a: every
// submitter's with ClientConfig.AllSubmitters, else its own submitter's
// (and records written without their submitter).
func (c *Client) readsApproval(a *messages.Approval) bool {
	return c.readSub == messages.AllSubmitters || a.Submitter == "" || a.Submitter == c.readSub
}

// eachMission calls read for each mission of ids, the i-th with its key
// (its submitter submitter(id), the client's where a record names none),
// at most pendingStatusReads at once, each with directGetWait to be
// answered in: a read NATS refuses this user gets no answer, and fails at
// that bound rather than at the caller's deadline. It returns the first
// error.
func (c *Client) eachMission(ctx context.Context, ids []string, submitter func(id string) string, read func(ctx context.Context, i int, k missionKey) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(pendingStatusReads)
	for i, id := range ids {
		k := missionKey{sub: cmp.Or(submitter(id), c.readSub), id: id}
		g.Go(func() error {
			rctx, cancel := context.WithTimeout(gctx, directGetWait)
			defer cancel()
			return read(rctx, i, k)
		})
	}
	return g.Wait()
}

// pendingRecords returns the pending approval records of the bucket (the
// last record of each key).
func (c *Client) pendingRecords(ctx context.Context) ([]*messages.Approval, error) {
	return c.approvalRecords(ctx, func(a *messages.Approval) bool { return a.State == messages.ApprovalPending }, nil)
}

// approvalRecords returns the records of the bucket (the last record of
// each key) that want keeps, decoding each message as it is read and
// keeping only those: what it holds grows with what want keeps, not with
// every record the bucket holds. It reads them with one batch direct get
// when that answers for every key. A bucket with more keys than one batch
// answers has its keys listed from its stream's info and read
// pendingBatch at a time; one whose batch direct gets no replica answers
// has each key read with directLast (from the leader). revs, when not
// nil, gets the revision of each record kept, by its record.
func (c *Client) approvalRecords(ctx context.Context, want func(*messages.Approval) bool, revs map[*messages.Approval]uint64) ([]*messages.Approval, error) {
	const stream = "KV_" + messages.BucketApprovals
	prefix := "$KV." + messages.BucketApprovals + "."
	var out []*messages.Approval
	keep := func(subject string, hdr nats.Header, data []byte) error {
		if kvDeleted(hdr) {
			return nil
		}
		a, err := decodeApproval(strings.TrimPrefix(subject, prefix), data)
		if err != nil {
			return err
		}
		if !want(a) {
			return nil
		}
		if revs != nil {
			rev, err := strconv.ParseUint(hdr.Get(jetstream.SequenceHeader), 10, 64)
			if err != nil {
				return fmt.Errorf("fleet: approval %s: no revision in the direct get's answer", a.Call)
			}
			revs[a] = rev
		}
		out = append(out, a)
		return nil
	}
	msgs, err := lastPerSubject(ctx, c.replies, stream, prefix+">")
	if errors.Is(err, errBatchIncomplete) || errors.Is(err, errNoDirectAnswer) {
		if err := c.approvalRecordsByInfo(ctx, stream, prefix, keep); err != nil {
			return nil, err
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if err := keep(m.Header.Get(jetstream.SubjectHeader), m.Header, m.Data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// approvalRecordsByInfo lists the approval bucket's keys from its stream's
// info and hands the last message of each to keep, read pendingBatch keys
// to a batch direct get (each key read from the leader when no replica
// answers).
func (c *Client) approvalRecordsByInfo(ctx context.Context, stream, prefix string, keep func(subject string, hdr nats.Header, data []byte) error) error {
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return err
	}
	subjects := slices.Sorted(maps.Keys(info.State.Subjects))
	for chunk := range slices.Chunk(subjects, pendingBatch) {
		msgs, err := lastPerSubject(ctx, c.replies, stream, chunk...)
		if errors.Is(err, errNoDirectAnswer) {
			for _, subj := range chunk {
				data, _, hdr, err := directLast(ctx, c.nc, nil, stream, subj)
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					continue // deleted since the info listed it
				}
				if err != nil {
					return err
				}
				if err := keep(subj, hdr, data); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := keep(m.Header.Get(jetstream.SubjectHeader), m.Header, m.Data); err != nil {
				return err
			}
		}
	}
	return nil
}
