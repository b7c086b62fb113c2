package signature

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"
)

type Base struct {
	ID      int64     `json:"id"`
	Created time.Time `json:"created"`
}

type Extra struct {
	Note string `json:"note"`
}

type Order struct {
	Base
	*Extra
	Customer string            `json:"customer"`
	Amount   float64           `json:"amount"`
	Paid     bool              `json:"paid,omitempty"`
	Discount *float64          `json:"discount"`
	Tags     []string          `json:"tags"`
	Lines    []Line            `json:"lines"`
	Meta     map[string]any    `json:"meta,omitzero"`
	Counts   map[int]int       `json:"counts"`
	Payload  []byte            `json:"payload"`
	Raw      any               `json:"raw"`
	Addr     net.IP            `json:"addr"`
	Version  int               `json:"version,string"`
	Skipped  string            `json:"-"`
	NoTag    uint8             ``
	Named    map[string]string `json:"named"`
	//lint:ignore U1000 an unexported field FromType must skip
	private int
	Grid    [2][2]int `json:"grid"`
}

type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type Node struct {
	Value int   `json:"value"`
	Next  *Node `json:"next"`
}

type Conflict struct {
	A
	B
	Name string `json:"name"`
}
type A struct {
	Name string `json:"name"`
	X    int    // untagged, so vet's duplicate-tag check stays quiet
}
type B struct {
	X string
	Y int `json:"y"`
}

func TestFromType(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[bool](), ":bool"},
		{reflect.TypeFor[int](), ":int"},
		{reflect.TypeFor[uint64](), ":int"},
		{reflect.TypeFor[float32](), ":float"},
		{reflect.TypeFor[string](), ":string"},
		{reflect.TypeFor[myString](), ":string"},
		{reflect.TypeFor[time.Time](), ":string"},
		{reflect.TypeFor[json.Number](), ":float"},
		{reflect.TypeFor[json.RawMessage](), ":any"},
		{reflect.TypeFor[time.Duration](), ":int"},
		{reflect.TypeFor[*time.Time](), ":string?"},
		{reflect.TypeFor[**int](), ":int?"},
		{reflect.TypeFor[[]byte](), ":string"},
		{reflect.TypeFor[[]int](), "[:int]"},
		{reflect.TypeFor[[]*int](), "[:int?]"},
		{reflect.TypeFor[any](), ":any"},
		{reflect.TypeFor[[]any](), "[:any]"},
		{reflect.TypeFor[map[string]any](), ":map"},
		{reflect.TypeFor[struct{}](), "{}"},
		{reflect.TypeFor[Line](), "{sku :string, qty :int}"},
		{reflect.TypeFor[Node](), ""}, // recursive: error below
		{reflect.TypeFor[Conflict](), "{y :int, name :string}"},
	} {
		got, err := FromType(tc.typ)
		if tc.want == "" {
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("FromType(%v) = %v, %v; want %s", tc.typ, got, err, tc.want)
		}
	}
	got, err := For[Order]()
	want := "{id :int, created :string, note :string?, customer :string, amount :float, paid :bool?, discount :float?, tags [:string], lines [{sku :string, qty :int}], meta :map?, counts :map, payload :string, raw :any, addr :string, version :string, NoTag :int, named :map, grid [[:int]]}"
	if err != nil || got.String() != want {
		t.Errorf("For[Order]() =\n%v, %v\nwant\n%s", got, err, want)
	}
	// The derived type parses back to itself.
	if got != nil {
		if again, err := ParseType(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("derived type does not round-trip: %v", err)
		}
	}
}

type Args struct {
	Query    string `json:"query"`
	Callback func() `json:"callback"`
}

type Wrapper struct {
	Query   string `json:"query"`
	Options Opts   `json:"options"`
}

type Opts struct {
	Limit int           `json:"limit"`
	Out   chan int      `json:"out"`
	C     complex128    `json:"c"`
	W     io.Writer     `json:"w"`
	M     map[bool]int  `json:"m"`
	F     []func() bool `json:"f"`
}

func TestFromTypeUnsupported(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[Args](), "Args.Callback: func type not supported"},
		{reflect.TypeFor[Wrapper](), "Wrapper.Options.Out: chan type not supported"},
		{reflect.TypeFor[struct {
			Query    string
			Callback func()
		}](), "struct { Query string; Callback func() }.Callback: func type not supported"},
		{reflect.TypeFor[struct{ C complex64 }](), "struct { C complex64 }.C: complex type not supported"},
		{reflect.TypeFor[struct{ W io.Writer }](), "struct { W io.Writer }.W: interface type io.Writer not supported"},
		{reflect.TypeFor[map[bool]int](), "map[bool]int: map key type bool not supported"},
		{reflect.TypeFor[map[string]func()](), "map[string]func()[]: func type not supported"},
		{reflect.TypeFor[[]func() bool](), "[]func() bool[]: func type not supported"},
		{reflect.TypeFor[Node](), "Node.Next: recursive type signature.Node not supported"},
		{reflect.TypeFor[struct {
			X int `json:"a b"`
		}](), `struct { X int "json:\"a b\"" }.X: field name "a b" cannot be written in a signature`},
		{reflect.TypeFor[chan int](), "chan int: chan type not supported"},
		{reflect.TypeFor[struct {
			//lint:ignore SA5008 the tag json:"-," names a field "-", which is what this case checks
			D string `json:"-,"`
		}](), `struct { D string "json:\"-,\"" }.D: field name "-" cannot be written in a signature`},
		{reflect.TypeFor[uintptr](), ""},
	} {
		_, err := FromType(tc.typ)
		if tc.want == "" {
			if err != nil {
				t.Errorf("FromType(%v) = %v", tc.typ, err)
			}
			continue
		}
		if errString(err) != tc.want {
			t.Errorf("FromType(%v) error\n got %s\nwant %s", tc.typ, errString(err), tc.want)
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindUnsupported || !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("FromType(%v) error is not KindUnsupported: %#v", tc.typ, err)
		}
	}
	if _, err := FromType(nil); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("FromType(nil) = %v", err)
	}
}

type SearchArgs struct {
	Query string `json:"query"`
	Limit *int   `json:"limit"`
	Sort  string `json:"sort,omitempty"`
}

type Hit struct {
	ID    int     `json:"id"`
	Score float64 `json:"score"`
}

func TestFromFunc(t *testing.T) {
	for _, tc := range []struct {
		fn   any
		want string
	}{
		{func(context.Context, SearchArgs) ([]Hit, error) { return nil, nil }, "(query :string, limit :int?, sort :string?) -> [{id :int, score :float}]"},
		{func(*SearchArgs) Hit { return Hit{} }, "(query :string, limit :int?, sort :string?) -> {id :int, score :float}"},
		{func(context.Context) error { return nil }, "() -> :any"},
		{func() {}, "() -> :any"},
		{func(struct{}) int { return 0 }, "() -> :int"},
		{func(context.Context, struct {
			Items []Line `json:"items"`
		}) (map[string]any, error) {
			return nil, nil
		}, "(items [{sku :string, qty :int}]) -> :map"},
	} {
		sig, err := FromFunc(tc.fn)
		if err != nil || sig.String() != tc.want {
			t.Errorf("FromFunc(%T) = %v, %v; want %s", tc.fn, sig, err, tc.want)
		}
	}
	for _, tc := range []struct {
		fn   any
		want string
	}{
		{42, "FromFunc needs a func, got int"},
		{nil, "FromFunc needs a func, got nil"},
		{func(int) int { return 0 }, "int: args must be a struct, got int"},
		{func(a, b SearchArgs) {}, "func(signature.SearchArgs, signature.SearchArgs): want at most one args parameter after the context"},
		{func(...int) {}, "func(...int): want at most one args parameter after the context"},
		{func() (int, int) { return 0, 0 }, "func() (int, int): want one result, optionally followed by an error"},
		{func(Args) {}, "Args.Callback: func type not supported"},
		{func() func() { return nil }, "func(): func type not supported"},
	} {
		_, err := FromFunc(tc.fn)
		if errString(err) != tc.want || !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("FromFunc(%T) error\n got %s\nwant %s", tc.fn, errString(err), tc.want)
		}
	}
	sig, err := ForFunc[SearchArgs, []Hit]()
	if err != nil || sig.String() != "(query :string, limit :int?, sort :string?) -> [{id :int, score :float}]" {
		t.Errorf("ForFunc = %v, %v", sig, err)
	}
	if _, err := ForFunc[map[string]any, int](); errString(err) != "map[string]interface {}: args must be a struct, got map" {
		t.Errorf("ForFunc[map] error = %v", err)
	}
}
