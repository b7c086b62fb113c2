// Package agentworker starts, for a test, a fleet worker whose agent
// runner asks one model (a scripted one, as a rule) for every mission. It
// lives apart from fleettest because it imports the fleet, which
// fleettest's users inside pkg/fleet cannot.
package agentworker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
)

// Start starts a worker on nc with two slots and a short idle wait whose
// agent runner uses model as "default", edited by edit, and stops it when
// tb ends; it fails tb if the worker cannot start.
func Start(ctx context.Context, tb testing.TB, nc *nats.Conn, model llm.Model, edit ...func(*fleet.WorkerConfig)) *fleet.Worker {
	tb.Helper()
	cfg := fleet.WorkerConfig{
		Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}),
		Slots:  2, IdleWait: 100 * time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	w, err := fleet.NewWorker(nc, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Stop() })
	return w
}
