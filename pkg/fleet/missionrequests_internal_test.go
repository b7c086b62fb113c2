package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Every request a worker and a client send on a mission's path (the
// submission, the pull, the claim, the fence check, the record, the
// result, the final status) asks for its answer on the sender's reply
// mux or the worker's pull inbox, none on nats.go's request mux: an
// answer there passes one more goroutine (nats.go's response handler)
// on its way, and its request costs a response map entry, a channel and
// a timer.
func TestMissionRequestsAnsweredOnTheReplyMuxes(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(nc, WorkerConfig{
		ID: "muxed", Slots: 1, Priorities: []string{messages.PriorityNormal},
		IdleWait: 100 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: "done"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	run := func() string {
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
		if _, err := client.Run(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	run() // the layout read, the consumers' first pulls

	type request struct{ subject, reply string }
	var mu sync.Mutex
	var seen []request
	watch := s.Conn()
	if _, err := watch.Subscribe(">", func(m *nats.Msg) {
		if m.Reply != "" {
			mu.Lock()
			seen = append(seen, request{m.Subject, m.Reply})
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		ids = append(ids, run())
	}
	// the watcher sees each record, sent before its result, and each
	// final status write, sent after it; the first mission's final write
	// may come after the watcher subscribed, and is not counted
	records := func() (n, finals int) {
		for _, r := range seen {
			ofThese := false
			for _, id := range ids {
				ofThese = ofThese || strings.Contains(r.subject, id)
			}
			switch {
			case !ofThese:
			case strings.HasSuffix(r.subject, ".record"):
				n++
			case strings.HasPrefix(r.subject, "$KV."+messages.BucketStatus+"."):
				finals++
			}
		}
		return n, finals
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n, finals := records()
		mu.Unlock()
		if (n == len(ids) && finals == 2*len(ids)) || time.Now().After(deadline) {
			break
		}
	}
	muxes := []string{w.replies.prefix + ".", w.pulls.prefix + ".", client.replies.prefix + "."}
	mu.Lock()
	defer mu.Unlock()
	asked := 0
	for _, r := range seen {
		ofMission := strings.HasPrefix(r.subject, "$JS.API.CONSUMER.MSG.NEXT."+messages.StreamMissions+".")
		for _, id := range ids {
			ofMission = ofMission || strings.Contains(r.subject, id)
		}
		// a delivered mission's reply subject is its acknowledgement's
		if !ofMission || strings.HasPrefix(r.reply, "$JS.ACK.") {
			continue
		}
		asked++
		onMux := false
		for _, p := range muxes {
			onMux = onMux || strings.HasPrefix(r.reply, p)
		}
		if !onMux {
			t.Errorf("%s asks for its answer on %s, not on the worker's or the client's reply mux", r.subject, r.reply)
		}
	}
	if asked == 0 {
		t.Fatalf("no request of the missions seen (%d messages with a reply)", len(seen))
	}
	if n, finals := records(); n != len(ids) || finals != 2*len(ids) {
		t.Errorf("%d records and %d status writes seen for %d missions; want one record and two writes (the claim, the final status) each", n, finals, len(ids))
	}
}
