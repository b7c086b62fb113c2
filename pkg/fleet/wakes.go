package fleet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Workers move the wakes PARKED holds (a deadline's schedule fired, a
// quota's lease given back, a decision MISSIONS refused) into MISSIONS
// themselves, from one durable consumer they share (WakeConsumerName):
// each wake is published on its woken subject, marked
// messages.HeaderWakeMoved, then removed from PARKED and acknowledged. A
// stream's source of PARKED would move them inside the server, but node
// restarts were seen to stall one while it reported no lag
// (docs/approvals.md, "Guarantees"): a wake a worker moves is
// acknowledged only once MISSIONS stored it, and redelivered otherwise.

// wakeMovers bounds the wakes one worker moves at once.
const wakeMovers = 16

// wakeAckPending bounds the wakes handed out and not yet moved, across
// the fleet (the wake consumer's MaxAckPending).
const wakeAckPending = 1024

// wakeMoveWait bounds one move: the publish into MISSIONS and its ack.
const wakeMoveWait = 10 * time.Second

// wakeRetryDelay is how long a wake whose move failed (MISSIONS full,
// electing a leader, or not answering) waits before it is tried again
// the first time; each failure after doubles it, up to wakeRetryMax.
const (
	wakeRetryDelay = time.Second
	wakeRetryMax   = 30 * time.Second
)

// wakeRetryAfter is how long a wake waits after its delivery-th move
// failed (delivery counts from 1).
func wakeRetryAfter(delivery uint64) time.Duration {
	d := wakeRetryDelay
	for i := uint64(1); i < delivery && d < wakeRetryMax; i++ {
		d *= 2
	}
	return min(d, wakeRetryMax)
}

// wakeMover moves PARKED's wakes for one worker.
type wakeMover struct {
	nc      *nats.Conn
	replies *replyMux // nc's reply mux, or nil
	parked  jetstream.Stream
	metrics *Metrics
	tenant  string
	log     zerolog.Logger

	// sweep handles the ticks of the fleet's sweep for stalled
	// decisions (nil: they are dropped); sweepCtx bounds each sweep and
	// ends when stop begins.
	sweep       *stalledSweep
	sweepCtx    context.Context
	sweepCancel context.CancelFunc

	cc      jetstream.ConsumeContext
	sem     chan struct{}
	moves   sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	stopped sync.Once
	mu      sync.Mutex
	closed  bool // guarded by mu: stop began, no move starts
}

// startWakeMover starts moving the wakes of the worker's wake consumer.
func (w *Worker) startWakeMover() (*wakeMover, error) {
	m := &wakeMover{nc: w.nc, replies: w.replies, parked: w.st.Parked, metrics: w.cfg.Metrics, tenant: w.cfg.Tenant, log: w.log,
		sweep: w.newStalledSweep()}
	return m, m.start(w.st.Wakes)
}

// start starts taking the wakes of c, the wake consumer.
func (m *wakeMover) start(c jetstream.Consumer) error {
	m.sem = make(chan struct{}, wakeMovers)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.sweepCtx, m.sweepCancel = context.WithCancel(m.ctx)
	cc, err := c.Consume(m.take,
		jetstream.PullMaxMessages(wakeMovers),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				// the layout changed under the worker: set it up again
				// (worker setup) and restart the workers
				m.log.Error().Err(err).Msgf("the wake consumer %s is gone: this worker moves no more wakes from PARKED", WakeConsumerName)
				return
			}
			// a missed heartbeat or a reconnect: the consume goes on
			m.log.Debug().Err(err).Msg("wake consumer")
		}))
	if err != nil {
		m.sweepCancel()
		m.cancel()
		return err
	}
	m.cc = cc
	return nil
}

// take hands wake msg to a move of its own, once fewer than wakeMovers
// run.
func (m *wakeMover) take(msg jetstream.Msg) {
	select {
	case m.sem <- struct{}{}:
	case <-m.ctx.Done():
		return // redelivered to another worker after its AckWait
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-m.sem
		return // as above
	}
	m.moves.Add(1)
	m.mu.Unlock()
	go func() {
		defer func() { <-m.sem; m.moves.Done() }()
		if msg.Subject() == messages.SweepTickSubject && m.sweep != nil {
			// a sweep takes up to a period, and ends as the mover stops
			ctx, cancel := context.WithTimeout(m.sweepCtx, m.sweep.after)
			defer cancel()
			m.sweep.tick(ctx, m.parked, msg)
			return
		}
		ctx, cancel := context.WithTimeout(m.ctx, wakeMoveWait)
		defer cancel()
		m.move(ctx, msg)
	}()
}

// stop stops taking wakes and waits for the moves under way.
func (m *wakeMover) stop() {
	if m == nil || m.cc == nil {
		return
	}
	m.stopped.Do(func() {
		m.sweepCancel()
		m.cc.Stop()
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		m.moves.Wait()
		m.cancel()
	})
}

// move publishes wake msg of PARKED into MISSIONS (movedWake) and, once
// MISSIONS stored it, removes it from PARKED (its TTL removes it where
// that fails) and acknowledges it. A move that fails is tried
// again after wakeRetryAfter; a message that is no wake is dropped.
func (m *wakeMover) move(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		m.log.Warn().Err(err).Str("subject", msg.Subject()).Msg("wake without metadata; dropping it")
		_ = msg.Term()
		return
	}
	moved, ok := movedWake(msg.Subject(), meta.Sequence.Stream, msg.Data(), msg.Headers())
	if !ok {
		m.log.Warn().Str("subject", msg.Subject()).Msg("not a wake subject; dropping it")
		_ = msg.Term()
		return
	}
	log := m.log.With().Str("mission", moved.Header.Get(messages.HeaderMissionID)).Uint64("parked_seq", meta.Sequence.Stream).Logger()
	if _, err := publishAckedOn(ctx, m.nc, m.replies, moved); err != nil {
		retry := wakeRetryAfter(meta.NumDelivered)
		ev := log.Debug()
		if meta.NumDelivered == 1 || retry == wakeRetryMax && meta.NumDelivered%10 == 0 {
			// said once, then every tenth try at the longest wait
			ev = log.Warn()
		}
		ev.Err(err).Uint64("tries", meta.NumDelivered).Dur("retry_in", retry).Msg("wake not moved into MISSIONS; trying again")
		m.metrics.wakeMove(m.tenant, false)
		_ = msg.NakWithDelay(retry)
		return
	}
	m.metrics.wakeMove(m.tenant, true)
	// Removed before it is acknowledged: a worker that dies between the
	// two leaves nothing in PARKED (the consumer has no message left to
	// hand out again), where one that died after an ack would leave the
	// moved wake there until its TTL.
	if err := m.parked.DeleteMsg(ctx, meta.Sequence.Stream); err != nil {
		log.Debug().Err(err).Msg("moved wake not removed from PARKED; its TTL removes it")
	}
	if err := msg.DoubleAck(ctx); err != nil {
		// redelivered, if still there: MISSIONS drops the move made
		// again as a duplicate (its Msg-Id)
		log.Debug().Err(err).Msg("moved wake not acknowledged")
		return
	}
	log.Debug().Msg("wake moved into MISSIONS")
}

// movedWake is the copy of the wake stored at seq in PARKED on subject
// (messages.WakeSubject) that a worker publishes into MISSIONS: on the
// mission's woken subject, with the wake's own headers (the server's,
// Nats-*, left out), marked messages.HeaderWakeMoved with seq, under
// Msg-Id "<id>/moved/<seq>" so that a redelivered move is stored once.
// ok is false when subject is no wake subject.
func movedWake(subject string, seq uint64, data []byte, hdr nats.Header) (*nats.Msg, bool) {
	sub, prio, id, ok := messages.ParseWakeSubject(subject)
	if !ok {
		return nil, false
	}
	m := &nats.Msg{Subject: messages.WokenSubject(sub, prio, id), Data: data, Header: nats.Header{}}
	for name, v := range hdr {
		if !strings.HasPrefix(strings.ToLower(name), "nats-") {
			m.Header[name] = v
		}
	}
	s := strconv.FormatUint(seq, 10)
	m.Header.Set(messages.HeaderWakeMoved, s)
	m.Header.Set(jetstream.MsgIDHeader, id+"/moved/"+s)
	return m, true
}
