package fleet

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission's Toolbox allows exactly its tools, from its list of names
// when it has few and from a map when it has many, and makes no map or
// header it does not need: 2 allocations for a mission of two tools (the
// Toolbox with its reference stores, and its names), where allowing them
// in a map, with an empty header and call count, made 7.
func TestNewToolboxAllocations(t *testing.T) {
	for _, n := range []int{0, 1, 2, maxListedTools, maxListedTools + 1, 40} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("tool_%d", i)
		}
		b := newToolbox(nil, nil, "m", names, time.Second, time.Second, nil)
		for _, name := range names {
			if !b.mayCall(name) {
				t.Fatalf("%d tools: %s not allowed", n, name)
			}
		}
		for _, name := range []string{"tool", "tool_", fmt.Sprintf("tool_%d", n), ""} {
			if b.mayCall(name) {
				t.Fatalf("%d tools: %q allowed", n, name)
			}
		}
	}
	tools := []string{"get_customer", "list_orders"}
	if n := testing.AllocsPerRun(100, func() { newToolbox(nil, nil, "m", tools, time.Second, time.Second, nil) }); n > 2 {
		t.Errorf("a Toolbox of two tools: %.0f allocations, want at most 2", n)
	}
}

// What a mission's Toolbox holds while the mission waits on its model, as
// open builds it (missionRun.toolbox): one block for the Toolbox and its
// reference stores, its calls reported through the mission's emitter
// rather than closures of their own, and no approval gate before its
// first call: 1 allocation, a block of 256 bytes, for a mission naming
// no tool, against 7 and 532 with the gate made with the Toolbox, the
// reference stores apart and a closure each for calls and results.
//
// The one allocation is the Toolbox itself (each call returns a new one),
// so what it holds is its type's size, which sets the block it takes: a
// struct of at most 288 bytes takes a block of at most 288. Sizing the
// block from the type, rather than from the bytes the process allocated
// around the calls, leaves nothing for other goroutines' garbage to add.
func TestMissionToolboxHoldsLittleBeforeItsFirstCall(t *testing.T) {
	p := &missionRun{w: &Worker{st: &Stores{}}, em: &emitter{sub: "alice"}, m: &messages.Mission{ID: messages.NewMissionID()},
		attempt: 1, cancel: func(error) {}}
	owned := func(context.Context) error { return nil }
	var box *Toolbox
	allocs := testing.AllocsPerRun(100, func() { box = p.toolbox(nil, owned) })
	if box.gate.Load() != nil {
		t.Fatal("a new Toolbox holds an approval gate")
	}
	if again := p.toolbox(nil, owned); again == box {
		t.Fatal("two missions' Toolboxes are one")
	}
	size := reflect.TypeFor[Toolbox]().Size()
	t.Logf("a mission's Toolbox: %.0f allocations, a Toolbox of %d bytes", allocs, size)
	if allocs > 1 || size > 288 {
		t.Errorf("a mission's Toolbox: %.0f allocations, a Toolbox of %d bytes; want 1 and at most 288 (a block of at most 300 bytes)", allocs, size)
	}
}

// A tool response's result is returned as the bytes it came in, and what
// Validate asks of it (is a result set together with an error) is told
// by a marker, not by the bytes boxed in an interface; a tool service's
// result response is read without the msgpack decoder, its result's bytes
// within the response's (messages.ReadToolResult): 1 allocation to split
// a response, 5 through the decoder, 6 with the bytes boxed.
func TestSplitToolResponseAllocations(t *testing.T) {
	result, err := messages.Marshal(map[string]any{"id": int64(1), "name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: "c1", Result: msgpack.RawMessage(result)})
	if err != nil {
		t.Fatal(err)
	}
	ctype, got, ref, err := splitToolResponse("t", data)
	if err != nil || ctype != "" || ref != nil || !bytes.Equal(got, result) {
		t.Fatalf("split %q %x %v %v, want the result %x", ctype, got, ref, err, result)
	}
	both, err := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: "c1", Result: msgpack.RawMessage(result),
		Error: &messages.ToolError{Code: messages.ToolErrFailed, Message: "no"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := splitToolResponse("t", both); err == nil || err.(*ToolError).Err == nil || !strings.Contains(err.(*ToolError).Err.Error(), "set together with an error") {
		t.Fatalf("a result with an error: %v", err)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, _, _, err := splitToolResponse("t", data); err != nil {
			t.Fatal(err)
		}
	})
	if !raceOn && n > 1 {
		t.Errorf("%.0f allocations to split a tool response, want at most 1", n)
	}
}
