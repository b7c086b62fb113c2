package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A resumed run whose status names its journal's last message reads the
// messages up to it with direct gets; an answer that there is no next
// message below that last (what a replica behind the leader answers) is
// asked of the leader with a message get. Without the last message named
// (a redelivery), or on a JOURNAL without direct gets, every read is a
// message get.
func TestJournalReadWithDirectGetsUpToItsLastMessage(t *testing.T) {
	ctx, nc, js, _ := embeddedStores(t)
	p := newJournalPurge(t, ctx, nc, js)
	spy, err := nc.SubscribeSync("$JS.API.>")
	if err != nil {
		t.Fatal(err)
	}
	requests := func() (direct, get int) {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := spy.NextMsg(50 * time.Millisecond)
			if err != nil {
				return direct, get
			}
			switch {
			case strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET."+messages.StreamJournal):
				direct++
			case strings.HasPrefix(m.Subject, "$JS.API.STREAM.MSG.GET."+messages.StreamJournal):
				get++
			}
		}
	}
	id := messages.NewMissionID()
	p.write(t, id, 2)
	last, err := p.stream.GetLastMsgForSubject(ctx, messages.JournalSubject(id))
	if err != nil {
		t.Fatal(err)
	}
	requests()
	for _, c := range []struct {
		name                string
		upTo                uint64
		direct              bool
		wantDirect, wantGet int
	}{
		{"the last message named", last.Sequence, true, 2, 0},
		// a status naming a message the replica that answers does not
		// hold: the answer "no next message" below it goes to the leader
		{"a later message named than the one answering holds", last.Sequence + 5, true, 3, 1},
		{"no last message named", 0, true, 0, 3},
		{"a JOURNAL without direct gets", last.Sequence, false, 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := openJournalOn(ctx, js, p.replies, id, true, c.upTo, c.direct)
			if err != nil {
				t.Fatal(err)
			}
			if n := j.Entries(); n != 2 {
				t.Errorf("%d entries read, want 2", n)
			}
			if read, ok := j.earlier(); !ok || len(read) != 2 || read[1] != last.Sequence {
				t.Errorf("messages read %v, %v; want two, the last at %d", read, ok, last.Sequence)
			}
			if d, g := requests(); d != c.wantDirect || g != c.wantGet {
				t.Errorf("%d direct gets and %d message gets, want %d and %d", d, g, c.wantDirect, c.wantGet)
			}
		})
	}
}

// BenchmarkJournalRead reads journal messages one at a time, each the
// next message on its mission's subject from a sequence, as a resumed
// run does: with the JetStream API's message get (the leader's) and with
// a direct get, on the embedded server, in one process. It reports the
// process's CPU time (client and server) a read; -benchmem gives the
// bytes and allocations of both sides.
func BenchmarkJournalRead(b *testing.B) {
	ctx, nc, js, _ := embeddedStores(b)
	replies := newReplyMux(nc)
	if err := replies.open(); err != nil {
		b.Fatal(err)
	}
	const missions = 20
	ids := make([]string, missions)
	for i := range ids {
		ids[i] = messages.NewMissionID()
	}
	const n = 1000
	seqs := make([]uint64, n)
	for i := range seqs {
		a, err := js.Publish(ctx, messages.JournalSubject(ids[i%missions]), []byte(`{"content":"a model's reply or a tool's result, as a journal entry holds"}`))
		if err != nil {
			b.Fatal(err)
		}
		seqs[i] = a.Sequence
	}
	for _, how := range []string{"message-get", "direct-get"} {
		b.Run(how, func(b *testing.B) {
			cpu0, ok0 := fleettest.ProcessCPU()
			for i := range b.N {
				subject, seq := messages.JournalSubject(ids[i%n%missions]), seqs[i%n]
				var err error
				if how == "direct-get" {
					_, _, _, err = directMsg(ctx, nc, replies, messages.StreamJournal, atSeq(seq, subject))
				} else {
					_, _, _, err = journalMsg(ctx, nc, replies, subject, seq)
				}
				if err != nil {
					b.Fatal(fmt.Errorf("read %d: %w", seq, err))
				}
			}
			if cpu1, ok1 := fleettest.ProcessCPU(); ok0 && ok1 {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/read")
			}
		})
	}
}
