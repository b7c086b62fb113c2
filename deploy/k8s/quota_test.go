package k8s_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/deploy/k8s/natsauth"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Under the shipped permissions only the administrator sets quotas: a
// submitter can write neither the quotas nor the leases (it could free
// its own quota), a worker takes and gives back leases but cannot change
// a quota; a mission runs under a quota set by the administrator with
// none of the worker's lease traffic refused, and the submitter's check
// of its queued quota is let through.
func TestNATSQuotaOnlyTheAdminSetsIt(t *testing.T) {
	ms := loadManifests(t)
	ns := natsConfig(t, ms)
	srv := startAuthServer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fa := startAccount(t, ctx, srv.ClientURL(), ns, natsauth.Shipped()[0])
	ajs, err := jetstream.New(fa.admin.nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.SetQuota(ctx, ajs, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope(natsauth.RoleDispatcher), MaxRunning: 1, MaxQueued: 10}); err != nil {
		t.Fatalf("the admin sets a quota: %v", err)
	}
	for range 2 {
		if step, err := fa.client.Run(ctx, bigMission()); err != nil || step.Fail != nil {
			t.Fatalf("mission under a quota: %+v, %v", step, err)
		}
	}
	for _, r := range []*role{fa.worker, fa.dispatcher} {
		if v := r.violations(); len(v) > 0 {
			t.Fatalf("the fleet's quota traffic was refused: %v", v)
		}
	}
	djs, err := jetstream.New(fa.dispatcher.nc)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	if err := fleet.SetQuota(sctx, djs, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope(natsauth.RoleDispatcher), MaxRunning: 100}); err == nil {
		t.Error("a submitter raised its own quota")
	}
	scancel()
	limit := "$KV." + messages.BucketQuotaLimits + "." + fleet.QuotaSubmitterScope(natsauth.RoleDispatcher)
	for _, subj := range []string{limit, "$KV." + messages.BucketQuotaLimits + "." + fleet.QuotaDefault,
		"$KV." + messages.BucketQuotaLeases + "." + natsauth.RoleDispatcher} {
		refused(t, fa.dispatcher, subj, map[string]any{"max_running": 100})
	}
	refused(t, fa.worker, limit, map[string]any{"max_running": 100})
	refused(t, fa.dispatcher, "$JS.API.STREAM.PURGE.KV_"+messages.BucketQuotaLeases, nil)
	refused(t, fa.worker, "$JS.API.STREAM.PURGE.KV_"+messages.BucketQuotaLimits, nil)
}
