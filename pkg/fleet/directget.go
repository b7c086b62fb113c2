package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// directBatchWait bounds a batch direct get that has no deadline of its
// own.
const directBatchWait = 5 * time.Second

// lastPerSubject returns the last message of every subject of stream that
// matches filter (a wildcard subject), oldest first, with one batch
// direct get (multi_last): one request whatever the number of subjects,
// and no stream info; its answers come on the subscription of replies.
// Each message's Nats-Subject and Nats-Sequence headers name its subject and sequence (a KV entry's revision). The
// answer may come from any replica of the stream, like every direct get.
// It returns errBatchIncomplete when the server answered with fewer
// messages than matched, and errNoDirectAnswer when no replica answered
// (none subscribed, or none within patience).
func lastPerSubject(ctx context.Context, replies *replyMux, stream, filter string) ([]*nats.Msg, error) {
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{[]string{filter}})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, directBatchWait)
		defer cancel()
	}
	type answer struct {
		msgs []*nats.Msg
		err  error
	}
	done := make(chan answer, 1)
	var msgs []*nats.Msg
	finish := func(a answer) {
		select {
		case done <- a:
		default: // answered already
		}
	}
	if err := replies.open(); err != nil {
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, err)
	}
	reply, stop := replies.add(func(msg *nats.Msg) {
		status := msg.Header.Get("Status")
		switch {
		case status == "":
			msgs = append(msgs, msg)
		case status == "204": // the end of the batch
			if np, _ := strconv.ParseUint(msg.Header.Get(headerNumPending), 10, 64); np > 0 {
				finish(answer{err: errBatchIncomplete})
				return
			}
			finish(answer{msgs: msgs})
		case status == "404": // no subject matched
			finish(answer{msgs: msgs})
		case status == "413": // too many subjects matched
			finish(answer{err: errBatchIncomplete})
		case status == "503":
			finish(answer{err: fmt.Errorf("fleet: direct get on %s: %w: %w", stream, errNoDirectAnswer, nats.ErrNoResponders)})
		default:
			finish(answer{err: fmt.Errorf("fleet: direct get on %s: status %s %s", stream, status, msg.Header.Get("Description"))})
		}
	})
	defer stop()
	if err := replies.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, reply, req); err != nil {
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, err)
	}
	slow := time.NewTimer(patience(ctx))
	defer slow.Stop()
	select {
	case a := <-done:
		return a.msgs, a.err
	case <-slow.C:
		return nil, fmt.Errorf("fleet: direct get on %s: %w within %v", stream, errNoDirectAnswer, patience(ctx))
	case <-ctx.Done():
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, context.Cause(ctx))
	}
}

// directGetWait bounds a direct get whose context has no deadline: the
// wait jetstream.New gives its calls by default.
const directGetWait = 5 * time.Second

// directPatience bounds the wait for a direct get's answer before the
// read asks the stream's leader instead (leaderLast). Every replica of a
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

// directLast reads the last message stored on subject in stream with one
// direct get (the request jetstream's GetLastMsgForSubject makes on a
// stream that allows direct gets), without the stream handle's request
// encoding, subject formatting and message conversion. It returns the
// message's data and stream sequence and its headers (those stored with
// it and the server's Nats-* ones), or jetstream.ErrMsgNotFound when the
// subject holds no message. A direct get no replica answers (no
// responders, or no answer within patience) is read from the stream's
// leader (leaderLast) in the time left: an answered direct get costs
// nothing more.
func directLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, nats.Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, err
	}
	// the wait is on nats.go's pooled timer, not a context of its own: an
	// answered direct get allocates no more than one without the fallback
	// (a cancelled ctx is seen after at most patience)
	r, err := nc.Request("$JS.API.DIRECT.GET."+stream+"."+subject, nil, patience(ctx))
	if err == nil {
		data, seq, hdr, err := directAnswer(r, subject)
		if !errors.Is(err, nats.ErrNoResponders) {
			return data, seq, hdr, err
		}
	} else if !unanswered(err) {
		return nil, 0, nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, directGetWait-directPatience)
		defer cancel()
	}
	return leaderLast(ctx, nc, stream, subject)
}

// unanswered reports whether err is a request's lack of an answer: no
// responders, or none within its time.
func unanswered(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// errCodeNoMessage is the JetStream API's error code for a message not
// found (JSNoMessageFoundErr).
const errCodeNoMessage = 10037

// leaderLast reads the last message stored on subject in stream from the
// stream's leader ($JS.API.STREAM.MSG.GET): the read directLast falls back
// to when no replica answers its direct get. It returns what directLast
// returns, the headers being those stored with the message and the
// Nats-Stream, Nats-Subject and Nats-Sequence a direct get's answer has.
func leaderLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, nats.Header, error) {
	req, err := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{subject})
	if err != nil {
		return nil, 0, nil, err
	}
	r, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %w", subject, stream, err)
	}
	var resp struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Header  []byte `json:"hdrs"`
			Data    []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(r.Data, &resp); err != nil {
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %w", subject, stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == errCodeNoMessage:
		return nil, 0, nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: %s (%d)", subject, stream, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: an answer without a message", subject, stream)
	case !subjectMatches(subject, resp.Message.Subject):
		return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: answered with subject %q", subject, stream, resp.Message.Subject)
	}
	hdr := nats.Header{}
	if len(resp.Message.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, 0, nil, fmt.Errorf("fleet: read %s from the leader of %s: headers: %w", subject, stream, err)
		}
	}
	hdr.Set(jetstream.StreamHeader, stream)
	hdr.Set(jetstream.SubjectHeader, resp.Message.Subject)
	hdr.Set(jetstream.SequenceHeader, strconv.FormatUint(resp.Message.Seq, 10))
	return resp.Message.Data, resp.Message.Seq, hdr, nil
}

// directAnswer reads r, the answer to a direct get of the last message on
// subject, as directLast returns it.
func directAnswer(r *nats.Msg, subject string) ([]byte, uint64, nats.Header, error) {
	if len(r.Data) == 0 {
		switch status := r.Header.Get("Status"); status {
		case "":
		case "404":
			return nil, 0, nil, jetstream.ErrMsgNotFound
		case "503":
			return nil, 0, nil, nats.ErrNoResponders
		default:
			desc := r.Header.Get("Description")
			if desc == "" {
				desc = "unable to get message"
			}
			return nil, 0, nil, fmt.Errorf("nats: %s", desc)
		}
	}
	seqStr := r.Header.Get(jetstream.SequenceHeader)
	if seqStr == "" {
		return nil, 0, nil, errors.New("nats: missing sequence header")
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("nats: invalid sequence header '%s': %w", seqStr, err)
	}
	if got := r.Header.Get(jetstream.SubjectHeader); !subjectMatches(subject, got) {
		return nil, 0, nil, fmt.Errorf("nats: direct get of %s answered with subject %q", subject, got)
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
