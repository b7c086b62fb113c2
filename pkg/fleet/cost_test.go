package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// messageTap counts, by kind, every message published in the server's
// account while it listens (a subscription to ">" sees requests, replies
// and JetStream's deliveries alike).
type messageTap struct {
	mu     sync.Mutex
	counts map[string]int
}

// tapKinds names the messages a mission costs, by subject prefix.
var tapKinds = []struct{ kind, prefix string }{
	{"fetch", "$JS.API.CONSUMER.MSG.NEXT."},
	{"status get", "$JS.API.DIRECT.GET.KV_" + messages.BucketStatus + "."},
	{"event get", "$JS.API.DIRECT.GET.EVENTS."},
	{"result get", "$JS.API.DIRECT.GET.RESULTS."},
	{"record get", "$JS.API.DIRECT.GET.OBJ_" + messages.BucketResults + "."},
	{"status write", "$KV." + messages.BucketStatus + "."},
	{"record write", "$O." + messages.BucketResults + "."},
	{"quota get", "$JS.API.DIRECT.GET.KV_" + messages.BucketQuotaLimits + "."},
	{"quota lease", "$KV." + messages.BucketQuotaLeases + "."},
	{"event", "mission.event."},
	{"result", "mission.result."},
	{"stored result", messages.SubjectStoredPrefix},
}

func startTap(t *testing.T, url string) *messageTap {
	t.Helper()
	nc := dialTCP(t, url)
	tap := &messageTap{counts: map[string]int{}}
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		kind := ""
		switch {
		case strings.HasPrefix(m.Subject, "$JS.ACK."):
			kind = "ack " + strings.TrimPrefix(strings.Fields(string(m.Data) + " ")[0], "+")
		case strings.HasPrefix(m.Subject, messages.SubjectResultPrefix) && strings.HasSuffix(m.Subject, ".record"):
			kind = "record"
		default:
			for _, k := range tapKinds {
				if strings.HasPrefix(m.Subject, k.prefix) {
					kind = k.kind
					break
				}
			}
		}
		if kind == "" {
			return
		}
		tap.mu.Lock()
		tap.counts[kind]++
		tap.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tap
}

// perMission returns the count of kind divided by n.
func (tap *messageTap) perMission(kind string, n int) float64 {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return float64(tap.counts[kind]) / float64(n)
}

// A mission run one at a time (a tool call, the result awaited with Run)
// costs the messages docs/fleet.md lists: each kind counted over many
// missions stays at or under what durability needs, one pull brings each
// mission (the worker hears it once stored, and sweeps no lane while the
// stream holds nothing it did not announce), and all the parties together
// send at most 12 messages per mission besides the reads made per second
// whatever the missions.
func TestMissionMessageCost(t *testing.T) {
	for _, prios := range [][]string{{messages.PriorityNormal}, messages.Priorities()} {
		t.Run(strings.Join(prios, ","), func(t *testing.T) {
			srv, _ := runJetStream(t)
			tnc, wnc, cnc := dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL())
			startTools(t, tnc)
			startWorker(t, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
				return &messages.Step{Return: r}, err
			}), func(cfg *fleet.WorkerConfig) {
				cfg.Priorities, cfg.IdleWait = prios, 2*time.Second
			})
			c := newClient(t, cnc)
			// beats: the heartbeats the missions' durations call for (one
			// per AckWait/3 a mission runs: none for a quick one)
			beats := 0
			// slow: the missions that outlasted fleet.AwaitUnread, whose
			// Run reads the result once then
			slow := 0
			run := func() {
				start := time.Now()
				st, err := c.Run(testCtx(t), newMission("search"))
				if err != nil || st.Fail != nil {
					t.Fatalf("mission: %v %+v", err, st)
				}
				took := time.Since(start)
				beats += int(took / (testStore.AckWait / 3))
				if took >= fleet.AwaitUnread {
					slow++
				}
			}
			run() // discovery and consumers warm
			time.Sleep(100 * time.Millisecond)
			beats, slow = 0, 0
			tap := startTap(t, srv.ClientURL())
			sent := func() uint64 { return tnc.Stats().OutMsgs + wnc.Stats().OutMsgs + cnc.Stats().OutMsgs }
			sent0 := sent()
			const n = 100
			start := time.Now()
			for range n {
				run()
			}
			time.Sleep(100 * time.Millisecond) // the last mission's trailing messages
			// what is read per second whatever the missions: with no quota
			// set, the worker and the client each read the submitter's
			// quota and the default once per refresh (2 s), and the worker
			// the quotas' weights (2 s) and MISSIONS' stream info for
			// missions no bell announced (1 s); one more of each for the
			// refreshes at either end
			secs := time.Since(start).Seconds()
			quotaReads := 4 * (secs/2 + 1) / n
			perSecond := quotaReads + ((secs/2+1)+(secs+1))/n
			// and what a slow mission (a race build on a loaded machine)
			// adds for its time: an event batch per EventDelay it
			// outlasts, a heartbeat per AckWait/3
			perSecond += max(tap.perMission("event", n)-1, 0) + tap.perMission("ack WPI", n) + float64(slow)/n
			// and the backstop sweep: one no-wait fetch per lane and
			// priority every fleet.FullSweepBackstop, one more at the end
			backstopFetches := float64(len(prios)*(messages.MissionLanes+1)) *
				(secs/fleet.FullSweepBackstop.Seconds() + 1) / n
			perSecond += backstopFetches
			tap.mu.Lock()
			t.Logf("per mission: %v (of %d in %.2fs)", tap.counts, n, secs)
			tap.mu.Unlock()
			got := float64(sent()-sent0) / n
			t.Logf("sent per mission: %.2f", got)
			if want := 12 + perSecond; got > want {
				t.Errorf("%.2f messages sent per mission, want at most 12 and %.2f read per second whatever the missions", got, want-12)
			}
			for _, want := range []struct {
				kind string
				max  float64
			}{
				// one pull per mission: the worker hears the mission once
				// stored, so the fetch its bell makes finds it, and no lane
				// is swept while the stream holds only what it runs, but
				// for the backstop sweep
				{"fetch", 1 + backstopFetches},
				// a mission shorter than AckWait/3 is not heartbeated:
				// AckWait runs from its delivery
				{"ack WPI", float64(beats) / n},
				// the last fence check before the result: Run reads no
				// status (a mission already taken is found by its
				// result), and the first claim of an id reads nothing
				{"status get", 1.1},
				// the claim (one compare-and-set publish that only an id
				// no status holds accepts) and the final status
				{"status write", 2},
				// the first attempt numbers its events from 1 unread
				{"event get", 0},
				// started, tool_call, tool_result and final in one batch
				// (a second only when a mission outlasts EventDelay)
				{"event", 1.5},
				// Run takes the result the stream republishes once
				// stored: no read, but once for a mission that outlasts
				// fleet.AwaitUnread
				{"result get", float64(slow) / n},
				{"stored result", 1},
				// the record of a first attempt: one message next to its
				// result, no read for an earlier one, nothing in the
				// object store
				{"record get", 0},
				{"record write", 0},
				{"record", 1},
				{"result", 1},
				// no quota set: no lease, and no read per mission
				{"quota get", quotaReads},
				{"quota lease", 0},
			} {
				if got := tap.perMission(want.kind, n); got > want.max {
					t.Errorf("%s: %.2f messages per mission, want at most %.2f", want.kind, got, want.max)
				}
			}
		})
	}
}

// A run that ends keeps its mission's record as one message next to its
// result (RESULTS, on the record subject: readable by what reads the
// submitter's results, so not sealed): a first attempt, and a retry whose
// earlier attempt stored none. A run whose mission has a record message
// already (an earlier attempt stored it and died before its result), and
// a record too large for one message, keep sealed objects in
// mission_results, written through ObjectStore.Put. Client.Record reads
// each, and refuses a message that is not the one the result names. The
// same holds for a worker that publishes the record and the result in one
// atomic batch (as on a replicated RESULTS), whose batch is refused where
// the record subject holds an earlier record, and where the stream does
// not allow atomic publishes: it stores them one after the other, each
// result once.
func TestMissionRecordIsOneMessageNextToItsResult(t *testing.T) {
	t.Run("one after the other", func(t *testing.T) { testMissionRecord(t) })
	t.Run("batch", func(t *testing.T) { testMissionRecord(t, fleet.BatchOnOneReplica) })
}

func testMissionRecord(t *testing.T, edit ...func(*fleet.WorkerConfig)) {
	srv, nc := runJetStream(t)
	startTools(t, dialTCP(t, srv.ClientURL()))
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if m.Context["retry"] == true && env.Attempt == 1 {
			return nil, fleet.ErrRetryable
		}
		return &messages.Step{Return: "ok"}, nil
	}), edit...)
	c := newClient(t, nc)
	batch := len(edit) > 0
	// the record messages published, by subject: whether each was a
	// message of a batch
	var mu sync.Mutex
	heard := map[string][]bool{}
	snc := dialTCP(t, srv.ClientURL())
	if _, err := snc.Subscribe(messages.RecordSubject("*", "*"), func(m *nats.Msg) {
		mu.Lock()
		heard[m.Subject] = append(heard[m.Subject], m.Header.Get("Nats-Batch-Id") != "")
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := snc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for _, tc := range []struct {
		name                  string
		retry, large, earlier bool
		atomicOff             bool
	}{{"first attempt", false, false, false, false}, {"retry", true, false, false, false}, {"large", false, true, false, false},
		{"an earlier attempt's record", true, false, true, false},
		{"no atomic publishes", false, false, false, true}} {
		if tc.atomicOff {
			// a layout set up before RESULTS allowed atomic publishes
			cfg := c.Stores().Results.CachedInfo().Config
			cfg.AllowAtomicPublish = false
			js, _ := jetstream.New(nc)
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
		}
		m := newMission("search")
		m.Context = map[string]any{"retry": tc.retry}
		if tc.large {
			m.Context["blob"] = strings.Repeat("x", 150<<10)
		}
		if tc.earlier {
			js, _ := jetstream.New(nc)
			if _, err := js.Publish(ctx, messages.RecordSubject(c.Submitter(), m.ID), []byte("an earlier attempt's record")); err != nil {
				t.Fatal(err)
			}
		}
		st, err := c.Run(ctx, m)
		if err != nil || st.Return != "ok" || st.Record == nil {
			t.Fatalf("%s: %v %+v", tc.name, err, st)
		}
		if want := map[bool]int{false: 1, true: 2}[tc.retry]; st.Attempts != want {
			t.Fatalf("attempts %d, want %d", st.Attempts, want)
		}
		if n := resultsStored(t, c, m.ID); n != 1 {
			t.Fatalf("%s: %d results stored, want 1", tc.name, n)
		}
		// the record messages: the test's earlier record, then a batch
		// (refused where the subject holds a record or the stream does
		// not allow it), then the record alone where the batch was
		// refused; none for a record too large for one message
		var want []bool
		if tc.earlier {
			want = append(want, false)
		}
		if !tc.large {
			if batch {
				want = append(want, true)
			}
			if !batch || tc.earlier || tc.atomicOff {
				want = append(want, false)
			}
		}
		subject := messages.RecordSubject(c.Submitter(), m.ID)
		eventually(t, 5*time.Second, "the record messages are heard", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(heard[subject]) >= len(want)
		})
		time.Sleep(50 * time.Millisecond) // one more would be heard by now
		mu.Lock()
		got := slices.Clone(heard[subject])
		mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: record messages heard (whether of a batch) %v, want %v", tc.name, got, want)
		}
		rec, err := c.Record(ctx, m.ID)
		if err != nil {
			t.Fatalf("%s: record: %v", tc.name, err)
		}
		if rec.Mission.ID != m.ID || len(rec.Tools) != 1 || rec.Tools[0].Name != "search" || rec.Tools[0].Signature == "" ||
			(tc.large && len(rec.Mission.Context["blob"].(string)) != 150<<10) {
			t.Fatalf("%s: record %+v", tc.name, rec)
		}
		objects := c.Stores().ResultObjects
		if !tc.earlier && !tc.large {
			if r := st.Record; r.Bucket != messages.StreamResults || r.Name != messages.RecordSubject(c.Submitter(), m.ID) || r.Key != "" {
				t.Fatalf("%s: reference %+v, want the record subject in %s, not sealed", tc.name, r, messages.StreamResults)
			}
			if _, err := objects.GetInfo(ctx, messages.MissionRecordName(m.ID)); !errors.Is(err, jetstream.ErrObjectNotFound) {
				t.Fatalf("%s: a record in the object store too: %v", tc.name, err)
			}
			// a message on the subject other than the one the result
			// names is refused
			results := c.Stores().Results
			if err := results.Purge(ctx, jetstream.WithPurgeSubject(st.Record.Name)); err != nil {
				t.Fatal(err)
			}
			other := *rec
			other.Tools = nil
			data, _ := messages.Marshal(&other)
			js, _ := jetstream.New(nc)
			if _, err := js.Publish(ctx, st.Record.Name, data); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Record(ctx, m.ID); err == nil || !strings.Contains(err.Error(), "is not the") {
				t.Fatalf("%s: a replaced record read: %v", tc.name, err)
			}
			continue
		}
		obj, err := objects.GetBytes(ctx, messages.MissionRecordName(m.ID))
		if err != nil {
			t.Fatalf("%s: object store read: %v", tc.name, err)
		}
		info, err := objects.GetInfo(ctx, messages.MissionRecordName(m.ID))
		if err != nil || st.Record.Bucket != messages.BucketResults || st.Record.Key == "" ||
			int64(len(obj)) != st.Record.Size || int64(info.Size) != st.Record.Size || info.Digest != st.Record.Digest {
			t.Fatalf("%s: info %+v (%v), %d bytes read; reference %+v", tc.name, info, err, len(obj), st.Record)
		}
		if strings.Contains(string(obj), rec.Tools[0].Signature) {
			t.Fatalf("%s: the record in %s is not sealed", tc.name, messages.BucketResults)
		}
	}
}

// A mission submitted without an id gets a new one, which no worker can
// have taken: the client reads no status before it queues it. Run then
// costs the client its submission alone: the result comes as the stream
// republishes it once stored, not read.
func TestSubmitOfANewIDReadsNoStatus(t *testing.T) {
	srv, nc := runJetStream(t)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: m.ID}, nil
	}))
	cnc := dialTCP(t, srv.ClientURL())
	c := newClient(t, cnc)
	ctx := testCtx(t)
	const n = 20
	before := cnc.Stats().OutMsgs
	for range n {
		m := newMission()
		m.ID = ""
		st, err := c.Run(ctx, m)
		if err != nil || m.ID == "" || st.Return != m.ID {
			t.Fatalf("mission %q: %v %+v", m.ID, err, st)
		}
	}
	if got := float64(cnc.Stats().OutMsgs-before) / n; got > 1.5 {
		t.Fatalf("the client sent %.2f messages per mission, want at most 1.5 (the submission)", got)
	}
}

// Where the results stream does not republish what it stores (a layout
// set up before it did, bound by a client that changes no layout), Run
// and Await subscribe to the result subject and read the result after its
// message; a message on the stored-result subject that is no Step is
// ignored and the stored result read instead.
func TestRunReadsResultsWhereTheStreamDoesNotRepublish(t *testing.T) {
	srv, nc := runJetStream(t)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if m.Context["slow"] == true {
			time.Sleep(200 * time.Millisecond)
		}
		return &messages.Step{Return: m.ID}, nil
	}))
	ctx := testCtx(t)
	// a stored-result message that is no Step: the client reads instead
	cnc := dialTCP(t, srv.ClientURL())
	c := newClient(t, cnc)
	m := newMission()
	m.Context = map[string]any{"slow": true}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = nc.Publish(messages.StoredResultSubject(c.Submitter(), m.ID), []byte("not a step"))
	}()
	if st, err := c.Run(ctx, m); err != nil || st.Return != m.ID {
		t.Fatalf("run past a forged stored-result message: %v %+v", err, st)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, messages.StreamResults)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.RePublish == nil || cfg.RePublish.Destination != messages.StoredResultTransform() {
		t.Fatalf("the results stream republishes %+v, want on %s", cfg.RePublish, messages.StoredResultTransform())
	}
	cfg.RePublish = nil
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	onc := dialTCP(t, srv.ClientURL())
	old, err := fleet.NewClient(ctx, onc, fleet.ClientConfig{SkipSetup: true})
	if err != nil {
		t.Fatal(err)
	}
	before := onc.Stats().OutMsgs
	const n = 10
	for range n {
		m := newMission()
		m.ID = ""
		if st, err := old.Run(ctx, m); err != nil || st.Return != m.ID {
			t.Fatalf("run: %v %+v", err, st)
		}
	}
	// the submission and at least one read of each result
	if got := float64(onc.Stats().OutMsgs-before) / n; got < 2 {
		t.Fatalf("the client sent %.2f messages per mission, want the submission and a read (2 or more)", got)
	}
}
