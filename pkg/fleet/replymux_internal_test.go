package fleet

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A reply subject's handler is the one add registered for its token,
// and only the token as add spelled it reaches it.
func TestReplyMuxDelivers(t *testing.T) {
	m := &replyMux{prefix: "_INBOX.x", handlers: map[uint64]replyHandler{}, closed: make(chan struct{})}
	m.next.Store(34) // the next token is 35, "z"
	var got []string
	subject, token := m.add(replyFunc(func(msg *nats.Msg) { got = append(got, msg.Subject) }))
	if subject != "_INBOX.x.z" || token != 35 {
		t.Fatalf("add: subject %q, token %d", subject, token)
	}
	for _, s := range []string{"_INBOX.x.z", "_INBOX.x.Z", "_INBOX.x.0z", "_INBOX.x.z0", "_INBOX.x.", "_INBOX.x.-z",
		"_INBOX.x." + strconv.FormatUint(35+36*(1<<58), 36), "_INBOX.x.zzzzzzzzzzzzzzzz"} {
		m.deliver(&nats.Msg{Subject: s})
	}
	if len(got) != 1 || got[0] != "_INBOX.x.z" {
		t.Fatalf("delivered %q, want only _INBOX.x.z", got)
	}
	m.remove(token)
	m.deliver(&nats.Msg{Subject: subject})
	if len(got) != 1 {
		t.Fatal("a message reached a removed handler")
	}
	for _, n := range []uint64{0, 1, 35, 36, 1 << 40, ^uint64(0)} {
		if v, ok := parseReplyToken(strconv.FormatUint(n, 36)); !ok || v != n {
			t.Errorf("token %d read back as %d, %v", n, v, ok)
		}
	}
}

// Registering a call's reply subject and removing it make no string for
// the token, no func to remove it, no method value for the handler, and
// the subject itself in a block of replySubjectBlock: one allocation for
// as many subjects, where one a subject was made before.
func TestReplyMuxAddAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocations counted without the race detector")
	}
	m := &replyMux{prefix: "_INBOX.ABCDEFGHIJKLMNOPQRSTUV", handlers: map[uint64]replyHandler{}, closed: make(chan struct{})}
	c := &liveCall{reply: make(chan *nats.Msg, 1)}
	if n := testing.AllocsPerRun(100, func() {
		for range replySubjectBlock {
			_, token := m.add(c)
			m.remove(token)
		}
	}); n != 1 {
		t.Errorf("%.0f allocations to add and remove %d reply subjects, want 1", n, replySubjectBlock)
	}
}

// The subjects made in blocks are each the prefix and its token in base
// 36, across blocks and from any first token.
func TestReplyMuxSubjectsInBlocks(t *testing.T) {
	for _, first := range []uint64{0, 34, 1<<40 - 5} {
		m := &replyMux{prefix: "_INBOX.x", handlers: map[uint64]replyHandler{}, closed: make(chan struct{})}
		m.next.Store(first)
		seen := map[string]bool{}
		for range 3*replySubjectBlock + 5 {
			subject, token := m.add(replyFunc(func(*nats.Msg) {}))
			if want := "_INBOX.x." + strconv.FormatUint(token, 36); subject != want || seen[subject] {
				t.Fatalf("token %d: subject %q, want %q once", token, subject, want)
			}
			seen[subject] = true
		}
	}
}

// A request waiting on a reply mux returns nats.ErrConnectionClosed when
// its connection closes, not when its timeout passes: no answer can come.
func TestReplyMuxRequestEndsWhenTheConnectionCloses(t *testing.T) {
	nc := embeddedConn(t)
	asked := make(chan struct{}, 1)
	// a service that takes the request and never answers
	if _, err := nc.Subscribe("silent", func(*nats.Msg) { asked <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	m := newReplyMux(nc)
	if !m.on(nc) {
		t.Fatal("the mux did not open")
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.request(context.Background(), "silent", nil, time.Hour)
		done <- err
	}()
	<-asked
	nc.Close()
	select {
	case err := <-done:
		if !errors.Is(err, nats.ErrConnectionClosed) {
			t.Fatalf("request: %v, want %v", err, nats.ErrConnectionClosed)
		}
	case <-time.After(time.Minute):
		t.Fatal("the request still waits a minute after its connection closed")
	}
}
