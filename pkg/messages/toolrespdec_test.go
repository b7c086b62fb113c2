package messages

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// toolResponseWire is the form fleet's Toolbox decodes a tool response
// into with the msgpack decoder: the result's encoding kept as it is.
type toolResponseWire struct {
	Version int                `msgpack:"v"`
	CallID  string             `msgpack:"call_id"`
	Result  msgpack.RawMessage `msgpack:"result"`
	Ref     *ObjectRef         `msgpack:"result_ref,omitempty"`
	Error   *ToolError         `msgpack:"error,omitempty"`
}

func testToolResponses(t testing.TB) [][]byte {
	var out [][]byte
	for _, r := range []*ToolResponse{
		{Version: ToolCallVersion, CallID: "c1", Result: map[string]any{"id": int64(7), "name": "Ada", "tags": []any{"a", int64(-300), 1.5, nil, true}}},
		{Version: ToolCallVersion, CallID: "c-2", Result: []any{map[string]any{"n": int64(1 << 40)}, "x"}},
		{Version: ToolCallVersion, CallID: "c3", Result: nil},
		{Version: ToolCallVersion, CallID: "c4", Result: "a string"},
		{Version: ToolCallVersion, CallID: "c5", Error: &ToolError{Code: ToolErrFailed, Message: "no"}},
		{Version: ToolCallVersion, CallID: "c6", ResultRef: &ObjectRef{Bucket: "b", Name: "n", Size: 3, Digest: "SHA-256=x"}},
	} {
		data, err := Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// ReadToolResult reads a tool service's result response as the msgpack
// decoder reads it, and leaves an error or a result stored apart to it.
func TestReadToolResult(t *testing.T) {
	data := testToolResponses(t)
	for i, d := range data {
		v, id, res, ok := ReadToolResult(d)
		var w toolResponseWire
		if err := unmarshalCodec(d, &w, false); err != nil {
			t.Fatal(err)
		}
		if want := i < 4; ok != want {
			t.Fatalf("response %d read %v, want %v", i, ok, want)
		}
		if ok && (v != w.Version || string(id) != w.CallID || !bytes.Equal(res, w.Result)) {
			t.Fatalf("response %d: read %d %q %x, decoder %d %q %x", i, v, id, res, w.Version, w.CallID, []byte(w.Result))
		}
	}
	n := testing.AllocsPerRun(100, func() { ReadToolResult(data[0]) })
	if n != 0 {
		t.Errorf("%.0f allocations reading a tool result, want none", n)
	}
}

// FuzzToolResultReader compares ReadToolResult with the msgpack decoder on
// any input: what the reader reads, the decoder reads the same, with no
// error and no result stored apart.
func FuzzToolResultReader(f *testing.F) {
	for _, d := range testToolResponses(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, id, res, ok := ReadToolResult(data)
		if !ok {
			return
		}
		var w toolResponseWire
		if err := unmarshalCodec(data, &w, false); err != nil {
			t.Fatalf("% x: read %d %q %x, the decoder: %v", data, v, id, res, err)
		}
		if v != w.Version || string(id) != w.CallID || !bytes.Equal(res, w.Result) || w.Ref != nil || w.Error != nil {
			t.Fatalf("% x:\n read    %d %q %x\n decoder %d %q %x %+v %+v", data, v, id, res, w.Version, w.CallID, []byte(w.Result), w.Ref, w.Error)
		}
	})
}
