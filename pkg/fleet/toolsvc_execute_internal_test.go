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
// a tool whose result is kept allocates 5 times: 11 with the result in a
// copy and the CallInfo boxed, 9 with a context.WithTimeout for the
// call's deadline (callContext makes none until Done is asked for).
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
	if !raceOn && n > 5 {
		t.Errorf("%.0f allocations to execute a call, want at most 5", n)
	}
}

// A typed tool's result is written to msgpack by its plan, with no plain
// data made between: the response is the one a tool returning the plain
// data gets, byte for byte, a string of invalid UTF-8 is read through
// JSON as before, and executing the call allocates 6 times, 10 with the
// call's deadline in a context.WithTimeout, 16 with the plain data made.
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
	if !raceOn && n > 6 {
		t.Errorf("%.0f allocations to execute a typed tool's call, want at most 6", n)
	}
}

// A call's context says what context.WithTimeout's would, though it makes
// its timer only when Done is asked for: its deadline, the deadline's
// error with and without Done, its parent's cancellation and cause, a
// child's and an AfterFunc's end at the deadline, and Canceled once the
// call ended.
func TestCallContextActsAsWithTimeout(t *testing.T) {
	ci := CallInfo{Tool: "t", CallID: "c1"}
	t.Run("deadline without Done", func(t *testing.T) {
		c := newCallContext(context.Background(), time.Now().Add(20*time.Millisecond), ci)
		defer c.end()
		if d, ok := c.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
			t.Fatalf("deadline %v, %v", d, ok)
		}
		if err := c.Err(); err != nil {
			t.Fatalf("err %v before the deadline", err)
		}
		time.Sleep(30 * time.Millisecond)
		if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(context.Cause(c), context.DeadlineExceeded) {
			t.Fatalf("err %v, cause %v after the deadline", err, context.Cause(c))
		}
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done asked for after the deadline is not closed")
		}
	})
	t.Run("deadline with Done, a child and AfterFunc", func(t *testing.T) {
		c := newCallContext(context.Background(), time.Now().Add(20*time.Millisecond), ci)
		defer c.end()
		child, cancel := context.WithCancel(c)
		defer cancel()
		after := make(chan struct{})
		context.AfterFunc(c, func() { close(after) })
		for _, done := range []<-chan struct{}{c.Done(), child.Done(), after} {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("not ended at the deadline")
			}
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) ||
			!errors.Is(context.Cause(child), context.DeadlineExceeded) {
			t.Fatalf("err %v, child's %v, its cause %v", c.Err(), child.Err(), context.Cause(child))
		}
		if ci, ok := CallInfoFrom(child); !ok || ci.CallID != "c1" {
			t.Fatalf("call info through a child: %+v, %v", ci, ok)
		}
	})
	t.Run("parent canceled", func(t *testing.T) {
		cause := errors.New("service stopping")
		for _, asked := range []bool{false, true} {
			parent, cancel := context.WithCancelCause(context.Background())
			c := newCallContext(parent, time.Now().Add(time.Hour), ci)
			if asked {
				c.Done()
			}
			cancel(cause)
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("not ended with its parent")
			}
			if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), cause) {
				t.Fatalf("Done asked first %v: err %v, cause %v", asked, c.Err(), context.Cause(c))
			}
			c.end()
			if !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("err %v after the end", c.Err())
			}
		}
	})
	t.Run("parent's deadline first", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := newCallContext(parent, time.Now().Add(time.Hour), ci)
		defer c.end()
		if d, _ := c.Deadline(); time.Until(d) > time.Minute {
			t.Fatalf("deadline %v past the parent's", d)
		}
	})
	t.Run("ended", func(t *testing.T) {
		for _, asked := range []bool{false, true} {
			c := newCallContext(context.Background(), time.Now().Add(time.Hour), ci)
			if asked {
				c.Done()
			}
			c.end()
			select {
			case <-c.Done():
			default:
				t.Fatal("an ended call's Done is open")
			}
			if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), context.Canceled) {
				t.Fatalf("Done asked first %v: err %v, cause %v", asked, c.Err(), context.Cause(c))
			}
		}
	})
}
