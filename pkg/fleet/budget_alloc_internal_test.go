package fleet

import (
	"context"
	"testing"
	"time"
)

// TestReserveWithoutBudgetsAllocations: a model call that no budget
// bounds makes its reservation alone; the submitter's budget keys are
// made once and kept, and the reservation's id only once a budget holds
// it.
func TestReserveWithoutBudgetsAllocations(t *testing.T) {
	now := time.Now()
	b := &Budgets{now: func() time.Time { return now }, cached: map[string]cachedLimit{}}
	for _, key := range []string{"account.day", "account.month", "submitter.alice.day", "submitter.alice.month"} {
		b.cached[key] = cachedLimit{read: now} // read: no budget set
	}
	mb := b.forMission("alice", nil, nil)
	if k := b.submitterKeys("alice"); k != [2]string{"submitter.alice.day", "submitter.alice.month"} {
		t.Fatalf("submitter keys %q", k)
	}
	ctx := context.Background()
	r, err := mb.Reserve(ctx, "m", BudgetAmount{Tokens: 10}, true)
	if err != nil || r.id != "" || len(r.held) != 0 {
		t.Fatalf("Reserve: %+v, %v; want no id and nothing held", r, err)
	}
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = mb.Reserve(ctx, "m", BudgetAmount{Tokens: 10}, true) }); n != 1 {
		t.Errorf("Reserve without budgets: %v allocations, want 1 (the reservation)", n)
	}
}

// TestQuotaForSubmitterAllocations: reading a submitter's quota from the
// cache allocates nothing; its scope is made once and kept.
func TestQuotaForSubmitterAllocations(t *testing.T) {
	now := time.Now()
	q := &Quotas{now: func() time.Time { return now }, cached: map[string]cachedQuota{
		"submitter.alice": {q: &QuotaLimit{Scope: "submitter.alice", MaxQueued: 3}, read: now},
	}}
	ctx := context.Background()
	l, err := q.forSubmitter(ctx, "alice")
	if err != nil || l.MaxQueued != 3 {
		t.Fatalf("forSubmitter: %+v, %v; want alice's quota", l, err)
	}
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = q.forSubmitter(ctx, "alice") }); n != 0 {
		t.Errorf("forSubmitter: %v allocations, want 0", n)
	}
}
