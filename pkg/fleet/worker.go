package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Runner executes one mission. pkg/agent provides the real one; tests use
// fakes. Run returns the mission's Step (a failed Step is a normal outcome,
// with or without an error). It returns (nil, err) only when no Step could
// be produced; wrap ErrRetryable in err to have the mission handed back and
// retried after WorkerConfig.NakDelay instead of failed. Run must return
// soon after ctx is done; context.Cause(ctx) says why (ErrCancelled,
// ErrWorkerShutdown, ErrFenced, or a deadline). A successful Step is kept
// even when ctx ended meanwhile (except ErrFenced: another worker owns the
// mission); otherwise ErrCancelled turns the outcome into a "cancelled"
// Step and ErrWorkerShutdown hands the mission back. Run may be called
// concurrently for different missions.
type Runner interface {
	Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
	return f(ctx, m, env)
}

// RunEnv is what a worker gives a Runner for one mission.
type RunEnv struct {
	// Tools are the remote tools the mission names (Mission.Tools); every
	// other name is refused before any request. Tool calls made through it
	// emit tool_call and tool_result events.
	Tools *Toolbox
	// Events publishes progress events of this mission (turns, programs,
	// LLM requests). The emitter fills MissionID, Time, Worker and Attempt
	// and masks firewalled values. Never nil.
	Events Emitter
	// Logger is the worker's logger with mission_id and attempt fields; it
	// is also attached to the run's ctx (zerolog.Ctx).
	Logger zerolog.Logger
	// Attempt counts deliveries of the mission, from 1.
	Attempt int
	// WorkerID names the worker.
	WorkerID string
	// Header holds the mission message's headers (trace context); read
	// only.
	Header nats.Header
}

// Emitter publishes progress events; Emit does not block on the network and
// is safe for concurrent use.
type Emitter interface {
	Emit(ev *messages.Event)
}

// WorkerConfig configures a Worker. Every zero field takes the default
// written next to it.
type WorkerConfig struct {
	// ID names the worker in status and logs; it must be unique in the
	// fleet. Default "<hostname>-<pid>-<6 random hex digits>".
	ID string
	// Runner runs the missions. Required.
	Runner Runner
	// Slots is the number of missions run at once. Default 4.
	Slots int
	// Priorities are fetched in this order. Default messages.Priorities().
	Priorities []string
	// Store configures the streams (EnsureStores) unless SkipSetup is set.
	// Its AckWait and MaxDeliver define the consumers; the worker reads
	// them back from the consumer (heartbeats every AckWait/3).
	Store StoreConfig
	// SkipSetup binds to existing streams instead of creating them.
	SkipSetup bool
	// IdleWait is how long one long poll waits for a mission when none is
	// queued. An idle worker keeps one poll open per priority (each on a
	// free slot), so pickup is immediate whatever the priority; with fewer
	// free slots than priorities the polls rotate and IdleWait bounds the
	// pickup delay. It also bounds how long Stop waits for open polls.
	// Default 250ms with several priorities, 500ms with one.
	IdleWait time.Duration
	// NakDelay is the redelivery delay after a retryable failure. Default 5s.
	NakDelay time.Duration
	// DrainGrace is how long Stop lets running missions finish before it
	// cancels them (cause ErrWorkerShutdown) and hands them back. Default 25s.
	DrainGrace time.Duration
	// HandBackWait bounds the wait for cancelled missions to return after
	// DrainGrace. Default 5s.
	HandBackWait time.Duration
	// MissionTimeout applies when neither the mission's limits nor its agent
	// spec set one. Default 60s.
	MissionTimeout time.Duration
	// ToolTimeout bounds one remote tool call. Default 10s.
	ToolTimeout time.Duration
	// ToolCacheTTL is how long discovered tool schemas are reused. Default 30s.
	ToolCacheTTL time.Duration
	// ToolMissRefresh is the minimum time between discoveries triggered by
	// a tool missing from the cache. Default 1s.
	ToolMissRefresh time.Duration
	// DiscoveryWait bounds one $SRV.INFO discovery. Default 250ms.
	DiscoveryWait time.Duration
	// Logger receives the worker's logs; default zerolog.Nop().
	Logger *zerolog.Logger
}

func (c WorkerConfig) withDefaults() (WorkerConfig, error) {
	if c.Runner == nil {
		return c, fmt.Errorf("%w: worker needs a Runner", ErrInvalidConfig)
	}
	if c.ID == "" {
		h, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		c.ID = h + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	}
	if c.Slots <= 0 {
		c.Slots = 4
	}
	if len(c.Priorities) == 0 {
		c.Priorities = messages.Priorities()
	}
	for _, p := range c.Priorities {
		if !messages.ValidPriority(p) {
			return c, fmt.Errorf("%w: priority %q is not one of %v", ErrInvalidConfig, p, messages.Priorities())
		}
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if len(c.Priorities) == 1 {
		def(&c.IdleWait, 500*time.Millisecond)
	} else {
		def(&c.IdleWait, 250*time.Millisecond)
	}
	def(&c.NakDelay, 5*time.Second)
	def(&c.DrainGrace, 25*time.Second)
	def(&c.HandBackWait, 5*time.Second)
	def(&c.MissionTimeout, 60*time.Second)
	def(&c.ToolTimeout, 10*time.Second)
	def(&c.ToolCacheTTL, 30*time.Second)
	def(&c.ToolMissRefresh, time.Second)
	def(&c.DiscoveryWait, 250*time.Millisecond)
	return c, nil
}

// Worker pulls missions from JetStream and runs them: N slots, one Fetch per
// free slot (never Consume), in-progress heartbeats every AckWait/3, status
// fenced by compare-and-set, the result stored exactly once and then acked.
// Create it with NewWorker, then Start and Stop (or Run). All methods are
// safe for concurrent use.
type Worker struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	cfg    WorkerConfig
	log    zerolog.Logger
	reg    *toolRegistry
	st     *Stores
	consum []jetstream.Consumer

	ackWait    time.Duration
	maxDeliver int

	slots     chan struct{} // one token per mission in hand or long poll waiting
	reserved  atomic.Int32  // slot tokens held by long polls, not missions
	slotFreed chan struct{}
	inflight  sync.WaitGroup // missions in hand; Add only from loop and its polls
	advisory  sync.WaitGroup // dead-letter work from advisories
	mu        sync.Mutex
	running   map[string]context.CancelCauseFunc
	closing   bool // guarded by mu; no new advisory work once set
	stats     workerCounters

	runCtx    context.Context
	runCancel context.CancelCauseFunc
	stopping  chan struct{}
	loopDone  chan struct{}
	stopped   chan struct{}
	started   atomic.Bool
	ready     atomic.Bool
	startOnce sync.Once
	stopOnce  sync.Once
	subs      []*nats.Subscription
}

// WorkerStats counts what a worker did since it was created. All counts
// only grow.
type WorkerStats struct {
	// Running is the number of missions in hand now.
	Running int
	// Runs counts Runner invocations.
	Runs int64
	// Succeeded, Failed and Cancelled count results this worker stored or
	// found stored, by final state.
	Succeeded, Failed, Cancelled int64
	// Retried counts retryable failures handed back with NakDelay.
	Retried int64
	// HandedBack counts missions handed back at shutdown.
	HandedBack int64
	// DeadLettered counts messages moved to the DEAD stream (exhausted or
	// invalid); Invalid counts the invalid ones among them.
	DeadLettered, Invalid int64
}

type workerCounters struct {
	runs, succeeded, failed, cancelled, retried, handedBack, dead, invalid atomic.Int64
}

// Stats returns the worker's counters, e.g. for a health endpoint.
func (w *Worker) Stats() WorkerStats {
	c := &w.stats
	return WorkerStats{
		Running: w.Running(), Runs: c.runs.Load(),
		Succeeded: c.succeeded.Load(), Failed: c.failed.Load(), Cancelled: c.cancelled.Load(),
		Retried: c.retried.Load(), HandedBack: c.handedBack.Load(),
		DeadLettered: c.dead.Load(), Invalid: c.invalid.Load(),
	}
}

// NewWorker validates cfg and binds a worker to nc. It does no I/O; Start
// does. The worker does not own nc.
func NewWorker(nc *nats.Conn, cfg WorkerConfig) (*Worker, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: jetstream: %w", err)
	}
	log := zerolog.Nop()
	if cfg.Logger != nil {
		log = *cfg.Logger
	}
	w := &Worker{
		nc: nc, js: js, cfg: cfg,
		log:       log.With().Str("worker", cfg.ID).Logger(),
		reg:       &toolRegistry{nc: nc, ttl: cfg.ToolCacheTTL, minRefresh: cfg.ToolMissRefresh, wait: cfg.DiscoveryWait},
		slots:     make(chan struct{}, cfg.Slots),
		slotFreed: make(chan struct{}, 1),
		running:   map[string]context.CancelCauseFunc{},
		stopping:  make(chan struct{}),
		loopDone:  make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	w.runCtx, w.runCancel = context.WithCancelCause(context.Background())
	return w, nil
}

// ID returns the worker id.
func (w *Worker) ID() string { return w.cfg.ID }

// Ready reports whether the worker is started and not draining: the k8s
// readiness signal.
func (w *Worker) Ready() bool { return w.ready.Load() }

// Running returns the number of missions in hand.
func (w *Worker) Running() int { return max(len(w.slots)-int(w.reserved.Load()), 0) }

// Done is closed when Stop has finished.
func (w *Worker) Done() <-chan struct{} { return w.stopped }

// Start sets up the streams (unless SkipSetup), subscribes to cancels and
// max-delivery advisories and starts fetching. It returns once the worker
// is ready. Calling it twice, or after Stop, returns an error.
func (w *Worker) Start(ctx context.Context) error {
	select {
	case <-w.stopping:
		return ErrWorkerStopped
	default:
	}
	if !w.started.CompareAndSwap(false, true) {
		return fmt.Errorf("fleet: worker %s already started", w.cfg.ID)
	}
	st, err := openStores(ctx, w.js, w.cfg.Store, w.cfg.SkipSetup)
	if err != nil {
		return err
	}
	w.st = st
	for _, p := range w.cfg.Priorities {
		c := st.Consumers[p]
		w.consum = append(w.consum, c)
		if ci := c.CachedInfo(); ci != nil && w.ackWait == 0 {
			w.ackWait, w.maxDeliver = ci.Config.AckWait, ci.Config.MaxDeliver
		}
	}
	if w.ackWait <= 0 {
		w.ackWait = 30 * time.Second
	}
	if err := w.subscribe(ctx); err != nil {
		for _, s := range w.subs {
			_ = s.Unsubscribe()
		}
		w.subs = nil
		return err
	}
	go w.loop()
	w.ready.Store(true)
	w.log.Info().Int("slots", w.cfg.Slots).Dur("ack_wait", w.ackWait).Int("max_deliver", w.maxDeliver).Msg("worker started")
	return nil
}

func (w *Worker) subscribe(ctx context.Context) error {
	sub, err := w.nc.Subscribe(messages.CancelWildcard, w.onCancel)
	if err != nil {
		return fmt.Errorf("fleet: subscribe cancels: %w", err)
	}
	w.subs = append(w.subs, sub)
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
// mission is finished or handed back. Stop is idempotent; later calls wait
// for the first to finish.
func (w *Worker) Stop() error {
	w.stopOnce.Do(func() {
		w.ready.Store(false)
		close(w.stopping)
		if w.started.Load() {
			<-w.loopDone
		}
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
		for _, s := range w.subs {
			_ = s.Unsubscribe()
		}
		w.mu.Lock()
		w.closing = true
		w.mu.Unlock()
		w.advisory.Wait()
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

// loop fetches missions for free slots until Stop.
//
// While missions are queued it sweeps every priority, highest first, with
// no-wait fetches for the free slots. When nothing is queued it keeps one
// long poll (Fetch of one message, IdleWait) outstanding per priority, each
// on a slot reserved for it, so that a mission of any priority starts as soon
// as it is submitted; a poll that ends empty gives its slot back. With fewer
// free slots than priorities the polls start from a rotating priority.
func (w *Worker) loop() {
	defer close(w.loopDone)
	var polls sync.WaitGroup
	defer polls.Wait()
	n := len(w.consum)
	polling := make([]bool, n)
	pollDone := make(chan int, n)
	turn := 0
	for !w.isStopping() {
		got := 0
		for _, c := range w.consum {
			free := cap(w.slots) - len(w.slots)
			if free == 0 {
				break
			}
			got += w.fetch(c, free, false)
		}
		if got > 0 {
			continue
		}
		for k := range n {
			i := (turn + k) % n
			if polling[i] {
				continue
			}
			if !w.reserveSlot() {
				break
			}
			polling[i] = true
			polls.Add(1)
			go func() {
				defer polls.Done()
				w.poll(w.consum[i])
				pollDone <- i
			}()
		}
		turn++
		select {
		case i := <-pollDone:
			polling[i] = false
		case <-w.slotFreed:
		case <-w.stopping:
			return
		}
	}
}

// reserveSlot takes a free slot for a long poll, if there is one.
func (w *Worker) reserveSlot() bool {
	w.reserved.Add(1)
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		w.reserved.Add(-1)
		return false
	}
}

// poll waits up to IdleWait for one mission of c on a reserved slot: a
// mission that arrives takes the slot, otherwise the slot is given back.
func (w *Worker) poll(c jetstream.Consumer) {
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(w.cfg.IdleWait))
	if err != nil {
		w.log.Warn().Err(err).Msg("fetch failed")
		select {
		case <-time.After(w.cfg.IdleWait):
		case <-w.stopping:
		}
		w.reserved.Add(-1)
		w.releaseSlot()
		return
	}
	started := false
	for msg := range batch.Messages() {
		if started || w.isStopping() {
			_ = msg.NakWithDelay(0) // arrived after Stop: hand it back
			continue
		}
		started = true
		w.reserved.Add(-1)
		w.inflight.Add(1)
		go w.process(msg)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		w.log.Debug().Err(err).Msg("fetch ended")
	}
	if !started {
		w.reserved.Add(-1)
		w.releaseSlot()
	}
}

// fetch pulls up to n messages and starts them; it returns how many.
func (w *Worker) fetch(c jetstream.Consumer, n int, wait bool) int {
	var batch jetstream.MessageBatch
	var err error
	if wait {
		batch, err = c.Fetch(n, jetstream.FetchMaxWait(w.cfg.IdleWait))
	} else {
		batch, err = c.FetchNoWait(n)
	}
	if err != nil {
		w.log.Warn().Err(err).Msg("fetch failed")
		select {
		case <-time.After(w.cfg.IdleWait):
		case <-w.stopping:
		}
		return 0
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		if w.isStopping() {
			_ = msg.NakWithDelay(0) // arrived after Stop: hand it back
			continue
		}
		w.slots <- struct{}{}
		w.inflight.Add(1)
		go w.process(msg)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		w.log.Debug().Err(err).Msg("fetch ended")
	}
	return got
}

func (w *Worker) releaseSlot() {
	<-w.slots
	select {
	case w.slotFreed <- struct{}{}:
	default:
	}
}

// cancelledError is the cause of a mission cancelled by Cancel.
type cancelledError struct{ reason string }

func (e *cancelledError) Error() string        { return "fleet: mission cancelled: " + e.reason }
func (e *cancelledError) Is(target error) bool { return target == ErrCancelled }

// errMissionTimeout is the cause of a mission that ran past its timeout or
// deadline.
var errMissionTimeout = errors.New("fleet: mission timed out")

func (w *Worker) onCancel(msg *nats.Msg) {
	var c messages.Cancel
	if messages.Unmarshal(msg.Data, &c) != nil || c.Validate() != nil {
		return
	}
	w.mu.Lock()
	cancel := w.running[c.MissionID]
	w.mu.Unlock()
	if cancel != nil {
		reason := c.Reason
		if reason == "" {
			reason = "cancelled by caller"
		}
		cancel(&cancelledError{reason: reason})
	}
}

// process runs one delivered mission message to its end.
func (w *Worker) process(msg jetstream.Msg) {
	defer w.inflight.Done()
	defer w.releaseSlot()
	ctx := context.Background()
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("message without JetStream metadata")
		_ = msg.Term()
		return
	}
	attempt := int(meta.NumDelivered)
	_ = msg.InProgress() // restart AckWait now; heartbeats follow once claimed
	m, err := decodeMission(msg.Data())
	if err != nil {
		w.poison(ctx, msg, meta, err)
		return
	}
	log := w.log.With().Str("mission_id", m.ID).Int("attempt", attempt).Logger()

	// Take the mission: register for cancels first, then compare-and-set
	// the status to running by this worker.
	w.mu.Lock()
	if w.running[m.ID] != nil {
		w.mu.Unlock()
		// Redelivered to us while we still run it (a late heartbeat): the
		// run in hand acks the sequence.
		_ = msg.InProgress()
		return
	}
	runCtx, cancel := context.WithCancelCause(w.runCtx)
	w.running[m.ID] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, m.ID)
		w.mu.Unlock()
		cancel(nil)
	}()
	entry, skip := w.claim(ctx, msg, m, meta, attempt, &log)
	if skip {
		return
	}
	if entry.st.CancelRequested {
		w.finish(ctx, msg, m.ID, failStep(ReasonCancelled, "%s", entry.st.CancelReason), entry, &log)
		return
	}
	if !m.Deadline.IsZero() && time.Now().After(m.Deadline) {
		w.finish(ctx, msg, m.ID, failStep(ReasonDeadline, "the mission's deadline %s passed before it started", m.Deadline.Format(time.RFC3339)), entry, &log)
		return
	}
	if m.ContextRef != "" {
		if err := w.loadContext(ctx, m); err != nil {
			log.Warn().Err(err).Msg("context not loaded")
			w.retryOrDead(ctx, msg, m.ID, attempt, meta, entry, err, &log)
			return
		}
	}

	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, w.missionTimeout(m), errMissionTimeout)
	defer cancelTimeout()
	if !m.Deadline.IsZero() {
		var c context.CancelFunc
		runCtx, c = context.WithDeadlineCause(runCtx, m.Deadline, errMissionTimeout)
		defer c()
	}
	runCtx = log.WithContext(runCtx)

	hbDone := make(chan struct{})
	hbStop := make(chan struct{})
	var hbEntry atomic.Pointer[statusEntry]
	hbEntry.Store(entry)
	go w.heartbeat(msg, m.ID, &hbEntry, cancel, hbStop, hbDone)

	em := &emitter{nc: w.nc, missionID: m.ID, worker: w.cfg.ID, attempt: attempt}
	em.Emit(&messages.Event{Kind: messages.EventStarted})
	env := RunEnv{
		Tools:    w.toolbox(m, em, msg.Headers()),
		Events:   em,
		Logger:   log,
		Attempt:  attempt,
		WorkerID: w.cfg.ID,
		Header:   msg.Headers(),
	}
	start := time.Now()
	step, runErr := w.safeRun(runCtx, m, env)
	close(hbStop)
	<-hbDone
	entry = hbEntry.Load()
	cause := context.Cause(runCtx)
	log.Debug().Dur("duration", time.Since(start)).AnErr("run_error", runErr).AnErr("cause", cause).Msg("run returned")

	switch {
	case errors.Is(cause, ErrFenced):
		log.Warn().Msg("mission taken over by another worker; dropping this run")
		return
	case step.Ok():
		// Finished, even if a cancel, timeout or shutdown came too late to
		// matter: keep the answer.
	case errors.Is(cause, ErrWorkerShutdown):
		w.handBack(ctx, msg, m.ID, entry, &log)
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
		w.retryOrDead(ctx, msg, m.ID, attempt, meta, entry, runErr, &log)
		return
	case step == nil && runErr != nil:
		step = failStep(ReasonRunnerError, "%v", runErr)
	case step == nil:
		step = failStep(ReasonRunnerError, "the runner returned no step")
	}
	w.finish(ctx, msg, m.ID, step, entry, &log)
}

func decodeMission(data []byte) (*messages.Mission, error) {
	var m messages.Mission
	if err := messages.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (w *Worker) missionTimeout(m *messages.Mission) time.Duration {
	if m.Limits.Timeout > 0 {
		return m.Limits.Timeout
	}
	if m.Agent != nil && m.Agent.MissionTimeout > 0 {
		return m.Agent.MissionTimeout
	}
	return w.cfg.MissionTimeout
}

// claim compare-and-sets the status to running by this worker. skip is true
// when the message needs no run (already finished, duplicate, fenced); the
// message has then been settled.
func (w *Worker) claim(ctx context.Context, msg jetstream.Msg, m *messages.Mission, meta *jetstream.MsgMetadata, attempt int, log *zerolog.Logger) (*statusEntry, bool) {
	for range 8 {
		cur, err := getStatus(ctx, w.st.Status, m.ID)
		var st messages.Status
		var rev uint64
		switch {
		case errors.Is(err, ErrNotFound):
			// Published without Submit: create the status as we go.
			st = messages.Status{MissionID: m.ID, StreamSeq: meta.Sequence.Stream}
		case err != nil:
			log.Warn().Err(err).Msg("status unreadable; retrying later")
			_ = msg.NakWithDelay(w.cfg.NakDelay)
			return nil, true
		default:
			st, rev = cur.st, cur.rev
		}
		if messages.TerminalState(st.State) {
			w.settleFinished(ctx, msg, m.ID, st, log)
			return nil, true
		}
		if st.State == messages.StateRunning && st.Attempt > attempt && st.StreamSeq == meta.Sequence.Stream {
			// A later delivery of this message is already running elsewhere:
			// ours is stale. Leave the message to that delivery.
			log.Info().Str("owner", st.Worker).Int("owner_attempt", st.Attempt).Msg("stale delivery; dropping")
			return nil, true
		}
		if st.StreamSeq != 0 && st.StreamSeq != meta.Sequence.Stream {
			log.Info().Uint64("stream_seq", meta.Sequence.Stream).Uint64("status_seq", st.StreamSeq).Msg("duplicate submission; dropping")
			_ = msg.Term()
			return nil, true
		}
		st.State, st.Worker, st.Attempt, st.StreamSeq = messages.StateRunning, w.cfg.ID, attempt, meta.Sequence.Stream
		newRev, err := casStatus(ctx, w.st.Status, st, rev)
		if err == nil {
			return &statusEntry{st: st, rev: newRev}, false
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			log.Warn().Err(err).Msg("status not written; retrying later")
			_ = msg.NakWithDelay(w.cfg.NakDelay)
			return nil, true
		}
	}
	_ = msg.NakWithDelay(w.cfg.NakDelay)
	return nil, true
}

// settleFinished acks a message whose mission already finished, making sure
// its result is stored (a cancel of a queued mission may have crashed
// between the status and the result).
func (w *Worker) settleFinished(ctx context.Context, msg jetstream.Msg, id string, st messages.Status, log *zerolog.Logger) {
	if _, err := readResult(ctx, w.st.Results, id); errors.Is(err, ErrNotFound) {
		reason := st.Reason
		if reason == "" {
			reason = ReasonRunnerError
		}
		_, _, _ = publishResult(ctx, w.js, w.st.Results, id, failStep(reason, "the mission ended as %s", st.State))
	}
	log.Debug().Str("state", st.State).Msg("mission already finished; acking")
	_ = msg.Ack()
}

func (w *Worker) safeRun(ctx context.Context, m *messages.Mission, env RunEnv) (step *messages.Step, err error) {
	defer func() {
		if p := recover(); p != nil {
			env.Logger.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("runner panicked")
			step, err = failStep(ReasonRunnerPanic, "the runner crashed: %v", p), nil
		}
	}()
	w.stats.runs.Add(1)
	return w.cfg.Runner.Run(ctx, m, env)
}

// heartbeat keeps the message in progress and the status fenced until stop
// is closed. It cancels the run when the status shows a cancel request
// (ErrCancelled) or another owner (ErrFenced).
func (w *Worker) heartbeat(msg jetstream.Msg, id string, entry *atomic.Pointer[statusEntry], cancel context.CancelCauseFunc, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(max(w.ackWait/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		_ = msg.InProgress()
		ctx, c := context.WithTimeout(context.Background(), max(w.ackWait/3, time.Second))
		e := entry.Load()
		rev, err := casStatus(ctx, w.st.Status, e.st, e.rev)
		if err == nil {
			entry.Store(&statusEntry{st: e.st, rev: rev})
			c()
			continue
		}
		cur, gerr := getStatus(ctx, w.st.Status, id)
		c()
		if gerr != nil {
			continue // transient; try again next beat
		}
		switch {
		case cur.st.Worker != w.cfg.ID || cur.st.Attempt != e.st.Attempt || cur.st.State != messages.StateRunning:
			if cur.st.CancelRequested && cur.st.Worker == w.cfg.ID {
				cancel(&cancelledError{reason: cur.st.CancelReason})
			} else {
				cancel(ErrFenced)
			}
			return
		case cur.st.CancelRequested:
			entry.Store(cur)
			cancel(&cancelledError{reason: cur.st.CancelReason})
		default:
			entry.Store(cur)
		}
	}
}

// finish stores step as the mission's result (exactly once), records the
// final status and acks.
func (w *Worker) finish(ctx context.Context, msg jetstream.Msg, id string, step *messages.Step, entry *statusEntry, log *zerolog.Logger) {
	// A last fence check: a worker that lost the mission publishes nothing.
	if cur, err := getStatus(ctx, w.st.Status, id); err == nil && entry != nil &&
		(cur.st.Worker != w.cfg.ID || cur.st.Attempt != entry.st.Attempt) && !messages.TerminalState(cur.st.State) {
		log.Warn().Str("owner", cur.st.Worker).Msg("mission taken over; not publishing")
		return
	}
	stored, mine, err := publishResult(ctx, w.js, w.st.Results, id, step)
	if err != nil {
		log.Error().Err(err).Msg("result not stored; retrying later")
		_ = msg.NakWithDelay(w.cfg.NakDelay)
		return
	}
	if !mine {
		log.Info().Msg("a result was already stored; keeping it")
	}
	final := stateOf(stored)
	setFinal := func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Worker = final, w.cfg.ID
		if stored.Fail != nil {
			s.Reason = stored.Fail.Reason
		}
		return true
	}
	err = errors.New("no status in hand")
	if entry != nil {
		st := entry.st
		if setFinal(&st) {
			_, err = casStatus(ctx, w.st.Status, st, entry.rev)
		}
	}
	if err != nil {
		_, err = updateStatus(ctx, w.st.Status, id, setFinal)
	}
	if err != nil {
		log.Warn().Err(err).Msg("final status not written")
	}
	em := &emitter{nc: w.nc, missionID: id, worker: w.cfg.ID, attempt: 0}
	if entry != nil {
		em.attempt = entry.st.Attempt
	}
	em.Emit(&messages.Event{Kind: messages.EventFinal, Step: stored})
	if err := msg.Ack(); err != nil {
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
}

// handBack returns a mission to the queue at shutdown.
func (w *Worker) handBack(ctx context.Context, msg jetstream.Msg, id string, entry *statusEntry, log *zerolog.Logger) {
	if entry != nil {
		st := entry.st
		st.State, st.Worker = messages.StateQueued, ""
		if _, err := casStatus(ctx, w.st.Status, st, entry.rev); err != nil {
			log.Warn().Err(err).Msg("status not reset on hand back")
		}
	}
	if err := msg.NakWithDelay(0); err != nil {
		log.Warn().Err(err).Msg("hand back failed; the mission returns after AckWait")
	}
	w.stats.handedBack.Add(1)
	log.Info().Msg("mission handed back")
}

// retryOrDead naks a retryable failure, or dead-letters it on the last
// delivery.
func (w *Worker) retryOrDead(ctx context.Context, msg jetstream.Msg, id string, attempt int, meta *jetstream.MsgMetadata, entry *statusEntry, cause error, log *zerolog.Logger) {
	if w.maxDeliver > 0 && attempt >= w.maxDeliver {
		w.deadLetter(ctx, id, msg.Data(), msg.Headers(), meta.Sequence.Stream, attempt,
			fmt.Sprintf("gave up after %d attempts: %v", attempt, cause))
		_ = msg.Term()
		return
	}
	if entry != nil {
		st := entry.st
		st.State, st.Worker = messages.StateQueued, ""
		_, _ = casStatus(ctx, w.st.Status, st, entry.rev)
	}
	w.stats.retried.Add(1)
	log.Warn().Err(cause).Dur("delay", w.cfg.NakDelay).Msg("retryable failure; handing back")
	_ = msg.NakWithDelay(w.cfg.NakDelay)
}

// deadLetter copies a mission message to the DEAD stream and, when its id is
// known, publishes a failure Step so callers unblock.
func (w *Worker) deadLetter(ctx context.Context, id string, data []byte, hdr nats.Header, seq uint64, deliveries int, reason string) {
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
	}
	w.log.Warn().Str("mission_id", id).Uint64("stream_seq", seq).Str("reason", reason).Msg("mission dead-lettered")
	if !messages.ValidMissionID(id) {
		return
	}
	failReason := ReasonMaxDeliveries
	if deliveries == 0 {
		failReason = ReasonInvalid
	}
	stored, _, err := publishResult(ctx, w.js, w.st.Results, id, failStep(failReason, "%s", reason))
	if err != nil {
		w.log.Error().Err(err).Str("mission_id", id).Msg("dead letter result not stored")
		return
	}
	final := stateOf(stored)
	_, err = updateStatus(ctx, w.st.Status, id, func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Reason = final, failReason
		return true
	})
	if errors.Is(err, ErrNotFound) {
		_, _ = casStatus(ctx, w.st.Status, messages.Status{MissionID: id, State: final, Reason: failReason, StreamSeq: seq}, 0)
	}
	em := &emitter{nc: w.nc, missionID: id, worker: w.cfg.ID}
	em.Emit(&messages.Event{Kind: messages.EventFinal, Step: stored})
}

// poison terminates a message that does not decode or validate.
func (w *Worker) poison(ctx context.Context, msg jetstream.Msg, meta *jetstream.MsgMetadata, cause error) {
	id := msg.Headers().Get(messages.HeaderMissionID)
	reason := "invalid mission: " + cause.Error()
	w.deadLetter(ctx, id, msg.Data(), msg.Headers(), meta.Sequence.Stream, 0, reason)
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
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		raw, err := w.st.Missions.GetMsg(ctx, adv.StreamSeq)
		if err != nil {
			return // already settled
		}
		id := raw.Header.Get(messages.HeaderMissionID)
		if m, err := decodeMission(raw.Data); err == nil {
			id = m.ID
		}
		if cur, err := getStatus(ctx, w.st.Status, id); err == nil && messages.TerminalState(cur.st.State) {
			_ = w.st.Missions.DeleteMsg(ctx, adv.StreamSeq)
			return
		}
		w.deadLetter(ctx, id, raw.Data, raw.Header, adv.StreamSeq, int(adv.Deliveries),
			fmt.Sprintf("no worker finished it in %d deliveries", adv.Deliveries))
		if err := w.st.Missions.DeleteMsg(ctx, adv.StreamSeq); err != nil {
			w.log.Warn().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("exhausted mission not removed")
		}
	}()
}

func (w *Worker) loadContext(ctx context.Context, m *messages.Mission) error {
	blob, err := w.st.Context.GetBytes(ctx, m.ContextRef)
	if err != nil {
		return fmt.Errorf("fleet: context %s: %w (%w)", m.ContextRef, err, ErrRetryable)
	}
	var c map[string]any
	if err := messages.Unmarshal(blob, &c); err != nil {
		return fmt.Errorf("fleet: context %s: %w", m.ContextRef, err)
	}
	m.Context, m.ContextRef = c, ""
	return nil
}

func (w *Worker) toolbox(m *messages.Mission, em *emitter, hdr nats.Header) *Toolbox {
	b := newToolbox(w.reg, w.nc, m.ID, m.Tools, w.cfg.ToolTimeout, hdr)
	b.onCall = func(name, callID string, args map[string]any) {
		em.Emit(&messages.Event{Kind: messages.EventToolCall, Tool: name, CallID: callID, Args: args})
	}
	b.onResult = func(name, callID string, result any, err error, d time.Duration) {
		ev := &messages.Event{Kind: messages.EventToolResult, Tool: name, CallID: callID, Result: result, Duration: d}
		if err != nil {
			ev.Error = err.Error()
		}
		em.Emit(ev)
	}
	return b
}

// emitter publishes a mission's events on core NATS; the EVENTS stream
// stores them.
type emitter struct {
	nc        *nats.Conn
	missionID string
	worker    string
	attempt   int
}

func (e *emitter) Emit(ev *messages.Event) {
	if ev == nil || !messages.ValidEventKind(ev.Kind) {
		return
	}
	out := ev.Masked()
	out.Version = messages.EventVersion
	out.MissionID = e.missionID
	if out.Time.IsZero() {
		out.Time = time.Now().UTC()
	}
	out.Worker, out.Attempt = e.worker, e.attempt
	data, err := messages.Marshal(out)
	if err != nil {
		// A value with no plain form: send the event without it.
		out.Args, out.Result, out.Data = nil, nil, nil
		if data, err = messages.Marshal(out); err != nil {
			return
		}
	}
	_ = e.nc.Publish(messages.EventSubject(e.missionID, out.Kind), data)
}
