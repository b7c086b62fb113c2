package lisp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/vmihailenco/msgpack/v5"
)

// decodeBoth decodes data with DecodeMsgpack and with messages.Unmarshal +
// FromGo; both must agree on the value or on failing.
func decodeBoth(t testing.TB, data []byte) {
	t.Helper()
	got, err := DecodeMsgpack(data)
	var plain any
	uerr := messages.Unmarshal(data, &plain)
	if (err == nil) != (uerr == nil) {
		t.Fatalf("DecodeMsgpack err %v, messages.Unmarshal err %v (% x)", err, uerr, data)
	}
	if err != nil {
		return
	}
	want, ferr := FromGo(plain)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if PrStr(got) != PrStr(want) { // not Equal: NaN is not equal to itself
		t.Fatalf("DecodeMsgpack %s, Unmarshal+FromGo %s", PrStr(got), PrStr(want))
	}
	if c, ok := got.(*Vector); ok && !IsHostData(c) {
		t.Fatal("decoded vector not host data")
	}
}

func TestDecodeMsgpack(t *testing.T) {
	docs := []any{
		nil, true, int64(-5), uint64(math.MaxUint64), 1.5, float32(2.5), "s", []byte("bin"),
		[]any{}, map[string]any{}, []any{int64(1), "a", nil, []any{map[string]any{"k-1": int64(2)}}},
		map[string]any{"order-id": int64(7), "2024-01-31": map[string]any{"SKU-1": 2.0}},
		map[int64]any{1: "one", 2: "two"},
	}
	for _, d := range docs {
		data, err := msgpack.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		decodeBoth(t, data)
	}
	recs := make([]any, 300)
	for i, r := range benchRecords(300) {
		recs[i] = r
	}
	data, _ := messages.Marshal(recs)
	decodeBoth(t, data)
	// hostile input: errors, not panics or huge allocations
	for _, bad := range [][]byte{{0xdd, 0xff, 0xff, 0xff, 0xff}, {0x91}, {0xc1}, {0x90, 0x90}, bytes.Repeat([]byte{0x91}, 100000)} {
		if _, err := DecodeMsgpack(bad); err == nil {
			t.Fatalf("% x: no error", bad[:min(len(bad), 8)])
		}
	}
}

func FuzzDecodeMsgpack(f *testing.F) {
	for _, d := range []any{map[string]any{"a-b": []any{int64(1), "x", 2.5}}, []any{map[string]any{"id": int64(1)}, map[string]any{"id": int64(2)}}, "s", nil} {
		data, _ := msgpack.Marshal(d)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, data) })
}

// BenchmarkFromWire: a tool reply of n records as msgpack bytes → a
// program's result, against Go decoding the same bytes into
// []map[string]any (messages.Unmarshal) and computing the same.
func BenchmarkFromWire(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		rs := benchRecords(n)
		data, err := messages.Marshal(rs)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pipelines {
			b.Run(fmt.Sprintf("%s/%d/lisp", p.name, n), func(b *testing.B) {
				run := func() {
					v, err := DecodeMsgpack(data)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Exec(context.Background(), p.src, Options{Context: map[string]any{"records": v}, Timeout: time.Minute}); err != nil {
						b.Fatal(err)
					}
				}
				run()
				loopCPU(b, run)
			})
			b.Run(fmt.Sprintf("%s/%d/go", p.name, n), func(b *testing.B) {
				loopCPU(b, func() {
					var recs []map[string]any
					if err := messages.Unmarshal(data, &recs); err != nil {
						b.Fatal(err)
					}
					p.goFn(recs)
				})
			})
		}
	}
}

// TestFromWireAgrees: the wire benchmark's programs compute what their Go
// twins compute from the decoded records.
func TestFromWireAgrees(t *testing.T) {
	data, _ := messages.Marshal(benchRecords(500))
	v, err := DecodeMsgpack(data)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	if err := messages.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	for _, p := range pipelines {
		res, err := Exec(context.Background(), p.src, Options{Context: map[string]any{"records": v}, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		got, _ := json.Marshal(ToGo(res.Value))
		want, _ := json.Marshal(p.goFn(recs))
		if !strings.EqualFold(string(got), string(want)) {
			t.Errorf("%s: lisp %s, go %s", p.name, got, want)
		}
	}
}
