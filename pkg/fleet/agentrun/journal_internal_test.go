package agentrun

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// countingModel answers every request and notes whether a journal write
// was held back when it was asked.
type countingModel struct {
	js        *fleettest.HeldJS
	calls     atomic.Int64
	whileHeld atomic.Int64
}

func (m *countingModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	if m.calls.Add(1) > 1 && !m.js.Released() {
		m.whileHeld.Add(1)
	}
	return &llm.Response{Content: "reply to turn " + string(rune('0'+req.Turn))}, nil
}

// The next model request (which carries the previous reply) is not sent
// while the previous reply's journal write is unacknowledged.
func TestJournalModelReplyAcknowledgedBeforeNextRequest(t *testing.T) {
	js := fleettest.NewHeldJS(messages.StreamJournal)
	inner := &countingModel{js: js}
	j := fleet.NewJournal(js, messages.NewMissionID())
	m := missionModels(llm.Registry{"default": inner}, &fleet.RunEnv{Journal: j})["default"]
	ctx := context.Background()
	if _, err := m.Complete(ctx, llm.Request{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if j.Pending() != 1 {
		t.Fatalf("%d writes pending after the first reply, want 1", j.Pending())
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, llm.Request{Turn: 2})
		done <- err
	}()
	time.Sleep(1300 * time.Millisecond) // past the ack wait, so the republish is held too
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("the model was asked %d times while a reply's journal write was unacknowledged", n)
	}
	js.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if inner.calls.Load() != 2 || inner.whileHeld.Load() != 0 {
		t.Fatalf("calls %d, while held %d", inner.calls.Load(), inner.whileHeld.Load())
	}
}

// FuzzJournalReply feeds arbitrary bytes to the decoder of journaled model
// replies: it returns a reply or an error, never panics, and a decoded
// reply encodes to an entry that decodes to the same reply.
func FuzzJournalReply(f *testing.F) {
	for _, r := range []*llm.Response{
		{Content: "```clojure\n(return 1)\n```", Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}, StopReason: llm.StopReason("end_turn"), Model: "m", ID: "r1"},
		{ToolCalls: []llm.ToolUse{{ID: "c1", Name: "search", Input: map[string]any{"q": "x"}}}},
		{Provider: []llm.ProviderBlock{{Provider: "anthropic", Type: "thinking", Raw: []byte(`{"signature":"s"}`)}}},
	} {
		data, err := encodeReply(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0x81, 0xa7, 'c', 'o', 'n', 't', 'e', 'n', 't', 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := decodeReply(data)
		if err != nil {
			if resp != nil {
				t.Fatalf("reply %+v with error %v", resp, err)
			}
			return
		}
		again, err := encodeReply(resp)
		if err != nil {
			t.Fatalf("a decoded reply does not encode: %v", err)
		}
		back, err := decodeReply(again)
		if err != nil {
			t.Fatalf("a re-encoded reply does not decode: %v", err)
		}
		third, _ := encodeReply(back)
		if !bytes.Equal(again, third) {
			t.Fatalf("decode/encode is not stable:\n%x\n%x", again, third)
		}
	})
}
