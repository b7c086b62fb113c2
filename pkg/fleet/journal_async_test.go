package fleet

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// No tool request leaves while a journal write recorded before it is
// unacknowledged: the second call of a mission (which may depend on the
// first call's answer) reaches the tool service only once the first
// answer's journal write is acknowledged, however long that takes; and
// Flush does not return before.
func TestJournalWriteAcknowledgedBeforeNextToolCall(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	js := fleettest.NewHeldJS(messages.StreamJournal)
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
		heldAtCall = append(heldAtCall, !js.Released())
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
	if j.Pending() != 1 || js.Writes() > 1 {
		t.Fatalf("after the first call: %d pending, %d writes; want its result recorded and unacknowledged", j.Pending(), js.Writes())
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
	js.Release()
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

// journalMessages returns how many JOURNAL messages mission id has.
func journalMessages(t *testing.T, js jetstream.JetStream, id string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), messages.StreamJournal)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.JournalSubject(id)))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[messages.JournalSubject(id)]
}

// What Flush finds unpublished goes out as one message, which a later
// attempt reads back entry by entry; Push publishes without waiting; an
// entry no Flush takes is published after the linger; and once the result
// is stored (settle) entries not yet published are never written.
func TestJournalBatchesLingersAndSettles(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	_, err := EnsureStores(ctx, js, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}

	id := messages.NewMissionID()
	j := NewJournal(js, id)
	j.linger = time.Hour
	for _, e := range []struct{ base, data string }{{"m/a", "reply"}, {"t/1/x", "one"}, {"t/1/x", "two"}} {
		if err := j.Record(ctx, e.base, []byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if n := journalMessages(t, js, id); n != 0 {
		t.Fatalf("%d messages before the flush, want 0", n)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := journalMessages(t, js, id); n != 1 {
		t.Fatalf("%d messages after flushing three entries, want 1", n)
	}
	if err := j.Record(ctx, "t/2/y", []byte("three")); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := openJournal(ctx, js, id, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.Entries() != 4 {
		t.Fatalf("read back %d entries, want 4", again.Entries())
	}
	for _, e := range []struct{ base, data string }{{"t/1/x", "one"}, {"t/1/x", "two"}, {"m/a", "reply"}, {"t/2/y", "three"}} {
		if d, ok := again.Replay(e.base); !ok || string(d) != e.data {
			t.Fatalf("replay %s = %q, %v; want %q", e.base, d, ok, e.data)
		}
	}

	pushed := NewJournal(js, messages.NewMissionID())
	pushed.linger = time.Hour
	if err := pushed.Record(ctx, "m/b", []byte("reply")); err != nil {
		t.Fatal(err)
	}
	pushed.Push()
	for deadline := time.Now().Add(10 * time.Second); journalMessages(t, js, pushed.missionID) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a pushed entry was not published without a flush")
		}
	}
	if err := pushed.Flush(ctx); err != nil || journalMessages(t, js, pushed.missionID) != 1 {
		t.Fatalf("a pushed entry: flush %v, %d messages; want 1", err, journalMessages(t, js, pushed.missionID))
	}

	lingering := NewJournal(js, messages.NewMissionID())
	lingering.linger = 20 * time.Millisecond
	if err := lingering.Record(ctx, "t/1/z", []byte("z")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for journalMessages(t, js, lingering.missionID) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("an entry no Flush took was not published after the linger")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := lingering.Flush(ctx); err != nil || lingering.Pending() != 0 {
		t.Fatalf("flush after the linger: %v, %d pending", err, lingering.Pending())
	}

	done := NewJournal(js, messages.NewMissionID())
	done.linger = 20 * time.Millisecond
	if err := done.Record(ctx, "t/1/w", []byte("w")); err != nil {
		t.Fatal(err)
	}
	done.settle()
	if err := errors.Join(done.Record(ctx, "t/1/v", []byte("v")), done.Flush(ctx)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := journalMessages(t, js, done.missionID); n != 0 {
		t.Fatalf("%d messages written after settle, want 0", n)
	}
}

// A journal of more messages than are read one get each is read to its
// end, the rest with a consumer from the message after the last one got,
// entry by entry in the order written.
func TestLongJournalReadBack(t *testing.T) {
	s := fleettest.Start(t)
	js, _ := jetstream.New(s.Conn())
	ctx := context.Background()
	_, err := EnsureStores(ctx, js, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	j := NewJournal(js, id)
	const n = journalGets + 5
	for i := range n {
		// the same key in every message: the last one written wins
		if err := j.Record(ctx, "t/1/x", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if err := j.Record(ctx, "t/"+strconv.Itoa(i)+"/y", []byte("y")); err != nil {
			t.Fatal(err)
		}
		if err := j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// another mission's entries between them are not read
	other := NewJournal(js, messages.NewMissionID())
	if err := other.Record(ctx, "t/1/x", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := journalMessages(t, js, id); got != n {
		t.Fatalf("%d journal messages, want %d", got, n)
	}
	again, err := openJournal(ctx, js, id, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.Entries() != 2*n {
		t.Fatalf("read back %d entries, want %d", again.Entries(), 2*n)
	}
	for i := range n {
		if d, ok := again.Replay("t/1/x"); !ok || string(d) != strconv.Itoa(i) {
			t.Fatalf("replay %d of t/1/x = %q, %v; want %d", i, d, ok, i)
		}
		if d, ok := again.Replay("t/" + strconv.Itoa(i) + "/y"); !ok || string(d) != "y" {
			t.Fatalf("replay t/%d/y = %q, %v", i, d, ok)
		}
	}
	if _, ok := again.Replay("t/1/x"); ok {
		t.Fatal("an entry of another mission was replayed")
	}
}
