package fleet

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool's result is encoded into a pooled buffer that the response's
// encoding copies, not into a copy of its own, and the call's CallInfo
// rides in the context that carries it, not boxed apart: the response's
// body is the same, the tool reads its CallInfo, and executing a call of
// a tool whose result is kept allocates 9 times, not 11.
func TestExecuteEncodesTheResultInAPooledBuffer(t *testing.T) {
	s, err := NewToolService(fleettest.Start(t).Conn(), ToolServiceConfig{Name: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	result := map[string]any{"id": int64(1), "name": "Ada", "tier": "gold"}
	fn := func(ctx context.Context, _ map[string]any) (any, error) {
		if ci, ok := CallInfoFrom(ctx); !ok || ci.CallID != "c1" || ci.Tool != "t" {
			return nil, fmt.Errorf("call info %+v, %v", ci, ok)
		}
		if _, ok := CallInfoFrom(context.Background()); ok {
			return nil, errors.New("call info outside a call")
		}
		return result, nil
	}
	req := &messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "c1", Tool: "t", Args: map[string]any{"id": int64(1)}}
	log := zerolog.Nop()
	out := s.execute("t", fn, req, CallInfo{Tool: "t", CallID: "c1"}, time.Second, &log)
	var resp messages.ToolResponse
	if err := messages.Unmarshal(out.Body, &resp); err != nil || out.Code != "" || resp.CallID != "c1" {
		t.Fatalf("outcome %+v: %+v, %v", out, resp, err)
	}
	if !reflect.DeepEqual(resp.Result, result) {
		t.Fatalf("result %#v, want %#v", resp.Result, result)
	}
	n := testing.AllocsPerRun(100, func() { s.execute("t", fn, req, CallInfo{Tool: "t", CallID: "c1"}, time.Second, &log) })
	if !raceOn && n > 9 {
		t.Errorf("%.0f allocations to execute a call, want at most 9", n)
	}
}
