package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// BenchmarkMissionCostReplicated is BenchmarkMissionCost's one worker on
// a 3-node cluster with the layout replicated 3 times, the worker
// publishing each mission's record and result in one atomic batch
// ("batch") or one after the other ("sequential"). It reports the submit →
// result latency (p50, p99) and the messages the worker sends and
// receives per mission.
func BenchmarkMissionCostReplicated(b *testing.B) {
	urls := fleet.RunCluster(b)
	store := testStore
	store.Replicas = 3
	dial := func() *nats.Conn {
		nc, err := nats.Connect(urls[0])
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	cnc := dial()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js, _ := jetstream.New(cnc)
	if _, err := fleet.EnsureStores(ctx, js, store); err != nil {
		b.Fatal(err)
	}
	c, err := fleet.NewClient(ctx, cnc, fleet.ClientConfig{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	startTools(b, dial())
	for _, mode := range []struct {
		name string
		edit func(*fleet.WorkerConfig)
	}{{"batch", func(*fleet.WorkerConfig) {}}, {"sequential", fleet.NoResultBatches}} {
		b.Run(mode.name, func(b *testing.B) {
			wnc := dial()
			w := startWorker(b, wnc, searchOnce, func(cfg *fleet.WorkerConfig) { cfg.Store = store }, mode.edit)
			defer func() { _ = w.Stop() }()
			run := func() time.Duration { return timedSearch(ctx, b, c) }
			run()
			time.Sleep(100 * time.Millisecond)
			w0 := wnc.Stats()
			var lat []time.Duration
			for b.Loop() {
				lat = append(lat, run())
			}
			w1 := wnc.Stats()
			n := float64(len(lat))
			b.ReportMetric(float64(w1.OutMsgs-w0.OutMsgs)/n, "worker-sent/mission")
			b.ReportMetric(float64(w1.InMsgs-w0.InMsgs)/n, "worker-recv/mission")
			reportLatency(b, lat)
		})
	}
}
