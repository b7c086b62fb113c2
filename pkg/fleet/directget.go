package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errBatchIncomplete is the error of a batch direct get whose answer
// does not hold every message asked for: more subjects matched than the
// server answers at once, or the answer was cut at its byte limit. The
// caller reads another way.
var errBatchIncomplete = errors.New("fleet: the batch direct get did not answer every message")

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
// messages than matched.
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
			finish(answer{err: fmt.Errorf("fleet: direct get on %s: %w", stream, nats.ErrNoResponders)})
		default:
			finish(answer{err: fmt.Errorf("fleet: direct get on %s: status %s %s", stream, status, msg.Header.Get("Description"))})
		}
	})
	defer stop()
	if err := replies.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, reply, req); err != nil {
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, err)
	}
	select {
	case a := <-done:
		return a.msgs, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("fleet: direct get on %s: %w", stream, context.Cause(ctx))
	}
}

// directGetWait bounds a direct get whose context has no deadline: the
// wait jetstream.New gives its calls by default.
const directGetWait = 5 * time.Second

// directLast reads the last message stored on subject in stream with one
// direct get (the request jetstream's GetLastMsgForSubject makes on a
// stream that allows direct gets), without the stream handle's request
// encoding, subject formatting and message conversion. It returns the
// message's data and stream sequence and its headers (those stored with
// it and the server's Nats-* ones), or jetstream.ErrMsgNotFound when the
// subject holds no message.
func directLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, nats.Header, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, directGetWait)
		defer cancel()
	}
	r, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream+"."+subject, nil)
	if err != nil {
		return nil, 0, nil, err
	}
	return directAnswer(r, subject)
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
	if got := r.Header.Get(jetstream.SubjectHeader); got != subject {
		return nil, 0, nil, fmt.Errorf("nats: direct get of %s answered with subject %q", subject, got)
	}
	return r.Data, seq, r.Header, nil
}
