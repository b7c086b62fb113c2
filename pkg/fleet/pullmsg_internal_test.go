package fleet

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsGoAckMetadata is the metadata nats.go reads from a message whose
// acknowledgement subject is reply (its legacy API reads it with the same
// parser as its jetstream package's Msg.Metadata).
func natsGoAckMetadata(reply string) (jetstream.MsgMetadata, error) {
	md, err := (&nats.Msg{Reply: reply, Sub: &nats.Subscription{}}).Metadata()
	if err != nil {
		return jetstream.MsgMetadata{}, err
	}
	return jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp,
		Stream: md.Stream, Consumer: md.Consumer, Domain: md.Domain,
	}, nil
}

// The metadata read from a delivery's acknowledgement subject is what
// nats.go's Fetch returns for the same message, and what nats.go reads
// from the subject's old and new forms.
func TestParseAckMetadataReadsWhatNatsGoReads(t *testing.T) {
	nc := embeddedConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PULLS", Subjects: []string{"pulls.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "pulls.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for msg := range batch.Messages() {
		n++
		want, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		pm := newPulledMsg(nc, &nats.Msg{Subject: msg.Subject(), Reply: msg.Reply(), Data: msg.Data(), Sub: &nats.Subscription{}})
		got, err := pm.Metadata()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; Fetch's metadata %+v", msg.Reply(), got, err, want)
		}
		if want.NumPending != uint64(3-n) || want.Sequence.Stream != uint64(n) || want.Stream != "PULLS" || want.Consumer != "c" {
			t.Errorf("Fetch's metadata %+v", want)
		}
	}
	if n != 3 {
		t.Fatalf("Fetch delivered %d messages, want 3", n)
	}

	for _, reply := range []string{
		"$JS.ACK.S.c.1.2.3.1700000000000000000.4",                   // old form
		"$JS.ACK._.ACCHASH.S.c.1.2.3.1700000000000000000.4.tok",     // new form, no domain
		"$JS.ACK.hub.ACCHASH.S.c.1.2.3.1700000000000000000.4.tok",   // new form, a domain
		"$JS.ACK.hub.ACCHASH.S.c.1.2.3.1700000000000000000.4",       // new form, its last token left out
		"$JS.ACK.hub.ACCHASH.S.c.1.2.3.1700000000000000000.4.a.b.c", // more tokens
		"$JS.ACK.S.c.x.2.-3.17e9.4",                                 // not numbers
		"$JS.ACK.S.c.1.2.3.4",                                       // too few
		"$JS.ACK.a.b.S.c.1.2.3.4",                                   // 10 tokens
		"$JS.ACK.S.c.1.2.3.4.18446744073709551616",                  // overflows
		"$JS.NAK.S.c.1.2.3.1700000000000000000.4",
		"",
	} {
		want, werr := natsGoAckMetadata(reply)
		got, err := parseAckMetadata(reply)
		if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) {
			t.Errorf("%q: %+v, %v; nats.go reads %+v, %v", reply, got, err, want, werr)
		}
		if err != nil && !errors.Is(err, jetstream.ErrNotJSMessage) {
			t.Errorf("%q: %v is not jetstream.ErrNotJSMessage", reply, err)
		}
	}
}

// FuzzParseAckMetadata: any subject reads as nats.go reads it, to the same
// metadata or an error, and names the consumer whose pull a delivery
// answers (ackConsumer) when it names a stream and a consumer.
func FuzzParseAckMetadata(f *testing.F) {
	for _, s := range []string{
		"$JS.ACK.S.c.1.2.3.1700000000000000000.4",
		"$JS.ACK._.ACCHASH.S.c.1.2.3.1700000000000000000.4.tok",
		"$JS.ACK.hub.H.MISSIONS.normal-3.10.200.30.1700000000000000000.0.x",
		"$JS.ACK.S.c.1.2.3.4",
		"$JS.ACK..........",
		"$JS.ACK.S.c.\u00e9.2.3.4.5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := parseAckMetadata(reply)
		want, werr := natsGoAckMetadata(reply)
		if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) {
			t.Fatalf("%q: %+v, %v; nats.go reads %+v, %v", reply, got, err, want, werr)
		}
		c, ok := ackConsumer(reply)
		named := err == nil && got.Stream != "" && got.Consumer != ""
		if ok != named || (ok && c != got.Stream+"."+got.Consumer) {
			t.Fatalf("%q: consumer %q, %v; metadata %+v, %v", reply, c, ok, got, err)
		}
	})
}

// A pulled message publishes on its reply subject the acknowledgements
// nats.go's messages publish, and refuses a second one once acknowledged
// (InProgress aside), as they do.
func TestPulledMsgAcknowledges(t *testing.T) {
	nc := embeddedConn(t)
	acks, err := nc.SubscribeSync("ack.>")
	if err != nil {
		t.Fatal(err)
	}
	sub := &nats.Subscription{}
	next := func() string {
		t.Helper()
		m, err := acks.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(m.Data)
	}
	for _, c := range []struct {
		ack  func(*pulledMsg) error
		body string
	}{
		{(*pulledMsg).Ack, "+ACK"},
		{(*pulledMsg).Nak, "-NAK"},
		{func(m *pulledMsg) error { return m.NakWithDelay(0) }, "-NAK"},
		{func(m *pulledMsg) error { return m.NakWithDelay(5 * time.Second) }, `-NAK {"delay": 5000000000}`},
		{(*pulledMsg).Term, "+TERM"},
		{func(m *pulledMsg) error { return m.TermWithReason("bad input") }, "+TERM bad input"},
	} {
		m := newPulledMsg(nc, &nats.Msg{Reply: "ack.1", Sub: sub})
		if err := m.InProgress(); err != nil {
			t.Fatal(err)
		}
		if err := m.InProgress(); err != nil {
			t.Fatal(err)
		}
		if err := c.ack(m); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"+WPI", "+WPI", c.body} {
			if got := next(); got != want {
				t.Errorf("published %q, want %q", got, want)
			}
		}
		for _, again := range []func() error{m.Ack, m.Nak, m.InProgress, m.Term} {
			if err := again(); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				t.Errorf("after %q: %v, want ErrMsgAlreadyAckd", c.body, err)
			}
		}
	}
	if m, err := acks.NextMsg(50 * time.Millisecond); err == nil {
		t.Errorf("published %q after the message was acknowledged", m.Data)
	}

	// DoubleAck waits for the answer.
	srv, err := nc.Subscribe("ack.double", func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Unsubscribe() }()
	m := newPulledMsg(nc, &nats.Msg{Reply: "ack.double", Sub: sub})
	if err := m.DoubleAck(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		t.Errorf("Ack after DoubleAck: %v", err)
	}
	if err := newPulledMsg(nc, &nats.Msg{Reply: "ack.none", Sub: sub}).DoubleAck(context.Background()); err == nil {
		t.Error("DoubleAck nobody answered succeeded")
	}

	// A message with no reply subject, or not bound to a subscription,
	// takes no acknowledgement and has no metadata.
	for _, m := range []*pulledMsg{newPulledMsg(nc, &nats.Msg{Sub: sub}), newPulledMsg(nc, &nats.Msg{Reply: "ack.1"})} {
		if err := m.Ack(); err == nil {
			t.Errorf("%+v acknowledged", m.msg)
		}
		if _, err := m.Metadata(); err == nil {
			t.Errorf("%+v has metadata", m.msg)
		}
	}
}
