package lisp

import "unsafe"

// Boxing numbers into a Value (an interface) makes Go allocate 8 bytes per
// int64 or float64 outside the small-int cache. Arithmetic in a loop
// (an accumulator, a counter) would then allocate on every step, and the
// allocator plus the GC it triggers cost more than the arithmetic itself.
// A Thread instead hands out boxes from a chunk of numbers it allocates
// 128 at a time: one allocation per 128 results.
//
// This builds an interface value by hand from its two words (type, data),
// the layout every Go release has used for an empty interface. The boxes
// are written once before the value is published and never again, so the
// values stay immutable and safe to share like any other Value; a chunk
// lives as long as any box in it.

// eface is the memory layout of an empty interface (any).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// boxChunk is how many numbers a Thread boxes per allocation once it
// boxes many; its first chunk of each kind holds firstBoxChunk (most runs
// box a few numbers, and a run's fixed cost is mostly its allocations).
const (
	boxChunk      = 128
	firstBoxChunk = 8
)

var (
	int64Type   = typeOf(int64(1 << 40))
	float64Type = typeOf(float64(0.5))
	stringType  = typeOf("s")
)

func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// boxer hands out number boxes from chunks (see above). A Thread has one
// for arithmetic results, a converter one for host data: the numbers of
// consecutive records then sit next to each other in memory.
type boxer struct {
	ints   []int64
	floats []float64
	strs   []string
	// intern (converters) makes interned map short strings already boxed
	// to their box: repeated values such as categories or statuses then
	// share one box, which stays in cache when records are scanned.
	intern   bool
	interned map[string]Value
}

// internMax bounds the strings a converter interns (count and length), so
// data made of unique strings does not grow a large map.
const (
	internMax    = 4096
	internMaxLen = 64
)

// boxInt returns n as a Value without a per-value allocation.
func (b *boxer) boxInt(n int64) Value {
	if n >= -128 && n <= smallIntMax {
		return smallInts[n+128]
	}
	return boxIn(&b.ints, int64Type, n)
}

// boxFloat returns f as a Value without a per-value allocation.
func (b *boxer) boxFloat(f float64) Value { return boxIn(&b.floats, float64Type, f) }

// boxIn stores v in the next free box of *chunk (a new chunk when it is
// used up) and returns the interface of type typ pointing at it.
func boxIn[T any](chunk *[]T, typ unsafe.Pointer, v T) Value {
	if len(*chunk) == 0 {
		n := boxChunk
		if *chunk == nil {
			n = firstBoxChunk
		}
		*chunk = make([]T, n)
	}
	p := &(*chunk)[0]
	*chunk = (*chunk)[1:] // stays non-nil when used up: the next chunk is full size
	*p = v
	var out Value
	*(*eface)(unsafe.Pointer(&out)) = eface{typ: typ, data: unsafe.Pointer(p)}
	return out
}

// boxString returns s as a Value; the string header sits in a chunk, and
// a converter (intern) reuses the box of an equal short string.
func (b *boxer) boxString(s string) Value {
	if !b.intern || len(s) > internMaxLen {
		return boxIn(&b.strs, stringType, s)
	}
	if v, ok := b.interned[s]; ok {
		return v
	}
	v := boxIn(&b.strs, stringType, s)
	if b.interned == nil {
		b.interned = map[string]Value{}
	}
	if len(b.interned) < internMax {
		b.interned[s] = v
	}
	return v
}
