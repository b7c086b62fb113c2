package lisp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/vmihailenco/msgpack/v5"
)

// streamAgrees decodes data as a stream (one byte per read, so every
// value crosses reads) and from memory; both must give the same value.
func streamAgrees(t *testing.T, ctype string, data []byte) {
	t.Helper()
	var got, want core.Value
	var err, merr error
	if messages.IsJSON(ctype) {
		got, err = core.DecodeJSONFrom(iotest.OneByteReader(bytes.NewReader(data)), int64(len(data)))
		want, merr = core.DecodeJSON(data)
	} else {
		got, err = core.DecodeMsgpackFrom(iotest.OneByteReader(bytes.NewReader(data)), int64(len(data)))
		want, merr = core.DecodeMsgpack(data)
	}
	if err != nil || merr != nil {
		t.Fatalf("%s: stream err %v, memory err %v", ctype, err, merr)
	}
	if core.PrStr(got) != core.PrStr(want) {
		t.Fatalf("%s: stream %s, memory %s", ctype, core.PrStr(got), core.PrStr(want))
	}
	if c, ok := got.(*core.Vector); ok && !core.IsHostData(c) {
		t.Fatal("decoded vector not host data")
	}
}

// A value read as a stream decodes to what the same bytes decode to in
// memory, msgpack and JSON alike.
func TestDecodeFromStreamAgrees(t *testing.T) {
	docs := []any{
		nil, true, int64(-5), uint64(1 << 63), 1.5, "s", []any{}, map[string]any{},
		[]any{int64(1), "a", nil, []any{map[string]any{"k-1": int64(2)}}},
		map[string]any{"order-id": int64(7), "2024-01-31": map[string]any{"SKU-1": 2.0}},
		map[int64]any{1: "one", 2: "two"},
	}
	recs := make([]any, 300)
	for i, r := range benchRecords(300) {
		recs[i] = r
	}
	docs = append(docs, recs)
	for _, d := range docs {
		mp, err := messages.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		streamAgrees(t, "", mp)
		var plain any
		if err := messages.Unmarshal(mp, &plain); err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		streamAgrees(t, messages.ContentTypeJSON, js)
	}
}

// A stream is refused, with an error naming what is wrong, when it holds
// other than its announced size, announces more than its bytes can hold,
// nests too deeply, uses a container as a map key or holds more values
// than its size allows (a small stream never decodes into a large heap).
func TestDecodeFromStreamBounds(t *testing.T) {
	one, _ := msgpack.Marshal([]any{int64(1), int64(2)})
	emptyMaps := append([]byte{0xdd, 0, 0x04, 0x93, 0xe0}, bytes.Repeat([]byte{0x80}, 300_000)...) // 300,000 {}
	onesJSON := "[" + strings.Repeat("1,", 299_999) + "1]"                                         // 300,001 values in 600,001 bytes
	cases := []struct {
		name, ctype string
		data        []byte
		size        int64
		want        string
	}{
		{"shorter than announced", "", one, int64(len(one)) + 5, "not the"},
		{"longer than announced", "", append(append([]byte{}, one...), 0x01), int64(len(one)) + 1, "trailing bytes"},
		{"length past the bytes", "", []byte{0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01}, 6, "announces 2147483647 values"},
		{"nesting", "", bytes.Repeat([]byte{0x91}, 600), 600, "nested deeper than 512"},
		{"container key", "", []byte{0x81, 0x90, 0x01}, 3, "map key is an array or a map"},
		{"too many values", "", emptyMaps, int64(len(emptyMaps)), "more than 262144 values"},
		{"json too many values", messages.ContentTypeJSON, []byte(onesJSON), int64(len(onesJSON)), "more than 300000 values"},
		{"json shorter than announced", messages.ContentTypeJSON, []byte(`[1,2]`), 9, "decode json"},
		{"json trailing", messages.ContentTypeJSON, []byte(`[1,2] 3`), 7, "trailing data"},
	}
	for _, c := range cases {
		var err error
		if c.ctype == "" {
			_, err = core.DecodeMsgpackFrom(bytes.NewReader(c.data), c.size)
		} else {
			_, err = core.DecodeJSONFrom(bytes.NewReader(c.data), c.size)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// A result read as a stream keeps its reference, not its bytes: a trace
// or event that encodes it holds the reference.
func TestWireResultFromStreamKeepsItsReference(t *testing.T) {
	data, _ := messages.Marshal([]any{map[string]any{"id": int64(1), "_secret": "s"}})
	ref := &messages.ObjectRef{Bucket: "tool_results_x", Name: "m.t.1", Size: int64(len(data)), Digest: "SHA-256=x"}
	w, err := core.DecodeWireResultFrom(context.Background(), "", bytes.NewReader(data), int64(len(data)), ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := core.ToGo(w.Value()); !equalPlain(got, []any{map[string]any{"id": int64(1), "_secret": "s"}}) {
		t.Fatalf("value %#v", got)
	}
	enc, err := w.MarshalMsgpack()
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := messages.Unmarshal(enc, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := messages.Normalize(messages.RefValue(ref))
	if !equalPlain(got, want) {
		t.Fatalf("encoded as %#v, want the reference %#v", got, want)
	}
	if w.MaskFirewalled() != w {
		t.Fatal("a streamed result's reference was masked as data")
	}
}

func equalPlain(a, b any) bool {
	x, _ := messages.Marshal(a)
	y, _ := messages.Marshal(b)
	return bytes.Equal(x, y)
}

func FuzzDecodeMsgpackFrom(f *testing.F) {
	for _, d := range []any{map[string]any{"a-b": []any{int64(1), "x", 2.5}}, []any{map[string]any{"id": int64(1)}}, "s", nil} {
		data, _ := msgpack.Marshal(d)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := core.DecodeMsgpackFrom(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
		if err != nil {
			return
		}
		want, merr := core.DecodeMsgpack(data)
		if merr != nil || core.PrStr(got) != core.PrStr(want) {
			t.Fatalf("stream %s, memory %v %v", core.PrStr(got), core.PrStr(want), merr)
		}
	})
}

// A streamed result that would take the mission's meter past its limit
// fails with memory_limit, naming the limit and how to raise it, before
// the stream is read whole; what it charged is given back.
func TestDecodeWireResultFromStopsAtTheMeterLimit(t *testing.T) {
	recs := make([]any, 20_000)
	for i, r := range benchRecords(len(recs)) {
		recs[i] = r
	}
	data, _ := messages.Marshal(recs)
	m := core.NewMeter(1<<20, "raise limits.program_memory")
	ctx := core.WithMeter(context.Background(), m)
	cr := &core.CountingReader{R: bytes.NewReader(data)}
	ref := &messages.ObjectRef{Bucket: "tool_results_x", Name: "n", Size: int64(len(data)), Digest: "SHA-256=x"}
	_, err := core.DecodeWireResultFrom(ctx, "", cr, int64(len(data)), ref)
	var le *core.Error
	if !errors.As(err, &le) || le.Kind != core.KindMemory || !strings.Contains(le.Msg, "1048576") || !strings.Contains(le.Msg, "program_memory") {
		t.Fatalf("err %v, want memory_limit naming the limit", err)
	}
	if cr.N >= int64(len(data))/2 {
		t.Fatalf("read %d of %d bytes before failing", cr.N, len(data))
	}
	if m.Used() != 0 {
		t.Fatalf("the meter still holds %d bytes", m.Used())
	}
	// within the limit it is charged what it holds
	big := core.NewMeter(1<<30, "")
	w, err := core.DecodeWireResultFrom(core.WithMeter(context.Background(), big), "", bytes.NewReader(data), int64(len(data)), ref)
	if err != nil || w.Size() == 0 || big.Used() != w.Size() {
		t.Fatalf("charged %d for a result of size %d (%v)", big.Used(), w.Size(), err)
	}
}

// A streamed result of many records allocates little more than the values
// it keeps: map entries are gathered in a buffer reused per level, keys
// and short strings are looked up from their bytes, so a record leaves no
// builder, key or repeated string behind as garbage (before, 20,000 mail
// records allocated 8.4 times their encoded size, of which 1.8 stayed).
// Long strings (the builder path), empty strings and non-string keys
// decode as from memory.
func TestStreamDecodeAllocatesLittle(t *testing.T) {
	recs := make([]any, 20_000)
	for i := range recs {
		recs[i] = map[string]any{
			"id": int64(i), "from": "sender@example.com", "to": "team@example.com",
			"subject": "Quarterly numbers", "body": "Please find the figures attached; reply by Friday.",
			"date": "2026-01-02T03:04:05Z", "unread": i%3 == 0, "size": int64(1000 + i%977), "score": float64(i%100) / 7,
			"labels": []any{"inbox", "work"}, "thread": int64(i / 4), "folder": "INBOX",
		}
	}
	data, err := messages.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := core.DecodeMsgpackFrom(bytes.NewReader(data), int64(len(data)))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(data)); got > 2.5 {
		t.Errorf("decoding %d bytes allocated %.2f times as much, more than 2.5", len(data), got)
	}
	if n := v.(*core.Vector).Len(); n != len(recs) {
		t.Fatalf("%d records decoded, want %d", n, len(recs))
	}
	runtime.KeepAlive(v)

	long := strings.Repeat("x", 200) + "é"
	mixed, err := msgpack.Marshal([]any{
		map[string]any{"a": long, "b": "", strings.Repeat("k", 100): "short", "": long[:64], "c": long[:65]},
		map[any]any{int64(1): "one", true: "yes", "s": strings.Repeat("y", 70<<10)},
		[]any{"", "", long, long},
	})
	if err != nil {
		t.Fatal(err)
	}
	streamAgrees(t, "", mixed)
}
