package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// jsonAsNewDecoderInputs are values, errors and values followed by more.
var jsonAsNewDecoderInputs = []string{
	`{"id":1,"name":"a"}`, `{"id":2}`, `{"id":1,"nme":"x"}`, `{"id":"x"}`, `{"id":3,"name":"b"} {"id":4}`,
	`{"id":5,"name":"c"}`, `{"id":`, ``, ` {"id":6} `, `[1,2]`, `{"id":7,"name":"d"}`, `12`, `1.5e3`, `"s"`,
	`{"id":8,"name":"` + string(bytes.Repeat([]byte("x"), 3000)) + `"}`, `{"id":9}`,
}

// TestDecodeJSONValueAsANewDecoder: a kept decoder decodes each value,
// and fails on each bad one, as a new json.Decoder does, whatever it
// decoded before (good values, errors, values followed by more).
func TestDecodeJSONValueAsANewDecoder(t *testing.T) {
	for round := range 3 {
		for _, src := range jsonAsNewDecoderInputs {
			if err := decodesAsANewDecoder([]byte(src)); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// FuzzDecodeJSONValue: on any input, under each option and into a struct
// or an interface, DecodeJSONValue gives the value and the error a new
// json.Decoder gives, and again right after (the decoder it kept, if it
// kept one, decodes the same input once more).
func FuzzDecodeJSONValue(f *testing.F) {
	for _, src := range jsonAsNewDecoderInputs {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for range 2 {
			if err := decodesAsANewDecoder(data); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// decodesAsANewDecoder says where DecodeJSONValue decoding src differs
// from a new json.Decoder, under each option and into a struct or an
// interface; nil when it never does.
func decodesAsANewDecoder(src []byte) error {
	type in struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	for _, opts := range []JSONDecodeOption{0, JSONUseNumber, JSONDisallowUnknownFields, JSONUseNumber | JSONDisallowUnknownFields} {
		for _, target := range []func() any{func() any { return new(in) }, func() any { return new(any) }} {
			want, got := target(), target()
			dec := json.NewDecoder(bytes.NewReader(src))
			if opts&JSONUseNumber != 0 {
				dec.UseNumber()
			}
			if opts&JSONDisallowUnknownFields != 0 {
				dec.DisallowUnknownFields()
			}
			werr := dec.Decode(want)
			gerr := DecodeJSONValue(src, got, opts)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
				return fmt.Errorf("options %d, %.40q into %T: got %#v, %v; want %#v, %v", opts, src, want, got, gerr, want, werr)
			}
		}
	}
	return nil
}

// TestFromJSONAllocations: converting a record through JSON reuses a kept
// decoder (and its buffer) rather than making one a call.
func TestFromJSONAllocations(t *testing.T) {
	if raceBuild {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	type rec struct {
		ID    int    `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
		Phone string `json:"_phone"`
	}
	r := rec{ID: 7, Name: "Ann", Email: "ann@example.com", Phone: "555-0100"}
	if _, err := FromJSON(r); err != nil {
		t.Fatal(err)
	}
	// 16 on amd64: the JSON encoding, the map, its entries, strings and
	// number; a decoder made for each call (with its reader and buffer)
	// made 21
	if n := testing.AllocsPerRun(100, func() {
		if _, err := FromJSON(r); err != nil {
			t.Fatal(err)
		}
	}); n > 17 {
		t.Errorf("FromJSON of a record: %.0f allocations, want at most 17", n)
	} else {
		t.Logf("FromJSON of a record: %.0f allocations", n)
	}
}
