package fleettest

import (
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// ToolReplies are one tool result as a msgpack ("mp") and as a JSON ("js")
// tool response body, and the result as Go data. The result holds what a
// careless decoder changes: keys with '-' and date-like keys, the largest
// int64, an integer past it, 1.0 as a float, a negative float, nil, empty
// lists and maps, nesting; the JSON body starts with white space and puts
// "v" last.
func ToolReplies(tb testing.TB) (bodies map[string][]byte, want map[string]any) {
	tb.Helper()
	want = map[string]any{
		"order-id": int64(7), "big": int64(math.MaxInt64), "huge": 1.8446744073709552e19, "f": 1.0, "neg": -2.5,
		"nested": map[string]any{"SKU-1": []any{int64(1), "x", nil, true, map[string]any{}}, "2024-01-31": []any{}},
	}
	result, err := messages.Marshal(want)
	if err != nil {
		tb.Fatal(err)
	}
	mp, err := messages.Marshal(map[string]any{"v": int64(1), "call_id": "c", "result": msgpack.RawMessage(result)})
	if err != nil {
		tb.Fatal(err)
	}
	js := []byte(` {"call_id": "c", "result": {"order-id": 7, "big": 9223372036854775807, "huge": 18446744073709551616,
		"f": 1.0, "neg": -2.5, "nested": {"SKU-1": [1, "x", null, true, {}], "2024-01-31": []}}, "v": 1}`)
	return map[string][]byte{"mp": mp, "js": js}, want
}
