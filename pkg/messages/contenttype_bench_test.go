package messages

import (
	"bytes"
	"encoding/json"
	"testing"
)

// benchRequest is a tool request with a realistic argument map.
func benchRequest() *ToolRequest {
	items := make([]any, 50)
	for i := range items {
		items[i] = map[string]any{"id": int64(i), "name": "item", "price": 9.5, "tags": []any{"a", "b"}}
	}
	return &ToolRequest{Version: 1, CallID: "12", MissionID: "01JNQ3ZK7R5V8X2M4P6T9W0YBC", Tool: "upsert",
		Args: map[string]any{"items": items, "dry_run": false, "batch": int64(3)}}
}

// handToolRequest is what a hand-written JSON decoder would use: the same
// fields with json tags.
type handToolRequest struct {
	Version   int            `json:"v"`
	CallID    string         `json:"call_id"`
	MissionID string         `json:"mission_id"`
	Tool      string         `json:"tool"`
	Args      map[string]any `json:"args"`
}

// BenchmarkToolRequestDecode compares decoding one tool request: msgpack
// (the default), JSON through DecodeJSON, and hand-written encoding/json
// into a json-tagged struct with UseNumber and JSONNumbers (the same plain
// data at the end).
func BenchmarkToolRequestDecode(b *testing.B) {
	req := benchRequest()
	mp, _ := Marshal(req)
	js, _ := EncodeJSON(req)
	b.Run("msgpack", func(b *testing.B) {
		b.SetBytes(int64(len(mp)))
		for b.Loop() {
			var r ToolRequest
			if err := Unmarshal(mp, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json_codec", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var r ToolRequest
			if err := DecodeJSON(js, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json_handwritten", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var r handToolRequest
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil {
				b.Fatal(err)
			}
			if _, err := JSONNumbers(map[string]any(r.Args)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
