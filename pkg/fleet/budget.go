package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Budget windows: a budget holds for one UTC day or one UTC month and
// starts afresh with the next.
const (
	BudgetDay   = "day"
	BudgetMonth = "month"
)

// BudgetAccount is the scope of a budget for the whole account (tenant):
// every mission its workers run. A submitter's scope is
// BudgetSubmitterScope(name).
const BudgetAccount = "account"

// BudgetSubmitterScope returns the scope of submitter name's budgets.
func BudgetSubmitterScope(name string) string { return "submitter." + name }

// budgetLimitRefresh is how long a worker uses the budgets it read before
// it reads them again: a budget set or changed applies within it.
const budgetLimitRefresh = 2 * time.Second

// budgetSettleWait bounds one try to settle a reservation (the first is
// made while the model call's caller waits); a settle not done by then
// goes on in the background.
const budgetSettleWait = 10 * time.Second

// budgetSettleGrace is how long after the end of the last period it holds
// a reservation a settle failing in the background is still tried.
const budgetSettleGrace = time.Hour

// budgetStopWait is how long a stopping worker waits for the settles it
// still tries in the background.
const budgetStopWait = 10 * time.Second

// Backoff of a settle tried again in the background: from
// budgetRetryMin, doubling up to budgetRetryMax, with jitter.
const (
	budgetRetryMin = 100 * time.Millisecond
	budgetRetryMax = 5 * time.Second
)

// budgetAlertLevels are the shares of a budget whose reaching is an event.
var budgetAlertLevels = []int{80, 100}

// ValidSubmitter reports whether name can name a submitter's budgets: a
// submitter identity (messages.ValidSubmitter: 1 to 64 ASCII letters,
// digits, '-', '_' or '=').
func ValidSubmitter(name string) bool { return messages.ValidSubmitter(name) }

// BudgetLimit is a fleet-wide budget: what the missions of a scope may
// spend on models in a window, across every worker. It is stored as JSON
// in the KV bucket budget_limits under Scope + "." + Window.
type BudgetLimit struct {
	// Scope is BudgetAccount or BudgetSubmitterScope(name).
	Scope string `json:"scope"`
	// Window is BudgetDay or BudgetMonth.
	Window string `json:"window"`
	// MaxCostUSD bounds the cost in US dollars, at the models' prices (0:
	// no bound).
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// MaxTokens bounds the tokens, prompt and output (0: no bound).
	MaxTokens int64 `json:"max_tokens,omitempty"`
}

// Key is the limit's key in budget_limits.
func (l BudgetLimit) Key() string { return l.Scope + "." + l.Window }

// Name names the budget in errors and events: "submitter alice's day
// budget", "the account's month budget".
func (l BudgetLimit) Name() string {
	if s, ok := strings.CutPrefix(l.Scope, "submitter."); ok {
		return fmt.Sprintf("submitter %s's %s budget", s, l.Window)
	}
	return fmt.Sprintf("the account's %s budget", l.Window)
}

// Validate checks the scope, window and bounds; its error names the field.
func (l BudgetLimit) Validate() error {
	if s, ok := strings.CutPrefix(l.Scope, "submitter."); !(l.Scope == BudgetAccount || ok && ValidSubmitter(s)) {
		return fmt.Errorf("%w: budget scope %q: want %q or submitter.NAME (NAME: 1 to 64 letters, digits, '-', '_', '=')", ErrInvalidConfig, l.Scope, BudgetAccount)
	}
	if l.Window != BudgetDay && l.Window != BudgetMonth {
		return fmt.Errorf("%w: budget window %q: want %q or %q", ErrInvalidConfig, l.Window, BudgetDay, BudgetMonth)
	}
	if l.MaxCostUSD < 0 || math.IsNaN(l.MaxCostUSD) || math.IsInf(l.MaxCostUSD, 0) {
		return fmt.Errorf("%w: budget max_cost_usd %v: want a finite number ≥ 0", ErrInvalidConfig, l.MaxCostUSD)
	}
	if l.MaxTokens < 0 {
		return fmt.Errorf("%w: budget max_tokens %d: want ≥ 0", ErrInvalidConfig, l.MaxTokens)
	}
	return nil
}

// period is the window's period holding t: "2026-11-28" or "2026-11".
func budgetPeriod(window string, t time.Time) string {
	if window == BudgetMonth {
		return t.UTC().Format("2006-01")
	}
	return t.UTC().Format("2006-01-02")
}

// BudgetSpend is what a budget's scope spent in one period, stored as JSON
// in the KV bucket budget_spend under the limit's key + "." + Period and
// changed only by compare-and-set.
type BudgetSpend struct {
	Period string `json:"period"`
	// CostUSD and Tokens are settled: what finished model calls used.
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
	// ReservedCostUSD and ReservedTokens are held by model calls in
	// flight (or by calls whose worker died before settling them: they
	// stay held until the period ends).
	ReservedCostUSD float64 `json:"reserved_cost_usd"`
	ReservedTokens  int64   `json:"reserved_tokens"`
	// Held lists the IDs of the reservations the reserved amounts hold,
	// one for each model call in flight (or whose worker died before
	// settling it). A settle takes its ID out as it gives its amount
	// back, and a settle whose ID is not held writes nothing: one tried
	// again after its write was stored but its reply lost is applied
	// once. A record written without it (by a worker of an earlier
	// version) holds its reserved amounts under no ID: those stay held
	// until the period ends.
	Held []string `json:"held,omitempty"`
	// Alerted is the highest alert level (80, 100) already announced.
	Alerted int `json:"alerted,omitempty"`
}

// share is the larger share of l that s has settled, in percent, or -1
// when l bounds nothing.
func (s BudgetSpend) share(l BudgetLimit) float64 {
	p := -1.0
	if l.MaxCostUSD > 0 {
		p = max(p, 100*s.CostUSD/l.MaxCostUSD)
	}
	if l.MaxTokens > 0 {
		p = max(p, 100*float64(s.Tokens)/float64(l.MaxTokens))
	}
	return p
}

// BudgetAmount is what a model call may spend or spent.
type BudgetAmount struct {
	CostUSD float64
	Tokens  int64
}

// BudgetError says which fleet budget refused a model call.
type BudgetError struct {
	// Budget names it ("submitter alice's day budget").
	Budget string
	// Msg says what did not fit.
	Msg string
}

func (e *BudgetError) Error() string { return e.Budget + ": " + e.Msg }

// Budgets enforces the fleet-wide budgets for one worker: each model call
// reserves its maximum against every budget of its mission's scopes with
// compare-and-set on budget_spend, and settles with its usage. N workers
// in parallel therefore overspend a budget by at most what their calls in
// flight reserved beyond what they used (nothing, when the reservations
// bound the calls). Safe for concurrent use.
type Budgets struct {
	limits, spend jetstream.KeyValue
	tenant        string
	metrics       *Metrics
	now           func() time.Time

	// settleWait bounds a try to settle (budgetSettleWait); retryMin and
	// retryMax the backoff between tries in the background.
	settleWait, retryMin, retryMax time.Duration

	mu     sync.Mutex
	cached map[string]cachedLimit
	// subKeys holds each submitter's budget keys (submitterKeys), made
	// once rather than at each model call; it grows as cached does, by
	// submitter.
	subKeys map[string][2]string
	// closed is set when the worker stops: no settle starts in the
	// background after it.
	closed bool

	// settling counts the settles tried in the background; stopping is
	// closed when the worker stops (they try again at once), and bg ends
	// when it no longer waits for them.
	settling sync.WaitGroup
	stopping chan struct{}
	bg       context.Context
	bgCancel context.CancelFunc

	// queues holds, by spend key, the changes waiting for the write in
	// progress on it: the next write makes them all (update).
	qmu    sync.Mutex
	queues map[string]*budgetQueue
}

// budgetQueue is the changes of one spend key waiting to be written.
type budgetQueue struct {
	ops []*budgetOp
}

// budgetOp is one reservation's or settle's change of a spend record.
type budgetOp struct {
	change func(*BudgetSpend) bool
	op     string // reserve or settle
	// done receives the write's result, or errBudgetLead: the op's
	// goroutine makes the next write.
	done chan error
}

// errBudgetLead hands the next write of a key to a waiting change.
var errBudgetLead = errors.New("fleet: write the next budget batch")

type cachedLimit struct {
	l    *BudgetLimit
	read time.Time
}

// newBudgets returns the budgets over the layout's buckets.
func newBudgets(st *Stores, tenant string, metrics *Metrics) *Budgets {
	bg, cancel := context.WithCancel(context.Background())
	return &Budgets{limits: st.BudgetLimits, spend: st.BudgetSpend, tenant: tenant, metrics: metrics,
		now: time.Now, settleWait: budgetSettleWait, retryMin: budgetRetryMin, retryMax: budgetRetryMax,
		cached: map[string]cachedLimit{}, queues: map[string]*budgetQueue{}, stopping: make(chan struct{}), bg: bg, bgCancel: cancel}
}

// close stops the budgets with their worker: the settles tried in the
// background try again at once, and those still failing after wait give
// up (their reservations stay held until their periods end).
func (b *Budgets) close(wait time.Duration) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stopping)
	done := make(chan struct{})
	go func() { b.settling.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		b.bgCancel()
		<-done
	}
	b.bgCancel()
}

// limit returns the budget under key, nil when none is set; read again
// after budgetLimitRefresh.
func (b *Budgets) limit(ctx context.Context, key string) (*BudgetLimit, error) {
	now := b.now()
	b.mu.Lock()
	c, ok := b.cached[key]
	b.mu.Unlock()
	if ok && now.Sub(c.read) < budgetLimitRefresh {
		return c.l, nil
	}
	e, err := b.limits.Get(ctx, key)
	var l *BudgetLimit
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, fmt.Errorf("%w: read budget %s: %w", ErrRetryable, key, err)
	default:
		l = &BudgetLimit{}
		if err := json.Unmarshal(e.Value(), l); err != nil || l.Validate() != nil || l.Key() != key {
			return nil, fmt.Errorf("budget %s: stored value is not a valid budget (set it again with dispatcher budget set): %q", key, e.Value())
		}
	}
	b.mu.Lock()
	b.cached[key] = cachedLimit{l: l, read: now}
	b.mu.Unlock()
	return l, nil
}

// MissionBudget charges one mission's model calls to the budgets of its
// scopes (the account and its submitter) and records the spend metrics.
type MissionBudget struct {
	b         *Budgets
	submitter string
	events    Emitter
	// log is the mission's logger, shared: a copy of it would be as big
	// as the rest of the budget and held while the mission waits
	log *zerolog.Logger
}

// logger is the mission's logger; a budget made outside a worker has none
// and logs nothing.
func (mb *MissionBudget) logger() *zerolog.Logger {
	if mb.log == nil {
		nop := zerolog.Nop()
		return &nop
	}
	return mb.log
}

// Submitter is the submitter the mission's spending is charged to.
func (mb *MissionBudget) Submitter() string { return mb.submitter }

// forMission charges a mission's spending to submitter, the identity its
// subject carries (never a field of the mission, which its submitter
// writes).
func (b *Budgets) forMission(submitter string, em Emitter, log *zerolog.Logger) *MissionBudget {
	if b == nil {
		return nil
	}
	return &MissionBudget{b: b, submitter: submitter, events: em, log: log}
}

// BudgetReservation is a model call's hold on its mission's budgets.
type BudgetReservation struct {
	mb    *MissionBudget
	model string
	// id names the reservation in the spend records it holds (BudgetSpend.Held).
	id   string
	amt  BudgetAmount
	held []heldBudget
	once sync.Once
}

type heldBudget struct {
	l   BudgetLimit
	key string
}

// Reserve holds amt against every budget of the mission's scopes, for a
// call to model. priced is false when the model has no prices: a budget
// bounding cost then refuses the call. A budget that does not have amt
// left refuses it with a *BudgetError naming the budget, and what was
// held on the others is given back.
func (mb *MissionBudget) Reserve(ctx context.Context, model string, amt BudgetAmount, priced bool) (*BudgetReservation, error) {
	r := &BudgetReservation{mb: mb, model: model, amt: amt}
	if mb == nil {
		return r, nil
	}
	now := mb.b.now()
	sub := mb.b.submitterKeys(mb.submitter)
	keys := [4]string{accountDayKey, accountMonthKey, sub[0], sub[1]}
	for i, key := range keys {
		window := BudgetDay
		if i%2 == 1 {
			window = BudgetMonth
		}
		l, err := mb.b.limit(ctx, key)
		if err == nil && l != nil {
			err = mb.hold(ctx, r, *l, budgetPeriod(window, now), priced)
		}
		if err != nil {
			r.release(ctx)
			return nil, err
		}
	}
	return r, nil
}

// The account's budget keys, by window.
const (
	accountDayKey   = BudgetAccount + "." + BudgetDay
	accountMonthKey = BudgetAccount + "." + BudgetMonth
)

// submitterKeys returns the keys of submitter's budgets, of the day and
// of the month, made on the first call for submitter and kept.
func (b *Budgets) submitterKeys(submitter string) [2]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.subKeys[submitter]; ok {
		return k
	}
	scope := BudgetSubmitterScope(submitter)
	k := [2]string{scope + "." + BudgetDay, scope + "." + BudgetMonth}
	if b.subKeys == nil {
		b.subKeys = map[string][2]string{}
	}
	b.subKeys[submitter] = k
	return k
}

// hold reserves r's amount on l's spend of period.
func (mb *MissionBudget) hold(ctx context.Context, r *BudgetReservation, l BudgetLimit, period string, priced bool) error {
	key := l.Key() + "." + period
	if r.id == "" {
		// made for the first budget held: a call no budget bounds
		// needs none
		r.id = strconv.FormatUint(rand.Uint64(), 36)
	}
	var refused error
	var alert []int
	wrote := false
	err := mb.b.update(ctx, key, period, "reserve", func(s *BudgetSpend) bool {
		refused, alert = nil, nil
		if slices.Contains(s.Held, r.id) {
			// an earlier write of this reservation was stored (its
			// reply was lost)
			return false
		}
		switch {
		case l.MaxCostUSD > 0 && !priced:
			refused = &BudgetError{Budget: l.Name(), Msg: fmt.Sprintf("max_cost_usd %g cannot be checked: model %q has no prices (price_in, price_out)", l.MaxCostUSD, r.model)}
		case l.MaxCostUSD > 0 && s.CostUSD+s.ReservedCostUSD+r.amt.CostUSD > l.MaxCostUSD:
			refused = &BudgetError{Budget: l.Name(), Msg: fmt.Sprintf("max_cost_usd %g for %s reached: $%.6f spent, $%.6f reserved by calls in flight, the next model call may cost $%.6f",
				l.MaxCostUSD, period, s.CostUSD, s.ReservedCostUSD, r.amt.CostUSD)}
		case l.MaxTokens > 0 && s.Tokens+s.ReservedTokens+r.amt.Tokens > l.MaxTokens:
			refused = &BudgetError{Budget: l.Name(), Msg: fmt.Sprintf("max_tokens %d for %s reached: %d spent, %d reserved by calls in flight, the next model call may take %d",
				l.MaxTokens, period, s.Tokens, s.ReservedTokens, r.amt.Tokens)}
		}
		if refused != nil {
			if s.Alerted >= 100 {
				return false
			}
			// a refusal reaches the budget: every level not announced
			// yet is (spending held by calls in flight may refuse before
			// any settlement crossed 80%)
			for _, level := range budgetAlertLevels {
				if s.Alerted < level {
					alert = append(alert, level)
				}
			}
			s.Alerted = 100
			return true
		}
		s.ReservedCostUSD += r.amt.CostUSD
		s.ReservedTokens += r.amt.Tokens
		s.Held = append(s.Held, r.id)
		wrote = true
		return true
	})
	if err != nil {
		if wrote {
			// the write may have been stored: the reservation's release
			// takes it out if it was
			r.held = append(r.held, heldBudget{l: l, key: key})
		}
		return err
	}
	for _, level := range alert {
		mb.alert(l, period, level, true)
	}
	if refused != nil {
		mb.b.metrics.budgetRefused(mb.b.tenant, mb.submitter)
		return refused
	}
	r.held = append(r.held, heldBudget{l: l, key: key})
	return nil
}

// Settle gives the reservation back and charges used in its place, once;
// it records the spend metrics by tenant, submitter and model.
func (r *BudgetReservation) Settle(ctx context.Context, used BudgetAmount) {
	r.once.Do(func() {
		if r.mb == nil {
			return
		}
		r.mb.b.metrics.budgetSpend(r.mb.b.tenant, r.mb.submitter, r.model, used.CostUSD, used.Tokens)
		r.settle(ctx, used)
	})
}

func (r *BudgetReservation) release(ctx context.Context) { r.settle(ctx, BudgetAmount{}) }

// settle gives r's amount back and charges used on each budget r holds.
// What cannot be settled within settleWait is tried again in the
// background (settleLater): a settle is applied once however often it
// is tried, since the record lists the reservations it holds.
func (r *BudgetReservation) settle(ctx context.Context, used BudgetAmount) {
	if len(r.held) == 0 {
		return
	}
	held := r.held
	r.held = nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.mb.b.settleWait)
	left, err := r.settleHeld(ctx, held, used, true)
	cancel()
	if len(left) > 0 {
		r.mb.b.settleLater(r, left, used, err)
	}
}

// settleHeld settles used on each of held within ctx; it returns those
// it could not settle for an error that may pass, and the last such
// error. emit is false in the background: the mission the
// reservation was made for may have ended, so an alert its settle
// reaches is logged and counted but not published as its event.
func (r *BudgetReservation) settleHeld(ctx context.Context, held []heldBudget, used BudgetAmount, emit bool) ([]heldBudget, error) {
	b := r.mb.b
	var left []heldBudget
	var lastErr error
	for _, h := range held {
		var alert []int
		period := h.key[len(h.l.Key())+1:]
		err := b.update(ctx, h.key, period, "settle", func(s *BudgetSpend) bool {
			i := slices.Index(s.Held, r.id)
			if i < 0 {
				// settled already: the reply to the write that did it
				// was lost (alert keeps what that write reached), or
				// the reservation was never stored
				return false
			}
			alert = nil
			s.Held = slices.Delete(s.Held, i, i+1)
			s.ReservedCostUSD = max(s.ReservedCostUSD-r.amt.CostUSD, 0)
			s.ReservedTokens = max(s.ReservedTokens-r.amt.Tokens, 0)
			s.CostUSD += used.CostUSD
			s.Tokens += used.Tokens
			share := s.share(h.l)
			for _, level := range budgetAlertLevels {
				if share >= float64(level) && s.Alerted < level {
					s.Alerted = level
					alert = append(alert, level)
				}
			}
			return true
		})
		if err != nil {
			if !errors.Is(err, ErrRetryable) {
				// trying again cannot help (the record is not a spend)
				r.mb.logger().Error().Err(err).Str("budget", h.key).Msg("budget not settled; its reservation stays held until the period ends")
				continue
			}
			left, lastErr = append(left, h), err
			continue
		}
		for _, level := range alert {
			r.mb.alert(h.l, period, level, emit)
		}
	}
	return left, lastErr
}

// settleLater tries to settle used on held in the background, with
// backoff, until it succeeds, the worker stops (close), or the last
// period held has been over for budgetSettleGrace.
func (b *Budgets) settleLater(r *BudgetReservation, held []heldBudget, used BudgetAmount, err error) {
	log := r.mb.logger()
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.settling.Add(1)
	}
	b.mu.Unlock()
	if closed {
		log.Error().Err(err).Str("budget", held[0].key).Msg("budget not settled and the worker stops; its reservation stays held until the period ends")
		return
	}
	log.Warn().Err(err).Str("budget", held[0].key).Msg("budget not settled yet; trying again in the background")
	b.metrics.budgetSettling(b.tenant, 1)
	var giveUp time.Time
	for _, h := range held {
		if end := budgetPeriodEnd(h.l.Window, h.key[len(h.l.Key())+1:]); end.After(giveUp) {
			giveUp = end
		}
	}
	giveUp = giveUp.Add(budgetSettleGrace)
	go func() {
		defer b.settling.Done()
		defer b.metrics.budgetSettling(b.tenant, -1)
		stopping := b.stopping
		wait := b.retryMin
		for tries := 1; ; tries++ {
			t := time.NewTimer(wait/2 + rand.N(wait/2+1))
			select {
			case <-b.bg.Done():
				t.Stop()
				log.Error().Err(err).Str("budget", held[0].key).Msg("budget not settled before the worker stopped; its reservation stays held until the period ends")
				return
			case <-stopping:
				// the worker stops: try at once, then at the shortest
				// backoff until it gives up waiting
				t.Stop()
				stopping, wait = nil, b.retryMin
			case <-t.C:
			}
			if b.now().After(giveUp) {
				log.Error().Err(err).Str("budget", held[0].key).Msg("budget not settled by the end of its period; its reservation stays held")
				return
			}
			ctx, cancel := context.WithTimeout(b.bg, b.settleWait)
			held, err = r.settleHeld(ctx, held, used, false)
			cancel()
			if len(held) == 0 {
				log.Info().Int("tries", tries+1).Msg("budget settled")
				return
			}
			if stopping != nil {
				wait = min(2*wait, b.retryMax)
			}
		}
	}()
}

// budgetPeriodEnd is when period of window ends; the zero time when it
// is not one.
func budgetPeriodEnd(window, period string) time.Time {
	if window == BudgetMonth {
		t, err := time.Parse("2006-01", period)
		if err != nil {
			return time.Time{}
		}
		return t.AddDate(0, 1, 0)
	}
	t, err := time.Parse("2006-01-02", period)
	if err != nil {
		return time.Time{}
	}
	return t.AddDate(0, 0, 1)
}

// alert announces that l reached level percent in period: a log line, a
// metric and, with emit, a mission event (kind budget).
func (mb *MissionBudget) alert(l BudgetLimit, period string, level int, emit bool) {
	mb.logger().Warn().Str("budget", l.Key()).Str("period", period).Int("percent", level).Msg(l.Name() + " reached")
	mb.b.metrics.budgetAlert(mb.b.tenant, l.Scope, l.Window, level)
	if emit && mb.events != nil {
		mb.events.Emit(&messages.Event{Kind: messages.EventBudget, Data: map[string]any{
			"budget": l.Name(), "scope": l.Scope, "window": l.Window, "period": period, "percent": int64(level),
			"max_cost_usd": l.MaxCostUSD, "max_tokens": l.MaxTokens}})
	}
}

// update changes the spend under key with compare-and-set, retrying on a
// concurrent change (counted as conflicts of op, reserve or settle);
// change returns false to write nothing.
//
// The changes of one key that this worker's calls make while a write of
// it is in progress wait for it and are then made by one write, each
// applied in turn to the record read (group commit): a worker competes
// with the other workers for the key with one write at a time, not one
// per slot, which keeps the compare-and-set retries down when many calls
// charge the same budget. The goroutine whose change comes first makes
// the write, within its ctx (within settleWait when the write carries
// others' changes too); the result is every change's.
func (b *Budgets) update(ctx context.Context, key, period, op string, change func(*BudgetSpend) bool) error {
	me := &budgetOp{change: change, op: op, done: make(chan error, 1)}
	b.qmu.Lock()
	q, writing := b.queues[key]
	if !writing {
		q = &budgetQueue{}
		b.queues[key] = q
	}
	q.ops = append(q.ops, me)
	b.qmu.Unlock()
	if writing {
		if err := <-me.done; err != errBudgetLead {
			return err
		}
	}
	b.qmu.Lock()
	batch := q.ops
	q.ops = nil
	b.qmu.Unlock()
	if len(batch) > 1 {
		// the write is the others' too: the end of this call's context
		// (its mission cancelled) does not fail theirs
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), b.settleWait)
		defer cancel()
	}
	lost, err := casJSONCounted(ctx, b.spend, key, "budget spend", BudgetSpend{Period: period}, func(s *BudgetSpend) bool {
		write := false
		for _, o := range batch {
			write = o.change(s) || write
		}
		return write
	})
	b.qmu.Lock()
	if len(q.ops) > 0 {
		q.ops[0].done <- errBudgetLead
	} else {
		delete(b.queues, key)
	}
	b.qmu.Unlock()
	for _, o := range batch {
		b.metrics.budgetConflicts(b.tenant, o.op, lost)
		if o != me {
			o.done <- err
		}
	}
	return err
}

// isWrongSequence reports a compare-and-set that lost to another writer.
func isWrongSequence(err error) bool {
	if err == nil {
		return false // before apiErr, which errors.As keeps on the heap
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// BudgetStatus is a budget with its spend in the current period.
type BudgetStatus struct {
	Limit BudgetLimit `json:"limit"`
	Spend BudgetSpend `json:"spend"`
}

// SetBudget stores l in budget_limits (a limit bounding nothing deletes
// the budget); workers apply it within two seconds.
func SetBudget(ctx context.Context, js jetstream.JetStream, l BudgetLimit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, messages.BucketBudgetLimits)
	if err != nil {
		return fmt.Errorf("budget bucket %s: %w (run worker setup)", messages.BucketBudgetLimits, err)
	}
	if l.MaxCostUSD == 0 && l.MaxTokens == 0 {
		err = kv.Delete(ctx, l.Key())
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			err = nil
		}
		return err
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, l.Key(), data)
	return err
}

// ListBudgets returns every budget with its spend in the period holding
// now, sorted by key.
func ListBudgets(ctx context.Context, js jetstream.JetStream, now time.Time) ([]BudgetStatus, error) {
	limits, err := js.KeyValue(ctx, messages.BucketBudgetLimits)
	if err != nil {
		return nil, fmt.Errorf("budget bucket %s: %w (run worker setup)", messages.BucketBudgetLimits, err)
	}
	spend, err := js.KeyValue(ctx, messages.BucketBudgetSpend)
	if err != nil {
		return nil, fmt.Errorf("budget bucket %s: %w (run worker setup)", messages.BucketBudgetSpend, err)
	}
	keys, err := limits.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []BudgetStatus
	for k := range keys.Keys() {
		e, err := limits.Get(ctx, k)
		if err != nil {
			continue
		}
		var st BudgetStatus
		if json.Unmarshal(e.Value(), &st.Limit) != nil {
			continue
		}
		period := budgetPeriod(st.Limit.Window, now)
		st.Spend.Period = period
		if se, err := spend.Get(ctx, k+"."+period); err == nil {
			_ = json.Unmarshal(se.Value(), &st.Spend)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b BudgetStatus) int { return strings.Compare(a.Limit.Key(), b.Limit.Key()) })
	return out, nil
}
