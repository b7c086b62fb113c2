package messages_test

import (
	"fmt"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool request sent as JSON (Content-Type: application/json) decodes like
// its msgpack form; integers stay integers.
func ExampleUnmarshalAs() {
	body := []byte(`{"v":1,"call_id":"7","tool":"list_orders","args":{"status":"paid","limit":100,"min_total":9.5}}`)
	var req messages.ToolRequest
	if err := messages.UnmarshalAs(messages.ContentTypeJSON, body, &req); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %T %T\n", req.Tool, req.Args["limit"], req.Args["min_total"])
	back, _ := messages.MarshalAs(messages.ContentTypeJSON, &messages.ToolResponse{Version: 1, CallID: req.CallID, Result: int64(3)})
	fmt.Println(string(back))
	// Output:
	// list_orders int64 float64
	// {"call_id":"7","result":3,"v":1}
}
