package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pulledMsg is a message a consumer delivered to one of the worker's
// pull requests (pulls), as a jetstream.Msg: its acknowledgements are
// published on its reply subject ($JS.ACK...), and its metadata is read
// from that subject, as nats.go's own messages do.
type pulledMsg struct {
	msg *nats.Msg
	nc  *nats.Conn
	// ackd is set once an acknowledgement other than InProgress was
	// published: later ones fail with jetstream.ErrMsgAlreadyAckd.
	ackd atomic.Bool
}

var _ jetstream.Msg = (*pulledMsg)(nil)

// The acknowledgement bodies JetStream reads on a message's reply subject.
var (
	ackAck      = []byte("+ACK")
	ackNak      = []byte("-NAK")
	ackProgress = []byte("+WPI")
	ackTerm     = []byte("+TERM")
)

// doubleAckWait bounds DoubleAck when its context has no deadline: the
// default timeout of a jetstream context's requests.
const doubleAckWait = 5 * time.Second

func newPulledMsg(nc *nats.Conn, msg *nats.Msg) *pulledMsg {
	return &pulledMsg{msg: msg, nc: nc}
}

// Metadata returns the delivery's metadata read from its reply subject.
func (m *pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	if err := m.checkReply(); err != nil {
		return nil, err
	}
	md, err := parseAckMetadata(m.msg.Reply)
	if err != nil {
		return nil, err
	}
	return &md, nil
}

// Data returns the message body.
func (m *pulledMsg) Data() []byte { return m.msg.Data }

// Headers returns the message's headers.
func (m *pulledMsg) Headers() nats.Header { return m.msg.Header }

// Subject returns the subject the message was stored on.
func (m *pulledMsg) Subject() string { return m.msg.Subject }

// Reply returns the message's acknowledgement subject.
func (m *pulledMsg) Reply() string { return m.msg.Reply }

// Ack acknowledges the message.
func (m *pulledMsg) Ack() error { return m.ack(ackAck, nil) }

// DoubleAck acknowledges the message and waits for the server to confirm
// it, until ctx ends (at most doubleAckWait when ctx has no deadline).
func (m *pulledMsg) DoubleAck(ctx context.Context) error {
	if err := m.checkAck(); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, doubleAckWait)
		defer cancel()
	}
	if _, err := m.nc.RequestWithContext(ctx, m.msg.Reply, ackAck); err != nil {
		return err
	}
	m.ackd.Store(true)
	return nil
}

// Nak asks for the message to be redelivered.
func (m *pulledMsg) Nak() error { return m.ack(ackNak, nil) }

// NakWithDelay asks for the message to be redelivered after delay.
func (m *pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return m.ack(ackNak, nil)
	}
	var buf [48]byte
	b := append(buf[:0], `-NAK {"delay": `...)
	b = strconv.AppendInt(b, delay.Nanoseconds(), 10)
	return m.ack(ackNak, append(b, '}'))
}

// InProgress resets the message's redelivery timer; it may be sent any
// number of times.
func (m *pulledMsg) InProgress() error { return m.ack(ackProgress, nil) }

// Term tells the server never to deliver the message again.
func (m *pulledMsg) Term() error { return m.ack(ackTerm, nil) }

// TermWithReason is Term with a reason the server puts in its advisory.
func (m *pulledMsg) TermWithReason(reason string) error {
	if reason == "" {
		return m.ack(ackTerm, nil)
	}
	return m.ack(ackTerm, []byte(string(ackTerm)+" "+reason))
}

// ack publishes body (kind when nil) on the message's reply subject.
// Every kind but InProgress marks the message acknowledged.
func (m *pulledMsg) ack(kind, body []byte) error {
	if err := m.checkAck(); err != nil {
		return err
	}
	if body == nil {
		body = kind
	}
	if err := m.nc.Publish(m.msg.Reply, body); err != nil {
		return err
	}
	if !bytes.Equal(kind, ackProgress) {
		m.ackd.Store(true)
	}
	return nil
}

// checkAck says why the message takes no acknowledgement, if it does not.
func (m *pulledMsg) checkAck() error {
	if err := m.checkReply(); err != nil {
		return err
	}
	if m.ackd.Load() {
		return jetstream.ErrMsgAlreadyAckd
	}
	return nil
}

func (m *pulledMsg) checkReply() error {
	if m == nil || m.msg == nil || m.msg.Sub == nil {
		return jetstream.ErrMsgNotBound
	}
	if m.msg.Reply == "" {
		return jetstream.ErrMsgNoReply
	}
	return nil
}

// errAckSubject is the error of an acknowledgement subject that is not
// one JetStream writes.
var errAckSubject = errors.New("invalid format of ACK subject")

// parseAckMetadata reads a delivery's metadata from its acknowledgement
// subject, in its old form
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>
// or its new one
// $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>[.<token>...]
// (at least 11 tokens), as nats.go reads it: domain "_" is no domain, and
// a number token that is not all decimal digits reads as 0.
func parseAckMetadata(subject string) (jetstream.MsgMetadata, error) {
	var md jetstream.MsgMetadata
	rest, domain, err := ackFields(subject)
	if err != nil {
		return md, err
	}
	md.Domain = domain
	next := func() string {
		var t string
		t, rest, _ = strings.Cut(rest, ".")
		return t
	}
	md.Stream = next()
	md.Consumer = next()
	md.NumDelivered = parseAckNum(next())
	md.Sequence.Stream = parseAckNum(next())
	md.Sequence.Consumer = parseAckNum(next())
	md.Timestamp = time.Unix(0, int64(parseAckNum(next())))
	md.NumPending = parseAckNum(next())
	return md, nil
}

// ackFields checks that subject is an acknowledgement subject of either
// form (parseAckMetadata) and returns its tokens from the stream on, and
// its domain ("" for none, or "_").
func ackFields(subject string) (rest, domain string, err error) {
	n := strings.Count(subject, ".") + 1
	if n < 9 || (n > 9 && n < 11) {
		return "", "", fmt.Errorf("%w: %w", jetstream.ErrNotJSMessage, errAckSubject)
	}
	rest, ok := strings.CutPrefix(subject, "$JS.ACK.")
	if !ok {
		return "", "", fmt.Errorf("%w: %w: subject should start with $JS.ACK", jetstream.ErrNotJSMessage, errAckSubject)
	}
	if n > 9 {
		domain, rest, _ = strings.Cut(rest, ".")
		if domain == "_" {
			domain = ""
		}
		_, rest, _ = strings.Cut(rest, ".") // the account hash
	}
	return rest, domain, nil
}

// parseAckNum reads a number token of an acknowledgement subject as
// nats.go does: decimal digits only, anything else 0, and no check for
// overflow.
func parseAckNum(s string) uint64 {
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
