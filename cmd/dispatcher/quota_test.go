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

// quota set stores a per-submitter quota that quota show lists; a bad
// scope or a negative bound is refused naming it; a quota bounding
// nothing is removed.
func TestQuotaSetAndShow(t *testing.T) {
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL()})
	do := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"quota"}, args...), e, &out, &errOut)
		return out.String(), err
	}
	if out, err := do("set", "-scope", "submitter:alice", "-max-running", "3", "-max-queued", "50"); err != nil ||
		!strings.Contains(out, "submitter alice's quota set: max_running 3, max_queued 50") {
		t.Fatalf("set: %q, %v", out, err)
	}
	if out, err := do("set", "-max-running", "10", "-weight", "2"); err != nil || !strings.Contains(out, "the default quota set: max_running 10, weight 2") {
		t.Fatalf("set default: %q, %v", out, err)
	}
	if _, err := do("set", "-scope", "team", "-max-running", "1"); err == nil || !strings.Contains(err.Error(), `quota scope "team"`) {
		t.Errorf("set -scope team: err = %v", err)
	}
	if _, err := do("set", "-scope", "submitter:bob", "-max-running", "-1"); err == nil || !strings.Contains(err.Error(), "quota max_running -1") {
		t.Errorf("set -max-running -1: err = %v", err)
	}
	if _, err := do("set", "-scope", "submitter:bob", "-weight", "101"); err == nil || !strings.Contains(err.Error(), "quota weight 101") {
		t.Errorf("set -weight 101: err = %v", err)
	}
	if _, err := do("set", "-scope", "submitter:bob", "-max-queued", "-2"); err == nil || !strings.Contains(err.Error(), "quota max_queued -2") {
		t.Errorf("set -max-queued -2: err = %v", err)
	}
	out, err := do("show")
	if err != nil || !strings.Contains(out, "submitter.alice") || !strings.Contains(out, "max_running 3") || !strings.Contains(out, "max_running 10") {
		t.Fatalf("show: %q, %v", out, err)
	}
	out, err = do("show", "-json")
	var list []fleet.QuotaStatus
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].Limit.Scope != fleet.QuotaDefault || list[0].Limit.Weight != 2 || list[1].Limit.MaxRunning != 3 || list[1].Limit.MaxQueued != 50 {
		t.Fatalf("show -json: %q, %v", out, err)
	}
	for _, scope := range []string{"submitter:alice", "default"} {
		if out, err := do("set", "-scope", scope); err != nil || !strings.Contains(out, "removed") {
			t.Fatalf("remove %s: %q, %v", scope, out, err)
		}
	}
	if out, err := do("show"); err != nil || !strings.Contains(out, "no quotas") {
		t.Errorf("show after remove: %q, %v", out, err)
	}
}
