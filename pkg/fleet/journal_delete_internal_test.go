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

// A finished mission's journal is removed without a scan of what other
// missions wrote meanwhile: the messages earlier runs wrote, which the
// finishing run read, are removed by their sequences; what the run wrote
// itself is rolled up, so only a run that wrote leaves the empty marker.
// A journal read in more messages than the run removes one by one is
// rolled up whole.
func TestFinishedJournalRemovedBySequenceThenRolledUp(t *testing.T) {
	ctx, nc, js, _ := embeddedStores(t)
	stream, err := js.Stream(ctx, messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	replies := newReplyMux(nc)
	if err := replies.open(); err != nil {
		t.Fatal(err)
	}
	w := &Worker{nc: nc, replies: replies, log: zerolog.Nop()}
	// earlier writes n messages as a run would, one flush each
	earlier := func(t *testing.T, id string, n int) {
		t.Helper()
		j, err := openJournal(ctx, js, id, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := j.Record(ctx, fmt.Sprintf("t/%d/x", i), []byte("answer")); err != nil {
				t.Fatal(err)
			}
			if err := j.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// left returns the messages on the journal's subject and whether the
	// last is the rollup's marker
	left := func(t *testing.T, id string) (uint64, bool) {
		t.Helper()
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(messages.JournalSubject(id)))
		if err != nil {
			t.Fatal(err)
		}
		n := info.State.Subjects[messages.JournalSubject(id)]
		if n == 0 {
			return 0, false
		}
		last, err := stream.GetLastMsgForSubject(ctx, messages.JournalSubject(id))
		if err != nil {
			t.Fatal(err)
		}
		return n, len(last.Data) == 0 && last.Header.Get(jetstream.MsgRollup) == jetstream.MsgRollupSubject
	}
	for _, c := range []struct {
		name        string
		earlier     int
		writes      bool
		wantDeletes bool
		wantMarker  bool
	}{
		{"read, nothing written", 2, false, true, false},
		{"read and written", 2, true, true, true},
		{"written only", 0, true, false, true},
		{"read in more messages than removed one by one", maxJournalDeletes + 1, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := messages.NewMissionID()
			earlier(t, id, c.earlier)
			j, err := openJournalOn(ctx, js, replies, id, true, 0)
			if err != nil {
				t.Fatal(err)
			}
			read, ok := j.earlier()
			if ok != c.wantDeletes && c.earlier > 0 || ok && len(read) != c.earlier {
				t.Fatalf("earlier() = %v, %v after %d messages read", read, ok, c.earlier)
			}
			if c.writes {
				if err := j.Record(ctx, "t/new/x", []byte("answer")); err != nil {
					t.Fatal(err)
				}
				j.Push() // in flight when the result is stored
			}
			j.settle()
			if err := w.purgeJournal(context.Background(), j, id); err != nil {
				t.Fatal(err)
			}
			for _, seq := range read {
				if _, err := stream.GetMsg(ctx, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
					t.Errorf("message %d an earlier run wrote is still there: %v", seq, err)
				}
			}
			// the rollup is published without waiting for its ack
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				n, marker := left(t, id)
				if c.wantMarker && n == 1 && marker || !c.wantMarker && n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d messages left on the journal's subject (the last the marker: %v); want %d", n, marker, map[bool]int{true: 1}[c.wantMarker])
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
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "worker", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{journalDeleteSubject}},
		}}}}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
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
	stream, err := js.Stream(ctx, messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	replies := newReplyMux(nc)
	if err := replies.open(); err != nil {
		t.Fatal(err)
	}
	w := &Worker{nc: nc, replies: replies, log: zerolog.Nop()}
	for i := range 2 {
		id := messages.NewMissionID()
		first, err := openJournal(ctx, js, id, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Record(ctx, "t/1/x", []byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := first.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		j, err := openJournalOn(ctx, js, replies, id, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		j.settle()
		if err := w.purgeJournal(ctx, j, id); err != nil {
			t.Fatal(err)
		}
		if !w.journalDeletesRefused.Load() {
			t.Fatalf("journal %d: the refused delete was not recognised (last error %v)", i, nc.LastError())
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			last, err := stream.GetLastMsgForSubject(ctx, messages.JournalSubject(id))
			if err == nil && len(last.Data) == 0 && last.Header.Get(jetstream.MsgRollup) == jetstream.MsgRollupSubject {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("journal %d not rolled up: last message %v, %v", i, last, err)
			}
		}
	}
}
