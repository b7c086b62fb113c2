package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// publishAcked publishes m to the stream that holds its subject and waits
// for the stream's acknowledgement: what jetstream.JetStream's PublishMsg
// does with m's headers already set (the publish options are headers:
// jetstream.MsgIDHeader, jetstream.ExpectedLastSubjSeqHeader ...), with
// the same wait when ctx has none (publishWait), the same retries while
// no stream answers and the same errors (a refusal is the server's
// *jetstream.APIError, wrapped). The acknowledgements a stream gives a
// stored or duplicate message are read without encoding/json (publishAck):
// a mission makes several such publishes.
func publishAcked(ctx context.Context, nc *nats.Conn, m *nats.Msg) (jetstream.PubAck, error) {
	return publishAckedOn(ctx, nc, nil, m)
}

// publishAckedOn is publishAcked with its requests sent on replies when
// replies is nc's reply mux (requestOn): a reply subject of the mux's and
// a pooled waiter, with no response map entry, channel or context made
// for a request.
func publishAckedOn(ctx context.Context, nc *nats.Conn, replies *replyMux, m *nats.Msg) (jetstream.PubAck, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(publishWait)
	}
	return publishAckedBy(ctx, nc, replies, m, deadline)
}

// publishAckedBy is publishAckedOn waiting until deadline at the latest
// (ctx's own deadline, when earlier, still holds). Its requests wait on
// pooled timers, with no context made for the deadline, when they go on
// replies (nc's reply mux) or when ctx can never be done (no Done
// channel: context.Background and what only carries values on it); a
// deadline that passes is context.DeadlineExceeded as the context's
// would be. The worker's writes of a mission's status and result go this
// way.
func publishAckedBy(ctx context.Context, nc *nats.Conn, replies *replyMux, m *nats.Msg, deadline time.Time) (jetstream.PubAck, error) {
	var request func() (*nats.Msg, error)
	var wait <-chan struct{} // ends a retry's wait early; nil: the retry waits at most until deadline
	if replies.on(nc) {
		wait = ctx.Done()
		request = func() (*nats.Msg, error) {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, context.DeadlineExceeded
			}
			resp, err := replies.requestMsg(ctx, m, left)
			if errors.Is(err, nats.ErrTimeout) {
				err = context.DeadlineExceeded
			}
			return resp, err
		}
	} else if ctx.Done() == nil {
		request = func() (*nats.Msg, error) {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, context.DeadlineExceeded
			}
			resp, err := nc.RequestMsg(m, left)
			if errors.Is(err, nats.ErrTimeout) {
				err = context.DeadlineExceeded
			}
			return resp, err
		}
	} else {
		if d, ok := ctx.Deadline(); !ok || d.After(deadline) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		wait = ctx.Done()
		request = func() (*nats.Msg, error) { return nc.RequestMsgWithContext(ctx, m) }
	}
	resp, err := request()
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		// a stream electing its leader answers no one for a moment
		t := time.NewTimer(min(jetstream.DefaultPubRetryWait, max(time.Until(deadline), 0)))
		select {
		case <-wait:
		case <-t.C:
		}
		t.Stop()
		resp, err = request()
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return jetstream.PubAck{}, jetstream.ErrNoStreamResponse
	}
	if err != nil {
		return jetstream.PubAck{}, err
	}
	return publishAck(resp.Data)
}

// publishBuffers holds the buffers that messages published with
// publishAcked are encoded in (a status, a result, a record): nats.go
// copies a message into its connection's buffer before the publish
// returns, so its encoding is free again once publishAcked returned.
var publishBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPublish bounds the buffers publishBuffers keeps: one grown by a
// large message is left to the collector.
const maxPooledPublish = 64 << 10

// getPublishBuffer returns an empty buffer of publishBuffers.
func getPublishBuffer() *bytes.Buffer {
	buf := publishBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

// putPublishBuffer gives buf back to publishBuffers; nothing may hold its
// bytes any more.
func putPublishBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledPublish {
		publishBuffers.Put(buf)
	}
}

// ackedHeader is the header of a message published with publishAcked,
// pooled with room for its values: nats.go encodes a message's header
// before the publish returns and keeps nothing of it, so the map, whose
// table costs a few hundred bytes, serves the next publish once cleared
// (release). Its values are set as nats.Header.Set sets them, the first
// few in one array.
type ackedHeader struct {
	h    nats.Header
	vals [6]string
	n    int
}

// ackedHeaders holds the ackedHeaders released.
var ackedHeaders = sync.Pool{New: func() any { return &ackedHeader{h: nats.Header{}} }}

// newAckedHeader returns an empty ackedHeader of the pool.
func newAckedHeader() *ackedHeader { return ackedHeaders.Get().(*ackedHeader) }

// set sets key to value alone, as nats.Header.Set does. Each value's
// slice is capped at its length, so an Add to one key never writes into
// the next.
func (a *ackedHeader) set(key, value string) {
	if a.n == len(a.vals) {
		a.h[key] = []string{value}
		return
	}
	a.vals[a.n] = value
	a.h[key] = a.vals[a.n : a.n+1 : a.n+1]
	a.n++
}

// release clears a and gives it back to the pool: nothing may hold its
// map (the message published with it) any more. A nil a is nothing to
// release.
func (a *ackedHeader) release() {
	if a == nil {
		return
	}
	clear(a.h)
	a.vals, a.n = [6]string{}, 0
	ackedHeaders.Put(a)
}

// kvSubject is the subject of key in the KV bucket bucket of a layout
// of its own (neither a mirror nor in another JetStream domain), on
// which jetstream.KeyValue writes it.
func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

// casPublish is the write jetstream.KeyValue's Update makes (and Create's
// first, with rev 0): data published on subject, a key's subject
// (kvSubject), expecting rev as the subject's last sequence, made with
// publishAckedOn (on replies, when it is nc's reply mux), whose
// acknowledgement is read without encoding/json. A
// refusal for the sequence wraps jetstream.ErrKeyRevisionMismatch, as
// Update's does (and matches jetstream.ErrKeyExists, as Update's does).
// The caller checks the key (kvKeyValid).
func casPublish(ctx context.Context, nc *nats.Conn, replies *replyMux, subject string, data []byte, rev uint64) (uint64, error) {
	hdr := newAckedHeader()
	hdr.set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	ack, err := publishAckedOn(ctx, nc, replies, &nats.Msg{Subject: subject, Data: data, Header: hdr.h})
	hdr.release()
	if isWrongLastSeq(err) {
		return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// kvKeyValid reports whether key is a key jetstream.KeyValue writes: not
// empty, of the characters - / _ = . and ASCII letters and digits, with
// no leading, trailing or repeated dot (its check, without a regular
// expression).
func kvKeyValid(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '.':
			if key[i-1] == '.' {
				return false
			}
		case c == '-' || c == '/' || c == '_' || c == '=',
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// publishWait bounds a publish whose context has no deadline: the wait
// jetstream.New gives its calls by default.
const publishWait = 5 * time.Second

// publishAck reads a stream's answer to a publish. The answers to a stored
// or duplicate message, objects of "stream", "seq", "domain" and
// "duplicate" alone, are read here (scanPublishAck); any other (a refusal,
// an answer with fields this does not know, escaped strings) is read by
// encoding/json as nats.go reads it.
func publishAck(data []byte) (jetstream.PubAck, error) {
	if ack, ok := scanPublishAck(data); ok {
		return ack, nil
	}
	var resp struct {
		Error *jetstream.APIError `json:"error,omitempty"`
		*jetstream.PubAck
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return jetstream.PubAck{}, jetstream.ErrInvalidJSAck
	}
	if resp.Error != nil {
		return jetstream.PubAck{}, fmt.Errorf("nats: %w", resp.Error)
	}
	if resp.PubAck == nil || resp.Stream == "" {
		return jetstream.PubAck{}, jetstream.ErrInvalidJSAck
	}
	return *resp.PubAck, nil
}

// scanPublishAck reads data when it is a JSON object of the keys "stream"
// (a string, not empty), "seq" (an unsigned integer), "domain" (a string),
// "duplicate" (a boolean), and "batch" (a string) and "count" (an unsigned
// integer), which an atomic batch's commit is answered with and which are
// not read, each at most once, with strings of ASCII that need no
// unescaping; ok is false for anything else.
func scanPublishAck(data []byte) (ack jetstream.PubAck, ok bool) {
	var a jetstream.PubAck
	var seen [6]bool // stream, seq, domain, duplicate, batch, count
	s := jsonScan{data: data}
	field := func(key []byte) bool {
		switch string(key) {
		case "stream", "domain":
			f := 0
			if string(key) == "domain" {
				f = 2
			}
			// a stream's name is copied (ackStream)
			v, ok := s.str()
			if !ok || seen[f] {
				return false
			}
			seen[f] = true
			if f == 0 {
				a.Stream = ackStream(v)
			} else {
				a.Domain = string(v)
			}
		case "seq":
			n, ok := s.uint()
			if !ok || seen[1] {
				return false
			}
			seen[1], a.Sequence = true, n
		case "duplicate":
			s.ws()
			switch {
			case seen[3]:
				return false
			case bytes.HasPrefix(data[s.i:], []byte("true")):
				a.Duplicate, s.i = true, s.i+len("true")
			case bytes.HasPrefix(data[s.i:], []byte("false")):
				s.i += len("false")
			default:
				return false
			}
			seen[3] = true
		case "batch":
			// the id of the atomic batch a commit's answer is for, which
			// nats.go does not read either
			if _, ok := s.str(); !ok || seen[4] {
				return false
			}
			seen[4] = true
		case "count":
			// how many messages that batch stored, not read either
			if _, ok := s.digits(); !ok || seen[5] {
				return false
			}
			seen[5] = true
		default:
			return false
		}
		return true
	}
	if !s.object(field) || !s.end() || a.Stream == "" || !seen[1] {
		return jetstream.PubAck{}, false
	}
	return a, true
}

// ackStream returns the stream name b as a string: the name of a stream
// the fleet publishes to with publishAcked (a status, a result, a
// submission) without allocating, any other copied.
func ackStream(b []byte) string {
	switch string(b) {
	case statusStream:
		return statusStream
	case messages.StreamResults:
		return messages.StreamResults
	case messages.StreamMissions:
		return messages.StreamMissions
	}
	return string(b)
}
