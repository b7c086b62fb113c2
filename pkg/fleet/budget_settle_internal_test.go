package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/syncbuf"
)

// faultKV is a KV bucket whose writes can be stored with their reply lost
// and whose calls can hang until their context ends, as while JetStream
// has no leader.
type faultKV struct {
	jetstream.KeyValue

	mu sync.Mutex
	// lose is how many of the next writes are stored but answer an error;
	// loseEvery loses the reply of every n-th write (0: none).
	lose, loseEvery, writes int
	// down makes every call wait for its context to end.
	down bool
	// gate, when set, holds the next write until it is closed.
	gate chan struct{}
}

var errReplyLost = fmt.Errorf("reply lost: %w", nats.ErrTimeout)

func (f *faultKV) isDown() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

func (f *faultKV) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// loseReply counts a stored write and reports whether its reply is lost.
func (f *faultKV) loseReply() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.lose > 0 {
		f.lose--
		return true
	}
	return f.loseEvery > 0 && f.writes%f.loseEvery == 0
}

func (f *faultKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if f.isDown() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.KeyValue.Get(ctx, key)
}

func (f *faultKV) write(ctx context.Context, do func() (uint64, error)) (uint64, error) {
	if f.isDown() {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	f.mu.Lock()
	gate := f.gate
	f.gate = nil
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	rev, err := do()
	if err == nil && f.loseReply() {
		return 0, errReplyLost
	}
	return rev, err
}

func (f *faultKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return f.write(ctx, func() (uint64, error) { return f.KeyValue.Create(ctx, key, value, opts...) })
}

func (f *faultKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	return f.write(ctx, func() (uint64, error) { return f.KeyValue.Update(ctx, key, value, rev) })
}

// faultBudgets returns budgets whose spend bucket is a faultKV, with a day
// budget of $1000 and 1,000,000 tokens for submitter alice, tries of
// 200 ms and a short backoff; the budgets are closed with the test.
func faultBudgets(t *testing.T) (context.Context, *Budgets, *faultKV) {
	t.Helper()
	ctx, _, js, st := embeddedStores(t)
	if err := SetBudget(ctx, js, BudgetLimit{Scope: BudgetSubmitterScope("alice"), Window: BudgetDay, MaxCostUSD: 1000, MaxTokens: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	b := newBudgets(st, "acme", nil)
	f := &faultKV{KeyValue: b.spend}
	b.spend = f
	b.settleWait, b.retryMin, b.retryMax = 200*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { b.close(time.Second) })
	return ctx, b, f
}

// spendOf reads alice's day spend in the current period.
func spendOf(ctx context.Context, t *testing.T, b *Budgets) BudgetSpend {
	t.Helper()
	key := BudgetSubmitterScope("alice") + "." + BudgetDay + "." + budgetPeriod(BudgetDay, b.now())
	e, err := b.spend.(*faultKV).KeyValue.Get(ctx, key)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	var s BudgetSpend
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitSettled waits until the budgets' background settles are done.
func waitSettled(t *testing.T, b *Budgets) {
	t.Helper()
	done := make(chan struct{})
	go func() { b.settling.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("background settles still running after 20 s")
	}
}

// A settle whose write is stored but whose reply is lost is tried again
// and charged once: the record shows the reservation settled, and the try
// after the lost reply writes nothing.
func TestBudgetSettleWithItsReplyLostIsChargedOnce(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	r, err := b.forMission("alice", nil, nil).Reserve(ctx, "m", BudgetAmount{CostUSD: 0.5, Tokens: 500}, true)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.lose, f.writes = 1, 0
	f.mu.Unlock()
	r.Settle(ctx, BudgetAmount{CostUSD: 0.25, Tokens: 300})
	waitSettled(t, b)
	s := spendOf(ctx, t, b)
	if s.CostUSD != 0.25 || s.Tokens != 300 || s.ReservedCostUSD != 0 || s.ReservedTokens != 0 || len(s.Held) != 0 {
		t.Errorf("spend %+v; want $0.25 and 300 tokens charged once, nothing held", s)
	}
	if f.writes != 1 {
		t.Errorf("%d writes; want the settle written once", f.writes)
	}
}

// A reservation whose write is stored but whose reply is lost fails the
// call (it may be tried again) and is given back: it does not stay held.
func TestBudgetReserveWithItsReplyLostIsGivenBack(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	f.mu.Lock()
	f.lose = 1
	f.mu.Unlock()
	if _, err := b.forMission("alice", nil, nil).Reserve(ctx, "m", BudgetAmount{CostUSD: 0.5, Tokens: 500}, true); err == nil {
		t.Fatal("a reservation whose reply was lost succeeded")
	}
	waitSettled(t, b)
	if s := spendOf(ctx, t, b); s.ReservedCostUSD != 0 || s.ReservedTokens != 0 || len(s.Held) != 0 || s.CostUSD != 0 {
		t.Errorf("spend %+v; want the reservation given back", s)
	}
}

// A settle that times out (the store does not answer) keeps being tried
// in the background and is charged, once, when the store answers again;
// meanwhile the reservation stays held.
func TestBudgetSettleTimingOutIsChargedWhenTheStoreAnswers(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	b.metrics = m
	pending := func() float64 {
		var d dto.Metric
		if err := m.budgetPending.WithLabelValues("acme").Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetGauge().GetValue()
	}
	r, err := b.forMission("alice", nil, nil).Reserve(ctx, "m", BudgetAmount{CostUSD: 0.5, Tokens: 500}, true)
	if err != nil {
		t.Fatal(err)
	}
	f.setDown(true)
	start := time.Now()
	r.Settle(ctx, BudgetAmount{CostUSD: 0.25, Tokens: 300})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Settle took %v with the store down; want it to give up after its try of 200 ms", d)
	}
	time.Sleep(500 * time.Millisecond) // several tries in the background, all timing out
	if v := pending(); v != 1 {
		t.Errorf("ptc_budget_settles_pending = %v while the store is down, want 1", v)
	}
	f.setDown(false)
	waitSettled(t, b)
	s := spendOf(ctx, t, b)
	if s.CostUSD != 0.25 || s.Tokens != 300 || s.ReservedCostUSD != 0 || s.ReservedTokens != 0 || len(s.Held) != 0 {
		t.Errorf("spend %+v; want $0.25 and 300 tokens charged, nothing held", s)
	}
	if v := pending(); v != 0 {
		t.Errorf("ptc_budget_settles_pending = %v once settled, want 0", v)
	}
}

// Many reservations settled at once, with one write in seven losing its
// reply, add up exactly: every settled call is charged once and nothing
// stays held.
func TestBudgetConcurrentSettlesAddUp(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	f.mu.Lock()
	f.loseEvery = 7
	f.mu.Unlock()
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mb := b.forMission("alice", nil, nil)
			// a reservation that failed (its reply lost) is tried again,
			// as the model call's retry would
			for try := 0; ; try++ {
				r, err := mb.Reserve(ctx, "m", BudgetAmount{CostUSD: 1, Tokens: 1000}, true)
				if err != nil {
					if try < 10 {
						continue
					}
					errs <- err
					return
				}
				// dyadic amounts add up exactly in any order
				r.Settle(ctx, BudgetAmount{CostUSD: float64(i+1) / 64, Tokens: int64(i + 1)})
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitSettled(t, b)
	s := spendOf(ctx, t, b)
	wantCost, wantTokens := float64(n*(n+1)/2)/64, int64(n*(n+1)/2)
	if s.CostUSD != wantCost || s.Tokens != wantTokens || s.ReservedTokens != 0 || s.ReservedCostUSD != 0 || len(s.Held) != 0 {
		t.Errorf("spend %+v; want $%v and %d tokens, nothing held", s, wantCost, wantTokens)
	}
}

// A spend record written without held (by a worker of an earlier version)
// still reads: its reservations stay held under no ID, and new ones are
// reserved and settled beside them.
func TestBudgetSpendWithoutHeldStillReads(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	key := BudgetSubmitterScope("alice") + "." + BudgetDay + "." + budgetPeriod(BudgetDay, b.now())
	old := fmt.Sprintf(`{"period":%q,"cost_usd":2,"tokens":20,"reserved_cost_usd":4,"reserved_tokens":40}`, budgetPeriod(BudgetDay, b.now()))
	if _, err := f.KeyValue.Put(ctx, key, []byte(old)); err != nil {
		t.Fatal(err)
	}
	r, err := b.forMission("alice", nil, nil).Reserve(ctx, "m", BudgetAmount{CostUSD: 1, Tokens: 10}, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := spendOf(ctx, t, b); s.ReservedCostUSD != 5 || s.ReservedTokens != 50 || len(s.Held) != 1 || s.Held[0] != r.id {
		t.Errorf("reserved on an old record: %+v", s)
	}
	r.Settle(ctx, BudgetAmount{CostUSD: 0.5, Tokens: 5})
	if s := spendOf(ctx, t, b); s.CostUSD != 2.5 || s.Tokens != 25 || s.ReservedCostUSD != 4 || s.ReservedTokens != 40 || len(s.Held) != 0 {
		t.Errorf("settled on an old record: %+v", s)
	}
}

// The settles of one key that a worker's calls make while a write of it
// is in progress wait for it and are then made by one write: 10 settles
// behind a held write take one more write, not 10, and add up.
func TestBudgetSettlesWaitingForAWriteAreOneWrite(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	const n = 11
	mb := b.forMission("alice", nil, nil)
	rs := make([]*BudgetReservation, n)
	for i := range rs {
		r, err := mb.Reserve(ctx, "m", BudgetAmount{CostUSD: 1, Tokens: 10}, true)
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate, f.writes = gate, 0
	f.mu.Unlock()
	var wg sync.WaitGroup
	settle := func(r *BudgetReservation) {
		defer wg.Done()
		r.Settle(ctx, BudgetAmount{CostUSD: 0.5, Tokens: 5})
	}
	wg.Add(1)
	go settle(rs[0])
	key := BudgetSubmitterScope("alice") + "." + BudgetDay + "." + budgetPeriod(BudgetDay, b.now())
	waiting := func() int {
		b.qmu.Lock()
		defer b.qmu.Unlock()
		if q := b.queues[key]; q != nil {
			return len(q.ops)
		}
		return -1
	}
	waitFor := func(want int) {
		for deadline := time.Now().Add(10 * time.Second); waiting() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(gate)
				t.Fatalf("%d settles wait for the key's write, want %d", waiting(), want)
			}
		}
	}
	waitFor(0) // the first settle writes
	for _, r := range rs[1:] {
		wg.Add(1)
		go settle(r)
	}
	waitFor(n - 1)
	close(gate)
	wg.Wait()
	if f.writes != 2 {
		t.Errorf("%d writes for %d settles, %d of them waiting for the first; want 2", f.writes, n, n-1)
	}
	s := spendOf(ctx, t, b)
	if s.CostUSD != 0.5*n || s.Tokens != 5*n || s.ReservedCostUSD != 0 || s.ReservedTokens != 0 || len(s.Held) != 0 {
		t.Errorf("spend %+v; want $%v and %d tokens, nothing held", s, 0.5*n, 5*n)
	}
}

// A stopping worker gives the settles failing in the background a last
// wait and then gives up: Stop does not hang on a store that does not
// answer, and the reservation stays held (spending errs on the side of
// less) with an error logged.
func TestBudgetSettleGivesUpWhenTheWorkerStops(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	var logs syncbuf.Buffer
	log := zerolog.New(&logs)
	r, err := b.forMission("alice", nil, &log).Reserve(ctx, "m", BudgetAmount{CostUSD: 0.5, Tokens: 500}, true)
	if err != nil {
		t.Fatal(err)
	}
	f.setDown(true)
	r.Settle(ctx, BudgetAmount{CostUSD: 0.25, Tokens: 300})
	start := time.Now()
	b.close(300 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("close took %v with the store down; want about its wait of 300 ms and a try", d)
	}
	f.setDown(false)
	if s := spendOf(ctx, t, b); s.ReservedCostUSD != 0.5 || s.ReservedTokens != 500 || len(s.Held) != 1 || s.CostUSD != 0 {
		t.Errorf("spend %+v; want the reservation still held", s)
	}
	if !strings.Contains(logs.String(), "budget not settled before the worker stopped") {
		t.Errorf("no error logged for the settle given up:\n%s", logs.String())
	}
	// a settle after the stop is tried once and not left running
	r2, err := b.forMission("alice", nil, &log).Reserve(ctx, "m", BudgetAmount{CostUSD: 0.5, Tokens: 500}, true)
	if err != nil {
		t.Fatal(err)
	}
	f.setDown(true)
	r2.Settle(ctx, BudgetAmount{CostUSD: 0.25, Tokens: 300})
	waitSettled(t, b)
	if !strings.Contains(logs.String(), "budget not settled and the worker stops") {
		t.Errorf("no error logged for a settle failing after the stop:\n%s", logs.String())
	}
}

// A write carrying several calls' changes is not failed by the end of
// the context of the call that makes it (its mission cancelled): the
// others' reservations are made.
func TestBudgetBatchOutlivesItsWritersContext(t *testing.T) {
	ctx, b, f := faultBudgets(t)
	// The writes here are held by the gate while the test queues the
	// others, which on a loaded machine under -race can take longer than
	// faultBudgets' 200 ms tries: the writes get the worker's own bound.
	// The clock stands still, so the limits read by the first Reserve stay
	// cached and the cancelled call reads none of them with its ended
	// context: only the write it makes is under test.
	b.settleWait = budgetSettleWait
	start := time.Now()
	b.now = func() time.Time { return start }
	mb := b.forMission("alice", nil, nil)
	first, err := mb.Reserve(ctx, "m", BudgetAmount{CostUSD: 1, Tokens: 10}, true)
	if err != nil {
		t.Fatal(err)
	}
	key := BudgetSubmitterScope("alice") + "." + BudgetDay + "." + budgetPeriod(BudgetDay, b.now())
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b.qmu.Lock()
			q := b.queues[key]
			n := -1
			if q != nil {
				n = len(q.ops)
			}
			b.qmu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d changes wait for the key's write, want %d", n, want)
			}
		}
	}
	gate := make(chan struct{})
	f.mu.Lock()
	f.gate = gate
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { first.Settle(ctx, BudgetAmount{CostUSD: 1, Tokens: 10}); close(done) }()
	waitFor(0)
	cancelled, cancel := context.WithCancel(ctx)
	errs := make(chan error, 2)
	go func() { _, err := mb.Reserve(cancelled, "m", BudgetAmount{CostUSD: 1, Tokens: 10}, true); errs <- err }()
	waitFor(1)
	go func() { _, err := mb.Reserve(ctx, "m", BudgetAmount{CostUSD: 2, Tokens: 20}, true); errs <- err }()
	waitFor(2)
	cancel()
	close(gate)
	<-done
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a reservation in a write made by a cancelled call: %v", err)
		}
	}
	if s := spendOf(ctx, t, b); s.ReservedCostUSD != 3 || s.ReservedTokens != 30 || len(s.Held) != 2 {
		t.Errorf("spend %+v; want both reservations held", s)
	}
}
