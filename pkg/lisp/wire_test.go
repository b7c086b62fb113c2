package lisp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// decodeBoth decodes data with DecodeMsgpack and with messages.Unmarshal +
// FromGo; both must agree on the value or on failing. An extension value
// (a timestamp, say) has no plain form wherever it stands, also where a
// later duplicate key replaces it in Unmarshal's map, so a document
// holding one must fail.
func decodeBoth(t testing.TB, data []byte) {
	t.Helper()
	got, err := core.DecodeMsgpack(data)
	var plain any
	uerr := messages.Unmarshal(data, &plain)
	if uerr == nil && holdsExtension(msgpack.NewDecoder(bytes.NewReader(data)), 0) {
		uerr = errors.New("an extension value has no plain form")
	}
	if (err == nil) != (uerr == nil) {
		t.Fatalf("DecodeMsgpack err %v, messages.Unmarshal err %v (% x)", err, uerr, data)
	}
	if err != nil {
		return
	}
	want, ferr := core.FromGo(plain)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if core.PrStr(got) != core.PrStr(want) { // not Equal: NaN is not equal to itself
		t.Fatalf("DecodeMsgpack %s, Unmarshal+FromGo %s", core.PrStr(got), core.PrStr(want))
	}
	if c, ok := got.(*core.Vector); ok && !core.IsHostData(c) {
		t.Fatal("decoded vector not host data")
	}
}

// holdsExtension reports whether the value dec reads next holds an
// extension value, at any depth (past 64 levels it answers false:
// Unmarshal refuses such depth itself).
func holdsExtension(dec *msgpack.Decoder, depth int) bool {
	c, err := dec.PeekCode()
	if err != nil || depth > 64 {
		return false
	}
	switch {
	case msgpcode.IsExt(c):
		return true
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		for i := 0; err == nil && i < 2*n; i++ {
			if holdsExtension(dec, depth+1) {
				return true
			}
		}
		return false
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		for i := 0; err == nil && i < n; i++ {
			if holdsExtension(dec, depth+1) {
				return true
			}
		}
		return false
	}
	_ = dec.Skip() // a scalar; a read error ends the walk at the next peek
	return false
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
	// a timestamp has no plain form, also where a later duplicate key
	// would replace it
	stamp, _ := msgpack.Marshal(map[string]any{"at": time.Unix(1, 0)})
	dup := append([]byte{0x82, 0xa1, 'k'}, stamp[4:]...) // {"k" <timestamp>, ...: stamp is {"at" <timestamp>}
	dup = append(dup, 0xa1, 'k', 0x01)                   // ... "k" 1}
	for _, doc := range [][]byte{stamp, dup} {
		if _, err := core.DecodeMsgpack(doc); err == nil || !strings.Contains(err.Error(), "no plain form") {
			t.Errorf("% x: %v, want an error naming the value with no plain form", doc, err)
		}
		decodeBoth(t, doc)
	}
	// hostile input: errors, not panics or huge allocations
	for _, bad := range [][]byte{{0xdd, 0xff, 0xff, 0xff, 0xff}, {0x91}, {0xc1}, {0x90, 0x90}, bytes.Repeat([]byte{0x91}, 100000)} {
		if _, err := core.DecodeMsgpack(bad); err == nil {
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

// jsonReference decodes data as the fleet decodes a JSON reply body
// (messages.DecodeJSON: encoding/json, numbers by JSONNumbers, the bounds
// of a message) and converts it with FromGo. A reply is exactly one
// value, so non-space bytes after it are an error (Decoder.Decode, and so
// DecodeJSON, leaves a trailing ']' or '}' unread).
func jsonReference(data []byte) (core.Value, error) {
	var plain any
	if err := messages.DecodeJSON(data, &plain); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var skip json.RawMessage
	if err := dec.Decode(&skip); err != nil {
		return nil, err
	}
	for _, c := range data[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, fmt.Errorf("trailing %q", c)
		}
	}
	return core.FromGo(plain)
}

// decodeJSONBoth decodes data with DecodeJSON and with jsonReference; both
// must agree on the value or on failing.
func decodeJSONBoth(t testing.TB, data []byte) {
	t.Helper()
	got, err := core.DecodeJSON(data)
	want, rerr := jsonReference(data)
	if (err == nil) != (rerr == nil) {
		t.Fatalf("DecodeJSON err %v, reference err %v (%q)", err, rerr, data[:min(len(data), 200)])
	}
	if err != nil {
		return
	}
	if core.PrStr(got) != core.PrStr(want) || fmt.Sprintf("%#v", core.ToGo(got)) != fmt.Sprintf("%#v", core.ToGo(want)) {
		t.Fatalf("DecodeJSON %s, reference %s", core.PrStr(got), core.PrStr(want))
	}
	// a JSON result kept in a trace encodes as messages.Marshal encodes
	// its Go data
	enc, err := (&core.WireResult{ContentType: messages.ContentTypeJSON, Decoded: got}).MarshalMsgpack()
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := messages.Marshal(core.ToGo(want)); !bytes.Equal(enc, plain) {
		t.Fatalf("MarshalMsgpack % x, messages.Marshal % x", enc, plain)
	}
	if c, ok := got.(*core.Vector); ok && !core.IsHostData(c) {
		t.Fatal("decoded vector not host data")
	}
	if c, ok := got.(*core.Map); ok && c.Len() > 0 && !core.IsHostData(c) {
		t.Fatal("decoded map not host data")
	}
}

func TestDecodeJSON(t *testing.T) {
	docs := []string{
		`null`, `true`, `false`, `-5`, `0`, `-0`, `1.0`, `1e3`, `1E-3`, `-1.5e+300`, `9223372036854775807`,
		`9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `123456789012345678`,
		`1234567890123456789`, `18446744073709551615`, `"s"`, `""`, `"a\"b\\c\u00e9\ud83d\ude00\n"`,
		`"\ud800"`, "\"\xff\xfe\"", `[]`, `{}`, ` [1, "a", null, [{"k-1": 2}]] `,
		`{"order-id": 7, "2024-01-31": {"SKU-1": 2.0}, "big": 12345678901234567890}`,
		`{"a": 1, "a": 2, "b": {"c": [], "d": {}}}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`,
		`[{"id":1,"x":"y"},{"id":2,"x":"z"},{"x":"w","id":3},{"id":4}]`,
	}
	for _, d := range docs {
		decodeJSONBoth(t, []byte(d))
	}
	recs, _ := json.Marshal(benchRecords(300))
	decodeJSONBoth(t, recs)
	// malformed, out of range, out of bounds: errors naming the problem
	for _, c := range []struct{ in, want string }{
		{``, "EOF"},
		{`[1,]`, "invalid character"},
		{`{"a" 1}`, "invalid character"},
		{`[1] 2`, "trailing data"},
		{`[1]]`, "trailing data"},
		{`{"a":1}}`, "trailing data"},
		{`1e400`, "out of range"},
		{`[1, -1e999]`, "[1]: number -1e999 is out of range"},
		{`{"x-y": [tru]}`, "x-y: [0]"},
		{strings.Repeat(`[`, messages.MaxNesting+2) + strings.Repeat(`]`, messages.MaxNesting+2), "nested deeper than 512"},
		// the values bound scales with the size: 262,144 up to 512 KiB,
		// then one value per two bytes (messages.MaxValuesFor)
		{"[" + strings.Repeat(`0,`, messages.MaxValues) + "0]", "more than 262145 values"},
	} {
		_, err := core.DecodeJSON([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: error %v, want one containing %q", c.in, err, c.want)
		}
		decodeJSONBoth(t, []byte(c.in))
	}
	// a non-empty container at the deepest level admitted, and empty ones
	// below it, pass
	deep := []byte(strings.Repeat(`[`, messages.MaxNesting+1) + strings.Repeat(`]`, messages.MaxNesting+1))
	if _, err := core.DecodeJSON(deep); err != nil {
		t.Errorf("%d levels: %v", messages.MaxNesting, err)
	}
	decodeJSONBoth(t, deep)
	big := make([]byte, messages.MaxJSONBytes+1)
	if _, err := core.DecodeJSON(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized body: %v", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, d := range []string{`{"a-b": [1, "x", 2.5, 1.0, -0, 1e2]}`, `[{"id": 1}, {"id": 2, "id": 3}]`, `"s\u00e9"`, `null`,
		`[[[]], {}, {"": ""}]`, `12345678901234567890`, `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8}`} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeJSONBoth(t, data) })
}

// decodeJSONRecords decodes a JSON reply of records the way Go code
// does: encoding/json into []map[string]any, numbers by the project's rule
// (UseNumber, then messages.JSONNumbers: an integer that fits is an int64).
func decodeJSONRecords(data []byte) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var recs []map[string]any
	if err := dec.Decode(&recs); err != nil {
		return nil, err
	}
	for _, r := range recs {
		if _, err := messages.JSONNumbers(r); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// jsonFloat is a float64 written with a fraction or exponent even when
// integral (5.0, not encoding/json's 5), as many JSON writers do, so
// that it decodes as a float again.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'g', -1, 64)
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// marshalJSONFloats encodes records as JSON, floats as jsonFloat.
func marshalJSONFloats(v any) ([]byte, error) {
	rs := v.([]map[string]any)
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = map[string]any{}
		for k, x := range r {
			if f, ok := x.(float64); ok {
				x = jsonFloat(f)
			}
			out[i][k] = x
		}
	}
	return json.Marshal(out)
}

// wireCodecs are the wire formats of a tool reply, each with its one-pass
// decoder into interpreter values and the Go decoding of the same bytes
// into []map[string]any.
var wireCodecs = []struct {
	name   string
	encode func(any) ([]byte, error)
	lisp   func([]byte) (core.Value, error)
	goDec  func([]byte) ([]map[string]any, error)
}{
	{"msgpack", func(v any) ([]byte, error) { return messages.Marshal(v) }, core.DecodeMsgpack,
		func(data []byte) ([]map[string]any, error) {
			var recs []map[string]any
			return recs, messages.Unmarshal(data, &recs)
		}},
	{"json", marshalJSONFloats, core.DecodeJSON, decodeJSONRecords},
}

// BenchmarkFromWire: a tool reply of n records as msgpack or JSON bytes →
// a program's result, against Go decoding the same bytes into
// []map[string]any (messages.Unmarshal; encoding/json) and computing the
// same.
func BenchmarkFromWire(b *testing.B) {
	for _, c := range wireCodecs {
		for _, n := range []int{1000, 5000} {
			data, err := c.encode(benchRecords(n))
			if err != nil {
				b.Fatal(err)
			}
			// decoding alone; for JSON, Go's fastest encoding/json start
			// too: json.Unmarshal with every number a float64
			b.Run(fmt.Sprintf("%s/decode/%d/lisp", c.name, n), func(b *testing.B) {
				loopCPU(b, func() {
					if _, err := c.lisp(data); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run(fmt.Sprintf("%s/decode/%d/go", c.name, n), func(b *testing.B) {
				loopCPU(b, func() {
					if _, err := c.goDec(data); err != nil {
						b.Fatal(err)
					}
				})
			})
			if c.name == "json" {
				b.Run(fmt.Sprintf("%s/decode/%d/go_float64", c.name, n), func(b *testing.B) {
					loopCPU(b, func() {
						var recs []map[string]any
						if err := json.Unmarshal(data, &recs); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
			for _, p := range pipelines {
				b.Run(fmt.Sprintf("%s/%s/%d/lisp", c.name, p.name, n), func(b *testing.B) {
					run := func() {
						v, err := c.lisp(data)
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
				b.Run(fmt.Sprintf("%s/%s/%d/go", c.name, p.name, n), func(b *testing.B) {
					loopCPU(b, func() {
						recs, err := c.goDec(data)
						if err != nil {
							b.Fatal(err)
						}
						p.goFn(recs)
					})
				})
			}
		}
	}
}

// TestFromWireAgrees: the wire benchmark's programs compute what their Go
// twins compute from the decoded records, for both wire formats.
func TestFromWireAgrees(t *testing.T) {
	for _, c := range wireCodecs {
		data, _ := c.encode(benchRecords(500))
		v, err := c.lisp(data)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := c.goDec(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pipelines {
			res, err := Exec(context.Background(), p.src, Options{Context: map[string]any{"records": v}, Timeout: time.Minute})
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, p.name, err)
			}
			got, _ := json.Marshal(core.ToGo(res.Value))
			want, _ := json.Marshal(p.goFn(recs))
			if !strings.EqualFold(string(got), string(want)) {
				t.Errorf("%s %s: lisp %s, go %s", c.name, p.name, got, want)
			}
		}
	}
}

// TestWireResultThroughRun: a tool reply's bytes, msgpack or JSON, handed
// to a run as a WireResult come back from (identity (tool/x {})) exactly as
// the tool sent them (keys with '-', big ints, 1.0 as a float, nesting),
// while the run's ToolCall record keeps the WireResult, which encodes as
// the same data (msgpack: the very bytes).
func TestWireResultThroughRun(t *testing.T) {
	want := map[string]any{
		"order-id": int64(7), "big": int64(math.MaxInt64), "huge": 1.8446744073709552e19, "f": 1.0, "neg": -2.5,
		"nested": map[string]any{"SKU-1": []any{int64(1), "x", nil, true, map[string]any{}}, "2024-01-31": []any{}},
	}
	mp, err := messages.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	js := []byte(`{"order-id": 7, "big": 9223372036854775807, "huge": 18446744073709551616, "f": 1.0, "neg": -2.5,
		"nested": {"SKU-1": [1, "x", null, true, {}], "2024-01-31": []}}`)
	for _, c := range []struct {
		ctype string
		data  []byte
	}{{"", mp}, {messages.ContentTypeJSON, js}} {
		w, err := core.NewWireResult(c.ctype, c.data)
		if err != nil {
			t.Fatal(err)
		}
		tools := core.Tools{"x": core.ToolFunc(func(context.Context, map[string]any) (any, error) { return w, nil })}
		res, err := Exec(context.Background(), `(identity (tool/x {}))`, Options{Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		if got := core.ToGo(res.Value); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: run returned %#v, want %#v", c.ctype, got, want)
		}
		if len(res.ToolCalls) != 1 || res.ToolCalls[0].Result != any(w) {
			t.Fatalf("%q: tool call record %#v does not keep the WireResult", c.ctype, res.ToolCalls)
		}
		enc, err := messages.Marshal(&res.ToolCalls[0])
		if err != nil {
			t.Fatal(err)
		}
		if c.ctype == "" && !bytes.Contains(enc, mp) {
			t.Errorf("encoded tool call does not hold the reply's bytes")
		}
		var back messages.ToolCall
		if err := messages.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Result, want) {
			t.Errorf("%q: tool call encoded and decoded: %#v, want %#v", c.ctype, back.Result, want)
		}
		if js, err := json.Marshal(w); err != nil || !strings.Contains(string(js), `"order-id":7`) {
			t.Errorf("%q: JSON %s, %v", c.ctype, js, err)
		}
		if w.Firewalled() || messages.MaskFirewalled(w) != any(w) {
			t.Errorf("%q: result without firewalled keys is masked", c.ctype)
		}
	}
	// a firewalled key anywhere: masking and secret collection see Go data
	w, err := core.NewWireResult(messages.ContentTypeJSON, []byte(`[{"id": 1}, {"id": 2, "user": {"_token": "s3"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Firewalled() {
		t.Fatal("nested _token not found")
	}
	wantMasked := []any{map[string]any{"id": int64(1)}, map[string]any{"id": int64(2), "user": map[string]any{"_token": messages.FirewallMask}}}
	if masked := messages.MaskFirewalled(w); !reflect.DeepEqual(masked, wantMasked) {
		t.Errorf("masked %#v", masked)
	}
	for _, bad := range []struct{ ctype, data string }{{"", "\x91"}, {messages.ContentTypeJSON, "[1,"}, {"text/plain", "1"}} {
		if _, err := core.NewWireResult(bad.ctype, []byte(bad.data)); err == nil {
			t.Errorf("%q %q: no error", bad.ctype, bad.data)
		}
	}
}

// A WireResult is validated in place (View) with the very outcome its Go
// data gets: the same errors, paths and previews, in every mode.
func TestWireResultValidatesInPlace(t *testing.T) {
	data := `[{"id": 1, "name": "a", "tags": ["x"], "user": {"zip": 10001}},
		{"id": "2", "tags": [1, "y"], "user": {"zip": 1.5, "extra-key": true}, "more": null},
		{"id": 3, "name": null, "tags": null, "user": []}]`
	w, err := core.NewWireResult(messages.ContentTypeJSON, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"[{id :int, name :string, tags [:string], user {zip :int}}]",
		"[{id :int, name :string?, tags [:string]?, user {zip :float}?}]",
		"[{id :any, user :map}]", "[:map]", ":any", "{id :int}", "[:int]",
	} {
		sig, err := signature.Parse("() -> " + src)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []signature.Mode{signature.Enabled, signature.Strict} {
			want := fmt.Sprint(sig.ValidateOutput(w.Plain(), mode))
			got := fmt.Sprint(sig.ValidateOutput(w.View(), mode))
			if got != want {
				t.Errorf("%s (mode %v): in place\n%s\nGo data\n%s", src, mode, got, want)
			}
		}
	}
}
