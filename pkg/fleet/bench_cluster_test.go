package fleet_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// runCluster starts a 3-node JetStream cluster of in-process servers
// (stopped by tb.Cleanup) and returns their client URLs once each accepts
// connections and JetStream answers.
func runCluster(tb testing.TB) []string {
	tb.Helper()
	var routes []*url.URL
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = fleettest.FreePort(tb)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	var urls []string
	for i := range ports {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "ptc", Host: "127.0.0.1", Port: ports[i]}, Routes: routes,
		})
		if err != nil {
			tb.Fatal(err)
		}
		go s.Start()
		tb.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(10 * time.Second) {
			tb.Fatal("cluster node not ready")
		}
		urls = append(urls, s.ClientURL())
	}
	return urls
}

// BenchmarkMissionCostReplicated is BenchmarkMissionCost's one worker on
// a 3-node cluster with the layout replicated 3 times, the worker
// publishing each mission's record and result in one atomic batch
// ("batch") or one after the other ("sequential"). It reports the submit →
// result latency (p50, p99) and the messages the worker sends and
// receives per mission.
func BenchmarkMissionCostReplicated(b *testing.B) {
	urls := runCluster(b)
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
			w := startWorker(b, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
				return &messages.Step{Return: r}, err
			}), func(cfg *fleet.WorkerConfig) { cfg.Store = store }, mode.edit)
			defer func() { _ = w.Stop() }()
			run := func() time.Duration {
				start := time.Now()
				st, err := c.Run(ctx, newMission("search"))
				if err != nil || st.Fail != nil {
					b.Fatalf("mission: %v %+v", err, st)
				}
				return time.Since(start)
			}
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
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
