package fleet

import (
	"bytes"
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

// A typed tool's result is written to msgpack by its plan, with no plain
// data made between: the response is the one a tool returning the plain
// data gets, byte for byte, a string of invalid UTF-8 is read through
// JSON as before, and executing the call allocates 10 times, not 16.
func TestExecuteWritesATypedResultByItsPlan(t *testing.T) {
	s, err := NewToolService(fleettest.Start(t).Conn(), ToolServiceConfig{Name: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	type customer struct {
		ID     int    `json:"id"`
		Name   string `json:"name"`
		Email  string `json:"email"`
		Region string `json:"region"`
		Tier   string `json:"tier,omitempty"`
		Phone  string `json:"_phone"`
	}
	var name string
	typed := typedFunc(func(_ context.Context, in struct {
		ID int `json:"id"`
	}) (customer, error) {
		return customer{ID: in.ID, Name: name, Email: "ada@example.com", Region: "west", Phone: "555"}, nil
	})
	plain := func(_ context.Context, _ map[string]any) (any, error) {
		return messages.FromJSON(customer{ID: 7, Name: name, Email: "ada@example.com", Region: "west", Phone: "555"})
	}
	req := &messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "c1", Tool: "t", Args: map[string]any{"id": int64(7)}}
	log := zerolog.Nop()
	for _, name = range []string{"Ada", "\xffAda"} {
		got := s.execute("t", typed, req, CallInfo{Tool: "t", CallID: "c1"}, time.Second, &log)
		want := s.execute("t", plain, req, CallInfo{Tool: "t", CallID: "c1"}, time.Second, &log)
		if got.Code != "" || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("name %q: typed outcome %+v, plain %+v", name, got, want)
		}
	}
	name = "Ada"
	n := testing.AllocsPerRun(100, func() { s.execute("t", typed, req, CallInfo{Tool: "t", CallID: "c1"}, time.Second, &log) })
	if !raceOn && n > 10 {
		t.Errorf("%.0f allocations to execute a typed tool's call, want at most 10", n)
	}
}
