package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// cancelledError is the cause of a mission cancelled by Cancel.
type cancelledError struct{ reason string }

func (e *cancelledError) Error() string        { return "fleet: mission cancelled: " + e.reason }
func (e *cancelledError) Is(target error) bool { return target == ErrCancelled }

// errMissionTimeout is the cause of a mission that ran past its timeout or
// deadline.
var errMissionTimeout = errors.New("fleet: mission timed out")

// errNoStatusInHand marks a finished mission whose worker holds no status
// to write the final one over: it reads the status first.
var errNoStatusInHand = errors.New("no status in hand")

// onStop stops the run of a mission this worker holds when the worker
// that carried out its cancel (onCancelRequest) says so: every worker
// receives every stop, the one running that submitter's mission acts on it.
func (w *Worker) onStop(msg *nats.Msg) {
	sub, id, ok := messages.ParseStopSubject(msg.Subject)
	if !ok {
		return
	}
	var c messages.Cancel
	if messages.UnmarshalAs(msg.Header.Get(messages.HeaderContentType), msg.Data, &c) != nil || c.Validate() != nil || c.MissionID != id {
		return
	}
	w.mu.Lock()
	r := w.running[id]
	w.mu.Unlock()
	if r != nil && r.sub == sub && r.cancel != nil {
		cancel := r.cancel
		reason := c.Reason
		if reason == "" {
			reason = "cancelled by caller"
		}
		cancel(&cancelledError{reason: reason})
	}
}

// runningMission is a mission this worker holds: whose it is and how to
// stop it, and which message it was taken from.
type runningMission struct {
	sub    string
	cancel context.CancelCauseFunc
	// seq is the MISSIONS sequence of the message the mission was taken
	// from.
	seq uint64
	// runs is set (under Worker.mu) while the mission runs: from when it
	// holds its quota until its run ended and it is being settled.
	runs bool
	// left, made (under Worker.mu) by a message of the same mission that
	// waits for this one to be settled, is closed when it runs or leaves
	// the worker.
	left chan struct{}
}

// settled marks r as running or gone from the worker (Worker.mu held):
// what waits for it goes on.
func (r *runningMission) settled() {
	if r.left != nil {
		close(r.left)
		r.left = nil
	}
}

// waitToTake reports whether mission id, delivered in msg (MISSIONS
// sequence seq), may be taken: no run of it is in the worker. It returns
// with w.mu held when it may (the caller registers the run), without it
// otherwise.
//
// A run of the mission taken from another message that does not run (it
// is being taken, parked or settled) is waited for, up to takeWaits
// heartbeat periods, msg kept in progress between them: a mission parked
// for its quota or an approval is queued again as soon as it is parked, so
// its next copy may reach this worker while the run that parked it still
// acks its message. Turned away, that copy would come back only after
// AckWait, as a second delivery.
func (w *Worker) waitToTake(msg jetstream.Msg, id string, seq uint64) bool {
	w.mu.Lock()
	for wait := 0; ; wait++ {
		r := w.running[id]
		if r == nil {
			return true
		}
		if r.seq == seq || r.runs || wait == takeWaits {
			w.mu.Unlock()
			return false
		}
		if r.left == nil {
			r.left = make(chan struct{})
		}
		left := r.left
		w.mu.Unlock()
		if wait > 0 {
			_ = msg.InProgress()
		}
		t := getTimer()
		t.Reset(w.heartbeatPeriod())
		select {
		case <-left:
		case <-t.C:
		case <-w.stopping:
			wait = takeWaits - 1
		}
		putTimer(t)
		w.mu.Lock()
	}
}

// takeWaits bounds the heartbeat periods a message waits for another
// message's run of its mission to leave the worker (waitToTake).
const takeWaits = 3

// process runs one delivered mission message to its end. Its frame is
// small: a run waits on its model under it, and what the goroutine's stack
// holds then sets the stack's size while thousands of missions wait, so
// taking the mission (open) and settling its result (settle) are methods
// of missionRun, which keeps what they share on the heap.
//
// With an AsyncRunner, process returns once the run is under way, and the
// mission is settled and ended (end) on the goroutine that ends its run.
// The run's RunEnv stays in process's frame, not in missionRun: the runner
// takes its own copy, so a mission waiting under an AsyncRunner keeps none
// of it in the worker.
func (w *Worker) process(msg jetstream.Msg) {
	w.missionChanged()
	p := &missionRun{w: w, msg: msg, ctx: context.Background()}
	var env RunEnv
	if !p.open(&env) {
		p.end()
		return
	}
	p.run(&env)
}

// ran settles the mission with its run's result, then ends it.
func (p *missionRun) ran(step *messages.Step, runErr error) {
	p.settle(step, runErr)
	p.end()
}

// end ends the mission's time in the worker: it undoes what open and run
// took (close), frees the slot, then counts the mission as no longer in
// flight.
func (p *missionRun) end() {
	w := p.w
	p.close()
	if !p.slotFreed {
		w.releaseSlot()
	}
	w.missionChanged() // after the slot is free
	w.inflight.Done()
}

// missionRun is one delivered mission message on its way through process.
type missionRun struct {
	w   *Worker
	msg jetstream.Msg
	ctx context.Context

	received time.Time // delivered: the server's AckWait runs from just before
	meta     *jetstream.MsgMetadata
	attempt  int
	m        *messages.Mission
	k        missionKey
	log      *zerolog.Logger // the one the run's contexts carry
	em       *emitter
	at       *attempt
	runCtx   context.Context
	hbEntry  atomic.Pointer[statusEntry]
	beats    *beats
	journal  *Journal
	box      *Toolbox
	start    time.Duration // when the run started, after received
	first    bool

	slotFreed bool // the slot was given back while the run's end waited

	// what close undoes, set as open and run take them
	busy           bool // counted in the busy slots
	leased         bool // lease is held (nil: no quota)
	settleJournal  bool
	admitted       bool                    // the memory admit reserved is held
	cancel         context.CancelCauseFunc // the run's, once registered as running
	lease          *quotaLease
	cancelTimeout  context.CancelFunc
	cancelDeadline context.CancelFunc
	// what admit reserved: the meter's bound and what it holds of the
	// worker's memory budget (a reservation of them)
	memLimit, memHeld int64
}

// endHeldFloor and endHeldPerByte bound what an ended run may hold from
// its tools while its end waits (its Step's trace keeps their results
// until the result is stored): endHeldFloor, plus endHeldPerByte bytes
// for each byte of the results its calls got. A decoded result takes more
// than its encoding (each value an interface, each map entry a key and a
// slot); a map of one-letter keys and small values, the costliest shape,
// takes under 32 times its bytes.
const (
	endHeldFloor   = 64 << 10
	endHeldPerByte = 32
)

// endKeeps returns what of a reservation of limit bytes an ended run whose
// tools' results took got bytes keeps while its end waits: at most limit.
func endKeeps(limit, got int64) int64 {
	if got >= (limit-endHeldFloor)/endHeldPerByte {
		return limit
	}
	return endHeldFloor + got*endHeldPerByte
}

// freeForEnd gives back, while the ended run's end waits its turn
// (finishGate), the slot, its running quota's lease and what of the
// memory reservation the run can no longer hold: it keeps what its
// tools' results may take (endKeeps), which close gives back once the end
// is stored. A run that would keep more than half its reservation gives
// nothing back and reports false: storing its end at once frees more of
// the budget than waiting would.
func (p *missionRun) freeForEnd() bool {
	w := p.w
	if p.admitted && p.memLimit > 0 {
		var got int64
		if p.box != nil {
			got = p.box.resultBytes.Load()
		}
		keep := endKeeps(p.memLimit, got)
		if keep > p.memLimit/2 {
			return false
		}
		w.cfg.Metrics.memoryReserved(keep - p.memLimit)
		p.memLimit = keep
		if held := min(p.memHeld, keep); held < p.memHeld {
			w.memory.release(p.memHeld - held)
			p.memHeld = held
		}
	}
	if p.busy {
		w.cfg.Metrics.slotBusy(-1)
		p.busy = false
	}
	// the run no longer counts against its submitter's running quota:
	// the next of its missions may run meanwhile
	if p.leased {
		p.lease.release()
		p.leased = false
	}
	p.slotFreed = true
	w.releaseSlot()
	w.missionChanged()
	if w.endWaiting != nil {
		w.endWaiting(p.k)
	}
	return true
}

// close undoes what open and run took, in the reverse order.
func (p *missionRun) close() {
	if p.settleJournal {
		p.journal.settle()
	}
	if p.admitted {
		p.w.releaseMemory(p.memLimit, p.memHeld)
	}
	if p.cancelDeadline != nil {
		p.cancelDeadline()
	}
	if p.cancelTimeout != nil {
		p.cancelTimeout()
	}
	if p.leased {
		p.lease.release()
	}
	if p.at != nil {
		p.at.end()
	}
	if p.busy {
		p.w.cfg.Metrics.slotBusy(-1)
	}
	if p.cancel != nil {
		w := p.w
		w.mu.Lock()
		if r := w.running[p.m.ID]; r != nil {
			r.settled()
		}
		delete(w.running, p.m.ID)
		w.mu.Unlock()
		p.cancel(nil)
	}
}

// open takes the mission of the message: it decodes it, claims its status,
// takes its quota, starts its heartbeats and opens its journal. It reports
// whether the mission is to run, with env set for its run; when not, the
// message is settled.
func (p *missionRun) open(env *RunEnv) bool {
	w, msg, ctx := p.w, p.msg, p.ctx
	// The server's AckWait runs from the delivery, just before this; the
	// first heartbeat comes AckWait/3 after it.
	p.received = time.Now()
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("message without JetStream metadata")
		_ = msg.Term()
		return false
	}
	p.meta = meta
	attempt := int(meta.NumDelivered)
	p.attempt = attempt
	m, err := decodeMission(msg.Headers().Get(messages.HeaderContentType), msg.Data())
	if err != nil {
		w.poison(ctx, msg, meta, err)
		return false
	}
	p.m = m
	// The submitter is the subject's, which its NATS user may publish on,
	// never what the message says.
	sub, prio, subjID, ok := messages.ParseSubmitSubject(msg.Subject())
	switch {
	case !ok:
		w.poison(ctx, msg, meta, fmt.Errorf("submitted on %q, not on a subject of the form %s", msg.Subject(),
			messages.SubmitSubject("<submitter>", "<priority>", "<id>")))
		return false
	case subjID != m.ID:
		w.poison(ctx, msg, meta, fmt.Errorf("mission %s submitted on the subject of mission %s", m.ID, subjID))
		return false
	}
	k := missionKey{sub: sub, id: m.ID}
	p.k = k
	// the run's contexts carry the mission's logger (RunEnv.Logger), and
	// the run uses that copy of it
	logCtx, log := w.missionLog(m.ID, sub, attempt)
	p.log = log

	// Take the mission: register for cancels first, then compare-and-set
	// the status to running by this worker.
	if !w.waitToTake(msg, m.ID, meta.Sequence.Stream) {
		// Redelivered to us while we still run it (a late heartbeat), a
		// copy of a mission we run, or another submitter's mission with
		// the same id: the run in hand settles its own message, this one
		// comes back later.
		_ = msg.InProgress()
		return false
	}
	runCtx, cancel := context.WithCancelCause(logCtx)
	held := &runningMission{sub: sub, cancel: cancel, seq: meta.Sequence.Stream}
	w.running[m.ID] = held
	w.mu.Unlock()
	p.cancel = cancel
	entry, first, resumed, skip := w.claim(ctx, msg, k, m, meta, attempt, log)
	if skip {
		return false
	}
	p.first = first
	last, known := uint64(0), first
	if resumed && attempt == 1 {
		last, known = wokenEventNumber(msg.Headers(), entry.st.Suspensions)
	}
	em := w.newEmitter(ctx, k, attempt, last, known)
	p.em = em
	w.cfg.Metrics.slotBusy(1)
	p.busy = true
	ctx, runCtx, p.at = w.beginAttempt(ctx, runCtx, m, msg, meta, attempt)
	p.ctx = ctx
	if entry.st.CancelRequested {
		w.finish(ctx, msg, k, em, failStep(ReasonCancelled, "%s", entry.st.CancelReason), entry, nil, nil, log)
		return false
	}
	if !m.Deadline.IsZero() && time.Now().After(m.Deadline) {
		w.finish(ctx, msg, k, em, failStep(ReasonDeadline, "the mission's deadline %s passed before it started", m.Deadline.Format(time.RFC3339)), entry, nil, nil, log)
		return false
	}
	if over := w.cfg.Ceilings.check(m); over != "" {
		log.Warn().Str("over", over).Msg("mission refused: over the worker's ceilings")
		w.finish(ctx, msg, k, em, failStep(ReasonOverLimit, "%s", over), entry, nil, nil, log)
		return false
	}
	w.cfg.Ceilings.applyBudget(m)
	// The submitter's quota: a mission queued past max_queued fails; one
	// over max_running waits parked; otherwise a lease is held until the
	// run ends.
	lease, settled := w.takeQuota(ctx, msg, k, prio, first, em, meta, attempt, entry, log)
	if settled {
		return false
	}
	w.mu.Lock()
	held.runs = true
	held.settled()
	w.mu.Unlock()
	p.lease, p.leased = lease, true
	runCtx, p.cancelTimeout = context.WithTimeoutCause(runCtx, w.missionTimeout(m), errMissionTimeout)
	if !m.Deadline.IsZero() {
		runCtx, p.cancelDeadline = context.WithDeadlineCause(runCtx, m.Deadline, errMissionTimeout)
	}
	p.runCtx = runCtx

	p.hbEntry.Store(entry)
	p.beats = w.heartbeat(msg, k, &p.hbEntry, lease, cancel, time.Until(p.received.Add(w.heartbeatPeriod())))

	// A large context is read under the heartbeat: its read may take
	// longer than AckWait.
	if m.ContextRef != "" {
		if err := w.loadContext(ctx, k, m); err != nil {
			p.beats.stop()
			entry = p.hbEntry.Load()
			log.Warn().Err(err).Msg("context not loaded")
			if !errors.Is(err, ErrRetryable) {
				w.finish(ctx, msg, k, em, failStep(ReasonInvalid, "%v", err), entry, nil, nil, log)
				return false
			}
			w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, err, log)
			return false
		}
	}

	if !w.cfg.NoJournal {
		// a redelivered or resumed mission replays what its earlier runs
		// journaled
		var err error
		if entry.reads != nil && entry.reads.journal != nil {
			p.journal, err = entry.reads.journal.wait(ctx)
		} else {
			p.journal, err = w.openJournal(ctx, m.ID, attempt > 1 || entry.st.Suspensions > 0, entry.journalUpTo)
		}
		if err != nil {
			log.Warn().Err(err).Msg("journal not read")
			w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, fmt.Errorf("%w (%w)", err, ErrRetryable), log)
			return false
		}
		if n := p.journal.Entries(); n > 0 {
			log.Info().Int("entries", n).Msg("replaying the journal of earlier attempts")
		}
	}
	em.Emit(&messages.Event{Kind: messages.EventStarted})
	owned := p.beats.owned // one method value for the Toolbox and the runner
	box := p.toolbox(msg.Headers(), owned)
	if entry.reads != nil {
		box.approvalsAhead = entry.reads.approvals
	}
	p.box = box
	*env = RunEnv{
		owned:    owned,
		Journal:  p.journal,
		Tools:    box,
		Events:   em,
		Logger:   *p.log,
		Attempt:  attempt,
		WorkerID: w.cfg.ID,
		Header:   msg.Headers(),
		Metrics:  w.cfg.Metrics,
		Tracer:   w.tracer,
		Budget:   w.budgets.forMission(k.sub, em, p.log),
	}
	return true
}

// run runs the mission once its tool names check out and the worker's
// memory budget admits it, and settles it with the result (ran): when it
// ends, with an AsyncRunner (start), which may be after run returns.
func (p *missionRun) run(env *RunEnv) {
	p.start = time.Since(p.received)
	// A tool name no service offers while a close one is offered is a
	// typo: the mission fails before it runs, naming the tool it probably
	// means (a model would otherwise find the tool missing mid-run).
	if err := env.Tools.CheckNames(p.runCtx); err != nil {
		p.log.Warn().Err(err).Msg("mission refused: its tool list names tools no service offers")
		p.ran(failStep(ReasonInvalid, "%v", err), nil)
		return
	}
	// the reservation is held until the result (which may hold the
	// mission's tool results in its trace) is settled (close)
	r, err := p.w.admit(p.runCtx, p.m, env, p.log)
	if err != nil {
		p.ran(nil, err)
		return
	}
	p.memLimit, p.memHeld, p.admitted = r.limit, r.held, true
	if r, ok := p.w.cfg.Runner.(AsyncRunner); ok {
		p.w.stats.runs.Add(1)
		p.startRun(r, env)
		return
	}
	p.ran(p.w.safeRun(p.runCtx, p.m, env))
}

// startRun starts the mission's run with r, which settles it when it ends
// (ran, once). A panic in Start before the run ended fails the mission as
// safeRun fails a panicking Run; one after is not the run's and goes on.
func (p *missionRun) startRun(r AsyncRunner, env *RunEnv) {
	var ended atomic.Bool
	done := func(step *messages.Step, err error) {
		if ended.CompareAndSwap(false, true) {
			p.ran(step, err)
		}
	}
	defer func() {
		if x := recover(); x != nil {
			if ended.Load() {
				panic(x)
			}
			env.Logger.Error().Interface("panic", x).Bytes("stack", debug.Stack()).Msg("runner panicked")
			done(failStep(ReasonRunnerPanic, "the runner crashed: %v", x), nil)
		}
	}()
	r.Start(p.runCtx, p.m, *env, done)
}

// settle settles the message with the run's result: it stores the
// mission's result, hands the mission back, suspends it for an approval or
// retries it, as the run's end says.
func (p *missionRun) settle(step *messages.Step, runErr error) {
	w, msg, ctx, k, em, m, meta, attempt, journal, box := p.w, p.msg, p.ctx, p.k, p.em, p.m, p.meta, p.attempt, p.journal, p.box
	log := p.log
	// The answers the run journaled matter only if its result is not
	// stored: every way back to the queue (a hand-back, a retry, a result
	// not stored) flushes them first, and once the mission is done those
	// not yet written are dropped (settle).
	p.settleJournal = true
	flush := func() { flushJournal(ctx, journal, log) }
	w.mu.Lock()
	if r := w.running[m.ID]; r != nil {
		r.runs = false // a copy of the mission that comes now waits for its end
	}
	w.mu.Unlock()
	p.beats.stop()
	entry := p.hbEntry.Load()
	cause := context.Cause(p.runCtx)
	log.Debug().Dur("duration", time.Since(p.received)-p.start).AnErr("run_error", runErr).AnErr("cause", cause).Msg("run returned")

	switch {
	case errors.Is(cause, ErrFenced):
		log.Warn().Msg("mission taken over by another worker; dropping this run")
		em.drop()
		w.cfg.Metrics.fencedRun()
		p.at.setOutcome("fenced")
		return
	case errors.Is(cause, ErrSuspended):
		// Waiting for a decision costs no slot, goroutine or memory: the
		// answers so far are journaled and the mission leaves the worker.
		var se *suspendedError
		errors.As(cause, &se)
		flush()
		journalSeq, _ := journal.lastWritten()
		w.suspend(ctx, msg, k, em, m, meta, attempt, entry, box.gate.Load(), se.approval, journalSeq, log)
		return
	case step.Ok():
		// Finished, even if a cancel, timeout or shutdown came too late to
		// matter: keep the answer.
	case errors.As(cause, new(*approvalStoreError)), errors.As(cause, new(*toolDiscoveryError)):
		// Stopped at a call whose approval store, or whose tool's
		// discovery, NATS did not answer: the answers so far are
		// journaled and the mission comes back to ask again, the program
		// never told.
		flush()
		w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, cause, log)
		return
	case errors.Is(cause, ErrWorkerShutdown):
		flush()
		em.Flush()
		w.handBack(ctx, msg, entry, log)
		return
	case errors.Is(cause, ErrCancelled):
		reason := "cancelled"
		var ce *cancelledError
		if errors.As(cause, &ce) {
			reason = ce.reason
		}
		step = failStep(ReasonCancelled, "%s", reason)
	case errors.Is(cause, errMissionTimeout) && step == nil:
		step = failStep(ReasonTimeout, "the mission ran past its timeout of %s", w.missionTimeout(m))
	case step == nil && runErr != nil && errors.Is(runErr, ErrRetryable):
		flush()
		w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, runErr, log)
		return
	case step == nil && runErr != nil:
		step = failStep(ReasonRunnerError, "%v", runErr)
	case step == nil:
		step = failStep(ReasonRunnerError, "the runner returned no step")
	}
	step.Attempts = attempt
	// the end waits while missions wait to start (finishGate)
	w.finishes.wait(w.stopping, p.freeForEnd)
	if gate := box.gate.Load(); entry.st.Suspensions > 0 || gate.consulted() {
		w.attachApprovals(ctx, m.ID, gate, step, log)
	}
	if r := journal.Replayed(); r != (messages.Replayed{}) {
		if step.Replayed != nil {
			r.Unused = step.Replayed.Unused // the runner's count of the replies it did not use
		}
		step.Replayed = &r
	}
	if w.finish(ctx, msg, k, em, step, entry, journal, &missionRecord{m: m, box: box, first: p.first}, log) {
		w.deleteToolObjects(ctx, box, m.ID, log)
	}
}

// deleteToolObjects deletes the mission's tool-result objects once its
// result is stored: the large results its tools sent out of band (read
// live or replayed from the journal), which no later attempt will read.
// Objects a failure leaves behind, or those of an attempt that died, expire
// with their bucket's TTL.
func (w *Worker) deleteToolObjects(ctx context.Context, box *Toolbox, id string, log *zerolog.Logger) {
	n, err := box.refs.deleteMission(ctx, id)
	if err != nil {
		log.Warn().Err(err).Msg("tool-result objects not all deleted; they expire with their bucket's TTL")
	}
	if n > 0 {
		log.Debug().Int("objects", n).Msg("tool-result objects deleted")
	}
}

// flushJournal writes the answers a run journaled before its mission goes
// back to the queue.
func flushJournal(ctx context.Context, j *Journal, log *zerolog.Logger) {
	if err := j.Flush(ctx); err != nil {
		log.Warn().Err(err).Msg("answers not journaled")
	}
}

// admit waits until the worker's memory budget holds the mission's
// reservation, or runCtx ends (a cancel, the timeout or a shutdown, which
// process handles as a run cut short), and sets env.Memory to it. It
// returns the reservation, which releaseMemory gives back.
func (w *Worker) admit(runCtx context.Context, m *messages.Mission, env *RunEnv, log *zerolog.Logger) (reservation, error) {
	start := time.Now()
	r, err := w.memory.reserve(runCtx, m)
	if err != nil {
		return reservation{}, context.Cause(runCtx)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		log.Info().Dur("waited", d).Int64("reserved", r.limit).Msg("waited for the worker's memory budget")
	}
	env.Memory, env.MemoryRaise = r.limit, r.raise
	w.cfg.Metrics.memoryReserved(r.limit)
	return r, nil
}

// releaseMemory gives back a reservation admit made, of the meter's bound
// limit holding held of the worker's memory budget.
func (w *Worker) releaseMemory(limit, held int64) {
	w.cfg.Metrics.memoryReserved(-limit)
	w.memory.release(held)
}

// decodeMission decodes a submitted mission: msgpack, or JSON when the
// message's Content-Type header says so.
func decodeMission(contentType string, data []byte) (*messages.Mission, error) {
	var m messages.Mission
	if err := messages.UnmarshalAs(contentType, data, &m); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// missionTimeout is the mission's own timeout (its limits, then its
// agent's), else the worker's; negative (unlimited) runs until the mission
// ends by itself. It never exceeds the worker's ceiling.
func (w *Worker) missionTimeout(m *messages.Mission) time.Duration {
	d := m.EffectiveLimits().MissionTimeout
	if d == 0 {
		d = w.cfg.MissionTimeout
	}
	if c := w.cfg.Ceilings.MissionTimeout; c > 0 && (d < 0 || d > c) {
		return c
	}
	if d < 0 {
		return messages.UnlimitedTimeout
	}
	return d
}

// headerStreamSource marks a message a stream sourced from another: in
// the MISSIONS of an earlier layout, which sourced PARKED, a mission
// queued again from there. The server sets it and refuses a publish that
// carries it.
const headerStreamSource = "Nats-Stream-Source"

// claim compare-and-sets the status to running by this worker. first is
// true when the claim wrote the mission's first status, resumed when it
// took the mission from awaiting_approval. skip is true when the message
// needs no run (already finished, duplicate, fenced); the message has
// then been settled.
func (w *Worker) claim(ctx context.Context, msg jetstream.Msg, k missionKey, m *messages.Mission, meta *jetstream.MsgMetadata, attempt int, log *zerolog.Logger) (entry *statusEntry, first, resumed, skip bool) {
	// A first delivery is most often of an id no status holds yet: its
	// claim is one publish that only such an id accepts. Any status of the
	// id (another submitter's, a cancel's, an earlier copy's) refuses it,
	// and the claim reads and decides as for a later delivery. A conflict
	// with a write still in flight (10164, replicated streams) tries again,
	// since nothing may be stored to read yet. A wake from PARKED (a
	// deadline's, a quota's or a refused decision's, moved by a worker:
	// messages.HeaderWakeMoved; an earlier layout's MISSIONS sourced it:
	// Nats-Stream-Source) or a decision's wake published into MISSIONS
	// (messages.HeaderWoken) has a status already and is read at once.
	fromParked := msg.Headers().Get(messages.HeaderWakeMoved) != "" || msg.Headers().Get(headerStreamSource) != ""
	woken := msg.Headers().Get(messages.HeaderWoken) != ""
	fresh := attempt == 1 && !fromParked && !woken
	for try := range 8 {
		// taken before this round's writes and reads of the status
		drops := w.drops.signal()
		if fresh {
			st := messages.Status{MissionID: m.ID, Submitter: k.sub, Summary: messages.Summarize(m),
				State: messages.StateRunning, Worker: w.cfg.ID, Attempt: attempt, StreamSeq: meta.Sequence.Stream}
			rev, data, err := writeFirstStatus(ctx, w.js, w.replies, st, true)
			if err == nil {
				return &statusEntry{st: st, rev: rev, data: data, drops: drops}, true, false, false
			}
			if !isWrongLastSeq(err) {
				log.Warn().Err(err).Msg("status not written; retrying later")
				_ = msg.NakWithDelay(w.cfg.NakDelay)
				return nil, false, false, true
			}
			if inFlightConflict(err) {
				continue
			}
			fresh = false
		}
		cur, owner, err := w.claimStatus(ctx, k, try == 0)
		var st messages.Status
		var rev uint64
		switch {
		case errors.Is(err, ErrNotFound):
			// The first claim writes the first status, once no other
			// submitter's mission holds the id: the journal, the tool
			// calls' idempotency keys and their results are the id's.
			if owner != "" && owner != k.sub {
				log.Warn().Str("owner", owner).Msg("mission id taken by another submitter; refusing the mission")
				if err := w.deadLetter(ctx, k, nil, msg.Data(), msg.Headers(), meta.Sequence.Stream, 0,
					fmt.Sprintf("invalid mission: mission id %s belongs to another submitter's mission", k.id)); err != nil {
					w.keepDeadLettered(msg, k, meta, err)
					return nil, false, false, true
				}
				_ = msg.Term()
				return nil, false, false, true
			}
			st = messages.Status{MissionID: m.ID, Submitter: k.sub, StreamSeq: meta.Sequence.Stream}
		case err != nil:
			log.Warn().Err(err).Msg("status unreadable; retrying later")
			_ = msg.NakWithDelay(w.cfg.NakDelay)
			return nil, false, false, true
		default:
			st, rev = cur.st, cur.rev
		}
		if messages.TerminalState(st.State) {
			w.settleFinished(ctx, msg, k, st, log)
			return nil, false, false, true
		}
		if st.State == messages.StateRunning && st.Attempt > attempt && st.StreamSeq == meta.Sequence.Stream {
			// A later delivery of this message is already running elsewhere:
			// ours is stale. Leave the message to that delivery.
			log.Info().Str("owner", st.Worker).Int("owner_attempt", st.Attempt).Msg("stale delivery; dropping")
			return nil, false, false, true
		}
		// A suspended mission is taken by whichever copy of its message
		// comes first (the decision's or the deadline's); the status then
		// names that copy's sequence and later copies are duplicates. A
		// submitted copy's first delivery that finds a mission parked for
		// an approval or its quota (its status names no sequence: only a
		// copy from PARKED, or a decision's wake for a mission awaiting
		// approval, resumes it) is a submission of a mission taken
		// before, as is one that finds another sequence named: the client
		// queues such a copy while it reads the status (Submit).
		parked := st.State == messages.StateAwaitingApproval || st.State == messages.StateQuotaWait
		wakes := fromParked || woken && st.State == messages.StateAwaitingApproval
		if st.StreamSeq != meta.Sequence.Stream && (st.StreamSeq != 0 && st.State != messages.StateAwaitingApproval ||
			st.StreamSeq == 0 && parked && rev != 0 && !wakes && attempt == 1) {
			log.Info().Uint64("stream_seq", meta.Sequence.Stream).Uint64("status_seq", st.StreamSeq).Msg("duplicate submission; dropping")
			_ = msg.Term()
			return nil, false, false, true
		}
		// A mission awaiting approval resumes only with the body it was
		// suspended with, which its parked message, a decision's wake and
		// a redelivery of the suspended message all carry. Another body
		// is a submission of the mission's id (a submitter may publish on
		// its own submit subject with any header, Ptc-Woken included),
		// not its wake: running it would resume the mission as changed.
		if st.State == messages.StateAwaitingApproval && !suspendedMission(msg.Data(), st.MissionDigest) {
			log.Warn().Uint64("stream_seq", meta.Sequence.Stream).Bool("woken", woken).Bool("from_parked", fromParked).
				Msg("a message to resume the mission awaiting approval carries another mission than the one suspended; dropping it as a duplicate submission")
			_ = msg.Term()
			return nil, false, false, true
		}
		if st.Summary == nil { // the first claim
			st.Summary = messages.Summarize(m)
		}
		// A redelivery, or a mission another run held, may have its
		// result stored already: that run stored it but lost its final
		// status write and its ack, or is storing it now.
		mayBeStored := attempt > 1 || st.State == messages.StateRunning
		fromAwaiting := st.State == messages.StateAwaitingApproval
		// No run wrote the journal since the suspension that set this
		// status: each takes the mission from it first.
		var journalUpTo uint64
		var reads *resumeReads
		if fromAwaiting {
			journalUpTo = st.JournalSeq
			reads = w.startResumeReads(ctx, m.ID, journalUpTo, !w.cfg.NoJournal)
		}
		st.State, st.Worker, st.Attempt, st.StreamSeq, st.JournalSeq, st.MissionDigest = messages.StateRunning, w.cfg.ID, attempt, meta.Sequence.Stream, 0, ""
		// A run that may take the mission from another (mayBeStored)
		// stores a claim marker before its status and its read of the
		// result: the other run's result, published under its fence
		// (finish), is then either stored before the marker, and read,
		// or refused. A marker RESULTS does not take (an outage, where
		// the other run's result cannot be stored either) leaves the
		// claim with the status's last read alone, as on a layout
		// without markers, rather than hold the mission back.
		if mayBeStored && w.st.claimMarkers {
			if seq, err := markClaim(ctx, w.nc, w.st, k, w.cfg.ID); err == nil {
				st.ClaimSeq = seq
			} else {
				log.Warn().Err(err).Msg("claim marker not written; claiming without it")
			}
		}
		if w.claimWrite != nil {
			w.claimWrite(k, attempt)
		}
		newRev, data, err := casStatusKept(ctx, w.st, st, rev)
		if err == nil {
			entry := &statusEntry{st: st, rev: newRev, data: data, journalUpTo: journalUpTo, reads: reads, drops: drops}
			if mayBeStored && w.storedAfterClaim(ctx, msg, k, log) {
				return nil, false, false, true
			}
			return entry, rev == 0, fromAwaiting, false
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			log.Warn().Err(err).Msg("status not written; retrying later")
			_ = msg.NakWithDelay(w.cfg.NakDelay)
			return nil, false, false, true
		}
	}
	_ = msg.NakWithDelay(w.cfg.NakDelay)
	return nil, false, false, true
}

// refence fences anew the result of the run holding mission k's status
// at held, whose result the stream refused for a claim marker newer than
// the run's own while the status stayed the run's: it stores a claim
// marker of the run's and writes the status with it (claim_seq) at
// held's revision, and returns the entry written. A claim that took the
// mission since changed the revision, and the write fails; one whose
// status write is still to come fails its write, and reads the status
// this one wrote before it claims again.
func (w *Worker) refence(ctx context.Context, k missionKey, held *statusEntry) (*statusEntry, error) {
	seq, err := markClaim(ctx, w.nc, w.st, k, w.cfg.ID)
	if err != nil {
		return nil, err
	}
	e := *held
	e.st.ClaimSeq = seq
	if e.rev, e.data, err = casStatusKept(ctx, w.st, e.st, held.rev); err != nil {
		return nil, fmt.Errorf("fleet: status of mission %s with its new claim marker: %w", k.id, err)
	}
	return &e, nil
}

// storedAfterClaim reports whether the claimed mission needs no run: its
// result is stored (the message is then settled), or it cannot be told
// whether it is (the message goes back to the queue). The stored result is
// the truth, read once the claim's marker and status are written: the
// previous owner publishes its result under its claim fence (finish), so
// a result this read misses is one the stream refuses (where RESULTS
// took the marker: Stores.claimMarkers).
func (w *Worker) storedAfterClaim(ctx context.Context, msg jetstream.Msg, k missionKey, log *zerolog.Logger) bool {
	stored, err := readResult(ctx, w.st, k)
	switch {
	case err == nil:
		w.settleStored(ctx, msg, k, stored, log)
		return true
	case errors.Is(err, ErrNotFound):
		return false
	default:
		// Running it could repeat a finished mission's calls.
		log.Warn().Err(err).Msg("result unreadable; retrying later")
		_ = msg.NakWithDelay(w.cfg.NakDelay)
		return true
	}
}

// settleStored acks a message whose mission has a stored result though its
// status is not final, and makes the status final.
func (w *Worker) settleStored(ctx context.Context, msg jetstream.Msg, k missionKey, stored *messages.Step, log *zerolog.Logger) {
	final := stateOf(stored)
	_, err := updateStatus(ctx, w.st, k, func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Replayed = final, stored.Replayed
		if stored.Fail != nil {
			s.Reason = stored.Fail.Reason
		}
		return true
	})
	if err != nil {
		log.Warn().Err(err).Msg("final status not written")
	}
	log.Info().Str("state", final).Msg("mission already has a result; acking without running it")
	_ = msg.Ack()
}

// settleFinished acks a message whose mission already finished, making sure
// its result is stored (a cancel of a queued mission may have crashed
// between the status and the result).
func (w *Worker) settleFinished(ctx context.Context, msg jetstream.Msg, k missionKey, st messages.Status, log *zerolog.Logger) {
	if _, err := readResult(ctx, w.st, k); errors.Is(err, ErrNotFound) {
		reason := st.Reason
		if reason == "" {
			reason = ReasonRunnerError
		}
		_, _, _ = publishResult(ctx, w.js, w.st, k, failStep(reason, "the mission ended as %s", st.State), claimFence{})
	}
	log.Debug().Str("state", st.State).Msg("mission already finished; acking")
	_ = msg.Ack()
}

func (w *Worker) safeRun(ctx context.Context, m *messages.Mission, env *RunEnv) (step *messages.Step, err error) {
	defer func() {
		if p := recover(); p != nil {
			env.Logger.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("runner panicked")
			step, err = failStep(ReasonRunnerPanic, "the runner crashed: %v", p), nil
		}
	}()
	w.stats.runs.Add(1)
	return w.cfg.Runner.Run(ctx, m, *env)
}

// heartbeatPeriod is the interval of a running mission's heartbeats.
func (w *Worker) heartbeatPeriod() time.Duration { return max(w.ackWait/3, 10*time.Millisecond) }

// heartbeat keeps the message in progress and the status fenced until
// its stop is called, beating first after first (at once when it is not
// positive) and then every heartbeatPeriod. It cancels the run when the
// status shows a cancel request (ErrCancelled) or another owner
// (ErrFenced). Each beat renews the mission's quota lease (nil: none).
// The beats run on a timer, not on a goroutine of their own, so a mission
// waiting on a model holds none for them: a beat that comes due joins the
// worker's queue of due beats (beatQueue), which beats at most
// maxBeatsInFlight missions at once, however many come due together.
// stop waits for a beat in progress and no beat starts after it.
func (w *Worker) heartbeat(msg jetstream.Msg, k missionKey, entry *atomic.Pointer[statusEntry], lease *quotaLease, cancel context.CancelCauseFunc, first time.Duration) *beats {
	b := &beats{w: w, msg: msg, k: k, entry: entry, lease: lease, cancel: cancel, start: time.Now()}
	b.mu.Lock() // the first beat waits until t is set
	defer b.mu.Unlock()
	b.t = startFlushTimer(b, max(first, 0))
	return b
}

// timerFired queues b's beat, its timer having fired.
func (b *beats) timerFired() {
	// The message's AckWait is extended as the beat comes due, not when
	// the queue reaches it: however many beats wait their turn (a status
	// stream without a leader a while answers none), no mission goes
	// back to the queue while its run goes on.
	// not under b.mu: a beat of owned may hold it for its requests' time,
	// which the timer's goroutine need not wait
	if !b.stopped.Load() {
		_ = b.msg.InProgress()
	}
	b.w.beatq.add(b)
}

// maxBeatsInFlight bounds the heartbeats a worker sends at once. A beat
// is one or two JetStream requests (the quota lease, the status); its
// goroutine waits for their answers with a stack of its own. Thousands of
// missions started in one burst come due in one burst every period: beaten
// each on its own goroutine, they held one more goroutine and its stack a
// mission while the server answered them all. The server answers requests
// in turn, so this many in flight keep it as busy as all of them would.
const maxBeatsInFlight = 64

// beatQueue holds the heartbeats that came due and runs them, oldest
// first, on at most maxBeatsInFlight goroutines, started as beats come due
// and ended once none is left. Its zero value is ready.
type beatQueue struct {
	mu      sync.Mutex
	due     []*beats
	head    int // due[head:] wait to be beaten
	running int // goroutines beating
}

// add queues b's beat and starts a goroutine to beat it when fewer than
// maxBeatsInFlight run.
func (q *beatQueue) add(b *beats) {
	q.mu.Lock()
	if q.head > 0 && q.head >= len(q.due)/2 {
		// the beaten half goes, so a queue never emptied stays bounded
		n := copy(q.due, q.due[q.head:])
		clear(q.due[n:])
		q.due, q.head = q.due[:n], 0
	}
	q.due = append(q.due, b)
	start := q.running < maxBeatsInFlight
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start {
		go q.run()
	}
}

// run beats the queued missions in turn until none is left.
func (q *beatQueue) run() {
	for {
		q.mu.Lock()
		if q.head == len(q.due) {
			clear(q.due)
			q.due, q.head = q.due[:0], 0
			q.running--
			q.mu.Unlock()
			return
		}
		b := q.due[q.head]
		q.due[q.head] = nil
		q.head++
		q.mu.Unlock()
		b.beatDue()
	}
}

// beats are a running mission's heartbeats (Worker.heartbeat).
type beats struct {
	w      *Worker
	msg    jetstream.Msg
	k      missionKey
	entry  *atomic.Pointer[statusEntry]
	lease  *quotaLease
	cancel context.CancelCauseFunc
	start  time.Time
	// confirmed is when (since start) a beat last found the mission this
	// run's
	confirmed atomic.Int64

	mu sync.Mutex
	// t fires each beat; taken from the worker's missions before and
	// given back at stop (flushTimer), nil after
	t *flushTimer
	// stopped: no beat starts any more (set with mu held, read with or
	// without it)
	stopped atomic.Bool
}

// beatLocked beats once with b.mu held (the message's progress sent by
// its caller); it reports whether the beats go on (false once the mission
// is another's, the run cancelled) and whether this beat confirmed the
// mission this run's.
func (b *beats) beatLocked() (alive, confirmed bool) {
	alive, confirmed = b.w.beat(b.k, b.entry, b.lease, b.cancel)
	if confirmed {
		b.confirmed.Store(int64(time.Since(b.start)))
	}
	if !alive {
		b.stopped.Store(true)
	}
	return alive, confirmed
}

// beatDue beats once, the beat having come due, and sets the next one
// unless the beats have ended.
func (b *beats) beatDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped.Load() {
		return
	}
	if alive, _ := b.beatLocked(); !alive {
		return
	}
	b.t.reset(b.w.heartbeatPeriod())
}

// stop ends the beats, waiting for one in progress.
func (b *beats) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped.Store(true)
	if b.t != nil {
		b.t.release()
		b.t = nil
	}
}

// owned returns nil when the run may send a request that costs or acts
// (a model call, a tool call): while the beats confirm the mission this
// run's, at no cost. Once no beat has confirmed it for two heartbeat
// periods (NATS unreachable a while, so the message may have gone to
// another worker), or the worker's connection dropped since the last
// confirmation (a server that restarted redelivers the messages it had
// given out, at once, to whichever worker asks first), it beats at once,
// and again while the status cannot be read, before the request leaves;
// it returns the run's cancel cause once the mission is another's
// (ErrFenced) or ctx ends.
func (b *beats) owned(ctx context.Context) error {
	period := b.w.heartbeatPeriod()
	for {
		// the status in hand is the last one confirmed, with the drop
		// signal taken before it was (statusEntry.drops)
		if time.Since(b.start)-time.Duration(b.confirmed.Load()) <= 2*period && !b.entry.Load().drops.fired() {
			return nil
		}
		b.mu.Lock()
		alive, confirmed := false, false
		if !b.stopped.Load() {
			_ = b.msg.InProgress()
			alive, confirmed = b.beatLocked()
		}
		b.mu.Unlock()
		switch {
		case confirmed:
			return nil
		case !alive && ctx.Err() == nil:
			return ErrFenced
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(min(period, 250*time.Millisecond)):
		}
	}
}

// beat is one heartbeat's requests (its caller sends the message's
// progress): the quota lease renewed, the status fenced by compare-and-set
// (or read again when that fails). alive is false once the mission is
// another's, after cancelling the run; confirmed is true when the status
// was read or written as this run's.
func (w *Worker) beat(k missionKey, entry *atomic.Pointer[statusEntry], lease *quotaLease, cancel context.CancelCauseFunc) (alive, confirmed bool) {
	ctx, c := context.WithTimeout(context.Background(), max(w.ackWait/3, time.Second))
	defer c()
	lease.renew(ctx)
	e := entry.Load()
	drops := w.drops.signal()
	rev, data, err := casStatusKept(ctx, w.st, e.st, e.rev)
	if err == nil {
		entry.Store(&statusEntry{st: e.st, rev: rev, data: data, drops: drops})
		return true, true
	}
	cur, gerr := getStatus(ctx, w.st, k)
	if gerr != nil {
		return true, false // transient; try again next beat
	}
	cur.drops = drops
	switch {
	case cur.st.Worker != w.cfg.ID || cur.st.Attempt != e.st.Attempt || cur.st.State != messages.StateRunning:
		if cur.st.CancelRequested && cur.st.Worker == w.cfg.ID {
			cancel(&cancelledError{reason: cur.st.CancelReason})
		} else {
			cancel(ErrFenced)
		}
		return false, false
	case cur.st.CancelRequested:
		entry.Store(cur)
		cancel(&cancelledError{reason: cur.st.CancelReason})
	default:
		entry.Store(cur)
	}
	return true, true
}

// finish stores step as the mission's result (exactly once), records the
// final status and acks. record (nil: none) is the mission's record, kept
// for step.Record (storeRecord). The status is read for the last fence
// check, then the record and the result are published: in one atomic
// batch where RESULTS stages batches in memory (Stores.batchResults,
// publishWithRecord), else, and when the batch is refused, the record
// first and the result after another fence check. When the result cannot
// be stored, the run's journal (nil: none) is flushed before the mission
// goes back to the queue; once it is stored, the mission's journal is
// purged. It reports whether the mission has its result stored (by this
// run or an earlier one): the mission is over.
func (w *Worker) finish(ctx context.Context, msg jetstream.Msg, k missionKey, em *emitter, step *messages.Step, entry *statusEntry, journal *Journal, record *missionRecord, log *zerolog.Logger) bool {
	id := k.id
	// notStored sends the mission back to the queue with its answers
	// journaled and its events out: its result is not stored.
	notStored := func() bool {
		flushJournal(ctx, journal, log)
		em.Flush()
		_ = msg.NakWithDelay(w.cfg.NakDelay)
		attemptFrom(ctx).setOutcome("result_not_stored")
		return false
	}
	// The stream fences the result: a new owner stores a claim marker
	// before it reads whether a result is stored (storedAfterClaim), and
	// this run's result is published under its fence (the marker it
	// knows, entry's ClaimSeq), so a run that lost the mission stores
	// nothing (errClaimedSince), however long its publish was held (a
	// connection reconnecting, a stalled process). Only where RESULTS
	// holds no markers (a layout set up before them, fence unset), or
	// where the worker's connection dropped since the status in hand was
	// confirmed (a new owner's marker may have found no RESULTS leader in
	// time), is the status read for a last check just before the
	// publish: a worker that lost the mission publishes nothing, and one
	// that cannot tell tries again later; without markers a publish held
	// past a new owner's claim and read can then still land.
	// fenceHolds reports, from the status the check read, whether the
	// result may be published; fenceCheck reads it and says the same.
	fenceHolds := func(cur *statusEntry, err error) bool {
		if err != nil && !errors.Is(err, ErrNotFound) {
			log.Warn().Err(err).Msg("status unreadable before the result; retrying later")
			notStored()
			return false
		}
		if err == nil && entry != nil &&
			(cur.st.Worker != w.cfg.ID || cur.st.Attempt != entry.st.Attempt) && !messages.TerminalState(cur.st.State) {
			log.Warn().Str("owner", cur.st.Worker).Msg("mission taken over; not publishing")
			em.drop()
			w.cfg.Metrics.fencedRun()
			attemptFrom(ctx).setOutcome("fenced")
			return false
		}
		return true
	}
	// The check reads the status; one still at the revision the worker
	// holds (entry) is the worker's own, and is not decoded again.
	fenceCheck := func() bool { return fenceHolds(getStatusAtHeld(ctx, w.st, k, entry)) }
	var (
		stored *messages.Step
		mine   bool
		err    error
	)
	var fence claimFence
	if w.st.claimMarkers && entry != nil {
		fence = claimFence{set: true, seq: entry.st.ClaimSeq}
	}
	// The status is read before the result where the stream does not
	// fence it, and where the worker's connection dropped since the status
	// in hand was confirmed: a claim that took the mission meanwhile and
	// whose marker RESULTS did not take in time is seen there.
	readStatus := !fence.set || entry.drops.fired()
	batched := false
	var recData []byte // the record, encoded for the batch
	if record != nil && w.st.batchResults && w.st.ResultObjects != nil {
		buf := getPublishBuffer()
		defer putPublishBuffer(buf)
		if encodeRecord(buf, record) == nil {
			recData = buf.Bytes()
		}
		if recData != nil && len(recData) <= maxInlineRecord {
			if readStatus && !fenceCheck() {
				return false
			}
			if w.resultHeld != nil {
				w.resultHeld(k)
			}
			stored, mine, err = publishWithRecord(ctx, w.js, w.st, k, step, recData, fence)
			batched = !errors.Is(err, errBatchRefused)
			if !batched {
				log.Debug().Err(err).Msg("record and result batch refused; publishing them one after the other")
			}
		}
	}
	if !batched {
		switch {
		case !readStatus:
			if record != nil {
				step.Record = w.storeRecord(ctx, k, record, recData, nil, log)
			}
		case record != nil:
			// The fence check is sent first and answered while the record
			// is written: one round trip fewer before the result, and the
			// time between the check and the publish is one round trip
			// and the record's write, which on one replica is no longer
			// than the check's answer (a replicated RESULTS batches them,
			// above)
			read := sendFenceRead(ctx, w.nc, w.st, w.replies, k, entry)
			step.Record = w.storeRecord(ctx, k, record, recData, nil, log)
			if !fenceHolds(read.wait()) {
				return false
			}
		case !fenceCheck():
			return false
		}
		if w.resultHeld != nil {
			w.resultHeld(k)
		}
		stored, mine, err = publishResult(ctx, w.js, w.st, k, step, fence)
	}
	if errors.Is(err, errUnreadableResult) && len(step.Trace) > 0 {
		// the trace (every tool result the programs read) is what a
		// reader cannot take more often than the answer: the answer or
		// failure is kept without it
		log.Warn().Err(err).Msg("result refused with its trace: storing it without")
		stored, mine, err = publishResult(ctx, w.js, w.st, k, withoutTrace(step, err), fence)
	}
	if errors.Is(err, errUnreadableResult) {
		log.Warn().Err(err).Msg("result refused: its readers could not decode it")
		stored, mine, err = publishResult(ctx, w.js, w.st, k, unreadableStep(step, err), fence)
	}
	if errors.Is(err, errClaimedSince) {
		// A newer claim marker than this run's: the status names the
		// run that wrote it (fenceCheck drops this run's work), or the
		// claim that wrote it lost its status write and dropped its
		// copy of the message (a duplicate, a stale delivery), or this
		// run's own marker landed after its claim stopped waiting for
		// it; or the run's marker is gone (expired with the stream's
		// MaxAge while the mission awaited approval), and none is newer.
		// The status is still this run's: the run fences its result
		// anew (refence) and publishes it again, rather than send the
		// mission back to run again, which on its last delivery would
		// leave it dead.
		if !fenceCheck() {
			return false
		}
		again, rerr := w.refence(ctx, k, entry)
		if rerr == nil {
			entry, fence = again, claimFence{set: true, seq: again.st.ClaimSeq}
			if record != nil && step.Record == nil {
				// the refused batch's record
				step.Record = w.storeRecord(ctx, k, record, recData, nil, log)
			}
			stored, mine, err = publishResult(ctx, w.js, w.st, k, step, fence)
		}
		if rerr != nil || errors.Is(err, errClaimedSince) {
			if fenceCheck() {
				log.Warn().Err(err).AnErr("refence", rerr).Msg("result refused for a newer claim, though the status is this run's; retrying later")
				return notStored()
			}
			return false
		}
	}
	if err != nil {
		log.Error().Err(err).Msg("result not stored; retrying later")
		return notStored()
	}
	if !mine {
		log.Info().Msg("a result was already stored; keeping it")
	}
	// The journal's answers are moot once the result is stored: this run's
	// or an earlier attempt's.
	journal.settle()
	if entry != nil && (entry.st.Suspensions > 0 || entry.st.QuotaWaits > 0) {
		if err := unpark(ctx, w.js, w.replies, id); err != nil {
			log.Warn().Err(err).Msg("parked message not removed; it expires with its TTL")
		}
	}
	if journal.holds() || (journal == nil && !w.cfg.NoJournal && entry != nil && entry.st.Attempt > 1) {
		if err := w.purgeJournal(ctx, journal, id); err != nil {
			log.Warn().Err(err).Msg("journal not purged; it expires with the stream's MaxAge")
		}
	}
	final := stateOf(stored)
	setFinal := func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Worker, s.Replayed = final, w.cfg.ID, stored.Replayed
		if stored.Fail != nil {
			s.Reason = stored.Fail.Reason
		}
		return true
	}
	err = errNoStatusInHand
	if entry != nil {
		st := entry.st
		if setFinal(&st) {
			_, err = casStatus(ctx, w.st, st, entry.rev)
		}
	}
	if err != nil {
		_, err = updateStatus(ctx, w.st, k, setFinal)
	}
	if err != nil {
		log.Warn().Err(err).Msg("final status not written")
	}
	em.Emit(&messages.Event{Kind: messages.EventFinal, Step: stored})
	w.recordStored(ctx, final, stored)
	// the message leaves the queue with those of the missions that finish
	// within ackDelay (heldAcks), or at once where that is needed
	if w.holdsAck(ctx, msg, k.sub) {
		w.acks.add(msg)
	} else if err := msg.Ack(); err != nil {
		log.Warn().Err(err).Msg("ack failed; a redelivery will find the stored result")
	}
	switch final {
	case messages.StateSucceeded:
		w.stats.succeeded.Add(1)
	case messages.StateCancelled:
		w.stats.cancelled.Add(1)
	default:
		w.stats.failed.Add(1)
	}
	log.Info().Str("state", final).Msg("mission finished")
	return true
}

// handBack returns a mission to the queue at shutdown.
func (w *Worker) handBack(ctx context.Context, msg jetstream.Msg, entry *statusEntry, log *zerolog.Logger) {
	if entry != nil {
		st := entry.st
		st.State, st.Worker = messages.StateQueued, ""
		if _, err := casStatus(ctx, w.st, st, entry.rev); err != nil {
			log.Warn().Err(err).Msg("status not reset on hand back")
		}
	}
	if err := msg.NakWithDelay(0); err != nil {
		log.Warn().Err(err).Msg("hand back failed; the mission returns after AckWait")
	}
	w.stats.handedBack.Add(1)
	w.cfg.Metrics.handBack()
	attemptFrom(ctx).setOutcome("handed_back")
	log.Info().Msg("mission handed back")
}

// retryOrDead naks a retryable failure, or dead-letters it on the last
// delivery. A last delivery whose failure Step is not stored is handed
// back as queued (keepDeadLettered): the server gives up on it after
// NakDelay, and its max-deliveries advisory stores the failure.
func (w *Worker) retryOrDead(ctx context.Context, msg jetstream.Msg, k missionKey, em *emitter, attempt int, meta *jetstream.MsgMetadata, entry *statusEntry, cause error, log *zerolog.Logger) {
	em.Flush()
	requeue := func() {
		if entry != nil {
			st := entry.st
			st.State, st.Worker = messages.StateQueued, ""
			_, _ = casStatus(ctx, w.st, st, entry.rev)
		}
	}
	if w.maxDeliver > 0 && attempt >= w.maxDeliver {
		attemptFrom(ctx).setOutcome("dead_lettered")
		if err := w.deadLetter(ctx, k, em, msg.Data(), msg.Headers(), meta.Sequence.Stream, attempt,
			fmt.Sprintf("gave up after %d attempts: %v", attempt, cause)); err != nil {
			requeue()
			w.keepDeadLettered(msg, k, meta, err)
			return
		}
		_ = msg.Term()
		return
	}
	requeue()
	w.stats.retried.Add(1)
	w.cfg.Metrics.retry()
	attemptFrom(ctx).setOutcome("retried")
	log.Warn().Err(cause).Dur("delay", w.cfg.NakDelay).Msg("retryable failure; handing back")
	_ = msg.NakWithDelay(w.cfg.NakDelay)
}

// loadContext reads the mission's context from the object store, at most
// the mission's data limit under Store.MaxContextBytes: a larger object is refused from its recorded
// size before any chunk is read, and the read itself stops one byte past
// the limit. Only transport failures are retryable.
func (w *Worker) loadContext(ctx context.Context, k missionKey, m *messages.Mission) error {
	limit := w.cfg.Store.contextLimit(m)
	// A submitter's mission reads only the context its submitter stored
	// for it, as it was stored: other submitters may write the bucket.
	if want := messages.ContextName(k.sub, k.id); m.ContextRef != want {
		return fmt.Errorf("fleet: context %s: a mission of submitter %s reads its context from %s only", m.ContextRef, k.sub, want)
	}
	info, err := w.st.Context.GetInfo(ctx, m.ContextRef)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return fmt.Errorf("fleet: context %s: %w", m.ContextRef, err)
	case err != nil:
		return fmt.Errorf("fleet: context %s: %w (%w)", m.ContextRef, err, ErrRetryable)
	case info.Digest != m.ContextDigest:
		return fmt.Errorf("fleet: context %s: the object's digest %s is not the %s its mission was submitted with: it was replaced", m.ContextRef, info.Digest, m.ContextDigest)
	case int64(info.Size) > limit:
		return fmt.Errorf("fleet: context %s is %d bytes, more than the %d a worker reads (limits.max_data, at most the operator's MaxContextBytes ceiling)", m.ContextRef, info.Size, limit)
	}
	obj, err := w.st.Context.Get(ctx, m.ContextRef)
	if err != nil {
		return fmt.Errorf("fleet: context %s: %w (%w)", m.ContextRef, err, ErrRetryable)
	}
	defer obj.Close()
	blob, err := io.ReadAll(io.LimitReader(obj, limit+1))
	switch {
	case err != nil:
		return fmt.Errorf("fleet: context %s: %w (%w)", m.ContextRef, err, ErrRetryable)
	case int64(len(blob)) > limit:
		return fmt.Errorf("fleet: context %s holds more than the %d bytes a worker reads", m.ContextRef, limit)
	}
	h := sha256.Sum256(blob)
	if got := "SHA-256=" + base64.URLEncoding.EncodeToString(h[:]); got != m.ContextDigest {
		return fmt.Errorf("fleet: context %s: the object's digest %s is not the %s its mission was submitted with: it was replaced", m.ContextRef, got, m.ContextDigest)
	}
	var c map[string]any
	if err := messages.Unmarshal(blob, &c); err != nil {
		return fmt.Errorf("fleet: context %s: %w", m.ContextRef, err)
	}
	m.Context, m.ContextRef, m.ContextDigest = c, "", ""
	return nil
}

// claimStatus reads mission k's status for a claim: its entry, or
// ErrNotFound with the submitter whose mission holds k's id in the status
// bucket ("" when none does). One read answers both when the id's last
// status is k's own or there is none (a direct get of the last status of
// any submitter with the id); when it is another submitter's, or fast is
// false (a claim retried after a conflict), k's own key is read, then the
// owner.
func (w *Worker) claimStatus(ctx context.Context, k missionKey, fast bool) (*statusEntry, string, error) {
	if fast {
		e, err := getStatus(ctx, w.st, missionKey{sub: messages.AllSubmitters, id: k.id})
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, "", err
		case err != nil:
			return nil, "", err
		case e.st.Submitter == k.sub:
			return e, "", nil
		}
	}
	cur, err := getStatus(ctx, w.st, k)
	if !errors.Is(err, ErrNotFound) {
		return cur, "", err
	}
	e, oerr := getStatus(ctx, w.st, missionKey{sub: messages.AllSubmitters, id: k.id})
	switch {
	case errors.Is(oerr, ErrNotFound):
		return nil, "", err
	case oerr != nil:
		return nil, "", oerr
	}
	return nil, e.st.Submitter, err
}

// toolbox returns the Toolbox of the mission's run (Worker.toolbox),
// which makes the run's approval gate at its first call and asks owned
// before a request leaves.
func (p *missionRun) toolbox(hdr nats.Header, owned func(context.Context) error) *Toolbox {
	b := p.w.toolbox(p.m, p.em, hdr, p.journal, p.attempt)
	b.run, b.owned = p, owned
	return b
}

// toolbox returns the Toolbox of one run of m, its calls and results
// reported through em.
func (w *Worker) toolbox(m *messages.Mission, em *emitter, hdr nats.Header, j *Journal, attempt int) *Toolbox {
	b := newToolbox(w.reg, w.nc, m.ID, m.Tools, w.cfg.ToolTimeout, w.cfg.ToolUnavailableWait, hdr)
	b.journal, b.attempt = j, attempt
	b.maxData = missionMaxData(m)
	b.replies, b.heartbeat, b.drops = w.replies, w.cfg.ToolHeartbeat, w.drops
	b.metrics, b.tracer = w.cfg.Metrics, w.tracer
	b.events = em
	return b
}
