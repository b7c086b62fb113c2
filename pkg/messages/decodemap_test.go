package messages

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// looseDecodeMap is DecodeMap reading each key with DecodeInterfaceLoose,
// as it read every key before string keys were read apart.
func looseDecodeMap(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil || n == -1 {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		k, err := d.DecodeInterfaceLoose()
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterfaceLoose()
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			ks = fmt.Sprint(k)
		}
		m[ks] = v
	}
	return m, nil
}

// DecodeMap reads every kind of key as DecodeInterfaceLoose and fmt.Sprint
// read it: strings short and long, binary, numbers, booleans, nil; and a
// truncated key is an error.
func TestDecodeMapKeys(t *testing.T) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	keys := []func() error{
		func() error { return e.EncodeString("id") },
		func() error { return e.EncodeString(strings.Repeat("k", 40)) },  // str8
		func() error { return e.EncodeString(strings.Repeat("l", 300)) }, // str16
		func() error { return e.EncodeBytes([]byte("raw")) },             // bin8
		func() error { return e.EncodeInt(-7) },                          // a number
		func() error { return e.EncodeUint(1 << 40) },                    // a wide number
		func() error { return e.EncodeBool(true) },                       // a boolean
		func() error { return e.EncodeNil() },                            // nil
		func() error { return e.EncodeFloat64(1.5) },                     // a float
		func() error { return e.EncodeString("") },                       // empty
	}
	if err := e.EncodeMapLen(len(keys)); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if err := k(); err != nil {
			t.Fatal(err)
		}
		if err := e.EncodeInt(int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	data := buf.Bytes()
	got, err := DecodeMap(msgpack.NewDecoder(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := looseDecodeMap(msgpack.NewDecoder(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.(map[string]any)) != len(keys) {
		t.Errorf("DecodeMap = %v, want %v", got, want)
	}
	// cut inside the long string key
	if _, err := DecodeMap(msgpack.NewDecoder(bytes.NewReader(data[:20]))); err == nil {
		t.Error("a truncated key decoded")
	}
}

// A map's string keys cost one allocation each, their string, not a boxed
// interface besides.
func TestDecodeMapAllocations(t *testing.T) {
	data, err := msgpack.Marshal(map[string]int{"id": 1, "name": 2, "email": 3, "region": 4, "tier": 5, "phone": 6})
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(data)
	d := msgpack.NewDecoder(r)
	n := testing.AllocsPerRun(100, func() {
		r.Reset(data)
		d.Reset(r)
		m, err := DecodeMap(d)
		if err != nil || len(m.(map[string]any)) != 6 {
			t.Fatalf("%v, %v", m, err)
		}
	})
	// the map, its table and the six keys
	if n > 8 {
		t.Errorf("a map of six keys: %v allocations, want at most 8", n)
	}
}
