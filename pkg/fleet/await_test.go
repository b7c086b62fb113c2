package fleet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// laggingResults reads a stored result as missing until lag after the
// first read that found it: the stream storing a result later than its
// message reaches subscribers (it stores from a queue, seconds late under
// a burst), and a result published just before a subscription being
// stored only after the first read.
type laggingResults struct {
	jetstream.Stream
	lag  time.Duration
	mu   sync.Mutex
	seen map[string]time.Time
}

func (l *laggingResults) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	msg, err := l.Stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	first, ok := l.seen[subject]
	if !ok {
		first = time.Now()
		l.seen[subject] = first
	}
	l.mu.Unlock()
	if time.Since(first) < l.lag {
		return nil, jetstream.ErrMsgNotFound
	}
	return msg, nil
}

// awaitClient is a client of a fresh embedded server with the default
// layout, and a context that ends with the test (at most 30 s).
func awaitClient(t *testing.T) (context.Context, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := NewClient(ctx, fleettest.Start(t).Conn(), ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

// Await returns every result of a burst, each stored later than its
// message (or than the await's first read, for results published before
// the await subscribed): none is left waiting for a message that already
// came.
func TestAwaitBurstsOfLateStoredResults(t *testing.T) {
	ctx, c := awaitClient(t)
	const n = 400
	if hung, wrong := awaitBursts(ctx, t, c, n, 8*time.Second); hung != 0 || wrong != 0 {
		t.Fatalf("%d of %d awaits never returned, %d returned another result", hung, n, wrong)
	}
}

// BenchmarkAwaitBursts runs b.N awaits in the bursts of
// TestAwaitBurstsOfLateStoredResults (-benchtime 100000x for the fleet's
// figure) and reports the awaits that did not return within 30 s as
// hung/op, and those that returned another mission's result as wrong/op.
func BenchmarkAwaitBursts(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	c, err := NewClient(ctx, fleettest.Start(b).Conn(), ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	n := b.N
	b.ResetTimer()
	hung, wrong := awaitBursts(ctx, b, c, n, 30*time.Second)
	b.ReportMetric(float64(hung)/float64(n), "hung/op")
	b.ReportMetric(float64(wrong)/float64(n), "wrong/op")
	if hung != 0 || wrong != 0 {
		b.Errorf("%d of %d awaits never returned, %d returned another result", hung, n, wrong)
	}
}

// awaitBursts awaits n missions in bursts of 50 whose results are stored
// a second later than their messages (laggingResults): in each burst the
// even missions' awaits start before their results are published, the odd
// ones' while they are being published. It returns how many awaits did
// not return within wait and how many returned another result.
func awaitBursts(ctx context.Context, tb testing.TB, c *Client, n int, wait time.Duration) (hung, wrong int64) {
	c.st.Results = &laggingResults{Stream: c.st.Results, lag: time.Second, seen: map[string]time.Time{}}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = messages.NewMissionID()
	}
	var nHung, nWrong atomic.Int64
	var wg sync.WaitGroup
	await := func(i int) {
		defer wg.Done()
		actx, acancel := context.WithTimeout(ctx, wait)
		defer acancel()
		step, err := c.Await(actx, ids[i])
		switch {
		case err != nil:
			nHung.Add(1)
		case step.Return != int64(i):
			nWrong.Add(1)
		}
	}
	publish := func(i int) {
		if _, _, err := publishResult(ctx, c.js, c.st, c.key(ids[i]), &messages.Step{Return: int64(i)}, claimFence{}); err != nil {
			tb.Error(err)
		}
	}
	for b := 0; b < n; b += 50 {
		end := min(b+50, n)
		for i := b; i < end; i += 2 {
			wg.Add(1)
			go await(i)
		}
		var pub sync.WaitGroup
		for i := b; i < end; i++ {
			pub.Add(1)
			go func() { defer pub.Done(); publish(i) }()
			if i%2 == 1 {
				wg.Add(1)
				go await(i)
			}
		}
		pub.Wait()
	}
	wg.Wait()
	return nHung.Load(), nWrong.Load()
}

// BenchmarkAwaitStored: one Await of a result already stored (subscribe,
// read, unsubscribe), its time and memory.
func BenchmarkAwaitStored(b *testing.B) {
	srv := fleettest.Start(b)
	ctx := context.Background()
	c, err := NewClient(ctx, srv.Conn(), ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	id := messages.NewMissionID()
	if _, _, err := publishResult(ctx, c.js, c.st, c.key(id), &messages.Step{Return: "ok"}, claimFence{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Await(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// Run reads the result only when it is signalled, and at awaitUnread
// (then awaitUnsure): a result stored before Run subscribed (an earlier
// copy of the mission, whose status Run does not read) is returned though
// no message on the result subject follows, and not before awaitUnread.
func TestRunReadsAnUnsignalledResultOnce(t *testing.T) {
	ctx, c := awaitClient(t)
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "p"}}
	if _, _, err := publishResult(ctx, c.js, c.st, c.key(m.ID), &messages.Step{Return: "earlier"}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step, err := c.Run(ctx, m) // no worker: nothing is signalled
	if err != nil || step.Return != "earlier" {
		t.Fatalf("run: %v %+v", err, step)
	}
	if d := time.Since(start); d < awaitUnread || d >= awaitUnsure {
		t.Fatalf("returned after %s: want a read at awaitUnread (%s) with no signal", d, awaitUnread)
	}
}

// Events of a mission whose result is stored waits for its final event,
// which a worker publishes (with the events it held) just after the
// result; for a mission with no result it returns what is stored at once.
func TestEventsWaitForTheFinalEventOfAFinishedMission(t *testing.T) {
	ctx, c := awaitClient(t)
	k := c.key(messages.NewMissionID())
	batch := func() *nats.Msg {
		var evs [][]byte
		for _, ev := range []*messages.Event{{Kind: messages.EventStarted}, {Kind: messages.EventEmit}, {Kind: messages.EventFinal, Step: &messages.Step{Return: "ok"}}} {
			ev.MissionID = k.id
			b, err := messages.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, b)
		}
		return &nats.Msg{Subject: messages.EventBatchSubject(k.sub, k.id, 1, 3), Data: messages.EncodeEventBatch(evs)}
	}

	// no result: nothing stored is nothing, at once (not after the wait
	// for a final event, which a loaded machine's reads may near)
	began := time.Now()
	if evs, err := c.Events(ctx, k.id); err != nil || len(evs) != 0 || time.Since(began) >= finalEventWait {
		t.Fatalf("events of a mission with no result = %d, %v after %s", len(evs), err, time.Since(began))
	}

	if _, _, err := publishResult(ctx, c.js, c.st, k, &messages.Step{Return: "ok"}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := c.js.PublishMsg(ctx, batch())
		published <- err
	}()
	evs, err := c.Events(ctx, k.id)
	if perr := <-published; perr != nil {
		t.Fatal(perr)
	}
	if err != nil || len(evs) != 3 || evs[2].Kind != messages.EventFinal {
		t.Fatalf("events read just after the result = %d, %v; want the 3 published after it", len(evs), err)
	}
}
