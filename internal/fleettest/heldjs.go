package fleettest

import (
	"context"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HeldJS is a JetStream whose publishes are acknowledged only once the test
// releases them: synchronous publishes block until then (or until their
// context ends), asynchronous ones return futures that resolve then. Only
// PublishMsg and PublishMsgAsync are served; the embedded JetStream is nil.
type HeldJS struct {
	jetstream.JetStream
	stream   string
	release  chan struct{}
	released atomic.Bool
	writes   atomic.Int64
}

// NewHeldJS returns a HeldJS whose acknowledgements name stream.
func NewHeldJS(stream string) *HeldJS {
	return &HeldJS{stream: stream, release: make(chan struct{})}
}

// Release acknowledges every publish, held and future. Call it once.
func (h *HeldJS) Release() {
	h.released.Store(true)
	close(h.release)
}

// Released reports whether Release was called.
func (h *HeldJS) Released() bool { return h.released.Load() }

// Writes is the number of publishes so far.
func (h *HeldJS) Writes() int64 { return h.writes.Load() }

// PublishMsg counts the publish and acknowledges it once released.
func (h *HeldJS) PublishMsg(ctx context.Context, msg *nats.Msg, _ ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	h.writes.Add(1)
	select {
	case <-h.release:
		return &jetstream.PubAck{Stream: h.stream}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PublishMsgAsync counts the publish and returns a future that resolves
// once released.
func (h *HeldJS) PublishMsgAsync(msg *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	h.writes.Add(1)
	f := &heldFuture{msg: msg, ok: make(chan *jetstream.PubAck, 1)}
	go func() {
		<-h.release
		f.ok <- &jetstream.PubAck{Stream: h.stream}
	}()
	return f, nil
}

type heldFuture struct {
	msg *nats.Msg
	ok  chan *jetstream.PubAck
}

func (f *heldFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *heldFuture) Err() <-chan error            { return make(chan error) }
func (f *heldFuture) Msg() *nats.Msg               { return f.msg }
