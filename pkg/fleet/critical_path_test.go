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
// client, in order: the client's status read and submission, the notice,
// one pull and its delivery, the claim, the tool call, the last fence
// check sent with the record (before the record's acknowledgement), the
// result. It logs the median time from each to the next, as the
// subscriber sees them (docs/performance.md, "Idle latency").
// A worker that publishes the record and the result in one atomic batch
// (as on a replicated RESULTS) checks the fence first, then sends the
// record with no reply and the result, whose answer is the batch's.
func TestIdleMissionCriticalPath(t *testing.T) {
	t.Run("one after the other", func(t *testing.T) {
		testIdleMissionCriticalPath(t, []string{"status get", "submission", "notice", "pull", "delivery", "status write",
			"tool request", "fence check", "record", "record ack", "result", "stored result"})
	})
	t.Run("batch", func(t *testing.T) {
		testIdleMissionCriticalPath(t, []string{"status get", "submission", "notice", "pull", "delivery", "status write",
			"tool request", "fence check", "record", "result", "stored result"}, fleet.BatchOnOneReplica)
	})
}

func testIdleMissionCriticalPath(t *testing.T, want []string, edit ...func(*fleet.WorkerConfig)) {
	srv, _ := runJetStream(t)
	tnc, cnc, wnc, snc := dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL()), dialTCP(t, srv.ClientURL())
	startTools(t, tnc)
	startWorker(t, wnc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
		return &messages.Step{Return: r}, err
	}), edit...)
	c := newClient(t, cnc)
	type seen struct {
		at             time.Time
		subject, reply string
	}
	var mu sync.Mutex
	var log []seen
	spy, err := snc.Subscribe(">", func(m *nats.Msg) {
		at := time.Now()
		mu.Lock()
		log = append(log, seen{at, m.Subject, m.Reply})
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
	ctx := testCtx(t)
	const rounds = 50
	gaps := map[string][]time.Duration{}
	var total []time.Duration
	for i := range rounds + 5 { // the first five warm the caches
		mu.Lock()
		log = log[:0]
		mu.Unlock()
		m := newMission("search")
		start := time.Now()
		if st, err := c.Run(ctx, m); err != nil || st.Fail != nil {
			t.Fatalf("mission: %v %+v", err, st)
		}
		took := time.Since(start)
		stored := messages.StoredResultSubject(c.Submitter(), m.ID)
		eventually(t, 5*time.Second, "the subscriber hears the stored result", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(log, func(s seen) bool { return s.subject == stored })
		})
		mu.Lock()
		var steps []string
		var recordAck string // the record's reply subject: its acknowledgement
		prev := start
		for _, s := range log {
			step := criticalStep(s.subject, s.reply, c.Submitter(), m.ID)
			switch {
			case step == "record":
				recordAck = s.reply
			case step == "" && recordAck != "" && s.subject == recordAck:
				step = "record ack"
			}
			if step == "" {
				continue
			}
			if step == "status get" && slices.Contains(steps, "status write") {
				step = "fence check"
			}
			steps = append(steps, step)
			if i >= 5 {
				gaps[step] = append(gaps[step], s.at.Sub(prev))
			}
			prev = s.at
			if step == "stored result" {
				break
			}
		}
		mu.Unlock()
		// a worker that has just started also looks at every lane
		if i < 5 {
			continue
		}
		// the subscriber may hear a delivery before the pull that asked
		// for it, which the server hands to JetStream and copies to
		// subscribers in either order
		if j := slices.Index(steps, "delivery"); j > 0 && steps[j-1] != "pull" && j+1 < len(steps) && steps[j+1] == "pull" {
			steps[j], steps[j+1] = steps[j+1], steps[j]
		}
		if !slices.Equal(steps, want) {
			for _, s := range log {
				t.Logf("%v %s %s", s.at.Sub(start), s.subject, s.reply)
			}
			t.Fatalf("mission %d: on the way to its result %q, want %q", i, steps, want)
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
