package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
)

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
	// Store configures the streams, consumers and buckets (EnsureStores at
	// Start; with Store.VerifyOnly the worker only waits for them to
	// exist). Its AckWait and MaxDeliver define the consumers; the worker
	// reads them back from the consumer (heartbeats every AckWait/3).
	Store StoreConfig
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
	// spec set one. Default messages.DefaultMissionTimeout.
	MissionTimeout time.Duration
	// ToolTimeout bounds one remote tool call. Default DefaultToolTimeout; at most
	// MaxToolTimeout.
	ToolTimeout time.Duration
	// ToolUnavailableWait bounds how long a tool call keeps retrying a
	// discovered tool whose service has no responders (restarting, or
	// resubscribing after a NATS reconnect), within the call's timeout;
	// how long a call whose tool discovery hears no answer from NATS
	// looks the tool up again before its run is handed back
	// (docs/fleet.md); and how long a call that needs approval asks an
	// approval store that does not answer again before its run is handed
	// back (docs/approvals.md). Default 3s.
	ToolUnavailableWait time.Duration
	// ToolHeartbeat is the interval at which tool services that offer
	// progress messages (MetaHeartbeat) are asked to send one while they
	// work on a call. A call that hears nothing from its service for four
	// intervals sends its request again with the same idempotency key
	// (the request or its answer was lost), within the call's timeout. A
	// call whose timeout is longer than MaxToolProgress intervals asks for
	// an interval of its timeout divided by MaxToolProgress.
	// Default 500ms (a lost request or answer costs about 2s).
	ToolHeartbeat time.Duration
	// ApprovalRules mark tool calls that wait for a person's approval on
	// this worker, whatever the mission says (a mission's own rules and
	// the tool services' add to them; docs/approvals.md).
	ApprovalRules []messages.ApprovalRule
	// ApprovalTimeout is how long a call waits for a decision when the
	// mission sets no approval.timeout; then it is denied with reason
	// approval_timeout. Default messages.DefaultApprovalTimeout; at most
	// the store's ResultTTL less an hour (the wait must not outlive the
	// mission's journal and approval records).
	ApprovalTimeout time.Duration
	// StalledAfter is how long after its decision a mission that still
	// waits, with no call pending and no wake queued (its decider
	// stopped between recording the decision and queueing the mission),
	// counts as stalled; the fleet looks for such missions this often,
	// one worker each time, and queues them again with their recorded
	// decision (docs/approvals.md, "Guarantees"). The period is the
	// fleet's: a worker sets it where none is set, and replaces one set
	// with another. Default DefaultStalledAfter; at least
	// MinStalledAfter.
	StalledAfter time.Duration
	// EventDelay is how long a progress event may wait to be published
	// with the mission's later events, as one message on EVENTS carrying
	// them all (docs/fleet.md, "Events"): it bounds how late a watcher
	// sees an event. The final event and every hand-over of the mission
	// (a suspension, a retry, a hand-back) publish what waits at once.
	// Default DefaultEventDelay; negative: each event is published on its
	// own at once.
	EventDelay time.Duration
	// NoJournal turns the turn journal off: a redelivered mission then
	// runs again from its first turn, asking the model and calling tools
	// again.
	NoJournal bool
	// ToolCacheTTL is how long discovered tool schemas are reused. Default 30s.
	ToolCacheTTL time.Duration
	// ToolMissRefresh is the minimum time between discoveries triggered by
	// a tool missing from the cache. Default 1s.
	ToolMissRefresh time.Duration
	// DiscoveryWait bounds one $SRV.INFO discovery. Default 250ms.
	DiscoveryWait time.Duration
	// ToolMissWait bounds the longer discovery a call of a tool still
	// missing after a refresh waits for, so that a service answering late
	// on a loaded machine is found (never past the call's timeout). A tool
	// no service offers costs it once per ToolMissRefresh; calls meanwhile
	// report it unavailable at once. Default 2s.
	ToolMissWait time.Duration
	// MemoryBudget bounds, in bytes, what the missions the worker runs at
	// once may hold from their tools (decoded results and the record of
	// every call): each mission reserves its program_memory, at most the
	// whole budget, before it runs, and a mission that does not fit waits
	// (its message kept in progress, first come first served) until
	// running missions finish. What a mission holds is charged to a
	// lisp.Meter limited to its reservation; over it, its program stops
	// with memory_limit (docs/lisp.md). Default (0): three quarters of
	// GOMEMLIMIT when it is set, else DefaultMemoryBudget; negative: no
	// budget (each mission is still limited to its program_memory).
	MemoryBudget int64
	// Tenant names the account (tenant) the worker serves: the tenant
	// label of the spend metrics. Default "" (no label value).
	Tenant string
	// Ceilings bound what a mission may ask for (limits, llm_retry,
	// llm_opts keys); a mission over them fails with ReasonOverLimit
	// before it runs.
	Ceilings Ceilings
	// ToolPins maps a tool name to the one service allowed to serve it; a
	// tool claimed by two services and not pinned is refused and logged
	// (DiscoverTools).
	ToolPins map[string]string
	// Logger receives the worker's logs; default zerolog.Nop().
	Logger *zerolog.Logger
	// Metrics receives the worker's Prometheus metrics (NewMetrics); nil:
	// none.
	Metrics *Metrics
	// TracerProvider records the worker's spans (mission, attempt, tool
	// calls; the Runner adds its own through RunEnv.Tracer). Build it with
	// MissionIDGenerator. Nil: no spans, trace headers pass through
	// unchanged.
	TracerProvider trace.TracerProvider
	// resultBatches, when not 0, decides whether the worker publishes a
	// mission's record and result in one atomic batch where
	// Stores.batchResults would (a replicated RESULTS): 1 on a results
	// stream of one replica too (the batch's behaviour is tested on one
	// embedded server), -1 never (what a replicated layout costs without
	// it is measured).
	resultBatches int8
	// runnerGrace, when not 0, replaces runnerGrace: how long runners
	// beyond keptRunners wait for the next mission (tests pin what a
	// loaded machine's fetch takes).
	runnerGrace time.Duration
	// runnerIdle, when not 0, replaces runnerIdle: how long the first
	// keptRunners runners wait for the next mission (tests).
	runnerIdle time.Duration
	// givenUpAfter, when not 0, replaces givenUpAfter: how long MISSIONS's
	// oldest message stays before the worker checks whether its consumer
	// gave up on it.
	givenUpAfter time.Duration
	// sweepEvery, when not 0, replaces fullSweepEvery: how often the
	// worker checks for unannounced missions and whether its full sweep's
	// backstop is due (tests that follow a mission's messages keep the
	// sweep off its path).
	sweepEvery time.Duration
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
	def(&c.MissionTimeout, messages.DefaultMissionTimeout)
	def(&c.ToolTimeout, DefaultToolTimeout)
	def(&c.ToolUnavailableWait, 3*time.Second)
	def(&c.ToolHeartbeat, defaultToolHeartbeat)
	def(&c.ApprovalTimeout, messages.DefaultApprovalTimeout)
	def(&c.StalledAfter, DefaultStalledAfter)
	if c.StalledAfter < MinStalledAfter {
		return c, fmt.Errorf("%w: stalled-after %s is under %s, the shortest period of a schedule", ErrInvalidConfig, c.StalledAfter, MinStalledAfter)
	}
	if c.EventDelay == 0 {
		c.EventDelay = DefaultEventDelay
	}
	for i, r := range c.ApprovalRules {
		if err := r.Validate(fmt.Sprintf("approval rule %d", i+1)); err != nil {
			return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	def(&c.ToolCacheTTL, 30*time.Second)
	def(&c.ToolMissRefresh, time.Second)
	def(&c.DiscoveryWait, 250*time.Millisecond)
	def(&c.ToolMissWait, toolMissWait)
	if c.ToolTimeout > MaxToolTimeout {
		return c, fmt.Errorf("%w: tool timeout %s is longer than %s, the longest a tool service's NATS user may answer for (fleet.ToolReplyWindow)",
			ErrInvalidConfig, c.ToolTimeout, MaxToolTimeout)
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = defaultMemoryBudget()
	}
	if err := checkPins(c.ToolPins); err != nil {
		return c, err
	}
	return c, nil
}

// Worker pulls missions from JetStream and runs them: N slots, one pull per
// free slot (never Consume), in-progress heartbeats every AckWait/3, status
// fenced by compare-and-set, the result stored exactly once and then acked.
// Create it with NewWorker, then Start and Stop (or Run). All methods are
// safe for concurrent use.
type Worker struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg WorkerConfig
	log zerolog.Logger
	reg *toolRegistry
	st  *Stores
	// journalDeletesRefused is set once the server refused this worker's
	// removal of a journal message by sequence as a permissions
	// violation (a NATS configuration from before the worker role held
	// it): finished journals are then rolled up only (Worker.purgeJournal).
	journalDeletesRefused atomic.Bool
	// budgets enforces the fleet-wide budgets (set at Start).
	budgets *Budgets
	// quotas enforces the per-submitter quotas (set at Start).
	quotas *Quotas
	// weights are the lanes' weights in the round robin (nil: all 1).
	weights atomic.Pointer[laneWeights]
	// lanes are the mission consumers the loop fetches from (setLanes).
	lanes []*lane
	// dueAt is when the loop last marked every lane for the full sweep
	// (markDue); only the loop goroutine reads or writes it.
	dueAt time.Time
	// bells carries the lanes (indexes in lanes) of missions heard of.
	bells chan int
	// bellLost is set when a bell found bells full: the loop then looks
	// at every lane.
	bellLost atomic.Bool
	// journalDirect is set when JOURNAL allows direct gets (a layout set
	// up before it did not): a resumed run reads its journal so
	// (openJournalOn)
	journalDirect bool
	// notices is set when MISSIONS republishes what it stores
	// (missionRepublish): the worker hears missions once stored, on
	// messages.QueuedWildcard, rather than as submitted and woken.
	notices bool
	// priorityIndex maps a priority to its index in cfg.Priorities.
	priorityIndex map[string]int
	// claimWrite, when set (by tests of this package), is called in each
	// claim of a mission with a status just before that status is
	// written: where another worker's result can land unseen by any read
	// made before the write.
	claimWrite func(k missionKey, attempt int)
	// resultHeld, when set (by tests of this package), is called in
	// finish after the last fence check and before the result's publish:
	// where a publish held by its connection (reconnecting) or its
	// process lets another worker claim the mission and read that no
	// result is stored.
	resultHeld func(k missionKey)
	// endWaiting, when set (by tests of this package), is called when an
	// ended run has given its slot back to wait for the missions queued
	// behind it (finishGate), before it waits.
	endWaiting func(k missionKey)
	// quotaParked, when set (by tests of this package), is called when a
	// mission over its running quota is parked, before its status says
	// so and its message is acked: where the mission may already be
	// queued again.
	quotaParked func(k missionKey)
	// quotaParking, when set (by tests of this package), is called when a
	// mission refused its running quota is about to be parked.
	quotaParking func(k missionKey)
	// approvalParked, when set (by tests of this package), is called when
	// a mission suspended for approval is parked and acknowledged, before
	// its worker looks for a decision made while it parked it.
	approvalParked func(k missionKey)

	// replies receives the answers and progress messages of live tool
	// calls (liveness.go).
	replies *replyMux
	// drops tells tool calls of the connection's drops (conndrops.go).
	drops *connDrops
	// pulls sends the pull requests for missions and receives their
	// answers (pull.go).
	pulls *pulls
	// strays carries to the loop the missions delivered to pulls that
	// had ended (strayPull).
	strays chan *nats.Msg
	// fetchTimer bounds the loop's no-wait fetches (fetch).
	fetchTimer *time.Timer
	// memory bounds what running missions hold from their tools
	memory *memoryBudget

	ackWait    time.Duration
	maxDeliver int
	// beatq runs the running missions' heartbeats as they come due, a
	// bounded number at once (Worker.heartbeat)
	beatq beatQueue
	// acks holds the acknowledgements of finished missions a moment, to
	// send them together (ackbatch.go)
	acks heldAcks

	slots    chan struct{} // one token per mission in hand or long poll waiting
	reserved atomic.Int32  // slot tokens held by long polls, not missions
	// changes counts missions started and ended, for giving memory back
	// once they stay unchanged (missionChanged); returnArmed says a timer
	// follows them
	changes     atomic.Int64
	returnArmed atomic.Bool
	// returnLeft is what the last give-back left the runtime holding
	// beyond what the worker kept: memory a give-back cannot free
	returnLeft atomic.Uint64
	// lookAllocs and lookAt are the heap's allocations so far and the
	// time at the last look made while missions ran (0: none since the
	// worker was last idle): the missions' allocation rate between looks
	// tells waiting from working
	lookAllocs atomic.Uint64
	lookAt     atomic.Int64
	// readMemory reads the Go runtime's memory for the give-backs (nil:
	// readRuntimeMemory; tests set the spare and the missions'
	// allocation rate with it)
	readMemory func() memReading
	// idleReturnAfter is idleReturnAfter (tests shorten it)
	idleReturnAfter time.Duration
	// giveBack gives the process's spare memory back to the operating
	// system (debug.FreeOSMemory; tests count its calls, since any worker
	// of a process gives back all of its memory)
	giveBack  func()
	slotFreed chan struct{}
	// finishes lets missions waiting to start go before the ends of runs
	// over
	finishes *finishGate
	inflight sync.WaitGroup // missions in hand; Add only from loop and its polls
	// runners hands a mission or a long poll to a runner goroutine
	// waiting for one (hand); idleRunners counts those waiting
	runners     chan runJob
	idleRunners atomic.Int32
	advisory    sync.WaitGroup // dead-letter work from advisories
	mu          sync.Mutex
	running     map[string]*runningMission
	closing     bool // guarded by mu; no new advisory work once set
	// settling holds (under mu) the MISSIONS sequences of the exhausted
	// messages this worker settles (settleExhausted): one at a time each
	settling map[uint64]struct{}
	stats    workerCounters

	runCtx    context.Context
	runCancel context.CancelCauseFunc
	stopping  chan struct{}
	loopDone  chan struct{}
	stopped   chan struct{}
	started   atomic.Bool
	ready     atomic.Bool
	// layoutLost is set when a fetch finds the consumer or stream gone.
	layoutLost atomic.Bool
	stopOnce   sync.Once
	subs       []*nats.Subscription
	tracer     trace.Tracer // nil when tracing is off
	// wakes moves PARKED's wakes into MISSIONS; nil when it could not
	// start
	wakes *wakeMover
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
	// Suspended counts missions suspended at a tool call that waits for
	// approval (docs/approvals.md), each once parked and once its worker
	// has looked for a decision made while it parked it (and queued the
	// mission if it found one).
	Suspended int64
	// DeadLettered counts messages moved to the DEAD stream (exhausted or
	// invalid); Invalid counts the invalid ones among them.
	DeadLettered, Invalid int64
}

type workerCounters struct {
	runs, succeeded, failed, cancelled, retried, handedBack, dead, invalid, suspended atomic.Int64
	// runnersStarted counts the goroutines started to poll for or run
	// missions (hand): none while a kept runner waits
	runnersStarted atomic.Int64
	// straysRun and straysBack count the missions that came for pulls
	// that had ended, run (adoptStray) or handed back to their consumer
	// (adoptStray with no slot free, strayPull with the loop behind)
	straysRun, straysBack atomic.Int64
}

// Stats returns the worker's counters, e.g. for a health endpoint.
func (w *Worker) Stats() WorkerStats {
	c := &w.stats
	return WorkerStats{
		Running: w.Running(), Runs: c.runs.Load(),
		Succeeded: c.succeeded.Load(), Failed: c.failed.Load(), Cancelled: c.cancelled.Load(),
		Retried: c.retried.Load(), HandedBack: c.handedBack.Load(), Suspended: c.suspended.Load(),
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
		nc: nc, js: js, cfg: cfg, replies: newReplyMux(nc), drops: newConnDrops(nc), memory: newMemoryBudget(cfg.MemoryBudget), idleReturnAfter: idleReturnAfter, giveBack: debug.FreeOSMemory,
		log: log.With().Str("worker", cfg.ID).Logger(),
		reg: &toolRegistry{nc: nc, ttl: cfg.ToolCacheTTL, minRefresh: cfg.ToolMissRefresh, wait: cfg.DiscoveryWait,
			missWait: cfg.ToolMissWait, pins: cfg.ToolPins},
		slots:     make(chan struct{}, cfg.Slots),
		slotFreed: make(chan struct{}, 1),
		finishes:  newFinishGate(cmp.Or(cfg.Store.AckWait, DefaultAckWait)),
		runners:   make(chan runJob),
		bells:     make(chan int, 1024),
		strays:    make(chan *nats.Msg, 64),
		running:   map[string]*runningMission{},
		stopping:  make(chan struct{}),
		loopDone:  make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	w.reg.report = w.reportDiscovery
	w.pulls = &pulls{nc: nc, stray: w.strayPull}
	w.acks.log = &w.log
	w.priorityIndex = map[string]int{}
	for i, p := range cfg.Priorities {
		w.priorityIndex[p] = i
	}
	if cfg.TracerProvider != nil {
		w.tracer = cfg.TracerProvider.Tracer(TracerName)
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
