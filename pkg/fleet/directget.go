package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errBatchIncomplete is the error of a batch direct get whose answer
// does not hold every message asked for: more subjects matched than the
// server answers at once, or the answer was cut at its byte limit. The
// caller reads another way.
var errBatchIncomplete = errors.New("fleet: the batch direct get did not answer every message")

// errNoDirectAnswer is the error of a direct get no replica answered: none
// subscribed (no responders), or none within patience. The caller reads
// from the stream's leader.
var errNoDirectAnswer = errors.New("fleet: no replica answered the direct get")

// headerNumPending, on the end of a batch direct get, counts the
// messages matched and not sent.
const headerNumPending = "Nats-Num-Pending"

// lastPerSubject returns the last message of every subject of stream that
// any of filters matches (literal subjects or wildcards), oldest first,
// with one batch direct get (multi_last): one request whatever the number
// of subjects, and no stream info; its answers come on the subscription
// of replies.
// Each message's Nats-Subject and Nats-Sequence headers name its subject and sequence (a KV entry's revision). The
// answer may come from any replica of the stream, like every direct get.
// It returns errBatchIncomplete when the server answered with fewer
// messages than matched, and errNoDirectAnswer when no replica answered
// (none subscribed, or none within patience: at most directPatience,
// which also bounds a read whose ctx has no deadline). The wait is on a
// pooled timer, and the answers are gathered by one batchGet.
func lastPerSubject(ctx context.Context, replies *replyMux, stream string, filters ...string) ([]*nats.Msg, error) {
	req, err := multiLastRequest(filters...)
	if err != nil {
		return nil, err
	}
	if err := replies.open(); err != nil {
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, err)
	}
	b := &batchGet{stream: stream, done: make(chan batchAnswer, 1)}
	reply, token := replies.add(b)
	defer replies.remove(token)
	if err := replies.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, reply, req); err != nil {
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, err)
	}
	wait := patience(ctx)
	slow := getTimer()
	slow.Reset(wait)
	defer putTimer(slow)
	select {
	case a := <-b.done:
		return a.msgs, a.err
	case <-slow.C:
		return nil, fmt.Errorf("fleet: direct get on %s: %w within %v", stream, errNoDirectAnswer, wait)
	case <-ctx.Done():
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, context.Cause(ctx))
	}
}

// batchGet gathers the answers to one batch direct get (lastPerSubject)
// as the replyHandler of its reply subject: the messages up to the end of
// the batch, then one batchAnswer on done.
type batchGet struct {
	stream string
	msgs   []*nats.Msg
	done   chan batchAnswer // one answer; a later one is dropped
}

// batchAnswer is what a batch direct get answered: its messages, or why
// they are not all there.
type batchAnswer struct {
	msgs []*nats.Msg
	err  error
}

// handle takes one answer to the batch direct get; the replyMux hands
// them over one at a time.
func (b *batchGet) handle(msg *nats.Msg) {
	status := msg.Header.Get("Status")
	switch {
	case status == "":
		b.msgs = append(b.msgs, msg)
	case status == "204": // the end of the batch
		if np, _ := strconv.ParseUint(msg.Header.Get(headerNumPending), 10, 64); np > 0 {
			b.finish(batchAnswer{err: errBatchIncomplete})
			return
		}
		b.finish(batchAnswer{msgs: b.msgs})
	case status == "404": // no subject matched
		b.finish(batchAnswer{msgs: b.msgs})
	case status == "413": // too many subjects matched
		b.finish(batchAnswer{err: errBatchIncomplete})
	case status == "503":
		b.finish(batchAnswer{err: fmt.Errorf("fleet: direct get on %s: %w: %w", b.stream, errNoDirectAnswer, nats.ErrNoResponders)})
	default:
		b.finish(batchAnswer{err: fmt.Errorf("fleet: direct get on %s: status %s %s", b.stream, status, msg.Header.Get("Description"))})
	}
}

func (b *batchGet) finish(a batchAnswer) {
	select {
	case b.done <- a:
	default: // answered already
	}
}

// directGetWait bounds a direct get whose context has no deadline: the
// wait jetstream.New gives its calls by default.
const directGetWait = 5 * time.Second

// directPatience bounds the wait for a direct get's answer before the
// read asks the stream's leader instead (leaderMsg). Every replica of a
// stream that allows direct gets answers them (one at random); a replica
// that answers nothing (a node restarting, or one whose stream stalled
// while it caught up) would otherwise take the whole read's time.
const directPatience = time.Second

// patience is how long a direct get on ctx waits for its answer before the
// read falls back to the stream's leader: half the time ctx has left, at
// most directPatience.
func patience(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return directPatience
	}
	return min(time.Until(dl)/2, directPatience)
}

// msgQuery names the one message a single-message read asks for: the
// last message on subject when seq is 0, else the first message at or
// after seq on subject, or, with no subject, the message at seq (what
// jetstream's GetLastMsgForSubject, and GetMsg with and without
// WithGetMsgSubject, ask for).
type msgQuery struct {
	seq     uint64
	subject string
	// leader asks the stream's leader at once, without a direct get: a
	// read of several messages whose earlier direct get no replica
	// answered (a silent replica would make each wait its patience)
	leader bool
}

// errEmptyQuery is the error of a message read that names neither a
// subject nor a sequence.
var errEmptyQuery = errors.New("fleet: a message read names neither a subject nor a sequence")

// lastOn asks for the last message on subject (a subject filter's
// wildcards match any of its subjects).
func lastOn(subject string) msgQuery { return msgQuery{subject: subject} }

// atSeq asks for the message at seq, or, with a subject, the first on
// subject at or after seq.
func atSeq(seq uint64, subject string) msgQuery { return msgQuery{seq: seq, subject: subject} }

func (q msgQuery) String() string {
	switch {
	case q.seq == 0:
		return q.subject
	case q.subject == "":
		return "message " + strconv.FormatUint(q.seq, 10)
	default:
		return q.subject + " from " + strconv.FormatUint(q.seq, 10)
	}
}

// request is the body of the message get that asks for q: by sequence
// for a direct get (one by subject names it in its API subject and has
// no body) and for the leader, or by subject for the leader.
func (q msgQuery) request() ([]byte, error) {
	if q.seq == 0 && q.subject == "" {
		return nil, errEmptyQuery
	}
	if !utf8.ValidString(q.subject) {
		// encoding/json writes what it replaces invalid UTF-8 with
		return json.Marshal(struct {
			Seq        uint64 `json:"seq,omitempty"`
			LastBySubj string `json:"last_by_subj,omitempty"`
			NextBySubj string `json:"next_by_subj,omitempty"`
		}{Seq: q.seq, LastBySubj: q.lastSubject(), NextBySubj: q.nextSubject()})
	}
	// the bytes encoding/json writes for the struct above, written here
	b := make([]byte, 0, len(`{"seq":,"next_by_subj":""}`)+20+len(q.subject)+16)
	b = append(b, '{')
	if q.seq != 0 {
		b = strconv.AppendUint(append(b, `"seq":`...), q.seq, 10)
	}
	for _, f := range [...]struct{ key, subject string }{{`"last_by_subj":`, q.lastSubject()}, {`"next_by_subj":`, q.nextSubject()}} {
		if f.subject == "" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, f.key...), f.subject)
	}
	return append(b, '}'), nil
}

// multiLastRequest is the body of a batch direct get of the last message
// of each subject any of filters matches: the bytes encoding/json writes
// for {"multi_last": filters}, written without it.
func multiLastRequest(filters ...string) ([]byte, error) {
	n := len(`{"multi_last":[]}`)
	for _, f := range filters {
		if !utf8.ValidString(f) {
			// a copy, so that filters does not escape: a caller's
			// variadic slice stays on its stack
			return json.Marshal(struct {
				MultiLast []string `json:"multi_last"`
			}{slices.Clone(filters)})
		}
		// room for its quotes, comma and a wildcard's escape (> is
		// written \u003e)
		n += len(f) + 9
	}
	b := append(make([]byte, 0, n), `{"multi_last":[`...)
	for i, f := range filters {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f)
	}
	return append(b, ']', '}'), nil
}

func (q msgQuery) lastSubject() string {
	if q.seq == 0 {
		return q.subject
	}
	return ""
}

func (q msgQuery) nextSubject() string {
	if q.seq != 0 {
		return q.subject
	}
	return ""
}

// answers reports whether the message on subject at seq is one q may be
// answered with.
func (q msgQuery) answers(subject string, seq uint64) bool {
	switch {
	case q.seq == 0:
		return subjectMatches(q.subject, subject)
	case q.subject == "":
		return seq == q.seq
	default:
		return seq >= q.seq && subjectMatches(q.subject, subject)
	}
}

// directLast reads the last message stored on subject in stream:
// directMsg's lastOn(subject).
func directLast(ctx context.Context, nc *nats.Conn, replies *replyMux, stream, subject string) ([]byte, uint64, nats.Header, error) {
	return directMsg(ctx, nc, replies, stream, lastOn(subject))
}

// directLastData is directLast for a reader that wants only the
// message's data: its direct get asks for no headers (bareDirectGet), so
// the server writes none and nats.go parses none. Such an answer names
// no subject to check as directAnswer checks it: it is the answer to the
// request on its own reply subject. The request goes on replies when it
// is nc's reply mux (requestOn). A direct get no replica answers is read
// from the stream's leader, as directLast reads it.
func directLastData(ctx context.Context, nc *nats.Conn, replies *replyMux, stream, subject string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := requestOn(ctx, nc, replies, "$JS.API.DIRECT.GET."+stream+"."+subject, bareDirectGet, patience(ctx))
	if err == nil {
		// no replica answers (ErrNoResponders): the leader is asked, below
		if err := answerErr(r); !errors.Is(err, nats.ErrNoResponders) {
			if err != nil {
				return nil, err
			}
			return r.Data, nil
		}
	} else if !unanswered(err) {
		return nil, err
	}
	data, _, _, _, err := leaderMsgWithin(ctx, nc, stream, lastOn(subject))
	return data, err
}

// directMsg reads the message of stream q names with one direct get (the
// request jetstream's GetLastMsgForSubject or GetMsg makes on a stream
// that allows direct gets), without the stream handle's request
// encoding, subject formatting and message conversion. It returns the
// message's data and stream sequence and its headers (those stored with
// it and the server's Nats-* ones), or jetstream.ErrMsgNotFound when the
// stream holds no such message. A direct get no replica answers (no
// responders, or no answer within patience) is read from the stream's
// leader (leaderMsg) in the time left: an answered direct get costs
// nothing more. A "not found" answer is taken as it is. The direct get
// goes on replies when it is nc's reply mux (requestOn), else through
// nats.go's request path.
func directMsg(ctx context.Context, nc *nats.Conn, replies *replyMux, stream string, q msgQuery) ([]byte, uint64, nats.Header, error) {
	data, seq, hdr, _, err := directMsgVia(ctx, nc, replies, stream, q)
	return data, seq, hdr, err
}

// directMsgVia is directMsg that also reports (its fourth result) whether
// the message was read from the stream's leader: no replica answered, or
// q asked the leader at once.
func directMsgVia(ctx context.Context, nc *nats.Conn, replies *replyMux, stream string, q msgQuery) ([]byte, uint64, nats.Header, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, false, err
	}
	if q.leader {
		return leaderMsgWithin(ctx, nc, stream, q)
	}
	// the wait is on a pooled timer, not a context of its own: an answered
	// direct get allocates no more than one without the fallback (through
	// nats.go's request path a cancelled ctx is seen after at most
	// patience)
	var r *nats.Msg
	var err error
	if q.seq == 0 {
		if q.subject == "" {
			return nil, 0, nil, false, errEmptyQuery
		}
		r, err = requestOn(ctx, nc, replies, "$JS.API.DIRECT.GET."+stream+"."+q.subject, nil, patience(ctx))
	} else {
		req, rerr := q.request()
		if rerr != nil {
			return nil, 0, nil, false, rerr
		}
		r, err = requestOn(ctx, nc, replies, "$JS.API.DIRECT.GET."+stream, req, patience(ctx))
	}
	if err == nil {
		data, seq, hdr, err := directAnswer(r, q)
		if !errors.Is(err, nats.ErrNoResponders) {
			return data, seq, hdr, false, err
		}
	} else if !unanswered(err) {
		return nil, 0, nil, false, err
	}
	return leaderMsgWithin(ctx, nc, stream, q)
}

// leaderMsgWithin is leaderMsg within ctx, or within what is left of a
// direct get's wait when ctx has no deadline; it reports the read as the
// leader's.
func leaderMsgWithin(ctx context.Context, nc *nats.Conn, stream string, q msgQuery) ([]byte, uint64, nats.Header, bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, directGetWait-directPatience)
		defer cancel()
	}
	data, seq, hdr, err := leaderMsg(ctx, nc, stream, q)
	return data, seq, hdr, true, err
}

// timeStampHeader is the header of a direct get's answer that holds when
// the message was stored (RFC 3339, nanoseconds).
const timeStampHeader = "Nats-Time-Stamp"

// readMsg reads the message of stream q names with directMsgVia (from
// the leader when no replica answers), as the stream handle's
// GetLastMsgForSubject and GetMsg return it: its subject, sequence,
// headers, data and time; and whether the leader answered.
func readMsg(ctx context.Context, nc *nats.Conn, replies *replyMux, stream string, q msgQuery) (*jetstream.RawStreamMsg, bool, error) {
	data, seq, hdr, viaLeader, err := directMsgVia(ctx, nc, replies, stream, q)
	if err != nil {
		return nil, viaLeader, err
	}
	tm, err := time.Parse(time.RFC3339Nano, hdr.Get(timeStampHeader))
	if err != nil {
		return nil, viaLeader, fmt.Errorf("fleet: read %s of %s: its time: %w", q, stream, err)
	}
	return &jetstream.RawStreamMsg{Subject: hdr.Get(jetstream.SubjectHeader), Sequence: seq, Header: hdr, Data: data, Time: tm}, viaLeader, nil
}

// getMsg reads the message q names from stream: readMsg on nc, so a
// direct get no replica answers is read from the stream's leader; on
// Stores without their connection (nc nil), through the handle (one
// direct get).
func getMsg(ctx context.Context, nc *nats.Conn, stream jetstream.Stream, q msgQuery) (*jetstream.RawStreamMsg, error) {
	return getMsgOn(ctx, nc, nil, stream, q)
}

// getMsgOn is getMsg with its direct get's request on replies when it is
// nc's reply mux (directMsgVia).
func getMsgOn(ctx context.Context, nc *nats.Conn, replies *replyMux, stream jetstream.Stream, q msgQuery) (*jetstream.RawStreamMsg, error) {
	m, _, err := getMsgVia(ctx, nc, replies, stream, q)
	return m, err
}

// getMsgVia is getMsg that also reports whether the stream's leader
// answered (never through the handle), for a read of several messages
// that asks the leader at once after one no replica answered
// (msgQuery.leader).
func getMsgVia(ctx context.Context, nc *nats.Conn, replies *replyMux, stream jetstream.Stream, q msgQuery) (*jetstream.RawStreamMsg, bool, error) {
	var m *jetstream.RawStreamMsg
	var err error
	switch {
	case stream == nil:
		return nil, false, fmt.Errorf("fleet: read %s: the stream is not bound", q)
	case nc != nil && stream.CachedInfo() != nil:
		return readMsg(ctx, nc, replies, stream.CachedInfo().Config.Name, q)
	case q.seq == 0:
		m, err = stream.GetLastMsgForSubject(ctx, q.subject)
	case q.subject == "":
		m, err = stream.GetMsg(ctx, q.seq)
	default:
		m, err = stream.GetMsg(ctx, q.seq, jetstream.WithGetMsgSubject(q.subject))
	}
	return m, false, err
}

// unanswered reports whether err is a request's lack of an answer: no
// responders, or none within its time.
func unanswered(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// errCodeNoMessage is the JetStream API's error code for a message not
// found (JSNoMessageFoundErr).
const errCodeNoMessage = 10037

// leaderMsg reads the message of stream q names from the stream's leader
// ($JS.API.STREAM.MSG.GET): the read directMsg falls back to when no
// replica answers its direct get. It returns what directMsg returns, the
// headers being those stored with the message and the Nats-Stream,
// Nats-Subject, Nats-Sequence and Nats-Time-Stamp a direct get's answer
// has.
func leaderMsg(ctx context.Context, nc *nats.Conn, stream string, q msgQuery) ([]byte, uint64, nats.Header, error) {
	req, err := q.request()
	if err != nil {
		return nil, 0, nil, err
	}
	r, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %w", q, stream, err)
	}
	var resp struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(r.Data, &resp); err != nil {
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %w", q, stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == errCodeNoMessage:
		return nil, 0, nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %s (%d)", q, stream, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: an answer without a message", q, stream)
	case !q.answers(resp.Message.Subject, resp.Message.Seq):
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: answered with %s at %d", q, stream, resp.Message.Subject, resp.Message.Seq)
	}
	hdr := nats.Header{}
	if len(resp.Message.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: headers: %w", q, stream, err)
		}
	}
	hdr.Set(jetstream.StreamHeader, stream)
	hdr.Set(jetstream.SubjectHeader, resp.Message.Subject)
	hdr.Set(jetstream.SequenceHeader, strconv.FormatUint(resp.Message.Seq, 10))
	hdr.Set(timeStampHeader, resp.Message.Time.UTC().Format(time.RFC3339Nano))
	return resp.Message.Data, resp.Message.Seq, hdr, nil
}

// answerErr is the error a direct get's answer r carries as its
// status: nil for a message (one with data, or an empty one),
// jetstream.ErrMsgNotFound for "no message", nats.ErrNoResponders when no
// replica answers (503), else the answer's description.
func answerErr(r *nats.Msg) error {
	if len(r.Data) > 0 {
		return nil
	}
	switch status := r.Header.Get("Status"); status {
	case "":
		return nil
	case "404":
		return jetstream.ErrMsgNotFound
	case "503":
		return nats.ErrNoResponders
	default:
		desc := r.Header.Get("Description")
		if desc == "" {
			desc = "unable to get message"
		}
		return fmt.Errorf("nats: %s", desc)
	}
}

// directAnswer reads r, the answer to a direct get of the message q
// names, as directMsg returns it.
func directAnswer(r *nats.Msg, q msgQuery) ([]byte, uint64, nats.Header, error) {
	if err := answerErr(r); err != nil {
		return nil, 0, nil, err
	}
	seqStr := r.Header.Get(jetstream.SequenceHeader)
	if seqStr == "" {
		return nil, 0, nil, errors.New("nats: missing sequence header")
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("nats: invalid sequence header '%s': %w", seqStr, err)
	}
	if got := r.Header.Get(jetstream.SubjectHeader); !q.answers(got, seq) {
		return nil, 0, nil, fmt.Errorf("nats: direct get of %s answered with %q at %d", q, got, seq)
	}
	return r.Data, seq, r.Header, nil
}

// subjectMatches reports whether subject is filter or a subject filter's
// wildcards ("*" a token, ">" the rest) match: the subject a read of the
// last message on filter may be answered with.
func subjectMatches(filter, subject string) bool {
	for filter != "" {
		if filter == ">" {
			return subject != ""
		}
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		if (ft != "*" && ft != st) || st == "" || fmore != smore {
			return false
		}
		filter, subject = frest, srest
	}
	return subject == ""
}
