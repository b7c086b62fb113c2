package k8s_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/deploy/k8s/natsauth"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A worker whose NATS user may not subscribe to the notices of queued
// missions (a NATS config older than the layout's setup) hears the
// submits as published instead, and starts each mission at once, not at
// its next sweep of the lanes a second or two later.
func TestWorkerRefusedNoticesHearsSubmits(t *testing.T) {
	ns := natsConfig(t, loadManifests(t))
	accounts := natsauth.Shipped()
	conf := natsauth.AuthConf(accounts)
	line := regexp.MustCompile(`(?m)^\s*"` + regexp.QuoteMeta(messages.QueuedWildcard) + `"\n`)
	if len(line.FindAllString(conf, -1)) != 1 {
		t.Fatalf("the shipped auth.conf does not let the worker (alone) subscribe to %s", messages.QueuedWildcard)
	}
	if err := os.WriteFile(filepath.Join(ns.dir, "auth.conf"), []byte(line.ReplaceAllString(conf, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range natsauth.PasswordVars(accounts) {
		if os.Getenv(v) == "" {
			t.Setenv(v, "test-"+strings.ToLower(v))
		}
	}
	srv := startAuthServer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fa := startAccount(t, ctx, srv.ClientURL(), ns, accounts[0])
	time.Sleep(1500 * time.Millisecond) // past the worker's first sweeps
	for i := range 3 {
		start := time.Now()
		m := bigMission()
		if step, err := fa.client.Run(ctx, m); err != nil || step.Fail != nil {
			t.Fatalf("mission %d: %+v, %v", i, step, err)
		}
		if d := time.Since(start); d > 700*time.Millisecond {
			t.Errorf("mission %d took %v: found by a sweep, not by its submit", i, d)
		}
	}
}

// An approver whose NATS user may not publish decisions' wakes into
// MISSIONS (a NATS config older than the layout's setup) queues them in
// PARKED, from which the workers move them into MISSIONS: its decision
// returns at once, with no error, and the mission resumes and finishes.
func TestApproverRefusedWokenQueuesInParked(t *testing.T) {
	ns := natsConfig(t, loadManifests(t))
	accounts := natsauth.Shipped()
	conf := natsauth.AuthConf(accounts)
	// the approver's user alone loses the woken subjects: the workers
	// still move PARKED's wakes into MISSIONS there
	line := regexp.MustCompile(`(?m)^\s*"` + regexp.QuoteMeta(messages.WokenWildcard) + `"\n`)
	at := strings.Index(conf, `user: "`+natsauth.RoleApprover+`"`)
	if at < 0 {
		t.Fatal("the shipped auth.conf has no approver user")
	}
	end := at + 1 + strings.Index(conf[at+1:], "user: ")
	if end <= at {
		end = len(conf)
	}
	approverBlock := conf[at:end]
	if len(line.FindAllString(approverBlock, -1)) == 0 {
		t.Fatalf("the shipped auth.conf lets the approver not publish on %s", messages.WokenWildcard)
	}
	conf = conf[:at] + line.ReplaceAllString(approverBlock, "") + conf[end:]
	if err := os.WriteFile(filepath.Join(ns.dir, "auth.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range natsauth.PasswordVars(accounts) {
		if os.Getenv(v) == "" {
			t.Setenv(v, "test-"+strings.ToLower(v))
		}
	}
	srv := startAuthServer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fa := startAccount(t, ctx, srv.ClientURL(), ns, accounts[0])
	ap := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "south"}, Tools: []string{"list_customers"}, Context: map[string]any{"approve": true}}
	if _, err := fa.client.Submit(ctx, ap); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := fa.client.Status(ctx, ap.ID)
		if err == nil && st.State == messages.StateAwaitingApproval {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("mission never awaited approval: %+v, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	approver, err := fleet.NewClient(ctx, fa.approver.nc, fleet.ClientConfig{SkipSetup: true, AllSubmitters: true})
	if err != nil {
		t.Fatalf("approver client: %v", err)
	}
	start := time.Now()
	if _, err := approver.Decide(ctx, ap.ID, fleet.Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatalf("the approver's decision: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the decision took %v: it waited for a refused publish", d)
	}
	if step, err := fa.client.Await(ctx, ap.ID); err != nil || !step.Ok() {
		t.Fatalf("approved mission: %+v, %v", step, err)
	}
	for _, v := range fa.approver.violations() {
		if !strings.Contains(v, `"`+messages.SubjectWokenPrefix) {
			t.Errorf("the approver's traffic was refused besides the woken subject: %s", v)
		}
	}
}
