package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// journalMsg reads the first message on subject (a mission's journal) at
// or after stream sequence seq from JOURNAL's leader: the message get the
// stream handle's GetMsg with WithGetMsgSubject makes, with its request
// written (msgQuery.request) and its usual answer read (scanMsgGet)
// without encoding/json; an answer of another form (an error, escapes,
// keys it does not know) is read with encoding/json. It returns the
// message's headers, data and sequence, or jetstream.ErrMsgNotFound when
// there is none. The request goes on replies when it is nc's reply mux
// (apiRequest).
func journalMsg(ctx context.Context, nc *nats.Conn, replies *replyMux, subject string, seq uint64) (nats.Header, []byte, uint64, error) {
	q := atSeq(seq, subject)
	req, err := q.request()
	if err != nil {
		return nil, nil, 0, err
	}
	r, err := apiRequest(ctx, nc, replies, "$JS.API.STREAM.MSG.GET."+messages.StreamJournal, req, 0)
	if err != nil {
		return nil, nil, 0, err
	}
	return msgGetAnswer(r.Data, q)
}

// msgGetAnswer reads data, the JetStream API's answer to the message get
// q names, as journalMsg returns it.
func msgGetAnswer(data []byte, q msgQuery) (nats.Header, []byte, uint64, error) {
	m, ok := scanMsgGet(data)
	if !ok {
		var resp msgGetResponse
		if err := json.Unmarshal(data, &resp); err != nil {
			return nil, nil, 0, err
		}
		switch {
		case resp.Error != nil && resp.Error.ErrorCode == errCodeNoMessage:
			return nil, nil, 0, jetstream.ErrMsgNotFound
		case resp.Error != nil:
			return nil, nil, 0, resp.Error
		case resp.Message == nil:
			return nil, nil, 0, fmt.Errorf("read %s: an answer without a message", q)
		}
		m = msgGot{subject: resp.Message.Subject, seq: resp.Message.Seq, hdrs: resp.Message.Header, data: resp.Message.Data}
	}
	if !q.answers(m.subject, m.seq) {
		return nil, nil, 0, fmt.Errorf("read %s: answered with %s at %d", q, m.subject, m.seq)
	}
	hdr := nats.Header{}
	if len(m.hdrs) > 0 {
		var err error
		if hdr, err = nats.DecodeHeadersMsg(m.hdrs); err != nil {
			return nil, nil, 0, fmt.Errorf("read %s: headers: %w", q, err)
		}
	}
	return hdr, m.data, m.seq, nil
}

// msgGetResponse is the JetStream API's answer to a message get, as
// encoding/json reads it (scanMsgGet reads its usual form).
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error"`
	Message *struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Header  []byte `json:"hdrs"`
		Data    []byte `json:"data"`
	} `json:"message"`
}

// msgGot is the message of a message get's answer: its subject and
// sequence, its headers and data decoded.
type msgGot struct {
	subject    string
	seq        uint64
	hdrs, data []byte
}

// scanMsgGet reads data when it is the JetStream API's answer with a
// message: an object of "type" (a string) and "message", an object of
// "subject" (a string, not empty), "seq" (an unsigned integer), "hdrs"
// and "data" (base64) and "time" (a string), each at most once, with
// strings of ASCII that need no unescaping; ok is false for anything else
// (an error's answer among them).
func scanMsgGet(data []byte) (m msgGot, ok bool) {
	s := jsonScan{data: data}
	b64 := func() ([]byte, bool) {
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		out := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
		n, err := base64.StdEncoding.Decode(out, v)
		if err != nil {
			return nil, false
		}
		return out[:n], true
	}
	var seen [7]bool // type, message, subject, seq, hdrs, data, time
	once := func(f int) bool {
		if seen[f] {
			return false
		}
		seen[f] = true
		return true
	}
	message := func(key []byte) bool {
		switch {
		case bytes.Equal(key, []byte("subject")) && once(2):
			v, ok := s.str()
			m.subject = string(v)
			return ok && len(v) > 0
		case bytes.Equal(key, []byte("seq")) && once(3):
			m.seq, ok = s.uint()
			return ok
		case bytes.Equal(key, []byte("hdrs")) && once(4):
			m.hdrs, ok = b64()
			return ok
		case bytes.Equal(key, []byte("data")) && once(5):
			m.data, ok = b64()
			return ok
		case bytes.Equal(key, []byte("time")) && once(6):
			_, ok := s.str()
			return ok
		}
		return false
	}
	top := func(key []byte) bool {
		switch {
		case bytes.Equal(key, []byte("type")) && once(0):
			_, ok := s.str()
			return ok
		case bytes.Equal(key, []byte("message")) && once(1):
			return s.object(message)
		}
		return false
	}
	if !s.object(top) || !s.end() || !seen[1] || !seen[2] || !seen[3] {
		return msgGot{}, false
	}
	return m, true
}
