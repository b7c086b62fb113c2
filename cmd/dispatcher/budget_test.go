package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// budget set stores a fleet-wide budget that budget show lists with its
// period and spend; a bad window is refused naming it; bounds of 0 remove
// the budget.
func TestBudgetSetAndShow(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()})
	do := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"budget"}, args...), e, &out, &errOut)
		return out.String(), err
	}
	if out, err := do("set", "-scope", "submitter:alice", "-window", "month", "-max-cost-usd", "50", "-max-tokens", "1000000"); err != nil ||
		!strings.Contains(out, "submitter alice's month budget set: $50.00, 1000000 tokens") {
		t.Fatalf("set: %q, %v", out, err)
	}
	if _, err := do("set", "-scope", "account", "-window", "week", "-max-cost-usd", "5"); err == nil || !strings.Contains(err.Error(), `budget window "week"`) {
		t.Errorf("set -window week: err = %v", err)
	}
	out, err := do("show")
	month := time.Now().UTC().Format("2006-01")
	if err != nil || !strings.Contains(out, "submitter.alice") || !strings.Contains(out, month) || !strings.Contains(out, "$50.00, 1000000 tokens") || !strings.Contains(out, "0%") {
		t.Fatalf("show: %q, %v", out, err)
	}
	out, err = do("show", "-json")
	var list []fleet.BudgetStatus
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Limit.MaxCostUSD != 50 || list[0].Spend.Period != month {
		t.Fatalf("show -json: %q, %v", out, err)
	}
	if out, err := do("set", "-scope", "submitter:alice", "-window", "month"); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("remove: %q, %v", out, err)
	}
	if out, err := do("show"); err != nil || !strings.Contains(out, "no budgets") {
		t.Errorf("show after remove: %q, %v", out, err)
	}
}
