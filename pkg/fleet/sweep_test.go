package fleet_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A decision recorded whose wake was lost (its decider stopped between
// the two) is found by the fleet's sweep, with no person deciding again:
// the mission resumes with the recorded decision and its call runs once.
// A mission whose call still waits for a decision is left waiting.
func TestWorkersQueueAStalledDecisionAgain(t *testing.T) {
	srv, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	reg := prometheus.NewRegistry()
	metrics, err := fleet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, connect(t, srv), refundRunner(nil), func(c *fleet.WorkerConfig) { c.StalledAfter, c.Metrics = time.Second, metrics })
	ctx := testCtx(t)
	alice := submitterClient(t, nc, "alice")
	lost, waiting := refundMission(150), refundMission(200)
	lostCall := submitAwaiting(ctx, t, alice, lost)
	submitAwaiting(ctx, t, alice, waiting)
	approveParkedWithoutWake(ctx, t, alice, w, 2, lost.ID, lostCall)
	step, err := alice.Await(ctx, lost.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("the stalled mission: %+v %v", step, err)
	}
	as, err := alice.Approvals(ctx, lost.ID)
	if err != nil || len(as) != 1 || as[0].DecidedBy != "lost-decider" || as[0].State != messages.ApprovalApproved {
		t.Fatalf("its approval record: %+v %v", as, err)
	}
	if got := counterSum(t, reg, "ptc_stalled_decisions_requeued_total"); got != 1 {
		t.Fatalf("ptc_stalled_decisions_requeued_total %v, want 1", got)
	}
	// three more ticks: the undecided mission still waits, its refund
	// not run, and the stalled one was queued once
	time.Sleep(3500 * time.Millisecond)
	st, err := alice.Status(ctx, waiting.ID)
	if err != nil || st.State != messages.StateAwaitingApproval {
		t.Fatalf("the mission whose call waits for a decision: %+v %v", st, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 || refunds[0]["amount"] != int64(150) {
		t.Fatalf("refunds run: %v, want the stalled mission's once", refunds)
	}
	if got := counterSum(t, reg, "ptc_stalled_decisions_requeued_total"); got != 1 {
		t.Fatalf("ptc_stalled_decisions_requeued_total %v after more ticks, want 1", got)
	}
}

// The fleet keeps one sweep schedule in PARKED: a worker starting where
// one with its period is leaves it (and the time of its next tick) as it
// is; one started with another period replaces it.
func TestSweepScheduleIsTheFleets(t *testing.T) {
	srv, nc := runJetStream(t)
	ctx := testCtx(t)
	every := func(d time.Duration) func(*fleet.WorkerConfig) {
		return func(c *fleet.WorkerConfig) { c.StalledAfter = d }
	}
	startWorker(t, connect(t, srv), refundRunner(nil), every(time.Hour))
	parked := newClient(t, nc).Stores().Parked
	schedule := func() *jetstream.RawStreamMsg {
		t.Helper()
		m, err := parked.GetLastMsgForSubject(ctx, messages.SweepSubject)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	set := schedule()
	if got := set.Header.Get("Nats-Schedule"); got != "@every 1h0m0s" {
		t.Fatalf("schedule %q, want every hour", got)
	}
	if got := set.Header.Get("Nats-Schedule-Target"); got != messages.SweepTickSubject {
		t.Fatalf("schedule target %q", got)
	}
	startWorker(t, connect(t, srv), refundRunner(nil), every(time.Hour))
	if again := schedule(); again.Sequence != set.Sequence {
		t.Fatalf("a worker with the same period wrote the schedule again (sequence %d, was %d)", again.Sequence, set.Sequence)
	}
	startWorker(t, connect(t, srv), refundRunner(nil), every(30*time.Minute))
	if got := schedule().Header.Get("Nats-Schedule"); got != "@every 30m0s" {
		t.Fatalf("schedule %q after a worker with a 30 min period started", got)
	}
	info, err := parked.Info(ctx, jetstream.WithSubjectFilter(messages.SweepSubject))
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("PARKED holds %+v schedules (%v), want 1", info.State, err)
	}
}

// A worker refuses a sweep period under a second (a schedule's shortest).
func TestStalledAfterUnderASecondRefused(t *testing.T) {
	_, nc := runJetStream(t)
	_, err := fleet.NewWorker(nc, fleet.WorkerConfig{Runner: refundRunner(nil), StalledAfter: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("a stalled-after of 500ms: no error")
	}
}

// counterSum sums the counter name's series in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
