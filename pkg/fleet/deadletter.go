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

// Headers of a dead letter: the MISSIONS sequence of the message it
// copies and the deliveries after which it was dead-lettered (0: the
// message is invalid).
const (
	headerDeadSeq        = "Ptc-Stream-Seq"
	headerDeadDeliveries = "Ptc-Deliveries"
)

// deadLetter copies a mission message to the DEAD stream and, when its
// submitter and id are known (k, from its subject), publishes a failure
// Step so callers unblock (deadResult); its final event continues em
// (nil: the events stored so far). It returns deadResult's error: the
// failure Step is not stored, and the caller keeps the message, the
// mission's last copy, in MISSIONS (Nak), so that a later delivery or the
// max-deliveries advisory (settleExhausted) stores it. DEAD keeps one copy
// of a message dead-lettered again that way (its Nats-Msg-Id names the
// message's sequence, within DEAD's duplicate window).
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
	dm.Header.Set(headerDeadSeq, strconv.FormatUint(seq, 10))
	dm.Header.Set(headerDeadDeliveries, strconv.Itoa(deliveries))
	dm.Header.Set(nats.MsgIdHdr, deadLetterID(seq))
	ack, err := w.js.PublishMsg(ctx, dm)
	if err != nil {
		w.log.Error().Err(err).Str("mission_id", id).Msg("dead letter not stored")
	}
	if err != nil || !ack.Duplicate {
		w.stats.dead.Add(1)
		w.cfg.Metrics.deadLetter(deadFailReason(deliveries))
		if deliveries == 0 {
			w.stats.invalid.Add(1)
		}
		w.log.Warn().Str("mission_id", id).Uint64("stream_seq", seq).Str("reason", reason).Msg("mission dead-lettered")
	}
	if !messages.ValidMissionID(id) || !messages.ValidSubmitter(k.sub) {
		return nil
	}
	return w.deadResult(ctx, k, em, seq, deadFailReason(deliveries), reason)
}

// deadLetterID is the Nats-Msg-Id of the dead letter of the MISSIONS
// message at seq.
func deadLetterID(seq uint64) string { return "missions-" + strconv.FormatUint(seq, 10) }

// deadFailReason is the failure reason of a mission dead-lettered after
// deliveries (0: its message is invalid).
func deadFailReason(deliveries int) string {
	if deliveries == 0 {
		return ReasonInvalid
	}
	return ReasonMaxDeliveries
}

// deadResult stores the failure Step of dead-lettered mission k (the
// message at seq) and makes its status final: a result already stored is
// kept. It returns the error of a failure Step not stored. The final
// event is emitted by the call that stored the Step: workers settling the
// same message at once (its advisory's and a starting one's,
// settleGivenUp) store one result and emit one final event.
func (w *Worker) deadResult(ctx context.Context, k missionKey, em *emitter, seq uint64, failReason, reason string) error {
	id := k.id
	stored, fresh, err := publishResult(ctx, w.js, w.st, k, failStep(failReason, "%s", reason), claimFence{})
	if err != nil {
		w.log.Error().Err(err).Str("mission_id", id).Msg("dead letter result not stored")
		return err
	}
	// the status follows the stored result, which may be one a run
	// stored before this dead letter (a success, or another failure)
	final, finalReason := stateOf(stored), ""
	if stored.Fail != nil {
		finalReason = stored.Fail.Reason
	}
	_, err = updateStatus(ctx, w.st, k, func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Reason = final, finalReason
		return true
	})
	if errors.Is(err, ErrNotFound) {
		_, _ = casStatus(ctx, w.st, messages.Status{MissionID: id, Submitter: k.sub, State: final, Reason: finalReason, StreamSeq: seq}, 0)
	}
	if !fresh {
		return nil
	}
	if em == nil {
		em = w.newEmitter(ctx, k, 0, 0, false)
	}
	em.Emit(&messages.Event{Kind: messages.EventFinal, Step: stored})
	return nil
}

// poison terminates a message that does not decode or validate.
// Its failure is stored for the submitter and id its subject names; while
// it is not, the message goes back to the queue (Nak after NakDelay), the
// mission's last copy (deadLetter). A message whose subject names no
// submitter and id has no failure to store and is terminated at once.
func (w *Worker) poison(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, cause error) {
	var k missionKey
	if sub, _, id, ok := messages.ParseSubmitSubject(msg.Subject()); ok {
		k = missionKey{sub: sub, id: id}
	}
	reason := "invalid mission: " + cause.Error()
	if err := w.deadLetter(ctx, k, nil, msg.Data(), msg.Headers(), meta.Sequence.Stream, 0, reason); err != nil {
		w.keepDeadLettered(msg, k, meta, err)
		return
	}
	if err := msg.TermWithReason(truncate(reason, 200)); err != nil {
		w.log.Warn().Err(err).Msg("term failed")
	}
}

// keepDeadLettered hands back the message of dead-lettered mission k
// whose failure Step is not stored (err): it is the mission's last copy.
// A later delivery dead-letters it again, or, past the consumer's
// MaxDeliver, the max-deliveries advisory's settleExhausted stores the
// failure the dead letter names.
func (w *Worker) keepDeadLettered(msg jetstream.Msg, k missionKey, meta *jetstream.MsgMetadata, err error) {
	w.log.Error().Err(err).Str("mission_id", k.id).Uint64("stream_seq", meta.Sequence.Stream).
		Msg("dead-lettered mission kept in MISSIONS: its failure is not stored")
	if err := msg.NakWithDelay(w.cfg.NakDelay); err != nil {
		w.log.Warn().Err(err).Msg("nak failed; the mission returns after AckWait")
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
	w.goSettleExhausted(adv)
}

// goSettleExhausted settles the message adv names (settleExhausted) on a
// goroutine of its own (goSettle).
func (w *Worker) goSettleExhausted(adv maxDeliveriesAdvisory) {
	w.goSettle(func() { w.settleExhausted(adv) })
}

// goSettle runs settle on a goroutine of its own, which Stop waits for;
// none once the worker is closing.
func (w *Worker) goSettle(settle func()) {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return
	}
	w.advisory.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.advisory.Done()
		settle()
	}()
}

// settleGivenUp settles the messages MISSIONS holds that a consumer of
// st had given up on (past MaxDeliver) when Start read it: no consumer
// delivers them again, and their max-deliveries advisory came while no
// worker listened, or reached a worker that stopped before it stored the
// mission's failure (settleExhausted). Each is settled as its advisory
// would have been. A message the consumer delivered that is still in the
// work queue (which removes what is acked or terminated) was given up on
// when no delivery is pending, or when it is at or below the consumer's
// ack floor, which passes it once no delivery is pending (givenUpTo). It
// reads what Start read (the stream's and the consumers' info): a
// consumer with nothing given up on below the stream's first message
// costs nothing, any other one direct get of its first message from
// there, and one more for each message it gave up on. A message given up
// on later, or above the floor then, is found by settleOldest.
func (w *Worker) settleGivenUp(st *Stores) {
	si := st.Missions.CachedInfo()
	if si == nil || si.State.Msgs == 0 {
		return
	}
	first := si.State.FirstSeq
	var cons []jetstream.Consumer
	for _, p := range messages.Priorities() {
		cons = append(cons, st.Consumers[p])
		cons = append(cons, st.Lanes[p]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range cons {
		ci := c.CachedInfo()
		if ci == nil || ci.Config.MaxDeliver <= 0 {
			continue
		}
		upTo := givenUpTo(ci)
		for seq := first; seq <= upTo; {
			if w.isStopping() {
				return
			}
			raw, err := getMsg(ctx, st.nc, st.Missions, atSeq(seq, ci.Config.FilterSubject))
			if err != nil {
				if !errors.Is(err, jetstream.ErrMsgNotFound) {
					w.log.Warn().Err(err).Str("consumer", ci.Name).Msg("messages the consumer gave up on not read")
				}
				break
			}
			if raw.Sequence > upTo {
				break
			}
			w.log.Warn().Str("consumer", ci.Name).Uint64("stream_seq", raw.Sequence).
				Msg("MISSIONS holds a message its consumer gave up on; dead-lettering it")
			w.goSettleExhausted(maxDeliveriesAdvisory{Stream: si.Config.Name, Consumer: ci.Name,
				StreamSeq: raw.Sequence, Deliveries: uint64(ci.Config.MaxDeliver)})
			seq = raw.Sequence + 1
		}
	}
}

// exhaustedRetryWait bounds the wait between a dead-lettered mission's
// tries to store its failure Step (settleExhausted).
const exhaustedRetryWait = 5 * time.Second

// settleExhausted dead-letters the mission of the message adv names and
// removes the message from MISSIONS. No consumer delivers that message
// again and it is the mission's last copy: it is removed only once the
// mission's failure Step is stored (or its status is final), tried again
// until the worker stops. Removed before, it would leave the mission with
// no result, no message and a status that is not final: lost. A message
// left when the worker stops is settled by the next worker that starts
// (settleGivenUp).
//
// A message a delivery dead-lettered without storing its failure (the
// delivery handed it back: keepDeadLettered) has its dead letter already:
// the failure stored is the one it names (an invalid mission, or a
// retryable failure's last attempt and its cause).
func (w *Worker) settleExhausted(adv maxDeliveriesAdvisory) {
	// one settle of a message at a time: the checks of the oldest message
	// find again one whose failure is still being stored
	w.mu.Lock()
	if _, ok := w.settling[adv.StreamSeq]; ok {
		w.mu.Unlock()
		return
	}
	if w.settling == nil {
		w.settling = map[uint64]struct{}{}
	}
	w.settling[adv.StreamSeq] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.settling, adv.StreamSeq)
		w.mu.Unlock()
	}()
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
	failReason, reason := ReasonMaxDeliveries, fmt.Sprintf("no worker finished it in %d deliveries", adv.Deliveries)
	if dl, ok := w.deadLettered(ctx, k.id, adv.StreamSeq); ok {
		failReason, reason = deadFailReason(dl.deliveries), dl.reason
		err = w.deadResult(ctx, k, nil, adv.StreamSeq, failReason, reason)
	} else {
		err = w.deadLetter(ctx, k, nil, raw.Data, raw.Header, adv.StreamSeq, int(adv.Deliveries), reason)
	}
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
		err = w.deadResult(rctx, k, nil, adv.StreamSeq, failReason, reason)
		rcancel()
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	if err := w.st.Missions.DeleteMsg(dctx, adv.StreamSeq); err != nil {
		w.log.Warn().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("exhausted mission not removed")
	}
}

// deadLetterNote is what a dead letter says of its message.
type deadLetterNote struct {
	deliveries int
	reason     string
}

// deadLettered returns what the dead letter of the MISSIONS message at
// seq, of mission id, says, when it is DEAD's last message of the id.
func (w *Worker) deadLettered(ctx context.Context, id string, seq uint64) (deadLetterNote, bool) {
	if !messages.ValidMissionID(id) {
		return deadLetterNote{}, false
	}
	dm, err := w.st.Dead.GetLastMsgForSubject(ctx, messages.DeadSubject(id))
	if err != nil || dm.Header.Get(headerDeadSeq) != strconv.FormatUint(seq, 10) {
		return deadLetterNote{}, false
	}
	n, err := strconv.Atoi(dm.Header.Get(headerDeadDeliveries))
	if err != nil || n < 0 {
		return deadLetterNote{}, false
	}
	return deadLetterNote{deliveries: n, reason: dm.Header.Get(messages.HeaderReason)}, true
}

// givenUpAfter is how long MISSIONS's oldest message stays the oldest
// before a worker checks whether its consumer gave up on it
// (settleOldest), and how often it checks again while it stays.
const givenUpAfter = time.Minute

// goSettleOldest runs settleOldest on a goroutine of its own (goSettle).
func (w *Worker) goSettleOldest(seq uint64) {
	w.goSettle(func() { w.settleOldest(seq) })
}

// settleOldest settles the message at seq, MISSIONS's oldest, when its
// consumer gave up on it (givenUpTo), as its advisory would have
// (settleExhausted): a message left in MISSIONS while workers run (its
// advisory's worker stopped before it stored the mission's failure, or
// the consumer's ack floor was below it when they started:
// settleGivenUp). It costs a read of the message and of its consumer's
// info.
func (w *Worker) settleOldest(seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := getMsg(ctx, w.st.nc, w.st.Missions, atSeq(seq, ""))
	if err != nil {
		return
	}
	var c jetstream.Consumer
	for _, p := range messages.Priorities() {
		for _, pc := range append([]jetstream.Consumer{w.st.Consumers[p]}, w.st.Lanes[p]...) {
			if ci := pc.CachedInfo(); ci != nil && subjectMatches(ci.Config.FilterSubject, raw.Subject) {
				c = pc
			}
		}
	}
	if c == nil {
		return
	}
	ci, err := c.Info(ctx)
	if err != nil || ci.Config.MaxDeliver <= 0 || seq > givenUpTo(ci) {
		return
	}
	w.log.Warn().Str("consumer", ci.Name).Uint64("stream_seq", seq).
		Msg("MISSIONS's oldest message is one its consumer gave up on; dead-lettering it")
	w.settleExhausted(maxDeliveriesAdvisory{Stream: ci.Stream, Consumer: ci.Name, StreamSeq: seq, Deliveries: uint64(ci.Config.MaxDeliver)})
}

// givenUpTo is the stream sequence up to which the messages consumer ci
// delivered and the work queue still holds were given up on: all it
// delivered when no delivery is pending, else its ack floor.
func givenUpTo(ci *jetstream.ConsumerInfo) uint64 {
	if ci.NumAckPending == 0 {
		return max(ci.Delivered.Stream, ci.AckFloor.Stream)
	}
	return ci.AckFloor.Stream
}
