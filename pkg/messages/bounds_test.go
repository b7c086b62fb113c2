package messages

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestCheckBounds(t *testing.T) {
	good, err := Marshal(validMission())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"mission", good, ""},
		{"scalars", []byte{0x93, 0x01, 0xc0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"empty", nil, "truncated"},
		{"huge array", []byte{0x81, 0xa1, 'a', 0xdd, 0x55, 0x25, 0xa8, 0x70, 0xc0}, "container of"},
		{"huge map", []byte{0xdf, 0x10, 0, 0, 0}, "container of"},
		{"huge string", []byte{0xdb, 0x7f, 0, 0, 0, 'x'}, "exceeds"},
		{"huge ext", []byte{0xc9, 0x7f, 0, 0, 0, 1}, "exceeds"},
		{"truncated array16", []byte{0xdc, 0x01}, "truncated"},
		{"invalid code", []byte{0xc1}, "invalid code"},
		{"fixext8", []byte{0xd7, 0xff, 1, 2, 3, 4, 5, 6, 7, 8}, ""},
		{"short fixext8", []byte{0xd7, 0xff, 1}, "exceeds"},
		{"nested pending", []byte{0x92, 0x92, 0x01}, "container of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBounds(tt.data)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckBounds() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckBounds() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzCheckBounds(f *testing.F) {
	good, _ := Marshal(validMission())
	f.Add(good)
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckBounds(data) != nil {
			return
		}
		var v any
		_ = Unmarshal(data, &v) // must not panic or allocate beyond the input's claims
	})
}

// TestCheckBoundsNestingAndValues: a 1 MiB message nested a million levels
// deep and one of a million empty maps are refused while scanning, without
// allocating more than an error and before the decoder sees them; messages just inside the
// limits decode.
func TestCheckBoundsNestingAndValues(t *testing.T) {
	const mib = 1 << 20
	deep := bytes.Repeat([]byte{0x91}, mib) // [[[[...]]]]
	deep[len(deep)-1] = 0xc0
	maps := make([]byte, 0, mib)
	maps = append(maps, 0xdd, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(maps[1:], mib-5)
	maps = append(maps, bytes.Repeat([]byte{0x80}, mib-5)...) // [{} {} {} ...]

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"million levels", deep, "nested deeper than 512 levels at byte 513"},
		{"million empty maps", maps, "more than 524288 values"}, // MaxValuesFor(1 MiB)
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckBounds(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckBounds = %v, want %q", err, c.want)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var v any
			err := Unmarshal(c.data, &v)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Unmarshal = %v, want %q", err, c.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
				t.Errorf("Unmarshal allocated %d bytes before refusing", grew)
			}
		})
	}

	ok := append([]byte{}, deep[len(deep)-MaxNesting-1:]...) // 512 levels, then nil
	if err := CheckBounds(ok); err != nil {
		t.Errorf("%d levels: %v", MaxNesting, err)
	}
	var v any
	if err := Unmarshal(ok, &v); err != nil {
		t.Errorf("decode %d levels: %v", MaxNesting, err)
	}
	if err := CheckBounds(append([]byte{0x91}, ok...)); err == nil {
		t.Errorf("%d levels accepted", MaxNesting+1)
	}
	many := []byte{0xdd, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(many[1:], MaxValues-1)
	many = append(many, make([]byte, MaxValues-1)...) // MaxValues-1 zeros in one array
	var arr []any
	if err := Unmarshal(many, &arr); err != nil || len(arr) != MaxValues-1 {
		t.Errorf("array of %d values: %v", MaxValues-1, err)
	}
	binary.BigEndian.PutUint32(many[1:], MaxValues)
	many = append(many, 0)
	if err := CheckBounds(many); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("array of %d values: %v", MaxValues, err)
	}
}

// BenchmarkRejectNested measures refusing a 1 MiB message nested one level
// per byte (the decoder alone took about a second and half a gigabyte).
func BenchmarkRejectNested(b *testing.B) {
	deep := bytes.Repeat([]byte{0x91}, 1<<20)
	deep[len(deep)-1] = 0xc0
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if Unmarshal(deep, &v) == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkScanVsDecode compares the bounds scan of a ~200 KiB result of
// 2,000 records with decoding it: the scan's share of Unmarshal.
func BenchmarkScanVsDecode(b *testing.B) {
	rows := make([]any, 2000)
	for i := range rows {
		rows[i] = map[string]any{"id": int64(i), "name": "customer name", "total": float64(i) * 1.5, "tags": []any{"a", "b"}}
	}
	data, err := Marshal(map[string]any{"rows": rows})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if err := CheckBounds(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v any
			if err := Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCheckBoundsDeep: nesting on either side of the levels CheckBounds
// tracks on its stack and of MaxNesting gives the same verdicts and error
// positions: each container's count is kept while deeper ones open and
// close, wherever it is stored.
func TestCheckBoundsDeep(t *testing.T) {
	// pairs: n arrays of two, each holding the next and a nil:
	// [[[... nil] nil] nil], 2n+1 bytes when whole.
	pairs := func(n, nils int) []byte {
		return append(bytes.Repeat([]byte{0x92}, n), bytes.Repeat([]byte{0xc0}, nils)...)
	}
	// maps: n maps of one entry {"k" {"k" ... nil}}.
	maps := func(n int) []byte {
		b := bytes.Repeat([]byte{0x81, 0xa1, 'k'}, n)
		return append(b, 0xc0)
	}
	for _, n := range []int{1, checkBoundsStack - 1, checkBoundsStack, checkBoundsStack + 1, 2 * checkBoundsStack, MaxNesting - 1, MaxNesting} {
		if err := CheckBounds(pairs(n, n+1)); err != nil {
			t.Errorf("%d levels of pairs: %v", n, err)
		}
		if err := CheckBounds(maps(n)); err != nil {
			t.Errorf("%d levels of maps: %v", n, err)
		}
		// One nil short: the outermost array misses its last value.
		if err := CheckBounds(pairs(n, n)); err == nil || !strings.Contains(err.Error(), "container of 2 values at byte "+itoa(n)) {
			t.Errorf("%d levels of pairs, one nil short: %v", n, err)
		}
		// Trailing bytes after the one value are not read.
		if err := CheckBounds(append(pairs(n, n+1), 0xc1)); err != nil {
			t.Errorf("%d levels of pairs and a byte after: %v", n, err)
		}
		// An invalid code where the innermost value's sibling is: its
		// position says the counts above it were kept.
		bad := pairs(n, n+1)
		bad[n+1] = 0xc1
		if err := CheckBounds(bad); err == nil || err.Error() != "messages: msgpack invalid code 0xc1 at byte "+itoa(n+1) {
			t.Errorf("%d levels, invalid code: %v", n, err)
		}
		// And where the outermost array's last value is: every level
		// below it closed in turn.
		bad = pairs(n, n+1)
		bad[2*n] = 0xc1
		if err := CheckBounds(bad); err == nil || err.Error() != "messages: msgpack invalid code 0xc1 at byte "+itoa(2*n) {
			t.Errorf("%d levels, invalid last code: %v", n, err)
		}
	}
	for _, n := range []int{MaxNesting + 1, MaxNesting + 2, 4 * MaxNesting} {
		want := "messages: msgpack nested deeper than 512 levels at byte 513"
		if err := CheckBounds(pairs(n, n+1)); err == nil || err.Error() != want {
			t.Errorf("%d levels of pairs: %v, want %q", n, err, want)
		}
		want = "messages: msgpack nested deeper than 512 levels at byte " + itoa(3*MaxNesting+1)
		if err := CheckBounds(maps(n)); err == nil || err.Error() != want {
			t.Errorf("%d levels of maps: %v, want %q", n, err, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCheckBoundsAllocs: checking a message nested no deeper than
// checkBoundsStack allocates nothing; deeper data allocates its stack of
// counts once.
func TestCheckBoundsAllocs(t *testing.T) {
	good, err := Marshal(validMission())
	if err != nil {
		t.Fatal(err)
	}
	shallow := append(bytes.Repeat([]byte{0x91}, checkBoundsStack-1), 0xc0)
	for name, data := range map[string][]byte{"mission": good, "shallow": shallow} {
		if n := testing.AllocsPerRun(100, func() {
			if err := CheckBounds(data); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per check, want 0", name, n)
		}
	}
	deep := append(bytes.Repeat([]byte{0x91}, MaxNesting), 0xc0)
	if n := testing.AllocsPerRun(100, func() {
		if err := CheckBounds(deep); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("%d levels: %v allocations per check, want 1", MaxNesting, n)
	}
}

// BenchmarkCheckBoundsFreshGoroutine checks a small message on a new
// goroutine each time, as the fleet does for each message it handles: a
// large frame would grow the goroutine's stack first.
func BenchmarkCheckBoundsFreshGoroutine(b *testing.B) {
	good, err := Marshal(validMission())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	done := make(chan error)
	for b.Loop() {
		go func() { done <- CheckBounds(good) }()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckBoundsMapsCounts: CheckBoundsMaps counts every map of the
// data, nested in maps and arrays, empty or not, of each map encoding,
// and nothing else.
func TestCheckBoundsMapsCounts(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{
		{int64(1), 0},
		{"s", 0},
		{[]any{int64(1), "a"}, 0},
		{map[string]any{}, 1},
		{map[string]any{"a": int64(1), "b": "x"}, 1},
		{map[string]any{"a": map[string]any{"b": map[string]any{}}, "c": []any{map[string]any{"d": 1.5}}}, 4},
		{[]any{map[string]any{"a": true}, map[string]any{"a": false}, nil}, 2},
	} {
		data, err := msgpack.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := CheckBoundsMaps(data); err != nil || n != c.want {
			t.Errorf("%v: %d maps, %v; want %d", c.v, n, err, c.want)
		}
	}
	// map16 (0xde) and map32 (0xdf) headers count as fixmaps do
	wide := map[string]any{}
	for i := range 20 {
		wide[fmt.Sprint("k", i)] = int64(i)
	}
	data, err := msgpack.Marshal([]any{wide, wide})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := CheckBoundsMaps(data); err != nil || n != 2 {
		t.Errorf("two map16: %d maps, %v", n, err)
	}
	map32 := []byte{0xdf, 0, 0, 0, 1, 0xa1, 'k', 0x80}
	if n, err := CheckBoundsMaps(map32); err != nil || n != 2 {
		t.Errorf("a map32 holding an empty fixmap: %d maps, %v", n, err)
	}
	if n, err := CheckBoundsMaps([]byte{0x81, 0xa1}); err == nil || n != 0 {
		t.Errorf("truncated: %d maps, %v", n, err)
	}
}
