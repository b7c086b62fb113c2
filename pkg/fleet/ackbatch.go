package fleet

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ackDelay is how long the acknowledgement of a finished mission waits
// for those of missions finishing after it, so that they go out together.
// By then the mission's result is stored and its final status written:
// the acknowledgement only takes the message off the queue.
const ackDelay = 2 * time.Millisecond

// maxHeldAcks is how many acknowledgements a worker holds at most: one
// more sends them all at once, so that held messages count little against
// a consumer's MaxAckPending.
const maxHeldAcks = 64

// heldAcks holds the acknowledgements of finished missions for up to
// ackDelay and sends them together. An acknowledgement makes the server
// take the consumer's and the stream's locks, look for interest in the
// message across the stream's consumers and write a tombstone; sent
// right after each mission it lands on the path of the mission started
// next (its submission stored, its pull answered), while sent together
// they cost the connection one write and the consumer one wake-up
// (docs/performance.md, "Idle latency"). A worker that dies holding some
// leaves their messages to be redelivered after AckWait, when the claim
// finds the mission finished and acknowledges it (settleFinished), as for
// a worker that dies between its final status write and its
// acknowledgement. Its zero value is ready.
type heldAcks struct {
	// sending is held by a flush while it sends, so that a flush returns
	// only once every acknowledgement held before it was sent (Stop's
	// does not return while the timer's sends what it took)
	sending sync.Mutex
	mu      sync.Mutex
	msgs    []jetstream.Msg
	spare   []jetstream.Msg // the slice the last flush sent, reused
	timer   *time.Timer     // sends what is held, armed while msgs is not empty
	log     *zerolog.Logger // where a failed acknowledgement is reported
	// delay replaces ackDelay when set (tests)
	delay time.Duration
}

// holdsAck reports whether the acknowledgement of msg, a finished
// mission of submitter sub, may be held: not one its caller waits to see
// confirmed (confirmedAck), and not while sub's missions are counted
// against a max_queued quota, whose counts of MISSIONS (the worker's when
// it takes sub's next mission, a client's when it submits one) must not
// include a finished mission. A quota that cannot be read holds none.
func (w *Worker) holdsAck(ctx context.Context, msg jetstream.Msg, sub string) bool {
	if _, ok := msg.(confirmedAck); ok {
		return false
	}
	if w.quotas == nil {
		return true
	}
	l, err := w.quotas.forSubmitter(ctx, sub)
	return err == nil && l.MaxQueued == 0
}

// add holds msg's acknowledgement: it goes out within ackDelay, with the
// others held by then, or at once with them when maxHeldAcks are held.
func (h *heldAcks) add(msg jetstream.Msg) {
	h.mu.Lock()
	h.msgs = append(h.msgs, msg)
	n := len(h.msgs)
	if n == 1 {
		d := ackDelay
		if h.delay > 0 {
			d = h.delay
		}
		if h.timer == nil {
			h.timer = time.AfterFunc(d, h.flush)
		} else {
			h.timer.Reset(d)
		}
	}
	h.mu.Unlock()
	if n >= maxHeldAcks {
		h.flush()
	}
}

// flush sends every acknowledgement held now, after those a flush in
// progress took.
func (h *heldAcks) flush() {
	h.sending.Lock()
	defer h.sending.Unlock()
	h.mu.Lock()
	msgs := h.msgs
	if len(msgs) == 0 {
		h.mu.Unlock()
		return
	}
	h.msgs, h.spare = h.spare[:0], nil
	if h.timer != nil {
		h.timer.Stop()
	}
	log := h.log
	h.mu.Unlock()
	for i, msg := range msgs {
		if err := msg.Ack(); err != nil && log != nil {
			log.Warn().Err(err).Str("subject", msg.Subject()).Msg("ack failed; a redelivery will find the stored result")
		}
		msgs[i] = nil
	}
	h.mu.Lock()
	if h.spare == nil && cap(msgs) <= maxHeldAcks {
		h.spare = msgs[:0]
	}
	h.mu.Unlock()
}

// held reports how many acknowledgements are held.
func (h *heldAcks) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}
