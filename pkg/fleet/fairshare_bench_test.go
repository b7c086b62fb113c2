package fleet_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BenchmarkFairShare measures what one submitter's backlog costs another:
// the p50 time from the call of Submit to the start of the Runner of 100
// missions of submitter "b" on an idle fleet (2 workers of 8 slots, a
// runner that only records its start), then the same after submitter "a"
// (a client of its own) queued 10,000 missions while the workers were
// stopped. The ratio of the two p50s is the figure the fair-share target
// bounds (2×); docs/fleet.md ("Fair share") has the figures. Run with
// -benchtime 1x: one run takes about a minute.
func BenchmarkFairShare(b *testing.B) {
	const flood, probe = 10_000, 100
	for b.Loop() {
		idle := fairShareRun(b, 0, probe)
		flooded := fairShareRun(b, flood, probe)
		b.ReportMetric(float64(idle.Microseconds()), "idle-p50-µs")
		b.ReportMetric(float64(flooded.Microseconds()), "flooded-p50-µs")
		b.ReportMetric(float64(flooded)/float64(idle), "ratio")
	}
}

// fairShareRun queues flood missions of submitter a with no worker
// running, starts the workers, submits probe missions of submitter b and
// returns the p50 of b's times from submit to start.
func fairShareRun(b *testing.B, flood, probe int) time.Duration {
	srv, nc := runJetStream(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := map[string]*fleet.Client{"a": submitterClient(b, nc, "a"), "b": submitterClient(b, nc, "b")}
	var submitted sync.Map // mission id → when Submit was called
	submit := func(submitter string, n, par int) []string {
		c := clients[submitter]
		ids := make([]string, n)
		var wg sync.WaitGroup
		for g := range par {
			wg.Go(func() {
				for i := g; i < n; i += par {
					m := newMission()
					m.Labels = map[string]string{"submitter": submitter}
					ids[i] = m.ID
					submitted.Store(m.ID, time.Now())
					if _, err := c.Submit(ctx, m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return ids
	}
	submit("a", flood, 16)

	var mu sync.Mutex
	var lat []time.Duration
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if m.Labels["submitter"] == "b" {
			at, _ := submitted.Load(m.ID)
			mu.Lock()
			lat = append(lat, time.Since(at.(time.Time)))
			mu.Unlock()
		}
		return &messages.Step{Return: true}, nil
	})
	for range 2 {
		wnc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(wnc.Close)
		startWorker(b, wnc, runner, func(cfg *fleet.WorkerConfig) { cfg.Slots = 8 })
	}
	for _, id := range submit("b", probe, 4) {
		if _, err := clients["b"].Await(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) != probe {
		b.Fatalf("%d of b's missions started, want %d", len(lat), probe)
	}
	return lat[len(lat)/2]
}
