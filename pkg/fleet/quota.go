package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// QuotaDefault is the scope of the quota every submitter without one of
// its own has. A submitter's scope is QuotaSubmitterScope(name).
const QuotaDefault = "default"

// QuotaSubmitterScope returns the scope of submitter name's quota.
func QuotaSubmitterScope(name string) string { return BudgetSubmitterScope(name) }

// quotaLimitRefresh is how long a worker uses the quotas it read before
// it reads them again: a quota set or changed applies within it, and a
// fleet with no quota pays one read per key in this time, not per
// mission.
const quotaLimitRefresh = 2 * time.Second

// quotaWaitDelay is the shortest time a mission over its submitter's
// running quota waits before it is queued again; a random share of it
// is added, so that the missions that waited together do not come back
// together. The wake is scheduled to the second.
const quotaWaitDelay = time.Second

// QuotaLimit is a per-submitter quota, stored as JSON in the KV bucket
// quota_limits under its Scope. A submitter with a quota of its own has
// that one (its zero fields bound nothing); every other submitter has
// the default's.
type QuotaLimit struct {
	// Scope is QuotaDefault or QuotaSubmitterScope(name).
	Scope string `json:"scope"`
	// MaxRunning bounds the submitter's missions running at once across
	// the fleet (0: no bound).
	MaxRunning int `json:"max_running,omitempty"`
	// MaxQueued bounds the submitter's missions in MISSIONS, waiting or
	// running (0: no bound): Client.Submit refuses one more, and a worker
	// taking a mission while the submitter has more fails it
	// quota_exceeded.
	MaxQueued int `json:"max_queued,omitempty"`
	// Weight is the submitter's share of the workers' round robin over
	// the lanes: its lane gets up to Weight shares per pass (0: 1, at
	// most MaxQuotaWeight). Submitters sharing a lane share its weight,
	// the largest of theirs.
	Weight int `json:"weight,omitempty"`
}

// MaxQuotaWeight bounds QuotaLimit.Weight.
const MaxQuotaWeight = 100

// weight is q's weight, 1 when unset.
func (q QuotaLimit) weight() int { return max(q.Weight, 1) }

// Name names the quota in errors and events: "submitter alice's quota",
// "the default quota".
func (q QuotaLimit) Name() string {
	if s, ok := strings.CutPrefix(q.Scope, "submitter."); ok {
		return fmt.Sprintf("submitter %s's quota", s)
	}
	return "the default quota"
}

// empty reports whether q bounds nothing: setting it removes the quota.
func (q QuotaLimit) empty() bool { return q.MaxRunning == 0 && q.MaxQueued == 0 && q.Weight == 0 }

// Validate checks the scope and bounds; its error names the field.
func (q QuotaLimit) Validate() error {
	if s, ok := strings.CutPrefix(q.Scope, "submitter."); !(q.Scope == QuotaDefault || ok && ValidSubmitter(s)) {
		return fmt.Errorf("%w: quota scope %q: want %q or submitter.NAME (NAME: 1 to 64 letters, digits, '-', '_', '=')", ErrInvalidConfig, q.Scope, QuotaDefault)
	}
	if q.MaxRunning < 0 {
		return fmt.Errorf("%w: quota max_running %d: want ≥ 0", ErrInvalidConfig, q.MaxRunning)
	}
	if q.MaxQueued < 0 {
		return fmt.Errorf("%w: quota max_queued %d: want ≥ 0", ErrInvalidConfig, q.MaxQueued)
	}
	if q.Weight < 0 || q.Weight > MaxQuotaWeight {
		return fmt.Errorf("%w: quota weight %d: want 0 (1) to %d", ErrInvalidConfig, q.Weight, MaxQuotaWeight)
	}
	return nil
}

// QuotaLeases is the value of a submitter's key in quota_leases: the
// missions that run under its running quota, by mission id. It changes
// only by compare-and-set.
type QuotaLeases struct {
	Leases map[string]QuotaLease `json:"leases"`
	// Waiting are missions parked over the quota, oldest first (at most
	// maxQuotaWaiting): a lease given back wakes the first at once
	// instead of at its scheduled time.
	Waiting []QuotaWaiter `json:"waiting,omitempty"`
}

// QuotaWaiter is a mission parked over its submitter's running quota.
type QuotaWaiter struct {
	ID       string `json:"id"`
	Priority string `json:"priority"`
}

// maxQuotaWaiting bounds QuotaLeases.Waiting; the missions past it wake
// at their scheduled time only.
const maxQuotaWaiting = 256

// dropWaiter removes mission id from the waiting list.
func (ls *QuotaLeases) dropWaiter(id string) {
	ls.Waiting = slices.DeleteFunc(ls.Waiting, func(w QuotaWaiter) bool { return w.ID == id })
}

// QuotaLease is one running mission's hold on its submitter's running
// quota. The worker running it renews it with every heartbeat; one not
// renewed by Expires (its worker died) no longer counts.
type QuotaLease struct {
	Worker  string    `json:"worker"`
	Expires time.Time `json:"expires"`
}

// live drops the leases expired at now and returns how many are left.
func (ls *QuotaLeases) live(now time.Time) int {
	for id, l := range ls.Leases {
		if !now.Before(l.Expires) {
			delete(ls.Leases, id)
		}
	}
	return len(ls.Leases)
}

// Quotas enforces the per-submitter quotas for one worker: before a
// mission runs it takes a lease on its submitter's running quota with
// compare-and-set on quota_leases, renews it with the mission's
// heartbeats and gives it back when the run ends. Safe for concurrent
// use.
type Quotas struct {
	limits, leases jetstream.KeyValue
	js             jetstream.JetStream
	parked         jetstream.Stream
	// limitsStream is limits' stream, whose info lists the quotas (set
	// by laneWeights, whose one goroutine uses it).
	limitsStream   jetstream.Stream
	worker, tenant string
	metrics        *Metrics
	// ttl is how long a lease lasts unrenewed.
	ttl time.Duration
	// ring, when set, rings the worker's bell of a submitter's lane of a
	// priority.
	ring func(sub, priority string)
	now  func() time.Time

	mu     sync.Mutex
	cached map[string]cachedQuota
	// scopes holds each submitter's quota scope (submitterScope), made
	// once rather than at each mission; it grows as cached does, by
	// submitter.
	scopes map[string]string
}

type cachedQuota struct {
	q    *QuotaLimit
	read time.Time
}

// quotaLeaseTTL is how long a lease lasts unrenewed: two AckWaits, six
// heartbeats of the mission holding it. A killed worker's leases stop
// counting within it.
func quotaLeaseTTL(ackWait time.Duration) time.Duration { return max(2*ackWait, time.Second) }

// newQuotas returns the quotas over the layout's buckets for worker.
func newQuotas(js jetstream.JetStream, st *Stores, worker, tenant string, metrics *Metrics, ackWait time.Duration) *Quotas {
	return &Quotas{limits: st.QuotaLimits, leases: st.QuotaLeases, js: js, parked: st.Parked, worker: worker, tenant: tenant, metrics: metrics,
		ttl: quotaLeaseTTL(ackWait), now: time.Now, cached: map[string]cachedQuota{}}
}

// limit returns the quota under key, nil when none is set; read again
// after quotaLimitRefresh.
func (q *Quotas) limit(ctx context.Context, key string) (*QuotaLimit, error) {
	now := q.now()
	q.mu.Lock()
	c, ok := q.cached[key]
	q.mu.Unlock()
	if ok && now.Sub(c.read) < quotaLimitRefresh {
		return c.q, nil
	}
	l, err := readQuota(ctx, q.limits, key)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.cached[key] = cachedQuota{q: l, read: now}
	q.mu.Unlock()
	return l, nil
}

// readQuota reads the quota under key from limits, nil when none is set.
func readQuota(ctx context.Context, limits jetstream.KeyValue, key string) (*QuotaLimit, error) {
	e, err := limits.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: read quota %s: %w", ErrRetryable, key, err)
	}
	l := &QuotaLimit{}
	if err := json.Unmarshal(e.Value(), l); err != nil || l.Validate() != nil || l.Scope != key {
		return nil, fmt.Errorf("quota %s: stored value is not a valid quota (set it again with dispatcher quota set): %q", key, e.Value())
	}
	return l, nil
}

// forSubmitter returns the quota submitter sub has: its own, else the
// default, else none (a zero QuotaLimit).
func (q *Quotas) forSubmitter(ctx context.Context, sub string) (QuotaLimit, error) {
	for _, key := range [2]string{q.submitterScope(sub), QuotaDefault} {
		l, err := q.limit(ctx, key)
		if err != nil || l != nil {
			if l == nil {
				return QuotaLimit{}, err
			}
			return *l, err
		}
	}
	return QuotaLimit{}, nil
}

// submitterScope returns QuotaSubmitterScope(sub), made on the first
// call for sub and kept.
func (q *Quotas) submitterScope(sub string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	scope, ok := q.scopes[sub]
	if !ok {
		scope = QuotaSubmitterScope(sub)
		if q.scopes == nil {
			q.scopes = map[string]string{}
		}
		q.scopes[sub] = scope
	}
	return scope
}

// QuotaExceededError says a submitter has as many missions queued as its
// quota allows (or more). It wraps ErrQuotaExceeded.
type QuotaExceededError struct {
	// Quota names the quota ("submitter alice's quota").
	Quota string
	// MaxQueued is its bound, Queued the submitter's missions in the
	// queue (waiting or running) when it was checked.
	MaxQueued, Queued int
}

func (e *QuotaExceededError) Error() string {
	return fmt.Sprintf("%s: max_queued %d: %d missions of the submitter are queued or running", e.Quota, e.MaxQueued, e.Queued)
}

func (e *QuotaExceededError) Unwrap() error { return ErrQuotaExceeded }

// queuedMissions counts submitter sub's missions in MISSIONS, waiting or
// running (a message leaves the stream when its mission ends; a mission
// parked in PARKED is not counted). It reads the stream's subjects under
// the submitter's prefix, one per mission. A count that reaches bound is
// checked against the stored results: a mission's message leaves MISSIONS
// when the server has processed the worker's acknowledgement, which comes
// after the result is stored (and has reached a client awaiting it), so a
// mission just finished can still be counted; one whose result is stored
// is not. At most maxFinishedChecks messages are checked, and none when
// more of them would have to be finished than that: a count far over the
// bound costs no reads.
func queuedMissions(ctx context.Context, st *Stores, sub string, bound int) (int, error) {
	subjects, n, err := queuedSubjects(ctx, st.Missions, sub)
	if err != nil {
		return 0, err
	}
	if n < bound || n-bound+1 > maxFinishedChecks || st.Results == nil {
		return n, nil
	}
	checked := 0
	for subject, c := range subjects {
		if n < bound || checked == maxFinishedChecks {
			break
		}
		s, _, id, ok := messages.ParseSubmitSubject(subject)
		if !ok || s != sub {
			continue
		}
		checked++
		_, err := getMsg(ctx, st.nc, st.Results, lastOn(messages.ResultSubject(sub, id)))
		switch {
		case err == nil:
			n -= int(c)
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return 0, fmt.Errorf("%w: count the queued missions of %s: read the result of %s: %w", ErrRetryable, sub, id, err)
		}
	}
	return n, nil
}

// queuedSubjects returns submitter sub's subjects in missions with the
// messages each holds, and their sum.
func queuedSubjects(ctx context.Context, missions jetstream.Stream, sub string) (map[string]uint64, int, error) {
	info, err := missions.Info(ctx, jetstream.WithSubjectFilter(messages.SubjectSubmitPrefix+sub+".>"))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: count the queued missions of %s: %w", ErrRetryable, sub, err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return info.State.Subjects, n, nil
}

// maxFinishedChecks bounds the stored results queuedMissions reads to
// tell finished missions from queued ones: those finished whose
// acknowledgement the server has not processed yet, a few at most.
const maxFinishedChecks = 16

// quotaLease is a running mission's lease, renewed and given back by the
// worker running it.
type quotaLease struct {
	q       *Quotas
	sub, id string
	log     zerolog.Logger
	once    sync.Once
}

// QuotaWaitError says a mission waits for its submitter's running quota.
type QuotaWaitError struct {
	// Quota names the quota ("submitter alice's quota").
	Quota string
	// MaxRunning is its bound, Running the missions holding it.
	MaxRunning, Running int
	// listed says the mission is on the waiting list (put there by the
	// refusal, or before it), whose first a lease given back wakes.
	listed bool
}

func (e *QuotaWaitError) Error() string {
	return fmt.Sprintf("%s: max_running %d reached: %d missions of the submitter run", e.Quota, e.MaxRunning, e.Running)
}

// acquire takes a lease for mission id of submitter sub under l: granted
// while fewer than l.MaxRunning other live leases are held (a mission
// holding one already, redelivered after its worker died, takes its own
// over). Over the quota it returns a *QuotaWaitError.
//
// A refused mission is put on the waiting list (with priority, for its
// wake), a granted one taken off it.
func (q *Quotas) acquire(ctx context.Context, l QuotaLimit, sub, id, priority string, log zerolog.Logger) (*quotaLease, error) {
	var refused *QuotaWaitError
	err := casJSON(ctx, q.leases, sub, "quota leases", QuotaLeases{}, func(ls *QuotaLeases) bool {
		refused = nil
		now := q.now()
		if ls.Leases == nil {
			ls.Leases = map[string]QuotaLease{}
		}
		n := ls.live(now)
		if _, mine := ls.Leases[id]; !mine && n >= l.MaxRunning {
			refused = &QuotaWaitError{Quota: l.Name(), MaxRunning: l.MaxRunning, Running: n, listed: true}
			if slices.ContainsFunc(ls.Waiting, func(w QuotaWaiter) bool { return w.ID == id }) {
				return false
			}
			if len(ls.Waiting) >= maxQuotaWaiting {
				refused.listed = false
				return false
			}
			ls.Waiting = append(ls.Waiting, QuotaWaiter{ID: id, Priority: priority})
			return true
		}
		ls.Leases[id] = QuotaLease{Worker: q.worker, Expires: now.Add(q.ttl)}
		ls.dropWaiter(id)
		return true
	})
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	q.metrics.quotaLeases(q.tenant, 1)
	return &quotaLease{q: q, sub: sub, id: id, log: log}, nil
}

// renew extends the lease by the lease TTL (taking it again if it
// expired meanwhile: the mission runs, so it counts).
func (l *quotaLease) renew(ctx context.Context) {
	if l == nil {
		return
	}
	err := casJSON(ctx, l.q.leases, l.sub, "quota leases", QuotaLeases{}, func(ls *QuotaLeases) bool {
		if ls.Leases == nil {
			ls.Leases = map[string]QuotaLease{}
		}
		ls.live(l.q.now())
		ls.Leases[l.id] = QuotaLease{Worker: l.q.worker, Expires: l.q.now().Add(l.q.ttl)}
		return true
	})
	if err != nil {
		l.log.Warn().Err(err).Msg("quota lease not renewed")
	}
}

// release gives the lease back, once, and wakes the first mission
// waiting for the quota, if any. A lease that cannot be given back
// expires with its TTL.
func (l *quotaLease) release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		l.q.metrics.quotaLeases(l.q.tenant, -1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var next *QuotaWaiter
		err := casJSON(ctx, l.q.leases, l.sub, "quota leases", QuotaLeases{}, func(ls *QuotaLeases) bool {
			next = nil
			if _, ok := ls.Leases[l.id]; !ok && len(ls.Waiting) == 0 {
				return false
			}
			delete(ls.Leases, l.id)
			ls.live(l.q.now())
			if len(ls.Waiting) > 0 {
				next = &ls.Waiting[0]
				ls.Waiting = ls.Waiting[1:]
			}
			return true
		})
		if err != nil {
			l.log.Warn().Err(err).Msg("quota lease not given back; it expires with its TTL")
			return
		}
		if next != nil {
			if err := l.q.wake(ctx, missionKey{sub: l.sub, id: next.ID}, next.Priority); err != nil {
				l.log.Debug().Err(err).Str("waiting", next.ID).Msg("waiting mission not woken; it wakes at its scheduled time")
			} else if l.q.ring != nil {
				// every worker hears the wake and rings that lane's bell
				// (Worker.onQueued once MISSIONS stored the woken mission,
				// or Worker.onWake as published); where it hears wakes as
				// published, this one, whose slot the run frees, rings its
				// own without waiting for the wake's echo
				l.q.ring(l.sub, next.Priority)
			}
		}
	})
}

// wake queues the parked mission k again at once (wakeNow), its copy
// marked messages.HeaderWakeMoved with its parked message's sequence: the
// claim takes it as a wake from PARKED, and checks the quota again. A
// mission no longer parked (it was not parked yet, or it already woke) is
// left alone: its schedule, or the run it is in, takes care of it; a
// second copy queued is dropped as a duplicate by the claim.
func (q *Quotas) wake(ctx context.Context, k missionKey, priority string) error {
	raw, err := parkedMessage(ctx, q.js.Conn(), nil, q.parked, k.id)
	if err != nil || raw == nil {
		return err
	}
	moved := nats.Header{}
	moved.Set(messages.HeaderWakeMoved, strconv.FormatUint(raw.Sequence, 10))
	return wakeNow(ctx, q.js, nil, k, priority, raw.Data, raw.Header, fmt.Sprintf("%s/quota/%d", k.id, raw.Sequence), moved)
}

// waiting reports whether mission id is on submitter sub's waiting list.
func (q *Quotas) waiting(ctx context.Context, sub, id string) (bool, error) {
	e, err := q.leases.Get(ctx, sub)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var ls QuotaLeases
	if err := json.Unmarshal(e.Value(), &ls); err != nil {
		return false, fmt.Errorf("quota leases %s: stored value is not JSON: %w", sub, err)
	}
	return slices.ContainsFunc(ls.Waiting, func(w QuotaWaiter) bool { return w.ID == id }), nil
}

// casJSON changes the JSON value of key in kv with compare-and-set,
// starting from init when the key does not exist, and retries on a
// concurrent change; change returns false to write nothing. what names
// the value in errors.
func casJSON[T any](ctx context.Context, kv jetstream.KeyValue, key, what string, init T, change func(*T) bool) error {
	_, err := casJSONCounted(ctx, kv, key, what, init, change)
	return err
}

// casJSONCounted is casJSON, also returning how many of its writes lost
// to a concurrent change and were tried again.
func casJSONCounted[T any](ctx context.Context, kv jetstream.KeyValue, key, what string, init T, change func(*T) bool) (int, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return attempt, fmt.Errorf("%w: %s %s: %w", ErrRetryable, what, key, err)
		}
		v := init
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return attempt, fmt.Errorf("%w: read %s %s: %w", ErrRetryable, what, key, err)
		default:
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				return attempt, fmt.Errorf("%s %s: stored value is not JSON: %w", what, key, err)
			}
			rev = e.Revision()
		}
		if !change(&v) {
			return attempt, nil
		}
		data, err := json.Marshal(v)
		if err != nil {
			return attempt, err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return attempt, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongSequence(err) {
			return attempt, fmt.Errorf("%w: write %s %s: %w", ErrRetryable, what, key, err)
		}
		// another worker changed it first: read it again, after a short
		// pause that grows with the contention
		time.Sleep(time.Duration(min(attempt, 20)) * 200 * time.Microsecond)
	}
}

// takeQuota checks a mission of submitter k.sub against its quota and
// takes the lease it needs to run under its running quota. It returns the
// lease (nil: the submitter has no running quota) and whether the message
// was settled instead: the mission, taken for the first time (first)
// while its submitter had more queued than max_queued, failed
// quota_exceeded; it waits for its running quota (quotaWait); or the
// quota could not be read (handed back like a retryable failure).
func (w *Worker) takeQuota(ctx context.Context, msg jetstream.Msg, k missionKey, priority string, first bool, em *emitter, meta *jetstream.MsgMetadata, attempt int, entry *statusEntry, log *zerolog.Logger) (*quotaLease, bool) {
	l, err := w.quotas.forSubmitter(ctx, k.sub)
	if err == nil && first && l.MaxQueued > 0 {
		// A mission taken for the first time while its submitter has
		// more queued than the quota allows was queued past it: a client
		// that does not check (Client.Submit refuses it) published it.
		var n int
		if n, err = queuedMissions(ctx, w.st, k.sub, l.MaxQueued+1); err == nil && n > l.MaxQueued {
			over := &QuotaExceededError{Quota: l.Name(), MaxQueued: l.MaxQueued, Queued: n}
			log.Warn().Err(over).Msg("mission refused: over its submitter's queued quota")
			w.cfg.Metrics.quotaRefused(w.cfg.Tenant, k.sub)
			// acknowledged and confirmed before the worker takes another
			// mission: the server removes an acknowledged message from
			// MISSIONS on a goroutine of its own, and the next mission's
			// count would else include this one
			w.finish(ctx, confirmedAck{msg, ctx}, k, em, failStep(ReasonQuotaExceeded, "%v when the mission was taken", over), entry, nil, nil, log)
			return nil, true
		}
	}
	if err == nil && l.MaxRunning == 0 {
		return nil, false
	}
	var lease *quotaLease
	if err == nil {
		lease, err = w.quotas.acquire(ctx, l, k.sub, k.id, priority, *log)
	}
	var wait *QuotaWaitError
	switch {
	case errors.As(err, &wait):
		w.quotaWait(ctx, msg, k, priority, em, meta, attempt, entry, wait, log)
		return nil, true
	case err != nil && !errors.Is(err, ErrRetryable):
		// a quota stored garbled: the mission runs, as it would with
		// none, and the operator hears of it
		log.Error().Err(err).Msg("quota not enforced")
		return nil, false
	case err != nil:
		w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, err, log)
		return nil, true
	}
	return lease, false
}

// confirmedAck is a message whose Ack waits for the server to confirm the
// acknowledgement (DoubleAck), by which time a message of a work-queue
// stream has left it.
type confirmedAck struct {
	jetstream.Msg
	ctx context.Context
}

// Ack acknowledges the message and waits for the server's confirmation.
func (m confirmedAck) Ack() error { return m.DoubleAck(m.ctx) }

// quotaWait parks a mission whose submitter runs as many missions as its
// running quota allows: its message is stored in PARKED with a schedule
// that queues it again after quotaWaitDelay and a random share of it,
// the status says quota_wait, a quota_wait event says why, and the
// message is acked (a Nak would count against MaxDeliver, and the
// mission holds no slot while it waits). A mission that cannot be parked
// is handed back like a retryable failure.
func (w *Worker) quotaWait(ctx context.Context, msg jetstream.Msg, k missionKey, priority string, em *emitter, meta *jetstream.MsgMetadata, attempt int, entry *statusEntry, wait *QuotaWaitError, log *zerolog.Logger) {
	if w.quotaParking != nil {
		w.quotaParking(k)
	}
	at := time.Now().Add(quotaWaitDelay + rand.N(quotaWaitDelay))
	if err := park(ctx, w.js, k, priority, msg.Data(), msg.Headers(), at, parkMark{}); err != nil {
		log.Warn().Err(err).Msg("mission not parked to wait for its quota")
		w.retryOrDead(ctx, msg, k, em, attempt, meta, entry, fmt.Errorf("%w (%w)", err, ErrRetryable), log)
		return
	}
	if w.quotaParked != nil {
		w.quotaParked(k)
	}
	waiting := func(s *messages.Status) bool {
		if messages.TerminalState(s.State) {
			return false
		}
		s.State, s.Worker, s.StreamSeq = messages.StateQuotaWait, "", 0
		s.QuotaWaits++
		return true
	}
	st := entry.st
	waiting(&st)
	if _, err := casStatus(ctx, w.st, st, entry.rev); err != nil {
		// changed under the claim (a cancel flag): written again from
		// what it is now, else the wake would find it running and be
		// dropped
		if _, err := updateStatus(ctx, w.st, k, waiting); err != nil {
			log.Warn().Err(err).Msg("status not set to quota_wait")
		}
	}
	em.Emit(&messages.Event{Kind: messages.EventQuotaWait, Data: map[string]any{
		"quota": wait.Quota, "submitter": k.sub, "max_running": int64(wait.MaxRunning), "running": int64(wait.Running),
		"retry_at": at.UTC().Format(time.RFC3339Nano)}})
	em.Flush()
	if err := msg.Ack(); err != nil {
		log.Warn().Err(err).Msg("ack failed; the redelivered mission waits again")
	}
	// A lease given back between the refusal, which put the mission on
	// the waiting list, and its parking found no parked message to wake
	// (Quotas.wake) and took it off the list: it is woken now, not at its
	// schedule. A wake that lease's worker did send has the same Msg-Id,
	// and MISSIONS stores it once.
	if wait.listed {
		if listed, err := w.quotas.waiting(ctx, k.sub, k.id); err != nil {
			log.Debug().Err(err).Msg("quota waiting list unread; the mission wakes at its scheduled time if no lease given back wakes it")
		} else if !listed {
			if err := w.quotas.wake(ctx, k, priority); err != nil {
				log.Debug().Err(err).Msg("mission not woken after a lease given back while it parked; it wakes at its scheduled time")
			}
		}
	}
	w.cfg.Metrics.quotaWait(w.cfg.Tenant, k.sub)
	attemptFrom(ctx).setOutcome("quota_wait")
	log.Debug().Int("max_running", wait.MaxRunning).Int("running", wait.Running).Time("retry_at", at).Msg("mission waits for its submitter's running quota")
}

// checkQueued refuses a submission of the client's submitter when it has
// as many missions queued as its quota's max_queued: a cooperative check
// (a submitter publishing on its subject directly skips it; the workers
// then fail the missions over the quota when they take them).
func (c *Client) checkQueued(ctx context.Context) error {
	c.quotaOnce.Do(func() {
		// bound at the first submit, so that a client that never
		// submits (an approver's) needs no right to the bucket
		kv := c.st.QuotaLimits
		if kv == nil {
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			kv, _ = c.js.KeyValue(bctx, messages.BucketQuotaLimits)
			cancel()
		}
		if kv != nil {
			c.quotas = &Quotas{limits: kv, now: time.Now, cached: map[string]cachedQuota{}}
		}
	})
	if c.quotas == nil {
		return nil // a layout set up before quotas
	}
	l, err := c.quotas.forSubmitter(ctx, c.sub)
	if err != nil || l.MaxQueued == 0 {
		return err
	}
	n, err := queuedMissions(ctx, c.st, c.sub, l.MaxQueued)
	if err != nil {
		return err
	}
	if n >= l.MaxQueued {
		return &QuotaExceededError{Quota: l.Name(), MaxQueued: l.MaxQueued, Queued: n}
	}
	return nil
}

// QuotaStatus is a quota with the leases held under it now.
type QuotaStatus struct {
	Limit QuotaLimit `json:"limit"`
	// Running counts the live leases of the quota's submitter (for the
	// default quota: none; each submitter's are its own).
	Running int `json:"running"`
}

// SetQuota stores q in quota_limits (a quota bounding nothing deletes
// it); workers apply it within two seconds.
func SetQuota(ctx context.Context, js jetstream.JetStream, q QuotaLimit) error {
	if err := q.Validate(); err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, messages.BucketQuotaLimits)
	if err != nil {
		return fmt.Errorf("quota bucket %s: %w (run worker setup)", messages.BucketQuotaLimits, err)
	}
	if q.empty() {
		err = kv.Delete(ctx, q.Scope)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			err = nil
		}
		return err
	}
	data, err := json.Marshal(q)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, q.Scope, data)
	return err
}

// ListQuotas returns every quota with its submitter's live leases at
// now, sorted by scope.
func ListQuotas(ctx context.Context, js jetstream.JetStream, now time.Time) ([]QuotaStatus, error) {
	limits, err := js.KeyValue(ctx, messages.BucketQuotaLimits)
	if err != nil {
		return nil, fmt.Errorf("quota bucket %s: %w (run worker setup)", messages.BucketQuotaLimits, err)
	}
	leases, err := js.KeyValue(ctx, messages.BucketQuotaLeases)
	if err != nil {
		return nil, fmt.Errorf("quota bucket %s: %w (run worker setup)", messages.BucketQuotaLeases, err)
	}
	keys, err := limits.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []QuotaStatus
	for k := range keys.Keys() {
		l, err := readQuota(ctx, limits, k)
		if err != nil || l == nil {
			continue
		}
		st := QuotaStatus{Limit: *l}
		if sub, ok := strings.CutPrefix(k, "submitter."); ok {
			if e, err := leases.Get(ctx, sub); err == nil {
				var ls QuotaLeases
				if json.Unmarshal(e.Value(), &ls) == nil {
					st.Running = ls.live(now)
				}
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b QuotaStatus) int { return strings.Compare(a.Limit.Scope, b.Limit.Scope) })
	return out, nil
}

// laneWeights are the weights of the lanes (messages.MissionLanes) in the
// workers' round robin: the largest weight of the submitters with a quota
// of their own hashed to the lane, at least the default quota's weight
// (a submitter without a quota has the default's).
type laneWeights [messages.MissionLanes]int

// laneWeights reads the weights of the lanes: the quotas' keys from the
// bucket's stream info (no consumer), each quota through the cache.
func (q *Quotas) laneWeights(ctx context.Context) (*laneWeights, error) {
	if q.limitsStream == nil {
		s, err := q.js.Stream(ctx, "KV_"+messages.BucketQuotaLimits)
		if err != nil {
			return nil, err
		}
		q.limitsStream = s
	}
	prefix := "$KV." + messages.BucketQuotaLimits + "."
	info, err := q.limitsStream.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	base := 1
	if d, err := q.limit(ctx, QuotaDefault); err != nil {
		return nil, err
	} else if d != nil {
		base = d.weight()
	}
	var lw laneWeights
	for i := range lw {
		lw[i] = base
	}
	for subj := range info.State.Subjects {
		sub, ok := strings.CutPrefix(strings.TrimPrefix(subj, prefix), "submitter.")
		if !ok {
			continue
		}
		l, err := q.limit(ctx, QuotaSubmitterScope(sub))
		if err != nil {
			return nil, err
		}
		if l != nil {
			lane := messages.SubmitLane(sub)
			lw[lane] = max(lw[lane], l.weight())
		}
	}
	return &lw, nil
}

// watchWeights reads the lanes' weights every quotaLimitRefresh until the
// worker stops: one stream info request, and a read of each quota past
// its cache, per refresh, whatever the missions.
func (w *Worker) watchWeights() {
	t := time.NewTicker(quotaLimitRefresh)
	defer t.Stop()
	for {
		select {
		case <-w.stopping:
			return
		case <-t.C:
		}
		w.readWeights()
	}
}

// readWeights reads the lanes' weights once; on failure the last ones
// stay.
func (w *Worker) readWeights() {
	ctx, cancel := context.WithTimeout(context.Background(), quotaLimitRefresh)
	defer cancel()
	lw, err := w.quotas.laneWeights(ctx)
	if err != nil {
		w.log.Debug().Err(err).Msg("lane weights not read")
		return
	}
	w.weights.Store(lw)
}

// laneWeight is the weight of lane i of w.lanes (1 for a priority's
// missions with no lane).
func (w *Worker) laneWeight(i int) int {
	l := i % (messages.MissionLanes + 1)
	lw := w.weights.Load()
	if lw == nil || l == messages.MissionLanes {
		return 1
	}
	return lw[l]
}
