package fleet_test

import (
	"context"
	"slices"
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
// -benchtime Nx: each of the N rounds measures both on fresh servers
// (a round takes a few seconds), and the medians over the rounds are
// reported, with their ratio.
func BenchmarkFairShare(b *testing.B) {
	const flood, probe = 10_000, 100
	var idle, flooded []time.Duration
	for b.Loop() {
		idle = append(idle, fairShareRun(b, 0, probe))
		flooded = append(flooded, fairShareRun(b, flood, probe))
	}
	mi, mf := median(idle), median(flooded)
	b.ReportMetric(float64(mi.Microseconds()), "idle-p50-µs")
	b.ReportMetric(float64(mf.Microseconds()), "flooded-p50-µs")
	b.ReportMetric(float64(mf)/float64(mi), "ratio")
	b.Logf("b's p50 per round, idle %v, flooded %v", idle, flooded)
}

// median returns the median of d (the upper one of an even count).
func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
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
	// The round's workers would go on with a's backlog and its server
	// would stay up: both end with the round, not to load the next.
	var workers []*fleet.Worker
	defer func() {
		for _, w := range workers {
			_ = w.Stop()
		}
		srv.Close()
	}()
	for range 2 {
		wnc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(wnc.Close)
		workers = append(workers, startWorker(b, wnc, runner, func(cfg *fleet.WorkerConfig) { cfg.Slots = 8 }))
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
