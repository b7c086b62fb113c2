package fleet

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// deleteMsgOn removes the message at a sequence, on the reply mux or
// with a plain request; a message removed already, and a sequence past
// the stream's last, are jetstream.ErrMsgNotFound, whichever the
// server's error for it.
func TestDeleteMsgOnRemovesBySequence(t *testing.T) {
	ctx, nc, js, _ := embeddedStores(t)
	p := newJournalPurge(t, ctx, nc, js)
	journal := p.stream
	for name, replies := range map[string]*replyMux{"on the reply mux": p.replies, "plain request": nil} {
		t.Run(name, func(t *testing.T) {
			id := messages.NewMissionID()
			var seqs []uint64
			for range 2 {
				ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: messages.JournalSubject(id), Data: []byte("entry")})
				if err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs, ack.Sequence)
			}
			if err := deleteMsgOn(ctx, nc, replies, messages.StreamJournal, seqs[0]); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := journal.GetMsg(ctx, seqs[0]); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("the deleted message is still read: %v", err)
			}
			if m, err := journal.GetMsg(ctx, seqs[1]); err != nil || string(m.Data) != "entry" {
				t.Fatalf("the other message: %v %v", m, err)
			}
			if err := deleteMsgOn(ctx, nc, replies, messages.StreamJournal, seqs[0]); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("a delete of a message removed already: %v, want ErrMsgNotFound", err)
			}
			if err := deleteMsgOn(ctx, nc, replies, messages.StreamJournal, seqs[1]+1000); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("a delete past the stream's last: %v, want ErrMsgNotFound", err)
			}
			if err := deleteMsgOn(ctx, nc, replies, "NO_SUCH_STREAM", 1); err == nil || errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("a delete in a stream that does not exist: %v, want an error naming it", err)
			}
		})
	}
}
