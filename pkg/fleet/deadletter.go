package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// deadLetter copies a mission message to the DEAD stream and, when its
// submitter and id are known (k, from its subject), publishes a failure
// Step so callers unblock (deadResult); its final event continues em
// (nil: the events stored so far). It returns deadResult's error: the
// failure Step is not stored.
func (w *Worker) deadLetter(ctx context.Context, k missionKey, em *emitter, data []byte, hdr nats.Header, seq uint64, deliveries int, reason string) error {
	id := k.id
	subjID := id
	if !messages.ValidMissionID(id) {
		subjID = "seq-" + strconv.FormatUint(seq, 10)
	}
	dm := &nats.Msg{Subject: messages.DeadSubject(subjID), Data: data, Header: nats.Header{}}
	for k, v := range hdr {
		if k == nats.MsgIdHdr {
			continue
		}
		dm.Header[k] = v
	}
	dm.Header.Set(messages.HeaderReason, reason)
	dm.Header.Set("Ptc-Stream-Seq", strconv.FormatUint(seq, 10))
	dm.Header.Set("Ptc-Deliveries", strconv.Itoa(deliveries))
	if _, err := w.js.PublishMsg(ctx, dm); err != nil {
		w.log.Error().Err(err).Str("mission_id", id).Msg("dead letter not stored")
	}
	w.stats.dead.Add(1)
	if deliveries == 0 {
		w.stats.invalid.Add(1)
		w.cfg.Metrics.deadLetter(ReasonInvalid)
	} else {
		w.cfg.Metrics.deadLetter(ReasonMaxDeliveries)
	}
	w.log.Warn().Str("mission_id", id).Uint64("stream_seq", seq).Str("reason", reason).Msg("mission dead-lettered")
	if !messages.ValidMissionID(id) || !messages.ValidSubmitter(k.sub) {
		return nil
	}
	failReason := ReasonMaxDeliveries
	if deliveries == 0 {
		failReason = ReasonInvalid
	}
	return w.deadResult(ctx, k, em, seq, failReason, reason)
}

// deadResult stores the failure Step of dead-lettered mission k (the
// message at seq) and makes its status final: a result already stored is
// kept. It returns the error of a failure Step not stored.
func (w *Worker) deadResult(ctx context.Context, k missionKey, em *emitter, seq uint64, failReason, reason string) error {
	id := k.id
	stored, _, err := publishResult(ctx, w.js, w.st, k, failStep(failReason, "%s", reason))
	if err != nil {
		w.log.Error().Err(err).Str("mission_id", id).Msg("dead letter result not stored")
		return err
	}
	final := stateOf(stored)
	_, err = updateStatus(ctx, w.st, k, func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Reason = final, failReason
		return true
	})
	if errors.Is(err, ErrNotFound) {
		_, _ = casStatus(ctx, w.st, messages.Status{MissionID: id, Submitter: k.sub, State: final, Reason: failReason, StreamSeq: seq}, 0)
	}
	if em == nil {
		em = w.newEmitter(ctx, k, 0, 0, false)
	}
	em.Emit(&messages.Event{Kind: messages.EventFinal, Step: stored})
	return nil
}

// poison terminates a message that does not decode or validate.
// Its failure is stored for the submitter and id its subject names.
func (w *Worker) poison(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, cause error) {
	var k missionKey
	if sub, _, id, ok := messages.ParseSubmitSubject(msg.Subject()); ok {
		k = missionKey{sub: sub, id: id}
	}
	reason := "invalid mission: " + cause.Error()
	_ = w.deadLetter(ctx, k, nil, msg.Data(), msg.Headers(), meta.Sequence.Stream, 0, reason)
	if err := msg.TermWithReason(truncate(reason, 200)); err != nil {
		w.log.Warn().Err(err).Msg("term failed")
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// maxDeliveriesAdvisory is the part of the server's max-deliveries advisory
// the worker reads.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// onMaxDeliveries dead-letters a mission whose last delivery was lost (its
// worker died): the server keeps such a message in the WorkQueue.
func (w *Worker) onMaxDeliveries(msg *nats.Msg) {
	var adv maxDeliveriesAdvisory
	if json.Unmarshal(msg.Data, &adv) != nil || adv.StreamSeq == 0 {
		return
	}
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return
	}
	w.advisory.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.advisory.Done()
		w.settleExhausted(adv)
	}()
}

// exhaustedRetryWait bounds the wait between a dead-lettered mission's
// tries to store its failure Step (settleExhausted).
const exhaustedRetryWait = 5 * time.Second

// settleExhausted dead-letters the mission of the message adv names and
// removes the message from MISSIONS. No consumer delivers that message
// again and it is the mission's last copy: it is removed only once the
// mission's failure Step is stored (or its status is final), tried again
// until the worker stops. Removed before, it would leave the mission with
// no result, no message and a status that is not final: lost.
func (w *Worker) settleExhausted(adv maxDeliveriesAdvisory) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := getMsg(ctx, w.st.nc, w.st.Missions, atSeq(adv.StreamSeq, ""))
	if err != nil {
		return // already settled
	}
	var k missionKey
	if sub, _, id, ok := messages.ParseSubmitSubject(raw.Subject); ok {
		k = missionKey{sub: sub, id: id}
	}
	if cur, err := getStatus(ctx, w.st, k); err == nil && messages.TerminalState(cur.st.State) {
		_ = w.st.Missions.DeleteMsg(ctx, adv.StreamSeq)
		return
	}
	reason := fmt.Sprintf("no worker finished it in %d deliveries", adv.Deliveries)
	err = w.deadLetter(ctx, k, nil, raw.Data, raw.Header, adv.StreamSeq, int(adv.Deliveries), reason)
	for wait := 100 * time.Millisecond; err != nil; wait = min(2*wait, exhaustedRetryWait) {
		t := time.NewTimer(wait)
		select {
		case <-w.stopping:
			t.Stop()
			w.log.Error().Err(err).Str("mission_id", k.id).Uint64("stream_seq", adv.StreamSeq).
				Msg("exhausted mission left in MISSIONS: its failure is not stored")
			return
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = w.deadResult(rctx, k, nil, adv.StreamSeq, ReasonMaxDeliveries, reason)
		rcancel()
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	if err := w.st.Missions.DeleteMsg(dctx, adv.StreamSeq); err != nil {
		w.log.Warn().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("exhausted mission not removed")
	}
}
