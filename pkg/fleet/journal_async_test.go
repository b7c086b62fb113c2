package fleet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// heldJS is a JetStream whose journal writes are acknowledged only once
// the test releases them: synchronous publishes block until then, and
// asynchronous ones return futures that resolve then.
type heldJS struct {
	jetstream.JetStream
	release  chan struct{}
	released atomic.Bool
	writes   atomic.Int64
}

func (h *heldJS) open() {
	h.released.Store(true)
	close(h.release)
}

func (h *heldJS) PublishMsg(ctx context.Context, msg *nats.Msg, _ ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	h.writes.Add(1)
	select {
	case <-h.release:
		return &jetstream.PubAck{Stream: messages.StreamJournal}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *heldJS) PublishMsgAsync(msg *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	h.writes.Add(1)
	f := &heldFuture{msg: msg, ok: make(chan *jetstream.PubAck, 1)}
	go func() {
		<-h.release
		f.ok <- &jetstream.PubAck{Stream: messages.StreamJournal}
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

// No tool request leaves while a journal write recorded before it is
// unacknowledged: the second call of a mission (which may depend on the
// first call's answer) reaches the tool service only once the first
// answer's journal write is acknowledged, however long that takes; and
// Flush does not return before.
func TestJournalWriteAcknowledgedBeforeNextToolCall(t *testing.T) {
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir(), NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nc, err := s.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js := &heldJS{release: make(chan struct{})}
	var calls atomic.Int64
	var heldAtCall []bool
	var mu sync.Mutex
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "held"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	if err := svc.Register("echo", ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		mu.Lock()
		heldAtCall = append(heldAtCall, !js.released.Load())
		mu.Unlock()
		return args["n"], nil
	}); err != nil {
		t.Fatal(err)
	}
	box, err := NewToolbox(nc, ToolboxConfig{Tools: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	j := &Journal{js: js, missionID: id, subject: messages.JournalSubject(id), recorded: map[string][]byte{}, next: map[string]int{}}
	box.journal, box.missionID = j, id
	ctx := WithTurn(context.Background(), 1)

	if r, err := box.Call(ctx, "echo", map[string]any{"n": int64(1)}); err != nil || r != int64(1) {
		t.Fatalf("first call = %v, %v", r, err)
	}
	if j.Pending() != 1 || js.writes.Load() != 1 {
		t.Fatalf("after the first call: %d pending, %d writes; want its result written and unacknowledged", j.Pending(), js.writes.Load())
	}
	second := make(chan error, 1)
	go func() {
		_, err := box.Call(ctx, "echo", map[string]any{"n": int64(2)})
		second <- err
	}()
	flushed := make(chan error, 1)
	go func() { flushed <- j.Flush(context.Background()) }()
	// Longer than journalAckWait, so the republish path is held too.
	time.Sleep(journalAckWait + 300*time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d tool calls reached the service while a journal write was unacknowledged", n)
	}
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned %v while a write was unacknowledged", err)
	case err := <-second:
		t.Fatalf("the second call returned %v while a write was unacknowledged", err)
	default:
	}
	js.open()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(context.Background()); err != nil || j.Pending() != 0 {
		t.Fatalf("final flush: %v, %d pending", err, j.Pending())
	}
	mu.Lock()
	defer mu.Unlock()
	// The first call runs with nothing journaled yet; the second only
	// once the first one's write is acknowledged.
	if len(heldAtCall) != 2 || heldAtCall[1] {
		t.Fatalf("held back at each call: %v; want the second call after the release", heldAtCall)
	}
}
