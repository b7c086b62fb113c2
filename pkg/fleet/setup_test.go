package fleet_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// countWrites counts the JetStream API requests that create or update
// streams and consumers (meta-layer writes) seen on nc's server, other
// than the server's own.
func countWrites(t *testing.T, nc *nats.Conn) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	for _, subj := range []string{"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>"} {
		sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
			// the server's own consumers for a stream's sources
			// (MISSIONS sources PARKED) are created when it gets to it
			if !strings.Contains(m.Subject, ".JS_SRC_") {
				n.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &n
}

// A second EnsureStores with the same configuration writes nothing; a
// changed consumer setting updates the consumers only.
func TestEnsureStoresDoesNotRewriteAnUnchangedLayout(t *testing.T) {
	s, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	spy := connect(t, s)
	writes := countWrites(t, spy)
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	flushWait(t, spy)
	if writes.Load() == 0 {
		t.Fatal("the spy saw no create on an empty server")
	}
	writes.Store(0)
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	flushWait(t, spy)
	if n := writes.Load(); n != 0 {
		t.Errorf("unchanged layout: %d create/update requests, want 0", n)
	}
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{MaxDeliver: 9})
	if err != nil {
		t.Fatal(err)
	}
	flushWait(t, spy)
	if n, want := writes.Load(), int64(len(messages.Priorities())*(messages.MissionLanes+1)); n != want {
		t.Errorf("MaxDeliver changed: %d writes, want %d (the consumers only)", n, want)
	}
	if got := st.Consumers[messages.PriorityLow].CachedInfo().Config.MaxDeliver; got != 9 {
		t.Errorf("MaxDeliver = %d", got)
	}
}

// A RESULTS set up before it allowed atomic publishes is updated to
// allow them, with one write (the stream's update), the rest of its
// configuration as it was.
func TestEnsureStoresAllowsAtomicPublishOnAnEarlierResults(t *testing.T) {
	s, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	earlier := st.Results.CachedInfo().Config
	if !earlier.AllowAtomicPublish {
		t.Fatal("a new RESULTS does not allow atomic publishes")
	}
	earlier.AllowAtomicPublish = false
	if _, err := js.UpdateStream(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	spy := connect(t, s)
	writes := countWrites(t, spy)
	st, err = fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	flushWait(t, spy)
	if n := writes.Load(); n != 1 {
		t.Errorf("%d create/update requests, want 1 (RESULTS)", n)
	}
	got := st.Results.CachedInfo().Config
	if !got.AllowAtomicPublish {
		t.Fatal("RESULTS still does not allow atomic publishes")
	}
	got.AllowAtomicPublish = false
	if got.MaxMsgsPerSubject != earlier.MaxMsgsPerSubject || got.Discard != earlier.Discard ||
		got.DiscardNewPerSubject != earlier.DiscardNewPerSubject || got.MaxAge != earlier.MaxAge || got.Duplicates != earlier.Duplicates {
		t.Errorf("RESULTS' configuration changed besides atomic publishes: %+v, was %+v", got, earlier)
	}
}

// A MISSIONS set up before decisions published their wakes into it (its
// subjects the submits alone, its transform theirs) is updated, with one
// write, to hold the woken subjects too, and stores a woken mission in
// the lane of its submitter on its submit subject; a mission queued
// before the update stays queued.
func TestEnsureStoresHoldsWokenMissionsOnAnEarlierMissions(t *testing.T) {
	s, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	earlier := st.Missions.CachedInfo().Config
	earlier.Subjects = []string{messages.SubmitWildcard}
	earlier.SubjectTransform = &jetstream.SubjectTransformConfig{Source: messages.SubmitWildcard, Destination: earlierLaneTransform}
	if _, err := js.UpdateStream(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	queued := messages.NewMissionID()
	if _, err := js.Publish(ctx, messages.SubmitSubject("ann", messages.PriorityNormal, queued), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, messages.WokenSubject("ann", messages.PriorityNormal, messages.NewMissionID()), []byte("{}")); err == nil {
		t.Fatal("the earlier MISSIONS stored a woken mission")
	}
	spy := connect(t, s)
	writes := countWrites(t, spy)
	st, err = fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	flushWait(t, spy)
	if n := writes.Load(); n != 1 {
		t.Errorf("%d create/update requests, want 1 (MISSIONS)", n)
	}
	got := st.Missions.CachedInfo().Config
	if !slices.Equal(got.Subjects, []string{messages.SubmitWildcard, messages.WokenWildcard}) {
		t.Errorf("MISSIONS subjects after the setup: %v", got.Subjects)
	}
	if tr := got.SubjectTransform; tr == nil || tr.Source != messages.QueueSource || tr.Destination != messages.QueueTransform() {
		t.Errorf("MISSIONS transform after the setup: %+v", tr)
	}
	for _, sub := range []string{"ann", "bo", "cy"} {
		id := messages.NewMissionID()
		if _, err := js.Publish(ctx, messages.WokenSubject(sub, messages.PriorityHigh, id), []byte("{}")); err != nil {
			t.Fatalf("a woken mission after the setup: %v", err)
		}
		raw, err := st.Missions.GetLastMsgForSubject(ctx, messages.QueuedFilters(sub, id)[0])
		if want := storedSubject(sub, messages.PriorityHigh, id); err != nil || raw.Subject != want {
			t.Fatalf("the woken mission stored as %v (%v), want on %s", raw, err, want)
		}
	}
	if _, err := st.Missions.GetLastMsgForSubject(ctx, messages.QueuedFilters("ann", queued)[0]); err != nil {
		t.Errorf("the mission queued before the update: %v", err)
	}
}

func flushWait(t *testing.T, nc *nats.Conn) {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
}

// Many workers and clients setting the layout up at the same moment all
// succeed.
func TestEnsureStoresConcurrentPeers(t *testing.T) {
	s, _ := runJetStream(t)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			js, _ := jetstream.New(connect(t, s))
			_, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A worker that only verifies the layout waits, not ready, until someone
// else creates it; then it starts and runs missions.
func TestWorkerVerifyOnlyWaitsForTheLayout(t *testing.T) {
	s, nc := runJetStream(t)
	ctx := testCtx(t)
	var retries atomic.Int64
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		Runner: fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: "ok"}, nil
		}),
		Priorities: []string{messages.PriorityNormal},
		Store: fleet.StoreConfig{AckWait: testStore.AckWait, VerifyOnly: true,
			OnRetry: func(string, error, time.Duration) { retries.Add(1) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- w.Start(ctx) }()
	t.Cleanup(func() { _ = w.Stop() })
	eventually(t, 10*time.Second, "a retry reported while waiting", func() bool { return retries.Load() > 0 })
	if w.Ready() {
		t.Fatal("ready before the layout exists")
	}
	js, _ := jetstream.New(connect(t, s))
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{AckWait: testStore.AckWait}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not start once the layout existed")
	}
	if !w.Ready() {
		t.Error("started but not ready")
	}
	c := newClient(t, nc)
	step, err := c.Run(ctx, newMission())
	if err != nil || !step.Ok() {
		t.Fatalf("Run = %+v, %v", step, err)
	}
	// VerifyOnly created nothing of its own: the stream's config is the
	// one the administrator wrote.
	str, _ := js.Stream(ctx, messages.StreamMissions)
	if str.CachedInfo().Config.Replicas != 1 {
		t.Errorf("replicas = %d", str.CachedInfo().Config.Replicas)
	}
}

// EnsureStores keeps retrying while JetStream is unavailable and gives up
// only when its ctx ends, naming the store and the cause.
func TestEnsureStoresRetriesUntilCtxEnds(t *testing.T) {
	_, nc := runJetStream(t)
	// A domain nobody serves: every API request finds no responders.
	jsOther, _ := jetstream.NewWithDomain(nc, "nowhere")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var retries atomic.Int64
	start := time.Now()
	_, err := fleet.EnsureStores(ctx, jsOther, fleet.StoreConfig{OnRetry: func(string, error, time.Duration) { retries.Add(1) }})
	if err == nil {
		t.Fatal("EnsureStores succeeded against a missing domain")
	}
	if time.Since(start) < 600*time.Millisecond {
		t.Errorf("gave up after %v, before its ctx ended", time.Since(start))
	}
	if retries.Load() < 3 {
		t.Errorf("retries = %d", retries.Load())
	}
	t.Log(err)
}

// A worker whose mission consumer disappears (deleted, or lost with a
// node) sets the layout up again and keeps running missions: a JetStream
// failure is never fatal to it.
func TestWorkerSetsALostLayoutUpAgain(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	w := startWorker(t, nc, fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: "ok"}, nil
	}))
	c := newClient(t, nc)
	if step, err := c.Run(ctx, newMission()); err != nil || !step.Ok() {
		t.Fatalf("first run: %+v %v", step, err)
	}
	js, _ := jetstream.New(nc)
	lane := fleet.LaneConsumerName(messages.PriorityNormal, messages.SubmitLane(c.Submitter()))
	for _, name := range []string{lane, fleet.ConsumerName(messages.PriorityNormal)} {
		if err := js.DeleteConsumer(ctx, messages.StreamMissions, name); err != nil {
			t.Fatal(err)
		}
	}
	step, err := c.Run(ctx, newMission())
	if err != nil || !step.Ok() {
		t.Fatalf("run after the consumer was deleted: %+v %v", step, err)
	}
	if !w.Ready() {
		t.Error("not ready after the layout came back")
	}
	for _, name := range []string{lane, fleet.ConsumerName(messages.PriorityNormal)} {
		if _, err := js.Consumer(ctx, messages.StreamMissions, name); err != nil {
			t.Errorf("consumer %s not recreated: %v", name, err)
		}
	}
}

// Setting up on a server whose JetStream storage is smaller than what the
// layout reserves fails at once with a message saying so, instead of
// retrying until the setup's deadline.
func TestSetupOnTooSmallStorageFailsClearly(t *testing.T) {
	s, err := embedded.Start(embedded.Options{MaxStore: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err == nil || !strings.Contains(err.Error(), "insufficient storage") || !strings.Contains(err.Error(), "1073741824 bytes") ||
		!strings.Contains(err.Error(), "max_file_store") {
		t.Fatalf("EnsureStores = %v; want insufficient storage naming the 1 GiB reservation", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failed after %v; want at once", d)
	}
}

// consumerAckPending is the MaxAckPending of the consumer of priority p as
// the server has it.
func consumerAckPending(t *testing.T, js jetstream.JetStream, p string) int {
	t.Helper()
	ctx := testCtx(t)
	str, err := js.Stream(ctx, messages.StreamMissions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := str.Consumer(ctx, fleet.ConsumerName(p))
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo().Config.MaxAckPending
}

// A worker that sets the layout up itself raises the consumers'
// MaxAckPending to its slots; a smaller worker or a client setting the
// layout up afterwards keeps the higher value; the administrator's explicit
// MaxAckPending sets exactly it.
func TestWorkerSlotsRaiseMaxAckPending(t *testing.T) {
	s, nc := runJetStream(t)
	js, _ := jetstream.New(connect(t, s))
	const slots = 2500
	reg := prometheus.NewRegistry()
	metrics, err := fleet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	startWorker(t, nc, countingRunner(new(atomic.Int64), "ok"), func(c *fleet.WorkerConfig) {
		c.Slots = slots
		c.Metrics = metrics
		log := zerolog.New(&logs)
		c.Logger = &log
	})
	for _, p := range messages.Priorities() {
		if got := consumerAckPending(t, js, p); got != slots {
			t.Errorf("%s: MaxAckPending = %d, want the worker's %d slots", p, got, slots)
		}
	}
	if got := gaugeValue(t, reg, "ptc_worker_max_ack_pending"); got != slots {
		t.Errorf("ptc_worker_max_ack_pending = %v, want %d", got, slots)
	}
	if strings.Contains(logs.String(), "max-ack-pending") {
		t.Errorf("a worker whose slots fit warned:\n%s", logs.String())
	}

	startWorker(t, nc, countingRunner(new(atomic.Int64), "ok"), func(c *fleet.WorkerConfig) { c.Slots = 3 })
	newClient(t, connect(t, s))
	if got := consumerAckPending(t, js, messages.PriorityNormal); got != slots {
		t.Errorf("after a 3-slot worker and a client: MaxAckPending = %d, want %d kept", got, slots)
	}

	ctx := testCtx(t)
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{AckWait: testStore.AckWait, MaxDeliver: testStore.MaxDeliver, MaxAckPending: 300}); err != nil {
		t.Fatal(err)
	}
	if got := consumerAckPending(t, js, messages.PriorityNormal); got != 300 {
		t.Errorf("explicit MaxAckPending 300: got %d", got)
	}

	// a fresh layout without workers gets the default
	s2, _ := runJetStream(t)
	js2, _ := jetstream.New(connect(t, s2))
	if _, err := fleet.EnsureStores(ctx, js2, fleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := consumerAckPending(t, js2, messages.PriorityHigh); got != fleet.DefaultMaxAckPending {
		t.Errorf("default MaxAckPending = %d, want %d", got, 1000)
	}
}

// A worker that only verifies the layout cannot raise MaxAckPending: with
// more slots than the consumers admit it warns at start, naming both
// numbers and how to raise it, and exports the consumers' value.
func TestVerifyOnlyWorkerWarnsOfTooManySlots(t *testing.T) {
	s, nc := runJetStream(t)
	ctx := testCtx(t)
	js, _ := jetstream.New(connect(t, s))
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{AckWait: testStore.AckWait, MaxDeliver: testStore.MaxDeliver, MaxAckPending: 1200}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics, err := fleet.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	startWorker(t, nc, countingRunner(new(atomic.Int64), "ok"), func(c *fleet.WorkerConfig) {
		c.Slots = 5000
		c.Store.VerifyOnly = true
		c.Metrics = metrics
		log := zerolog.New(&logs)
		c.Logger = &log
	})
	out := logs.String()
	for _, want := range []string{`"level":"warn"`, "5000 slots", "MaxAckPending is 1200", "-max-ack-pending", "PTC_MAX_ACK_PENDING"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if got := consumerAckPending(t, js, messages.PriorityNormal); got != 1200 {
		t.Errorf("a verify-only worker changed MaxAckPending to %d", got)
	}
	if got := gaugeValue(t, reg, "ptc_worker_max_ack_pending"); got != 1200 {
		t.Errorf("ptc_worker_max_ack_pending = %v, want 1200", got)
	}
}

// A worker with more slots than its memory budget holds missions of the
// default program_memory warns at start, naming the numbers and the ways
// out; one whose slots fit says nothing of it.
func TestWorkerWarnsOfSlotsOverItsMemoryBudget(t *testing.T) {
	_, nc := runJetStream(t)
	for _, tc := range []struct {
		slots int
		warn  bool
	}{{16, false}, {17, true}} {
		var logs syncbuf.Buffer
		startWorker(t, nc, countingRunner(new(atomic.Int64), "ok"), func(c *fleet.WorkerConfig) {
			c.Slots = tc.slots
			c.MemoryBudget = 16 * messages.DefaultProgramMemory
			log := zerolog.New(&logs)
			c.Logger = &log
		})
		out := logs.String()
		if !tc.warn {
			if strings.Contains(out, "memory budget") {
				t.Errorf("%d slots in a budget of 16 missions warned:\n%s", tc.slots, out)
			}
			continue
		}
		for _, want := range []string{`"level":"warn"`, "17 slots", "holds 16 missions", "limits.program_memory", "PTC_MEMORY_BUDGET"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	}
}

// gaugeValue reads the unlabelled gauge name from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// A worker with more slots than the MaxAckPending its Store asks for runs
// as many missions at once as it has slots: the consumers admit them.
func TestWorkerRunsAsManyMissionsAsItsSlots(t *testing.T) {
	_, nc := runJetStream(t)
	const ackPending, slots, missions = 10, 40, 30
	release := make(chan struct{})
	var running atomic.Int64
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, _ *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(c *fleet.WorkerConfig) { c.Slots, c.MemoryBudget, c.Store.MaxAckPending = slots, -1, ackPending })
	defer close(release)
	c := newClient(t, nc)
	ctx := testCtx(t)
	for range missions {
		if _, err := c.Submit(ctx, newMission()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() < missions && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := running.Load(); got != missions {
		t.Fatalf("%d missions running at once, want %d", got, missions)
	}
	if got := w.Running(); got != missions {
		t.Errorf("Running = %d, want %d", got, missions)
	}
}
