package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// submitterClient is a client that submits as sub.
func submitterClient(t testing.TB, nc *nats.Conn, sub string) *fleet.Client {
	t.Helper()
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: testStore, Submitter: sub})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MISSIONS stores each mission in the lane messages.SubmitLane computes,
// on its submit subject, whether it was submitted, woken from PARKED (and
// moved by a worker) or woken by a decision into MISSIONS, and the lane's
// consumer is the one that delivers it.
func TestLaneIsTheStreamsPartition(t *testing.T) {
	_, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fleet.MoveWakes(t, nc, st)
	lanes := map[int]bool{}
	for i := range 40 {
		sub := fmt.Sprintf("team-%d", i)
		id := messages.NewMissionID()
		prio := messages.Priorities()[i%3]
		subject := messages.SubmitSubject(sub, prio, id)
		switch i % 4 {
		case 3: // woken from PARKED: moved into MISSIONS
			subject = messages.WakeSubject(sub, prio, id)
		case 2: // a decision's wake, into MISSIONS directly
			subject = messages.WokenSubject(sub, prio, id)
		}
		if _, err := js.Publish(ctx, subject, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		want := messages.SubmitLane(sub)
		lanes[want] = true
		var raw *jetstream.RawStreamMsg
		eventually(t, 5*time.Second, "mission "+id+" in MISSIONS", func() bool {
			raw, err = st.Missions.GetLastMsgForSubject(ctx, messages.QueuedFilters(sub, id)[0])
			return err == nil
		})
		if wantSubj := messages.SubmitSubject(sub, prio, id) + fmt.Sprintf(".%d", want); raw.Subject != wantSubj {
			t.Fatalf("stored on %q, want %q", raw.Subject, wantSubj)
		}
		if s, p, gotID, ok := messages.ParseSubmitSubject(raw.Subject); !ok || s != sub || p != prio || gotID != id {
			t.Fatalf("ParseSubmitSubject(%q) = %q %q %q %v", raw.Subject, s, p, gotID, ok)
		}
		batch, err := st.Lanes[prio][want].Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			if msg.Subject() != raw.Subject {
				t.Fatalf("lane %d of %s delivered %q, want %q", want, prio, msg.Subject(), raw.Subject)
			}
			_ = msg.Ack()
		}
		if n != 1 {
			t.Fatalf("lane %d of %s delivered %d messages, want 1", want, prio, n)
		}
	}
	if len(lanes) < messages.MissionLanes/2 {
		t.Errorf("40 submitters fell in %d lanes", len(lanes))
	}
}

// A submitter that queues a backlog holds up a submitter in another lane
// by no more than its share of the slots: b's missions, submitted while
// a's 200 are being worked off two at a time, start before most of a's.
// Taken first in, first out (one consumer per priority), b's would start
// after all of them.
func TestFairShareServesANewcomerBeforeABacklog(t *testing.T) {
	if messages.SubmitLane("a") == messages.SubmitLane("b") {
		t.Fatal("submitters a and b share a lane; the test needs two lanes")
	}
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	a, b := submitterClient(t, nc, "a"), submitterClient(t, nc, "b")
	const backlog = 200
	labelled := func(sub string) *messages.Mission {
		m := newMission()
		m.Labels = map[string]string{"submitter": sub}
		return m
	}
	for range backlog {
		if _, err := a.Submit(ctx, labelled("a")); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var starts []string // submitter of each mission started, in order
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		starts = append(starts, m.Labels["submitter"])
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		return &messages.Step{Return: true}, nil
	})
	startWorker(t, nc, runner, func(cfg *fleet.WorkerConfig) { cfg.Slots = 2 })
	count := func() (na, nb int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range starts {
			if s == "a" {
				na++
			} else {
				nb++
			}
		}
		return na, nb
	}
	eventually(t, 10*time.Second, "a's backlog being worked off", func() bool { na, _ := count(); return na >= 10 })
	var ids []string
	for range 4 {
		m := labelled("b")
		if _, err := b.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		if _, err := b.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	last := 0
	for i, s := range starts {
		if s == "b" {
			last = i
		}
	}
	aBefore := last - 3 // every start before b's last is a's, less b's other three
	if aBefore > 60 {
		t.Errorf("%d of a's missions started before b's last (of %d started); b waited behind a's backlog", aBefore, len(starts))
	}
	t.Logf("b's four missions started after %d of a's %d", aBefore, backlog)
}

// A layout set up before lanes (MISSIONS storing missions as submitted,
// one consumer per priority, a source of PARKED) is upgraded by the next
// setup, its source removed: the missions
// it queued are still read while queued and run, and new ones go to the
// lanes.
func TestLayoutBeforeLanesUpgrades(t *testing.T) {
	_, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	// Take the layout back to before lanes.
	cfg := st.Missions.CachedInfo().Config
	cfg.SubjectTransform = nil
	cfg.Sources = earlierParkedSource(messages.SubjectSubmitPrefix + "{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}")
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range messages.Priorities() {
		for l := range messages.MissionLanes {
			if err := js.DeleteConsumer(ctx, messages.StreamMissions, fleet.LaneConsumerName(p, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := newClient(t, nc)
	var ids []string
	for range 3 {
		m := newMission()
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	raw, err := st.Missions.GetLastMsgForSubject(ctx, messages.SubmitSubject(c.Submitter(), "*", ids[0]))
	if err != nil || strings.Count(raw.Subject, ".") != 4 {
		t.Fatalf("the old layout stored the mission on %v (%v), want its submit subject", raw, err)
	}
	if s, err := c.Status(ctx, ids[0]); err != nil || s.State != messages.StateQueued {
		t.Fatalf("status of a mission queued by the old layout = %+v, %v", s, err)
	}
	var runs sync.Map
	startWorker(t, nc, fleet.RunnerFunc(func(_ context.Context, m *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		runs.Store(m.ID, true)
		return &messages.Step{Return: true}, nil
	}))
	if tr := mustStream(t, js, messages.StreamMissions).SubjectTransform; tr == nil || tr.Source != messages.QueueSource || tr.Destination != messages.QueueTransform() {
		t.Fatalf("MISSIONS transform after the setup = %+v", tr)
	}
	if src := mustStream(t, js, messages.StreamMissions).Sources; len(src) != 0 {
		t.Fatalf("MISSIONS sources after the setup = %+v, want none (workers move PARKED's wakes)", src)
	}
	for range 3 {
		m := newMission()
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		step, err := c.Await(ctx, id)
		if err != nil || step.Fail != nil {
			t.Fatalf("mission %s: %+v, %v", id, step, err)
		}
		if _, ok := runs.Load(id); !ok {
			t.Errorf("mission %s not run", id)
		}
	}
}

func mustStream(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}
