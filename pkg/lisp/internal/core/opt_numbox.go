package core

// Boxing numbers and strings into a Value (an interface). Go boxes an
// int64 or float64 into 8 bytes from its tiny-object allocator and a
// string into a 16-byte header; an integer in the small-int cache
// (value.go) is not allocated at all. A Value is never written after it
// is made: a box is Go's own, made by an ordinary conversion, and no
// code in the package reaches into an interface value's representation.
//
// A converter (host data, wire data) also shares the box of repeated
// short strings, such as categories or statuses: those records then point
// at one header, which stays in cache when records are scanned.

// boxer boxes numbers and strings. A Thread has one for arithmetic
// results, a converter one (with intern set) for host data.
type boxer struct {
	// Intern (converters) makes interned map short strings already boxed
	// to their box.
	Intern   bool
	interned map[string]Value
	// few holds the first strings interned (boxed), looked up in turn:
	// a small result (a record) interns a few, for which the map, made
	// once they are more, would cost more than the scan
	few  [internFew]Value
	nFew int
}

// internFew is how many interned strings a boxer holds before it makes
// its map.
const internFew = 8

// internMax bounds the strings a converter interns (count and length), so
// data made of unique strings does not grow a large map.
const (
	internMax    = 4096
	internMaxLen = 64
)

// BoxInt returns n as a Value (Int: small integers from the cache).
func (b *boxer) BoxInt(n int64) Value { return Int(n) }

// BoxFloat returns f as a Value.
func (b *boxer) BoxFloat(f float64) Value { return f }

// boxString returns s as a Value; a converter (intern) reuses the box of
// an equal short string.
func (b *boxer) boxString(s string) Value {
	v, _ := b.internString(s)
	return v
}

// internString is boxString reporting whether it made a new box (fresh)
// rather than reusing an interned one, so a decoder charges a string's
// box and bytes once however often it repeats.
func (b *boxer) internString(s string) (v Value, fresh bool) {
	if !b.Intern || len(s) > internMaxLen {
		return s, true
	}
	if v, ok := b.lookup(s); ok {
		return v, false
	}
	return b.internNew(s)
}

// lookup returns the box of s when s is interned.
func (b *boxer) lookup(s string) (Value, bool) {
	if b.interned != nil {
		v, ok := b.interned[s]
		return v, ok
	}
	for _, v := range b.few[:b.nFew] {
		if v.(string) == s {
			return v, true
		}
	}
	return nil, false
}

// lookupBytes is lookup of string(p), which it does not make.
func (b *boxer) lookupBytes(p []byte) (Value, bool) {
	if b.interned != nil {
		v, ok := b.interned[string(p)]
		return v, ok
	}
	for _, v := range b.few[:b.nFew] {
		if v.(string) == string(p) {
			return v, true
		}
	}
	return nil, false
}

// internBytes is internString of string(p), which it makes only when p
// is not interned yet.
func (b *boxer) internBytes(p []byte) (v Value, fresh bool) {
	if b.Intern && len(p) <= internMaxLen {
		if v, ok := b.lookupBytes(p); ok {
			return v, false
		}
		return b.internNew(string(p))
	}
	return string(p), true
}

// internNew interns s, not interned yet.
func (b *boxer) internNew(s string) (v Value, fresh bool) {
	v = s
	if b.interned == nil {
		if b.nFew < internFew {
			b.few[b.nFew] = v
			b.nFew++
			return v, true
		}
		b.interned = make(map[string]Value, 2*internFew)
		for i, f := range b.few {
			b.interned[f.(string)] = f
			b.few[i] = nil
		}
		b.nFew = 0
	}
	if len(b.interned) < internMax {
		b.interned[s] = v
	}
	return v, true
}
