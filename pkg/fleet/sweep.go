package fleet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A decider that stops between recording its decision and queueing the
// mission leaves the mission waiting with its decision recorded and no
// wake (docs/approvals.md, "Guarantees"). The fleet looks for such
// missions itself: PARKED holds one repeating schedule
// (messages.SweepSubject) that publishes a tick every
// WorkerConfig.StalledAfter on messages.SweepTickSubject, one of the
// wake subjects the workers' shared wake consumer takes, so each tick
// reaches one worker. That worker lists the missions whose decision is
// at least StalledAfter old and still waits with no call pending and no
// wake queued (Client.StalledApprovals) and queues each again with its
// recorded decision: a lost wake costs at most two periods, not the
// approval deadline, and nothing is added to a decision's path.

// DefaultStalledAfter is how long after its decision a mission still
// waiting with no wake queued counts as stalled, and how often the fleet
// looks for such missions (WorkerConfig.StalledAfter).
const DefaultStalledAfter = time.Minute

// MinStalledAfter is the shortest WorkerConfig.StalledAfter: the
// shortest period of a JetStream message schedule.
const MinStalledAfter = time.Second

// sweepTickTTL is how long a tick stays in PARKED when no worker takes
// it: a tick is removed once taken, and one older than a period is
// skipped (a fleet that starts after a while sweeps once, not once per
// tick missed).
const sweepTickTTL = "1h"

// setSweep makes sure PARKED holds the fleet's sweep schedule with this
// worker's period: it publishes one where none is (a worker starting
// does not postpone the next tick of one that exists), and replaces one
// with another period.
func (w *Worker) setSweep(ctx context.Context) error {
	pattern := "@every " + w.cfg.StalledAfter.String()
	msg := &nats.Msg{Subject: messages.SweepSubject, Header: nats.Header{}}
	msg.Header.Set(headerSchedule, pattern)
	msg.Header.Set(headerScheduleTarget, messages.SweepTickSubject)
	msg.Header.Set(headerScheduleTTL, sweepTickTTL)
	// the stream's MaxAge would otherwise remove the schedule
	msg.Header.Set(jetstream.MsgTTLHeader, "never")
	_, err := w.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
	if !isWrongLastSeq(err) {
		return err
	}
	cur, err := w.st.Parked.GetLastMsgForSubject(ctx, messages.SweepSubject)
	if err != nil {
		return err
	}
	if cur.Header.Get(headerSchedule) == pattern && cur.Header.Get(headerScheduleTarget) == messages.SweepTickSubject {
		return nil
	}
	w.log.Info().Str("was", cur.Header.Get(headerSchedule)).Str("now", pattern).Msg("the fleet's sweep for stalled decisions takes this worker's period")
	_, err = w.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(cur.Sequence))
	if isWrongLastSeq(err) {
		return nil // another worker replaced it meanwhile
	}
	return err
}

// stalledSweep queues again the missions whose decision's wake was lost,
// one tick of the fleet's sweep at a time.
type stalledSweep struct {
	c       *Client // reads every submitter's approvals; queues wakes
	after   time.Duration
	metrics *Metrics
	tenant  string
	log     zerolog.Logger
	running atomic.Bool
	// swept, when set (by tests of this package), is called as each
	// sweep begins.
	swept func()
}

// newStalledSweep returns the worker's sweep: it reads and queues through
// a client on the worker's connection and stores, with the worker's
// rights (which hold every one it needs).
func (w *Worker) newStalledSweep() *stalledSweep {
	c := &Client{nc: w.nc, js: w.js, st: w.st, sub: messages.DefaultSubmitter, readSub: messages.AllSubmitters, replies: w.replies}
	return &stalledSweep{c: c, after: w.cfg.StalledAfter, metrics: w.cfg.Metrics, tenant: w.cfg.Tenant, log: w.log}
}

// tick handles tick msg of the sweep's schedule: it acknowledges and
// removes it, then sweeps unless the tick is older than a period or a
// sweep of this worker still runs. ctx bounds the sweep.
func (s *stalledSweep) tick(ctx context.Context, parked jetstream.Stream, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Term()
		return
	}
	if err := msg.DoubleAck(ctx); err != nil {
		// redelivered to a worker after the consumer's AckWait
		s.log.Debug().Err(err).Msg("sweep tick not acknowledged")
		return
	}
	if err := parked.DeleteMsg(ctx, meta.Sequence.Stream); err != nil {
		s.log.Debug().Err(err).Msg("sweep tick not removed from PARKED; its TTL removes it")
	}
	if time.Since(meta.Timestamp) > s.after || !s.running.CompareAndSwap(false, true) {
		return
	}
	defer s.running.Store(false)
	s.sweep(ctx)
}

// sweep queues again each mission StalledApprovals lists, with its
// recorded decision. A mission that resumed meanwhile gets a duplicate
// wake, which its worker drops; a wake queued twice within MISSIONS'
// duplicate window is stored once (its Msg-Id names the decision).
func (s *stalledSweep) sweep(ctx context.Context) {
	if s.swept != nil {
		s.swept()
	}
	stalled, err := s.c.StalledApprovals(ctx, s.after)
	if err != nil {
		ev := s.log.Warn()
		if ctx.Err() != nil {
			ev = s.log.Debug() // the worker stopping, or the period up
		}
		ev.Err(err).Msg("stalled decisions not looked for; the next tick looks again")
		return
	}
	for _, a := range stalled {
		log := s.log.With().Str("mission", a.MissionID).Str("call", a.Call).Str("decision", a.State).Time("decided_at", a.DecidedAt).Logger()
		k := missionKey{sub: a.Submitter, id: a.MissionID}
		if k.sub == "" {
			// a record written without its submitter
			st, err := s.c.status(ctx, a.MissionID)
			if err != nil {
				log.Warn().Err(err).Msg("a stalled mission's status unread; the next tick tries again")
				continue
			}
			k.sub = st.Submitter
		}
		if err := s.c.resume(ctx, k, a); err != nil {
			if ctx.Err() != nil {
				return // the worker stopping, or the period up
			}
			log.Warn().Err(err).Msg("a mission whose decision's wake was lost not queued again; the next tick tries again")
			continue
		}
		s.metrics.stalledRequeued(s.tenant)
		log.Warn().Msg("a mission's decision was recorded but its wake lost (its decider stopped): queued it again")
	}
}
