package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// FuzzJournalEntry feeds arbitrary bytes to the decoders of journal and
// dedup entries and journal batches (what a replay and a deduplicating
// tool service read back from JetStream): they return a result or a
// *ToolError, or load nothing, never panic; and the Go-data and the
// one-pass decoders of a tool response agree.
func FuzzJournalEntry(f *testing.F) {
	ok, _ := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: "1", Result: map[string]any{"n": int64(1)}})
	bad, _ := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: "1",
		Error: &messages.ToolError{Code: messages.ToolErrFailed, Message: "declined"}})
	rec, _ := messages.Marshal(&dedupRecord{Digest: "d", Owner: "o", Done: true, Out: toolOutcome{Body: ok}})
	batch, _ := messages.Marshal([]journalEntry{{Key: "t/1/x#0", Data: ok}, {Key: "m/y#0", Data: []byte("r")}})
	for _, seed := range [][]byte{ok, bad, rec, batch, nil, {0xc1}, {0x81, 0xa1, 'v', 0x7f}, []byte(`{"v":1,"call_id":"c","result":{"a-b":[1.0,2]}}`)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)
		res, err := (&Toolbox{}).decodePlain(context.Background(), "t", data)
		if err != nil {
			var te *ToolError
			if !errors.As(err, &te) || te.Tool != "t" || te.Code == "" {
				t.Fatalf("error %v is not a ToolError naming the tool and a code", err)
			}
			if res != nil {
				t.Fatalf("result %v with error %v", res, err)
			}
		}
		var r dedupRecord
		_ = messages.Unmarshal(data, &r)
		j := NewJournal(nil, "m")
		j.load(nats.Header{messages.HeaderJournalBatch: {"2"}}, data)
		for k := range j.recorded {
			if k == "" {
				t.Fatal("a batch entry without a key was loaded")
			}
		}
	})
}

// Replay hands out recorded answers by occurrence and counts them.
func TestJournalReplayByOccurrence(t *testing.T) {
	j := &Journal{recorded: map[string][]byte{"t/1/x#0": []byte("a"), "t/1/x#1": []byte("b"), "m/y#0": []byte("m")},
		next: map[string]int{}}
	if d, ok := j.Replay("t/1/x"); !ok || string(d) != "a" {
		t.Fatalf("first = %q %v", d, ok)
	}
	if d, ok := j.Replay("t/1/x"); !ok || string(d) != "b" {
		t.Fatalf("second = %q %v", d, ok)
	}
	if _, ok := j.Replay("t/1/x"); ok {
		t.Fatal("a third occurrence was replayed")
	}
	if u := j.Unreplayed(ModelKeyPrefix); len(u) != 1 || string(u[0]) != "m" {
		t.Fatalf("unreplayed model entries = %q", u)
	}
	if _, ok := j.Replay("m/y"); !ok {
		t.Fatal("model entry not replayed")
	}
	if r := j.Replayed(); r != (messages.Replayed{ModelCalls: 1, ToolCalls: 2}) {
		t.Fatalf("replayed = %+v", r)
	}
	if len(j.Unreplayed(ModelKeyPrefix)) != 0 {
		t.Fatal("a replayed model entry is still unreplayed")
	}
	var nilJ *Journal
	if _, ok := nilJ.Replay("x"); ok || nilJ.Record(context.Background(), "x", nil) != nil || nilJ.Entries() != 0 {
		t.Fatal("a nil journal is not a no-op")
	}
}

// A journal whose writes keep failing gives up after its wait and skips
// the rest of the run's writes at once.
func TestJournalStopsWritingAfterAFailure(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	js, _ := jetstream.New(nc)
	// No JOURNAL stream: every publish finds no stream.
	j, err := openJournal(context.Background(), js, messages.NewMissionID(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.writeWait = 300 * time.Millisecond
	start := time.Now()
	if err := errors.Join(j.Record(context.Background(), "t/1/x", []byte("a")), j.Flush(context.Background())); err == nil {
		t.Fatal("a write without a stream succeeded")
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("first failed write took %v, want about its wait", d)
	}
	start = time.Now()
	if err := j.Record(context.Background(), "t/1/y", []byte("b")); err == nil || time.Since(start) > 50*time.Millisecond {
		t.Errorf("second write: %v after %v, want an immediate error", err, time.Since(start))
	}
}
