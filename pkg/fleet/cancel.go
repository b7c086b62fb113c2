package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// cancelWork bounds carrying out one cancel request.
const cancelWork = 10 * time.Second

// onCancelRequest carries out a cancel request (Client.Cancel) and answers
// it; one worker of the queue group messages.CancelQueue gets each. The
// submitter is the subject's, which only the mission's submitter (or a user
// granted every submitter's cancels) may publish on, so a request reaches
// only the missions of that submitter. A queued mission is marked
// cancelled and its cancelled Step stored here; a running one gets the
// cancel flag in its status and a stop on messages.StopSubject, on which
// the worker running it stops it at once (the flag reaches it on its next
// heartbeat otherwise). Clients store no result and no status.
func (w *Worker) onCancelRequest(msg *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelWork)
	defer cancel()
	code, err := w.carryOutCancel(ctx, msg)
	if msg.Reply == "" {
		return
	}
	reply := &nats.Msg{Subject: msg.Reply, Header: nats.Header{}}
	if err != nil {
		w.log.Warn().Err(err).Str("subject", msg.Subject).Msg("cancel not carried out")
		reply.Header.Set(messages.HeaderError, code+": "+err.Error())
	}
	_ = msg.RespondMsg(reply)
}

// carryOutCancel carries out the cancel request msg; on failure it returns
// the messages.ErrCode* the requester gets with the error.
func (w *Worker) carryOutCancel(ctx context.Context, msg *nats.Msg) (string, error) {
	sub, id, ok := messages.ParseCancelSubject(msg.Subject)
	if !ok {
		return messages.ErrCodeFailed, fmt.Errorf("%q is not a cancel subject (%s)", msg.Subject, messages.CancelSubject("<submitter>", "<id>"))
	}
	var c messages.Cancel
	if err := messages.UnmarshalAs(msg.Header.Get(messages.HeaderContentType), msg.Data, &c); err != nil {
		return messages.ErrCodeFailed, fmt.Errorf("cancel request: %w", err)
	}
	if err := c.Validate(); err != nil {
		return messages.ErrCodeFailed, fmt.Errorf("cancel request: %w", err)
	}
	if c.MissionID != id {
		return messages.ErrCodeFailed, fmt.Errorf("cancel request for mission %s sent on the subject of mission %s", c.MissionID, id)
	}
	reason := c.Reason
	if reason == "" {
		reason = "cancelled by caller"
	}
	k := missionKey{sub: sub, id: id}
	for range 8 {
		var wasQueued bool
		e, err := updateStatus(ctx, w.st, k, func(s *messages.Status) bool {
			wasQueued = false
			switch {
			case messages.TerminalState(s.State):
				return false
			case s.State == messages.StateQueued || s.State == messages.StateAwaitingApproval || s.State == messages.StateQuotaWait:
				wasQueued = true
				s.State, s.Reason, s.Worker = messages.StateCancelled, ReasonCancelled, w.cfg.ID
				s.CancelRequested, s.CancelReason = true, reason
				return true
			default:
				if s.CancelRequested {
					return false
				}
				s.CancelRequested, s.CancelReason = true, reason
				return true
			}
		})
		if errors.Is(err, ErrNotFound) {
			// No worker has taken it: it is queued, or unknown.
			created, err := w.cancelQueued(ctx, k, reason)
			if err != nil {
				return messages.ErrCodeFailed, err
			}
			if created == nil {
				return messages.ErrCodeNotFound, fmt.Errorf("mission %s of submitter %s is neither queued nor known", id, sub)
			}
			if created.State != messages.StateCancelled {
				continue // a worker took it meanwhile: cancel it running
			}
			wasQueued = true
		} else if err != nil {
			return messages.ErrCodeFailed, err
		}
		if !wasQueued && e.st.State == messages.StateRunning {
			if err := w.nc.PublishMsg(&nats.Msg{Subject: messages.StopSubject(sub, id), Data: msg.Data, Header: msg.Header}); err != nil {
				return messages.ErrCodeFailed, fmt.Errorf("stop mission %s: %w", id, err)
			}
		}
		if wasQueued {
			if _, _, err := publishResult(ctx, w.js, w.st, k, failStep(ReasonCancelled, "%s", reason), claimFence{}); err != nil {
				// the status is final: a worker fetching the mission
				// stores its result (settleFinished)
				return messages.ErrCodeFailed, err
			}
			w.log.Info().Str("mission_id", id).Str("submitter", sub).Msg("queued mission cancelled")
		}
		return "", nil
	}
	return messages.ErrCodeFailed, fmt.Errorf("mission %s: the status kept changing", id)
}

// cancelQueued writes the cancelled status of mission k while it waits in
// the queue with no status. It returns nil when k is not queued, and the
// status a worker wrote first when one took the mission meanwhile.
func (w *Worker) cancelQueued(ctx context.Context, k missionKey, reason string) (*messages.Status, error) {
	raw, err := queuedMsg(ctx, w.st.nc, w.st.Missions, k.sub, k.id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateCancelled, Reason: ReasonCancelled,
		Worker: w.cfg.ID, StreamSeq: raw.Sequence, CancelRequested: true, CancelReason: reason}
	if m, err := decodeMission(raw.Header.Get(messages.HeaderContentType), raw.Data); err == nil {
		st.Summary = messages.Summarize(m)
	}
	// Created as a worker's claim creates a first status (the one
	// compare-and-set of the id, whichever submitter's key it writes), so
	// a claim and a cancel at once store one of the two on every stream.
	for range 8 {
		_, err = createFirstStatus(ctx, w.js, st)
		if !inFlightConflict(err) {
			break
		}
	}
	if err == nil {
		return &st, nil
	}
	if !isWrongLastSeq(err) {
		return nil, err
	}
	cur, err := getStatus(ctx, w.st, k)
	if !errors.Is(err, ErrNotFound) {
		if err != nil {
			return nil, err
		}
		return &cur.st, nil
	}
	// another submitter's status holds the id, or k's status was
	// deleted: k's own key is created
	if _, err := casStatus(ctx, w.st, st, 0); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, err
		}
		cur, err := getStatus(ctx, w.st, k)
		if err != nil {
			return nil, err
		}
		return &cur.st, nil
	}
	return &st, nil
}
