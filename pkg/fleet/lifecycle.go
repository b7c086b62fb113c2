package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Start sets up the layout (EnsureStores with WorkerConfig.Store),
// subscribes to cancels and max-delivery advisories and starts fetching. It
// returns once the worker is ready; until then Ready is false. Transient
// JetStream failures (a cluster without a leader, a node catching up,
// peers creating the same streams) are retried with backoff until ctx
// ends, so a worker started on a cluster in any state waits instead of
// exiting. Calling it twice, or after Stop, returns an error.
func (w *Worker) Start(ctx context.Context) error {
	select {
	case <-w.stopping:
		return ErrWorkerStopped
	default:
	}
	if !w.started.CompareAndSwap(false, true) {
		return fmt.Errorf("fleet: worker %s already started", w.cfg.ID)
	}
	st, err := EnsureStores(ctx, w.js, w.storeConfig())
	if err != nil {
		return err
	}
	switch {
	case w.cfg.resultBatches > 0 && st.Results.CachedInfo() != nil:
		st.batchResults = st.Results.CachedInfo().Config.AllowAtomicPublish
	case w.cfg.resultBatches < 0:
		st.batchResults = false
	}
	st.replies = w.replies
	w.st = st
	w.budgets = newBudgets(st, w.cfg.Tenant, w.cfg.Metrics)
	ackPending := -1 // the lowest MaxAckPending of the consumers; negative: unlimited
	w.setLanes(st)
	for _, l := range w.lanes {
		ci := l.c.CachedInfo()
		if ci == nil {
			continue
		}
		if w.ackWait == 0 {
			w.ackWait, w.maxDeliver = ci.Config.AckWait, ci.Config.MaxDeliver
		}
		if n := ci.Config.MaxAckPending; n >= 0 && (ackPending < 0 || n < ackPending) {
			ackPending = n
		}
	}
	w.cfg.Metrics.setMaxAckPending(ackPending)
	if ackPending >= 0 && w.cfg.Slots > ackPending {
		w.log.Warn().Int("slots", w.cfg.Slots).Int("max_ack_pending", ackPending).
			Msgf("the worker has %d slots but the mission consumers' MaxAckPending is %d: the fleet holds at most %d missions of a priority at once, "+
				"so some slots stay idle; raise it to at least the fleet's total slots with `worker setup -max-ack-pending N` (PTC_MAX_ACK_PENDING)",
				w.cfg.Slots, ackPending, ackPending)
	}
	if b := w.cfg.MemoryBudget; b > 0 && int64(w.cfg.Slots) > b/messages.DefaultProgramMemory {
		fit := b / messages.DefaultProgramMemory
		w.log.Warn().Int("slots", w.cfg.Slots).Int64("memory_budget", b).
			Msgf("the worker has %d slots but its memory budget of %d bytes holds %d missions of the default program_memory (%d bytes) at once: "+
				"the others wait for memory, also while they only wait on a model; give missions a smaller limits.program_memory, "+
				"raise the budget (PTC_MEMORY_BUDGET) or use fewer slots (docs/operations.md)",
				w.cfg.Slots, b, fit, messages.DefaultProgramMemory)
	}
	if w.ackWait <= 0 {
		w.ackWait = 30 * time.Second
	}
	w.quotas = newQuotas(w.js, st, w.cfg.ID, w.cfg.Tenant, w.cfg.Metrics, w.ackWait)
	w.notices = missionsRepublished(st.Missions)
	w.journalDirect = st.Journal != nil && st.Journal.CachedInfo().Config.AllowDirect
	if err := w.subscribe(ctx); err != nil {
		for _, s := range w.subs {
			_ = s.Unsubscribe()
		}
		w.subs = nil
		return err
	}
	if !w.notices {
		// a wake this worker publishes rings its own bell at once; with
		// notices, the one MISSIONS republishes once it stored the woken
		// mission rings every worker's, this one's too
		w.quotas.ring = w.ring
	}
	if err := w.setSweep(ctx); err != nil {
		w.log.Warn().Err(err).Msg("the fleet's sweep for stalled decisions not set in PARKED; a worker started later sets it")
	}
	if w.wakes, err = w.startWakeMover(); err != nil {
		w.log.Error().Err(err).Msgf("not moving PARKED's wakes into MISSIONS (consumer %s): missions whose approval deadline passes or whose quota frees wait for another worker", WakeConsumerName)
	}
	w.readWeights()
	go w.watchWeights()
	// after the advisories' subscription: a message given up on since is
	// announced
	w.advisory.Add(1)
	go func() {
		defer w.advisory.Done()
		w.settleGivenUp(st)
	}()
	go w.loop()
	w.cfg.Metrics.addSlots(w.cfg.Slots)
	w.ready.Store(true)
	w.log.Info().Int("slots", w.cfg.Slots).Dur("ack_wait", w.ackWait).Int("max_deliver", w.maxDeliver).Int64("memory_budget", w.cfg.MemoryBudget).Msg("worker started")
	return nil
}

func (w *Worker) subscribe(ctx context.Context) error {
	// One subscription on the cancel subjects: a second one on this
	// connection would keep the server from letting the answer through
	// (allow_responses).
	sub, err := w.pulls.subscribe()
	if err != nil {
		return fmt.Errorf("fleet: subscribe pull replies: %w", err)
	}
	w.subs = append(w.subs, sub)
	sub, err = w.nc.Subscribe(messages.StopWildcard, w.onStop)
	if err != nil {
		return fmt.Errorf("fleet: subscribe stops: %w", err)
	}
	w.subs = append(w.subs, sub)
	sub, err = w.nc.QueueSubscribe(messages.CancelWildcard, messages.CancelQueue, w.onCancelRequest)
	if err != nil {
		return fmt.Errorf("fleet: subscribe cancel requests: %w", err)
	}
	w.subs = append(w.subs, sub)
	if w.notices {
		// Missions as MISSIONS stored them (submitted or woken), headers
		// only: each rings its lane's bell (fair share, docs/fleet.md)
		// once a fetch finds it.
		sub, err = w.nc.Subscribe(messages.QueuedWildcard, w.onQueued)
		if err != nil {
			return fmt.Errorf("fleet: subscribe queued missions: %w", err)
		}
		// The server answers a subscription its permissions refuse with
		// an error ahead of the flush's answer.
		if err := flush(ctx, w.nc); err != nil {
			return fmt.Errorf("fleet: flush: %w", err)
		}
		if subscriptionRefused(w.nc.LastError(), messages.QueuedWildcard) {
			_ = sub.Unsubscribe()
			w.notices = false
			w.log.Warn().Msgf("the worker's NATS user may not subscribe to %s, where MISSIONS announces each mission it stores: "+
				"hearing submits and wakes as published instead; let the worker user subscribe there (docs/operations.md, \"Upgrade\")",
				messages.QueuedWildcard)
		} else {
			w.subs = append(w.subs, sub)
		}
	}
	if !w.notices {
		// A layout whose MISSIONS does not republish: submits as
		// published (before the stream gives them their lane) ring
		// their lane's bell, and so do wakes as published (a
		// decision's, a quota's, one a worker moves from PARKED), which
		// MISSIONS stores into the lane of the mission's submitter.
		sub, err = w.nc.Subscribe(messages.SubmitWildcard, w.onSubmit)
		if err != nil {
			return fmt.Errorf("fleet: subscribe submits: %w", err)
		}
		w.subs = append(w.subs, sub)
		for _, wakes := range []string{messages.WakeWildcard, messages.WokenWildcard} {
			sub, err = w.nc.Subscribe(wakes, w.onWake)
			if err != nil {
				return fmt.Errorf("fleet: subscribe wakes: %w", err)
			}
			w.subs = append(w.subs, sub)
		}
	}
	adv := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + messages.StreamMissions + ".*"
	sub, err = w.nc.QueueSubscribe(adv, "ptc-dead-letter", w.onMaxDeliveries)
	if err != nil {
		return fmt.Errorf("fleet: subscribe advisories: %w", err)
	}
	w.subs = append(w.subs, sub)
	if err := flush(ctx, w.nc); err != nil {
		return fmt.Errorf("fleet: flush: %w", err)
	}
	return nil
}

// Run starts the worker and stops it (draining) when ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return w.Stop()
}

// Stop drains the worker: readiness turns false, fetching stops, running
// missions get DrainGrace to finish, then they are cancelled with cause
// ErrWorkerShutdown and handed back to the queue. It returns when every
// mission is finished or handed back, and the budget settles it still
// tries in the background succeeded or had 10 s more. Stop is idempotent;
// later calls wait for the first to finish.
func (w *Worker) Stop() error {
	w.stopOnce.Do(func() {
		w.ready.Store(false)
		close(w.stopping)
		if w.started.Load() {
			<-w.loopDone
		}
		w.wakes.stop()
		done := make(chan struct{})
		go func() { w.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(w.cfg.DrainGrace):
			w.log.Warn().Int("running", w.Running()).Msg("drain grace over; handing missions back")
			w.runCancel(ErrWorkerShutdown)
			select {
			case <-done:
			case <-time.After(w.cfg.HandBackWait):
				w.log.Error().Int("running", w.Running()).Msg("missions did not return after cancel")
			}
		}
		w.runCancel(ErrWorkerShutdown)
		w.drops.stop()
		// the finished missions' messages leave the queue before the
		// worker's subscriptions end
		w.acks.flush()
		for _, s := range w.subs {
			_ = s.Unsubscribe()
		}
		w.mu.Lock()
		w.closing = true
		w.mu.Unlock()
		w.advisory.Wait()
		if w.budgets != nil {
			// the settles still failing get a last chance to be charged
			w.budgets.close(budgetStopWait)
		}
		if w.started.Load() {
			w.cfg.Metrics.addSlots(-w.cfg.Slots)
		}
		w.log.Info().Msg("worker stopped")
		close(w.stopped)
	})
	<-w.stopped
	return nil
}

func (w *Worker) isStopping() bool {
	select {
	case <-w.stopping:
		return true
	default:
		return false
	}
}

// storeConfig is WorkerConfig.Store with retries logged and the
// consumers' MaxAckPending raised to at least the worker's slots.
func (w *Worker) storeConfig() StoreConfig {
	scfg := w.cfg.Store
	scfg.minAckPending = w.cfg.Slots
	scfg.OnRetry = func(what string, err error, wait time.Duration) {
		w.log.Warn().Err(err).Str("store", what).Dur("retry_in", wait).Msg("JetStream layout not ready; retrying")
		if w.cfg.Store.OnRetry != nil {
			w.cfg.Store.OnRetry(what, err, wait)
		}
	}
	return scfg
}

// subscriptionRefused reports whether err, a connection's last error, is
// the server refusing a subscription to subject for want of permission.
func subscriptionRefused(err error, subject string) bool {
	return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), "Subscription to \""+subject+"\"")
}
