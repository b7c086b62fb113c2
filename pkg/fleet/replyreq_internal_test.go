package fleet

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A request on a reply mux takes its own answer: one that comes after an
// earlier request gave up is not taken for a later request's (which may
// wait on the earlier one's pooled waiter), a subject
// no one serves is nats.ErrNoResponders, a timeout nats.ErrTimeout and a
// cancelled context its error.
func TestReplyMuxRequestTakesItsOwnAnswer(t *testing.T) {
	nc := embeddedConn(t)
	m := newReplyMux(nc)
	if err := m.open(); err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 4) // the reply subjects of the requests
	if _, err := nc.Subscribe("svc", func(msg *nats.Msg) { asked <- msg.Reply }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.request(ctx, "svc", []byte("1"), 50*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("an unanswered request: %v, want %v", err, nats.ErrTimeout)
	}
	first := <-asked
	type answer struct {
		msg *nats.Msg
		err error
	}
	second := make(chan answer, 1)
	go func() {
		r, err := m.request(ctx, "svc", []byte("2"), 5*time.Second)
		second <- answer{r, err}
	}()
	reply := <-asked
	if reply == first {
		t.Fatalf("two requests on the reply subject %s", reply)
	}
	// the first request's answer, late, then the second's
	if err := nc.Publish(first, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(reply, []byte("second")); err != nil {
		t.Fatal(err)
	}
	if a := <-second; a.err != nil || string(a.msg.Data) != "second" {
		t.Fatalf("the second request: %v, %v; want its own answer", a.msg, a.err)
	}
	// a message with headers: answered, and left as it was given
	msg := &nats.Msg{Subject: "svc", Header: nats.Header{"K": {"v"}}, Data: []byte("3")}
	go func() { _ = nc.Publish(<-asked, []byte("third")) }()
	if r, err := m.requestMsg(ctx, msg, 5*time.Second); err != nil || string(r.Data) != "third" || msg.Reply != "" {
		t.Fatalf("a request of a message with headers: %v, %v; its reply subject left %q", r, err, msg.Reply)
	}
	if _, err := m.request(ctx, "nobody.serves.this", nil, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("a request no one serves: %v, want %v", err, nats.ErrNoResponders)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-asked; cancel() }()
	if _, err := m.request(cctx, "svc", nil, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v, want %v", err, context.Canceled)
	}
	m.mu.Lock()
	left := len(m.handlers)
	m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d handlers left on the mux after the requests returned", left)
	}
}

// The reads and writes a worker makes on a mission's path, with their
// requests on the worker's reply mux (Stores.replies), make the reply
// subject alone (the waiter is pooled: no channel, no response map entry)
// and wait on a pooled timer under a context without a deadline, where
// through nats.go's request path they make a context for the wait: a
// status read and a message read (direct gets: a client's read of a
// parked mission or a result) cost 2 allocations fewer, a status write
// (publish acknowledged) and a journal read (message get from the
// stream's leader) 7 fewer.
func TestRequestsOnReplyMuxAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocations counted without the race detector")
	}
	tctx, nc, js, st := embeddedStores(t)
	// a context that can end but has no deadline, as a worker's run has
	ctx, cancel := context.WithCancel(context.WithoutCancel(tctx))
	defer cancel()
	muxed := *st
	muxed.replies = newReplyMux(nc)
	plain := *st
	plain.replies = nil
	k := missionKey{sub: "alice", id: messages.NewMissionID()}
	s := messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 1}
	rev, err := casStatus(ctx, st, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := func(st *Stores) func() {
		return func() {
			if _, err := getStatus(ctx, st, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(st *Stores) func() {
		return func() {
			if rev, err = casStatus(ctx, st, s, rev); err != nil {
				t.Fatal(err)
			}
		}
	}
	journalSubject := messages.JournalSubject(k.id)
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: journalSubject, Header: nats.Header{messages.HeaderJournalKey: {"t/1/abc#0"}}, Data: []byte("a tool's answer")}); err != nil {
		t.Fatal(err)
	}
	journal := func(replies *replyMux) func() {
		return func() {
			if _, _, _, err := journalMsg(ctx, nc, replies, journalSubject, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	resultSubject := messages.ResultSubject(k.sub, k.id)
	if _, err := js.Publish(ctx, resultSubject, []byte("a result")); err != nil {
		t.Fatal(err)
	}
	message := func(replies *replyMux) func() {
		return func() {
			if _, err := getMsgOn(ctx, nc, replies, st.Results, lastOn(resultSubject)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name       string
		mux, plain func()
		fewer      float64
	}{
		{"status read", read(&muxed), read(&plain), 2},
		{"status write", write(&muxed), write(&plain), 6},
		{"journal read", journal(muxed.replies), journal(nil), 6},
		{"message read", message(muxed.replies), message(nil), 2},
	} {
		mux, plain := fewestAllocs(c.mux, c.plain)
		t.Logf("%s: %.0f allocations on the reply mux, %.0f through nats.go's request path", c.name, mux, plain)
		if mux > plain-c.fewer {
			t.Errorf("%s: %.0f allocations on the reply mux, want at least %.0f fewer than through nats.go's request path (%.0f)", c.name, mux, c.fewer, plain)
		}
	}
}

// A request whose answer comes twice takes the first; the copy, which
// may reach its waiter before the request returns, is not taken by the
// next request that waits on the same pooled waiter.
func TestReplyMuxRequestDropsACopiedAnswer(t *testing.T) {
	nc := embeddedConn(t)
	m := newReplyMux(nc)
	if err := m.open(); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("twice", func(msg *nats.Msg) {
		_ = msg.Respond([]byte("first"))
		_ = msg.Respond([]byte("copy"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("echo", func(msg *nats.Msg) { _ = msg.Respond(msg.Data) }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 200 {
		r, err := m.request(ctx, "twice", nil, 5*time.Second)
		if err != nil || string(r.Data) != "first" {
			t.Fatalf("request %d: %v, %v; want the first answer", i, r, err)
		}
		want := strconv.Itoa(i)
		if r, err = m.request(ctx, "echo", []byte(want), 5*time.Second); err != nil || string(r.Data) != want {
			t.Fatalf("request %d after a copied answer: %v, %v; want %s", i, r, err, want)
		}
	}
}
