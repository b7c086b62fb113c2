package messages_test

import (
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// RefOf reads back what RefValue wrote after it crossed the wire as
// msgpack or JSON, and takes nothing else for a reference.
func TestRefOfReadsRefValueBack(t *testing.T) {
	want := messages.ObjectRef{Bucket: "tool_results_shop", Name: "m1.list_orders.c1", Size: 386155,
		Digest: "SHA-256=x", ContentType: messages.ContentTypeJSON}
	v := messages.RefValue(&want)
	var viaMsgpack, viaJSON any
	b, err := messages.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := messages.Unmarshal(b, &viaMsgpack); err != nil {
		t.Fatal(err)
	}
	js, err := messages.EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := messages.DecodeJSON(js, &viaJSON); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]any{"as written": v, "msgpack": viaMsgpack, "JSON": viaJSON} {
		r, ok := messages.RefOf(got)
		if !ok || *r != want {
			t.Errorf("%s: %+v %v, want %+v", name, r, ok, want)
		}
	}
	for _, v := range []any{
		nil, "x", map[string]any{},
		map[string]any{messages.RefKey: 1},
		map[string]any{messages.RefKey: map[string]any{"bucket": "b", "name": "n", "size": int64(1)}, "other": 2},
		map[string]any{messages.RefKey: map[string]any{"bucket": "b", "size": int64(1)}},
		map[string]any{messages.RefKey: map[string]any{"bucket": "b", "name": "n", "size": "1"}},
		map[string]any{messages.RefKey: map[string]any{"bucket": "b", "name": "n", "size": 1.5}},
	} {
		if r, ok := messages.RefOf(v); ok {
			t.Errorf("RefOf(%v) = %+v", v, r)
		}
	}
}
