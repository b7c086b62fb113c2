package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// replyWaiter is the replyHandler of one request sent on a replyMux
// (await): its first answer, later copies dropped. The mux hands an
// answer to a replyWaiter while it holds its lock (deliver), so once
// remove returned no answer to the request reaches it any more, and the
// waiter, its channel emptied, serves a later request (replyWaiters)
// without an answer to the earlier one reaching that request.
type replyWaiter struct {
	answer chan *nats.Msg
}

func (w *replyWaiter) handle(msg *nats.Msg) {
	select {
	case w.answer <- msg:
	default:
	}
}

// replyWaiters holds the replyWaiters of requests that returned.
var replyWaiters = sync.Pool{New: func() any { return &replyWaiter{answer: make(chan *nats.Msg, 1)} }}

// done unregisters the waiter of the request token names from m, empties
// its channel and gives it back to replyWaiters.
func (w *replyWaiter) done(m *replyMux, token uint64) {
	m.remove(token)
	select {
	case <-w.answer:
	default:
	}
	replyWaiters.Put(w)
}

// request publishes data to subject with a reply subject of m's (m must
// be open) and waits for its first answer: what nc.Request does, without
// the lock of the connection its request path takes for its response
// map. It waits at most timeout, on a pooled timer, and while ctx is not
// done (a ctx with no Done channel costs nothing). Its errors are
// nats.go's: nats.ErrNoResponders for the server's no-responders answer,
// nats.ErrTimeout when timeout passed, nats.ErrConnectionClosed when
// m's connection closed first, and ctx's error when ctx ended first.
func (m *replyMux) request(ctx context.Context, subject string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	return m.await(ctx, timeout, func(reply string) error { return m.nc.PublishRequest(subject, reply, data) })
}

// requestMsg is request for a message with headers: msg is published
// with the request's reply subject, its own Reply given back once nats.go
// copied it into the connection's buffer.
func (m *replyMux) requestMsg(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
	return m.await(ctx, timeout, func(reply string) error {
		own := msg.Reply
		msg.Reply = reply
		err := m.nc.PublishMsg(msg)
		msg.Reply = own
		return err
	})
}

// await sends a request with send on a new reply subject of m's and
// waits for its answer as request does. The reply subject's token is
// the request's own, and its waiter is its own until it returns: an
// answer that comes after the request gave up reaches no other request.
func (m *replyMux) await(ctx context.Context, timeout time.Duration, send func(reply string) error) (*nats.Msg, error) {
	if timeout <= 0 {
		return nil, nats.ErrTimeout
	}
	w := replyWaiters.Get().(*replyWaiter)
	reply, token := m.add(w)
	defer w.done(m, token)
	if err := send(reply); err != nil {
		return nil, err
	}
	t := getTimer()
	t.Reset(timeout)
	defer putTimer(t)
	select {
	case r := <-w.answer:
		if len(r.Data) == 0 && r.Header.Get("Status") == "503" {
			return nil, nats.ErrNoResponders
		}
		return r, nil
	case <-t.C:
		return nil, nats.ErrTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.closed:
		return nil, nats.ErrConnectionClosed
	}
}

// requestOn is replies.request when replies is nc's reply mux and can
// subscribe, else nc.Request (which does not watch ctx).
func requestOn(ctx context.Context, nc *nats.Conn, replies *replyMux, subject string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	if replies.on(nc) {
		return replies.request(ctx, subject, data, timeout)
	}
	return nc.Request(subject, data, timeout)
}

// on reports whether m is nc's reply mux and is open (it opens it): a
// nil m is no connection's.
func (m *replyMux) on(nc *nats.Conn) bool {
	return m != nil && m.nc == nc && m.open() == nil
}

// apiRequest sends req to the JetStream API's subject and returns its
// answer, waiting until ctx's deadline, or for directGetWait when ctx has
// none, and at most limit when limit is not 0. On replies, when it is
// nc's reply mux, the wait is on a pooled timer with no context made for
// it, and one that runs out is context.DeadlineExceeded; otherwise the
// request is nc's.
func apiRequest(ctx context.Context, nc *nats.Conn, replies *replyMux, subject string, req []byte, limit time.Duration) (*nats.Msg, error) {
	wait, ctxBounds := directGetWait, false
	if dl, ok := ctx.Deadline(); ok {
		wait, ctxBounds = time.Until(dl), true
	}
	if limit > 0 && limit < wait {
		wait, ctxBounds = limit, false
	}
	if replies.on(nc) {
		r, err := replies.request(ctx, subject, req, wait)
		if errors.Is(err, nats.ErrTimeout) {
			err = context.DeadlineExceeded
		}
		return r, err
	}
	if !ctxBounds {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return nc.RequestWithContext(ctx, subject, req)
}
