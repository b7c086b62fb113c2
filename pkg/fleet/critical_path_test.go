package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// criticalStep names a message on the way from Client.Run to the result
// reaching the client, from its subject; "" for a message off that way (a
// reply, an event, what is read per second whatever the missions).
func criticalStep(subject, reply, sub, id string) string {
	switch {
	case subject == "$JS.API.DIRECT.GET.KV_"+messages.BucketStatus+"."+messages.StatusSubject(sub, id):
		return "status get"
	case subject == messages.SubmitSubject(sub, messages.PriorityNormal, id) && !strings.HasPrefix(reply, "$JS.ACK."):
		return "submission"
	case strings.HasPrefix(subject, messages.SubmitSubject(sub, messages.PriorityNormal, id)) && strings.HasPrefix(reply, "$JS.ACK."):
		return "delivery"
	case strings.HasPrefix(subject, "mission.queued.") && strings.Contains(subject, "."+id+"."):
		return "notice"
	case subject == "$JS.API.CONSUMER.MSG.NEXT."+messages.StreamMissions+"."+fleet.LaneConsumerName(messages.PriorityNormal, messages.SubmitLane(sub)):
		return "pull"
	case subject == messages.StatusSubject(sub, id):
		return "status write"
	case strings.HasPrefix(subject, "tool."):
		return "tool request"
	case subject == messages.RecordSubject(sub, id):
		return "record"
	case subject == messages.ResultSubject(sub, id):
		return "result"
	case subject == messages.StoredResultSubject(sub, id):
		return "stored result"
	}
	return ""
}

// TestIdleMissionCriticalPath follows one mission at a time (one tool
// call) through an idle fleet with a subscriber to every subject, and
// checks what lies between Client.Run and the stored result reaching the
// client, in order: the client's submission (Run reads no status), the notice,
// one pull and its delivery, the claim, the tool call, the record, the
// result (under the claim fence: no status read before it). It logs the
// median time from each to the next, as the subscriber sees them
// (docs/performance.md, "Idle latency"). A worker that publishes the
// record and the result in one atomic batch (as on a replicated
// RESULTS) sends the record with no reply and the result, whose answer
// is the batch's.
func TestIdleMissionCriticalPath(t *testing.T) {
	t.Run("one after the other", func(t *testing.T) {
		testIdleMissionCriticalPath(t, []string{"submission", "notice", "pull", "delivery", "status write",
			"tool request", "record", "record ack", "result", "stored result"})
	})
	t.Run("batch", func(t *testing.T) {
		testIdleMissionCriticalPath(t, []string{"submission", "notice", "pull", "delivery", "status write",
			"tool request", "record", "result", "stored result"}, fleet.BatchOnOneReplica)
	})
}

// stepSender names the connection that sends each step: the client's, the
// worker's or the server's own (a JetStream delivery, notice,
// acknowledgement or republished message, each from a goroutine of its
// own).
var stepSender = map[string]string{
	"status get": "client", "submission": "client",
	"pull": "worker", "status write": "worker", "tool request": "worker", "fence check": "worker", "record": "worker", "result": "worker",
}

// samePath reports whether heard, the steps in the order the subscriber
// heard them, is the path want. The server hands a message to each of its
// subscribers in turn: the subscriber may hear it after what another
// subscriber did on it (a delivery before the pull that asked for it, a
// claim before the delivery it claims), so a step may be heard later than
// it was sent. It never hears a connection's messages out of the order
// the connection sent them: heard holds each step of want once, and the
// steps of the client, and of the worker, in want's order.
func samePath(heard, want []string) bool {
	if len(heard) != len(want) {
		return false
	}
	at := map[string]int{}
	for i, s := range want {
		at[s] = i
	}
	last := map[string]int{}
	seen := map[string]bool{}
	for _, s := range heard {
		i, ok := at[s]
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
		if from := stepSender[s]; from != "" {
			if j, ok := last[from]; ok && j > i {
				return false
			}
			last[from] = i
		}
	}
	return true
}

func testIdleMissionCriticalPath(t *testing.T, want []string, edit ...func(*fleet.WorkerConfig)) {
	srv, _ := runJetStream(t)
	tnc, cnc, wnc, snc := dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL())
	startTools(t, tnc)
	startWorker(t, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
		return &messages.Step{Return: r}, err
	}), append(edit, func(cfg *fleet.WorkerConfig) {
		// the worker's heartbeats (a status write every AckWait/3) stay
		// off the path of a mission slowed by a loaded machine
		cfg.Store.AckWait = 30 * time.Second
		// a tool call slowed by one is neither cut off nor sent again
		cfg.ToolTimeout = 30 * time.Second
	},
		// and so do the looks at every lane of the worker's full sweep,
		// which a check that finds a slow mission stored but not yet
		// running calls for (as does its backstop, every 10s)
		fleet.SweepEvery(time.Hour))...)
	c := newClient(t, cnc)
	type seen struct {
		at             time.Time
		subject, reply string
		ack            string // what an acknowledgement says
	}
	var mu sync.Mutex
	var log []seen
	spy, err := snc.Subscribe(">", func(m *nats.Msg) {
		s := seen{at: time.Now(), subject: m.Subject, reply: m.Reply}
		if strings.HasPrefix(m.Subject, "$JS.ACK.") {
			s.ack = string(m.Data)
		}
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := snc.Flush(); err != nil {
		t.Fatal(err)
	}
	const rounds = 50
	gaps := map[string][]time.Duration{}
	var total []time.Duration
	for i := range rounds + 5 { // the first five warm the caches
		mu.Lock()
		log = log[:0]
		mu.Unlock()
		m := newMission("search")
		// each mission has its own deadline: a loaded machine's 55
		// missions may take longer than one would give them all
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		st, err := c.Run(ctx, m)
		took := time.Since(start)
		cancel()
		if err != nil || st.Fail != nil {
			t.Fatalf("mission %d: %v %+v", i, err, st)
		}
		stored := messages.StoredResultSubject(c.Submitter(), m.ID)
		eventually(t, 30*time.Second, "the subscriber hears the stored result", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(log, func(s seen) bool { return s.subject == stored })
		})
		// The client has the result before the worker is done with the
		// mission: the next starts once the worker has acknowledged the
		// delivery and had the answer to each pull it sent after the
		// delivery, so that each mission finds the fleet idle. (A notice
		// heard after its mission's delivery rings the lane's bell, whose
		// long poll goes out while the mission runs: left open, it would
		// take the next mission before that mission's notice.)
		eventually(t, 30*time.Second, "the worker done with the mission", func() bool {
			mu.Lock()
			defer mu.Unlock()
			delivery, acked := "", false
			open := map[string]bool{}
			for _, s := range log {
				switch {
				case delivery == "" && criticalStep(s.subject, s.reply, c.Submitter(), m.ID) == "delivery":
					delivery = s.reply
				case delivery != "" && s.subject == delivery && s.ack == "+ACK":
					acked = true
				case delivery != "" && strings.HasPrefix(s.subject, "$JS.API.CONSUMER.MSG.NEXT."+messages.StreamMissions+"."):
					// a pull for missions (the wake consumer's
					// long-lived pull is answered by heartbeats only)
					open[s.reply] = true
				default:
					delete(open, s.subject)
				}
			}
			return acked && len(open) == 0
		})
		mu.Lock()
		// the record's reply subject is its acknowledgement, which the
		// subscriber may hear before the record
		var recordAck string
		for _, s := range log {
			if criticalStep(s.subject, s.reply, c.Submitter(), m.ID) == "record" {
				recordAck = s.reply
			}
		}
		var steps []string
		prev := start
		for _, s := range log {
			step := criticalStep(s.subject, s.reply, c.Submitter(), m.ID)
			if step == "" && recordAck != "" && s.subject == recordAck {
				step = "record ack"
			}
			switch {
			case step == "":
				continue
			case step == "status get" && slices.Contains(steps, "status write"):
				step = "fence check"
			case step == "status write" && slices.Contains(steps, "result"):
				continue // the final status, after the result
			}
			steps = append(steps, step)
			if i >= 5 {
				gaps[step] = append(gaps[step], s.at.Sub(prev))
			}
			prev = s.at
			if slices.Contains(steps, "stored result") && slices.Contains(steps, "result") {
				break
			}
		}
		mu.Unlock()
		// a worker that has just started also looks at every lane
		if i < 5 {
			continue
		}
		if !samePath(steps, want) {
			for _, s := range log {
				t.Logf("%v %s %s", s.at.Sub(start), s.subject, s.reply)
			}
			t.Fatalf("mission %d: on the way to its result %q, want %q", i, steps, want)
		}
		if !slices.Equal(steps, want) {
			t.Logf("mission %d: heard in the order %q", i, steps)
		}
		total = append(total, took)
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	var b strings.Builder
	for _, step := range want {
		fmt.Fprintf(&b, "\n  %-13s %6.0f µs after the message before", step, float64(median(gaps[step]).Microseconds()))
	}
	t.Logf("median of %d missions, Run to result %.0f µs:%s", rounds, float64(median(total).Microseconds()), b.String())
}

// samePath takes the orders the subscriber can hear one path in, and no
// other path: not an extra pull, a missing step, or the worker's or the
// client's steps in another order.
func TestSamePath(t *testing.T) {
	want := []string{"status get", "submission", "notice", "pull", "delivery", "status write",
		"tool request", "fence check", "record", "record ack", "result", "stored result"}
	for _, c := range []struct {
		heard []string
		ok    bool
	}{
		{want, true},
		{[]string{"status get", "submission", "notice", "delivery", "pull", "status write", "tool request", "fence check", "record", "record ack", "result", "stored result"}, true},
		{[]string{"status get", "submission", "pull", "notice", "delivery", "status write", "tool request", "fence check", "record", "record ack", "result", "stored result"}, true},
		{[]string{"status get", "submission", "notice", "pull", "status write", "delivery", "tool request", "fence check", "record", "result", "record ack", "stored result"}, true},
		{[]string{"status get", "submission", "notice", "pull", "delivery", "status write", "tool request", "fence check", "record ack", "record", "stored result", "result"}, true},
		{[]string{"status get", "submission", "notice", "pull", "pull", "delivery", "status write", "tool request", "fence check", "record", "record ack", "result", "stored result"}, false},
		{[]string{"status get", "submission", "notice", "pull", "delivery", "status write", "tool request", "record", "record ack", "result", "stored result"}, false},
		{[]string{"status get", "submission", "notice", "pull", "delivery", "tool request", "status write", "fence check", "record", "record ack", "result", "stored result"}, false},
		{[]string{"status get", "submission", "notice", "pull", "delivery", "status write", "tool request", "record", "fence check", "record ack", "result", "stored result"}, false},
		{[]string{"submission", "status get", "notice", "pull", "delivery", "status write", "tool request", "fence check", "record", "record ack", "result", "stored result"}, false},
		{[]string{"status get", "submission", "notice", "pull", "delivery", "status write", "tool request", "fence check", "record", "record ack", "stored result", "stored result"}, false},
	} {
		if got := samePath(c.heard, want); got != c.ok {
			t.Errorf("%q: %v, want %v", c.heard, got, c.ok)
		}
	}
}
