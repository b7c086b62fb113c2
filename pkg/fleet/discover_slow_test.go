package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool whose service answers discovery after the short round gave up (a
// loaded machine) is still found within the call's deadline, and a tool
// no service offers is reported unavailable after at most the miss wait,
// then at once until the next miss refresh.
func TestToolLookupWaitsForASlowService(t *testing.T) {
	s := fleettest.Start(t)
	nc, snc := s.Conn(), s.Conn()
	// A service that answers $SRV.INFO 600 ms late, well after the 250 ms
	// discovery round.
	info, _ := json.Marshal(micro.Info{
		ServiceIdentity: micro.ServiceIdentity{Name: "slow", ID: "slow-1", Version: "0.1.0"},
		Type:            micro.InfoResponseType,
		Endpoints: []micro.EndpointInfo{{Name: "echo", Subject: messages.ToolSubject("slow", "echo"),
			Metadata: map[string]string{MetaTool: "echo"}}},
	})
	if _, err := snc.Subscribe(micro.APIPrefix+"."+micro.InfoVerb.String(), func(m *nats.Msg) {
		go func() {
			time.Sleep(600 * time.Millisecond)
			_ = m.Respond(info)
		}()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := snc.Subscribe(messages.ToolSubject("slow", "echo"), func(m *nats.Msg) {
		var req messages.ToolRequest
		_ = messages.Unmarshal(m.Data, &req)
		body, _ := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: req.CallID, Result: req.Args["n"]})
		_ = m.Respond(body)
	}); err != nil {
		t.Fatal(err)
	}
	if err := snc.Flush(); err != nil {
		t.Fatal(err)
	}
	box, err := NewToolbox(nc, ToolboxConfig{Tools: []string{"echo", "ghost"}, MissWait: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := box.Call(ctx, "echo", map[string]any{"n": int64(7)}); err != nil || r != int64(7) {
		t.Fatalf("call of a slowly discovered tool = %v, %v", r, err)
	}
	// Found once, it is cached.
	if r, err := box.Call(ctx, "echo", map[string]any{"n": int64(8)}); err != nil || r != int64(8) {
		t.Fatalf("second call = %v, %v", r, err)
	}

	start := time.Now()
	_, err = box.Call(ctx, "ghost", nil)
	first := time.Since(start)
	if !errors.Is(err, ErrToolUnavailable) {
		t.Fatalf("absent tool: %v, want unavailable", err)
	}
	// Bound: a refresh round (250 ms) plus the miss wait, with slack for a
	// loaded machine.
	if first > 1500*time.Millisecond+250*time.Millisecond+2*time.Second {
		t.Errorf("an absent tool took %v to be reported", first)
	}
	start = time.Now()
	if _, err := box.Call(ctx, "ghost", nil); !errors.Is(err, ErrToolUnavailable) {
		t.Fatalf("absent tool again: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("an absent tool looked up again within the miss refresh took %v, want at once", d)
	}

	// A call's own deadline bounds the wait.
	tight, err := NewToolbox(nc, ToolboxConfig{Tools: []string{"ghost2"}, Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := tight.Call(ctx, "ghost2", nil); !errors.Is(err, ErrToolUnavailable) {
		t.Fatalf("absent tool with a short timeout: %v", err)
	}
	if d := time.Since(start); d > 400*time.Millisecond+250*time.Millisecond+time.Second {
		t.Errorf("an absent tool with a 400ms timeout took %v", d)
	}
}
