package fleet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Metrics holds the fleet's Prometheus collectors: missions, slots, fetch
// lag, redeliveries and dead letters (recorded by a Worker), remote tool
// calls (Toolbox, client side), tool requests served (ToolService, server
// side), and model calls and program runs (recorded by the Runner through
// RunEnv.Metrics). Create one per registry with NewMetrics and share it
// between the workers and tool services of a process. Every method is safe
// for concurrent use and does nothing on a nil *Metrics, so code records
// unconditionally and pays nothing when metrics are off.
//
// Names follow Prometheus conventions: the ptc_ prefix, base units
// (seconds), _total counters and histograms for durations. Labels hold only
// bounded values: priorities, final states, fail reasons, model names, tool
// names, error codes and limit kinds — never mission ids. A label fed from
// data (a reason, a tool or model name) keeps at most maxLabelValues distinct
// values; later ones are counted under "other".
type Metrics struct {
	started     *prometheus.CounterVec
	finished    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	turns       prometheus.Histogram
	slots       prometheus.Gauge
	busy        prometheus.Gauge
	memReserved prometheus.Gauge
	ackPending  prometheus.Gauge
	fetchLag    *prometheus.HistogramVec
	redelivered prometheus.Counter
	retried     prometheus.Counter
	handedBack  prometheus.Counter
	dead        *prometheus.CounterVec
	fenced      prometheus.Counter

	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	served       *prometheus.CounterVec
	serveTime    *prometheus.HistogramVec

	llmRequests *prometheus.CounterVec
	llmErrors   *prometheus.CounterVec
	llmDuration *prometheus.HistogramVec
	llmTokens   *prometheus.CounterVec

	programs    *prometheus.CounterVec
	programTime prometheus.Histogram
	limitHits   *prometheus.CounterVec

	budgetUSD      *prometheus.CounterVec
	budgetTokens   *prometheus.CounterVec
	budgetRefusals *prometheus.CounterVec
	budgetAlerts   *prometheus.CounterVec
	budgetCASLost  *prometheus.CounterVec
	budgetPending  *prometheus.GaugeVec

	quotaWaits   *prometheus.CounterVec
	quotaLeased  *prometheus.GaugeVec
	quotaRefusal *prometheus.CounterVec

	wakesMoved *prometheus.CounterVec
	// stalled counts missions the fleet's sweep queued again because
	// their decision's wake was lost.
	stalled *prometheus.CounterVec

	reasons, tools, models, codes, submitters labelSet
}

// maxLabelValues bounds the distinct values of a label fed from data.
const maxLabelValues = 64

// labelOther replaces label values beyond maxLabelValues or not fit to be
// a label value.
const labelOther = "other"

// labelSet admits up to maxLabelValues distinct label values.
type labelSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *labelSet) get(v string) string {
	if v == "" {
		return v
	}
	if len(v) > 64 || !messages.ValidName(v) {
		return labelOther
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[v] {
		return v
	}
	if len(s.seen) >= maxLabelValues {
		return labelOther
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[v] = true
	return v
}

// Duration buckets in seconds: dispatch and tool calls sit in the
// milliseconds, model calls and missions in seconds to minutes.
var (
	fastBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	slowBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// NewMetrics creates the fleet's collectors and registers them with reg
// (prometheus.NewRegistry(), or prometheus.DefaultRegisterer). Registering
// twice with one registry fails: share the *Metrics instead.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("fleet: NewMetrics needs a registerer")
	}
	m := &Metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_missions_started_total",
			Help: "Mission runs started by this process (every delivery that was claimed), by priority."}, []string{"priority"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_missions_finished_total",
			Help: "Missions whose result this process stored, by final state and fail reason (empty when succeeded)."}, []string{"state", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ptc_mission_duration_seconds",
			Help: "Time from submit to stored result, by final state.", Buckets: slowBuckets}, []string{"state"}),
		turns: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ptc_mission_turns",
			Help: "Turns (model answers) per finished mission.", Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50}}),
		slots: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ptc_worker_slots",
			Help: "Mission slots of the running workers of this process."}),
		busy: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ptc_worker_slots_busy",
			Help: "Mission slots holding a mission now."}),
		ackPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ptc_worker_max_ack_pending",
			Help: "MaxAckPending of the mission consumers as the last worker of this process started read it: missions of a priority the fleet holds at once (-1: unlimited)."}),
		memReserved: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ptc_worker_memory_reserved_bytes",
			Help: "Memory the running missions reserved in their workers' memory budgets (what they may hold from tools)."}),
		fetchLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ptc_mission_fetch_lag_seconds",
			Help: "Time a mission waited in the queue before a worker fetched it (first delivery), by priority.", Buckets: slowBuckets}, []string{"priority"}),
		redelivered: prometheus.NewCounter(prometheus.CounterOpts{Name: "ptc_mission_redeliveries_total",
			Help: "Deliveries of a mission after its first (a retry, a hand-back or a lost worker)."}),
		retried: prometheus.NewCounter(prometheus.CounterOpts{Name: "ptc_missions_retried_total",
			Help: "Retryable failures handed back to the queue with a delay."}),
		handedBack: prometheus.NewCounter(prometheus.CounterOpts{Name: "ptc_missions_handed_back_total",
			Help: "Missions handed back to the queue by a draining worker."}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_dead_letters_total",
			Help: "Mission messages moved to the DEAD stream, by reason (max_deliveries or invalid_mission)."}, []string{"reason"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "ptc_fenced_runs_total",
			Help: "Runs stopped because another worker took the mission over."}),

		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_tool_calls_total",
			Help: "Remote tool calls made by missions, by tool and error code (ok when it succeeded)."}, []string{"tool", "code"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ptc_tool_call_duration_seconds",
			Help: "Duration of remote tool calls seen by the caller, by tool.", Buckets: fastBuckets}, []string{"tool"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_tool_requests_total",
			Help: "Tool requests served by tool services, by service, tool and error code (ok when it succeeded)."}, []string{"service", "tool", "code"}),
		serveTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ptc_tool_request_duration_seconds",
			Help: "Time tool services spent serving a request, by service and tool.", Buckets: fastBuckets}, []string{"service", "tool"}),

		llmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_llm_requests_total",
			Help: "Model requests (each retry counts), by model name."}, []string{"model"}),
		llmErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_llm_request_errors_total",
			Help: "Model requests that failed, by model name."}, []string{"model"}),
		llmDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ptc_llm_request_duration_seconds",
			Help: "Duration of model requests, by model name.", Buckets: slowBuckets}, []string{"model"}),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_llm_tokens_total",
			Help: "Tokens used by model requests, by model name and kind (input, output, cache_read, cache_write)."}, []string{"model", "kind"}),

		programs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_program_runs_total",
			Help: "PTC-Lisp programs run, by outcome (ok, or the error reason: type_error, timeout, step_limit, ...)."}, []string{"outcome"}),
		programTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ptc_program_duration_seconds",
			Help: "Duration of PTC-Lisp program runs, tool calls included.", Buckets: fastBuckets}),
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_program_limit_hits_total",
			Help: "PTC-Lisp programs stopped by a limit, by kind (timeout, memory_limit, step_limit, loop_limit, depth_limit)."}, []string{"kind"}),

		budgetUSD: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_spend_usd_total",
			Help: "Estimated cost in US dollars of the model calls missions made (at the models' prices), by tenant, submitter and model."}, []string{"tenant", "submitter", "model"}),
		budgetTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_spend_tokens_total",
			Help: "Tokens (prompt and output) of the model calls missions made, by tenant, submitter and model."}, []string{"tenant", "submitter", "model"}),
		budgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_budget_refusals_total",
			Help: "Model calls a fleet-wide budget refused (their missions end budget_exceeded), by tenant and submitter."}, []string{"tenant", "submitter"}),
		budgetAlerts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_budget_alerts_total",
			Help: "Fleet-wide budgets that reached 80 or 100 percent in their period, by tenant, submitter (empty: the account's budget), window and level."}, []string{"tenant", "submitter", "window", "level"}),
		budgetCASLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_budget_conflicts_total",
			Help: "Compare-and-set writes of a budget's spend that lost to another worker's and were tried again, by tenant and op (reserve, settle)."}, []string{"tenant", "op"}),
		budgetPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ptc_budget_settles_pending",
			Help: "Model calls whose budget settle failed and is tried again in the background, by tenant."}, []string{"tenant"}),

		quotaWaits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_quota_waits_total",
			Help: "Missions parked to wait because their submitter ran as many missions as its running quota allows, by tenant and submitter."}, []string{"tenant", "submitter"}),
		quotaLeased: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ptc_quota_leases",
			Help: "Missions running under a per-submitter running quota (the leases the workers hold), by tenant."}, []string{"tenant"}),
		quotaRefusal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_quota_refusals_total",
			Help: "Missions a worker failed quota_exceeded because their submitter had more queued than its quota's max_queued (published past Client.Submit's check), by tenant and submitter."}, []string{"tenant", "submitter"}),

		wakesMoved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_wakes_moved_total",
			Help: fmt.Sprintf("Wakes of parked missions (a deadline's; a decision's or a quota's MISSIONS did not take) a worker tried to move from PARKED into MISSIONS, by tenant and outcome (moved; failed: tried again, after %v and then up to every %v).", wakeRetryDelay, wakeRetryMax)}, []string{"tenant", "outcome"}),
		stalled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ptc_stalled_decisions_requeued_total",
			Help: "Missions waiting on a recorded decision with no wake queued (their decider stopped between the two) that a worker's sweep queued again, by tenant."}, []string{"tenant"}),
	}
	for _, c := range []prometheus.Collector{
		m.started, m.finished, m.duration, m.turns, m.slots, m.busy, m.memReserved, m.ackPending, m.fetchLag, m.redelivered,
		m.retried, m.handedBack, m.dead, m.fenced, m.toolCalls, m.toolDuration, m.served, m.serveTime,
		m.llmRequests, m.llmErrors, m.llmDuration, m.llmTokens, m.programs, m.programTime, m.limitHits,
		m.budgetUSD, m.budgetTokens, m.budgetRefusals, m.budgetAlerts, m.budgetCASLost, m.budgetPending, m.quotaWaits, m.quotaLeased, m.quotaRefusal,
		m.wakesMoved, m.stalled,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("fleet: register metrics: %w", err)
		}
	}
	return m, nil
}

// LLMCall records one model request: the model's name as the worker's
// registry knows it, its duration, token counts and whether it failed.
func (m *Metrics) LLMCall(model string, d time.Duration, input, output, cacheRead, cacheWrite int64, failed bool) {
	if m == nil {
		return
	}
	model = m.models.get(model)
	m.llmRequests.WithLabelValues(model).Inc()
	if failed {
		m.llmErrors.WithLabelValues(model).Inc()
	}
	m.llmDuration.WithLabelValues(model).Observe(d.Seconds())
	for _, t := range [...]struct {
		kind string
		n    int64
	}{{"input", input}, {"output", output}, {"cache_read", cacheRead}, {"cache_write", cacheWrite}} {
		if t.n > 0 {
			m.llmTokens.WithLabelValues(model, t.kind).Add(float64(t.n))
		}
	}
}

// ProgramRun records one program run: its duration and its outcome, "ok"
// or the error's reason; limit is the limit that stopped it ("" when none).
func (m *Metrics) ProgramRun(d time.Duration, outcome, limit string) {
	if m == nil {
		return
	}
	m.programs.WithLabelValues(m.codes.get(outcome)).Inc()
	m.programTime.Observe(d.Seconds())
	if limit != "" {
		m.limitHits.WithLabelValues(m.codes.get(limit)).Inc()
	}
}

func (m *Metrics) missionStarted(priority string, attempt int, queued time.Time) {
	if m == nil {
		return
	}
	m.started.WithLabelValues(priority).Inc()
	if attempt > 1 {
		m.redelivered.Inc()
	} else if !queued.IsZero() {
		m.fetchLag.WithLabelValues(priority).Observe(max(time.Since(queued), 0).Seconds())
	}
}

func (m *Metrics) missionFinished(state string, step *messages.Step, submitted time.Time) {
	if m == nil {
		return
	}
	reason := ""
	if step != nil && step.Fail != nil {
		reason = m.reasons.get(step.Fail.Reason)
	}
	m.finished.WithLabelValues(state, reason).Inc()
	if !submitted.IsZero() {
		m.duration.WithLabelValues(state).Observe(max(time.Since(submitted), 0).Seconds())
	}
	// Turns of a mission that asked no model (a compiled mission: its
	// turns are its inputs' runs) are not model answers.
	if step != nil && step.Usage.Turns > 0 && step.Usage.Requests > 0 {
		m.turns.Observe(float64(step.Usage.Turns))
	}
}

func (m *Metrics) addSlots(n int) {
	if m != nil {
		m.slots.Add(float64(n))
	}
}

func (m *Metrics) setMaxAckPending(n int) {
	if m != nil {
		m.ackPending.Set(float64(n))
	}
}

func (m *Metrics) slotBusy(n int) {
	if m != nil {
		m.busy.Add(float64(n))
	}
}

func (m *Metrics) memoryReserved(n int64) {
	if m != nil {
		m.memReserved.Add(float64(n))
	}
}

func (m *Metrics) fencedRun() {
	if m != nil {
		m.fenced.Inc()
	}
}

func (m *Metrics) retry() {
	if m != nil {
		m.retried.Inc()
	}
}

func (m *Metrics) handBack() {
	if m != nil {
		m.handedBack.Inc()
	}
}

func (m *Metrics) deadLetter(reason string) {
	if m != nil {
		m.dead.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) toolCall(tool string, d time.Duration, err error) {
	if m == nil {
		return
	}
	tool = m.tools.get(tool)
	m.toolCalls.WithLabelValues(tool, m.codes.get(toolErrCode(err))).Inc()
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

func (m *Metrics) toolServed(service, tool, code string, d time.Duration) {
	if m == nil {
		return
	}
	tool = m.tools.get(tool)
	m.served.WithLabelValues(service, tool, m.codes.get(code)).Inc()
	m.serveTime.WithLabelValues(service, tool).Observe(d.Seconds())
}

// toolErrCode is the metric code of a tool call's outcome.
func toolErrCode(err error) string {
	if err == nil {
		return "ok"
	}
	var te *ToolError
	if errors.As(err, &te) && te.Code != "" {
		return te.Code
	}
	return "canceled"
}

// budgetSpend records what a model call of a submitter's mission spent.
func (m *Metrics) budgetSpend(tenant, submitter, model string, usd float64, tokens int64) {
	if m == nil {
		return
	}
	submitter, model = m.submitters.get(submitter), m.models.get(model)
	if usd > 0 {
		m.budgetUSD.WithLabelValues(tenant, submitter, model).Add(usd)
	}
	if tokens > 0 {
		m.budgetTokens.WithLabelValues(tenant, submitter, model).Add(float64(tokens))
	}
}

// budgetRefused records a model call a budget refused.
func (m *Metrics) budgetRefused(tenant, submitter string) {
	if m == nil {
		return
	}
	m.budgetRefusals.WithLabelValues(tenant, m.submitters.get(submitter)).Inc()
}

// budgetAlert records a budget of scope reaching level percent.
func (m *Metrics) budgetAlert(tenant, scope, window string, level int) {
	if m == nil {
		return
	}
	submitter, _ := strings.CutPrefix(scope, "submitter.")
	if scope == BudgetAccount {
		submitter = ""
	}
	m.budgetAlerts.WithLabelValues(tenant, m.submitters.get(submitter), window, strconv.Itoa(level)).Inc()
}

// budgetConflicts records n compare-and-set writes of op (reserve,
// settle) on a budget's spend lost to another worker's.
func (m *Metrics) budgetConflicts(tenant, op string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.budgetCASLost.WithLabelValues(tenant, op).Add(float64(n))
}

// budgetSettling records a settle starting (1) or ending (-1) its tries
// in the background.
func (m *Metrics) budgetSettling(tenant string, d float64) {
	if m == nil {
		return
	}
	m.budgetPending.WithLabelValues(tenant).Add(d)
}

// quotaWait records a mission parked to wait for its submitter's running
// quota.
func (m *Metrics) quotaWait(tenant, submitter string) {
	if m == nil {
		return
	}
	m.quotaWaits.WithLabelValues(tenant, m.submitters.get(submitter)).Inc()
}

// quotaLeases records a quota lease taken (1) or given back (-1).
func (m *Metrics) quotaLeases(tenant string, d float64) {
	if m == nil {
		return
	}
	m.quotaLeased.WithLabelValues(tenant).Add(d)
}

// wakeMove records a wake's move from PARKED into MISSIONS: moved, or
// failed (tried again).
func (m *Metrics) wakeMove(tenant string, moved bool) {
	if m == nil {
		return
	}
	outcome := "failed"
	if moved {
		outcome = "moved"
	}
	m.wakesMoved.WithLabelValues(tenant, outcome).Inc()
}

// stalledRequeued records a mission the sweep for stalled decisions
// queued again.
func (m *Metrics) stalledRequeued(tenant string) {
	if m == nil {
		return
	}
	m.stalled.WithLabelValues(tenant).Inc()
}

// quotaRefused records a mission failed quota_exceeded.
func (m *Metrics) quotaRefused(tenant, submitter string) {
	if m == nil {
		return
	}
	m.quotaRefusal.WithLabelValues(tenant, m.submitters.get(submitter)).Inc()
}
