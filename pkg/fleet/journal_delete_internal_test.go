package fleet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// journalPurge is what a test of Worker.purgeJournal needs: a worker
// with nc and its reply mux, and the JOURNAL stream to look at.
type journalPurge struct {
	ctx     context.Context
	js      jetstream.JetStream
	w       *Worker
	stream  jetstream.Stream
	replies *replyMux
}

func newJournalPurge(t *testing.T, ctx context.Context, nc *nats.Conn, js jetstream.JetStream) *journalPurge {
	t.Helper()
	stream, err := js.Stream(ctx, messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	replies := newReplyMux(nc)
	if err := replies.open(); err != nil {
		t.Fatal(err)
	}
	return &journalPurge{ctx: ctx, js: js, w: &Worker{nc: nc, replies: replies, log: zerolog.Nop()}, stream: stream, replies: replies}
}

// write writes n messages of mission id's journal as an earlier run
// would, one flush each.
func (p *journalPurge) write(t *testing.T, id string, n int) {
	t.Helper()
	j, err := openJournal(p.ctx, p.js, id, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := j.Record(p.ctx, fmt.Sprintf("t/%d/x", i), []byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := j.Flush(p.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// reopen reads mission id's journal back as a resumed run does.
func (p *journalPurge) reopen(t *testing.T, id string) *Journal {
	t.Helper()
	j, err := openJournalOn(p.ctx, p.js, p.replies, id, true, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// awaitLeft waits until mission id's journal subject holds nothing, or
// only the rollup's empty marker when marker is true (a rollup is
// published without waiting for its ack).
func (p *journalPurge) awaitLeft(t *testing.T, id string, marker bool) {
	t.Helper()
	subject := messages.JournalSubject(id)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := p.stream.Info(p.ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		n, isMarker := info.State.Subjects[subject], false
		if n > 0 {
			last, err := p.stream.GetLastMsgForSubject(p.ctx, subject)
			if err != nil {
				t.Fatal(err)
			}
			isMarker = len(last.Data) == 0 && last.Header.Get(jetstream.MsgRollup) == jetstream.MsgRollupSubject
		}
		if marker && n == 1 && isMarker || !marker && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left on %s (the last the marker: %v); want the marker alone: %v", n, subject, isMarker, marker)
		}
	}
}

// A finished mission's journal is removed without a scan of what other
// missions wrote meanwhile: the messages earlier runs wrote, which the
// finishing run read, are removed by their sequences; what the run wrote
// itself is rolled up, so only a run that wrote leaves the empty marker.
// A journal read in more messages than the run removes one by one is
// rolled up whole.
func TestFinishedJournalRemovedBySequenceThenRolledUp(t *testing.T) {
	ctx, nc, js, _ := embeddedStores(t)
	p := newJournalPurge(t, ctx, nc, js)
	for _, c := range []struct {
		name       string
		earlier    int
		writes     bool
		readAll    bool // earlier() lists every message read
		wantMarker bool
	}{
		{"read, nothing written", 2, false, true, false},
		{"read and written", 2, true, true, true},
		{"written only", 0, true, true, true},
		{"read in more messages than removed one by one", maxJournalDeletes + 1, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := messages.NewMissionID()
			p.write(t, id, c.earlier)
			j := p.reopen(t, id)
			read, ok := j.earlier()
			if ok != c.readAll || ok && len(read) != c.earlier {
				t.Fatalf("earlier() = %v, %v after %d messages read", read, ok, c.earlier)
			}
			if c.writes {
				if err := j.Record(ctx, "t/new/x", []byte("answer")); err != nil {
					t.Fatal(err)
				}
				j.Push() // in flight when the result is stored
			}
			j.settle()
			if err := p.w.purgeJournal(context.Background(), j, id); err != nil {
				t.Fatal(err)
			}
			// a rollup is published without waiting for its ack: what is
			// left is awaited before the messages read are looked up
			p.awaitLeft(t, id, c.wantMarker)
			for _, seq := range read {
				if _, err := p.stream.GetMsg(ctx, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
					t.Errorf("message %d an earlier run wrote is still there: %v", seq, err)
				}
			}
		})
	}
}

// A worker whose NATS user may not remove journal messages by sequence
// (a configuration from before the worker role held that right) rolls
// the journal up instead, finding out once: the refused request is
// recognised as a permissions violation, and later journals are rolled
// up without asking.
func TestJournalRolledUpWhereItsDeleteIsRefused(t *testing.T) {
	srv := startServer(t, server.Options{Users: []*server.User{{Username: "worker", Password: "pw", Permissions: &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{journalDeleteSubject}},
	}}}})
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("worker", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStores(ctx, js, StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	p := newJournalPurge(t, ctx, nc, js)
	for i := range 2 {
		id := messages.NewMissionID()
		p.write(t, id, 1)
		j := p.reopen(t, id)
		j.settle()
		if err := p.w.purgeJournal(ctx, j, id); err != nil {
			t.Fatal(err)
		}
		if !p.w.journalDeletesRefused.Load() {
			t.Fatalf("journal %d: the refused delete was not recognised (last error %v)", i, nc.LastError())
		}
		p.awaitLeft(t, id, true)
	}
}
