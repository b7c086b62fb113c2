//go:build ptc_swissmaps && !go1.27

package core

import (
	"sync/atomic"
	"unsafe"
)

// Built only with the tag ptc_swissmaps (off by default): this file reads
// the Go runtime's private map layout, which no Go specification or API
// promises, so the default build reads fields with plain map reads
// (field_plain.go).
//
// The runtime's map (internal/runtime/maps, Go 1.26): a header whose
// directory is empty while the map holds at most eight entries, its one
// group then at dirPtr: a control word with one byte per slot (high bit
// clear: the slot is full) and eight key/value slots. slotHit and slotScan
// read only such a small map, and only after slotLayoutOK has checked the
// layout against maps the runtime built; on a newer Go (field_plain.go)
// or a failed check every read is a plain map read.

// FieldHint is an inline cache: the slot index the name was last found
// at, and the address of the bytes of the key string found there. A hint
// serves one name (a keyword's): a key at that address, of the name's
// length, is the name.
type FieldHint struct {
	slot atomic.Uint32
	key  atomic.Pointer[byte]
}

// LookupField returns src[name] and whether it is present, reading the
// slot hint names first (hint may be nil): the hinted slot (slotHit),
// then lookupFieldSlow.
func LookupField(src map[string]any, name string, hint *FieldHint) (any, bool) {
	if hint != nil {
		if x, ok := slotHit(src, name, hint); ok {
			return x, true
		}
	}
	return lookupFieldSlow(src, name, hint)
}

// RecordField returns (kw m) for the host record m (nil: the empty
// record), as KwGet reads it (recordValue), read with the keyword's hint.
func RecordField(m map[string]any, kw *Keyword) Value {
	return recordValue(kw, ReadField(m, kw.Name, &kw.slot))
}

// ReadField is lookupField without the presence (nil when absent).
func ReadField(src map[string]any, name string, hint *FieldHint) any {
	x, _ := LookupField(src, name, hint)
	return x
}

// lookupFieldSlow is lookupField past the hinted slot: the group's slots
// when src is small (updating the hint), else the map read.
func lookupFieldSlow(src map[string]any, name string, hint *FieldHint) (any, bool) {
	if hint != nil {
		if x, ok, small := slotScan(src, name, hint); small {
			return x, ok
		}
	}
	x, ok := src[name]
	return x, ok
}

// swissHeader is the start of the runtime's map header.
type swissHeader struct {
	_      uint64  // used
	_      uintptr // seed
	dirPtr unsafe.Pointer
	dirLen int
}

// swissGroup is a small map's one group for map[string]any.
type swissGroup struct {
	ctrl  uint64
	slots [8]struct {
		key string
		val any
	}
}

// slotReads is whether the layout check passed (set once, at init).
var slotReads = slotLayoutOK()

// groupOf returns src's one group when src is a small map holding
// entries (the layout as checked by slotLayoutOK).
func groupOf(src map[string]any) *swissGroup {
	h := *(**swissHeader)(unsafe.Pointer(&src))
	if h == nil || h.dirLen != 0 || h.dirPtr == nil {
		return nil
	}
	return (*swissGroup)(h.dirPtr)
}

// recordGroup returns the address of m's one group when m is a small map
// and the layout check passed (for prefetch), else nil.
func recordGroup(m map[string]any) unsafe.Pointer {
	if !slotReads {
		return nil
	}
	return unsafe.Pointer(groupOf(m))
}

// slotHit reads the hinted slot of a small map when it holds the key
// string the hint last matched (same bytes, same length: the same key).
func slotHit(src map[string]any, name string, hint *FieldHint) (any, bool) {
	if !slotReads {
		return nil, false
	}
	g := groupOf(src)
	if g == nil {
		return nil, false
	}
	j := hint.slot.Load() & 7
	s := &g.slots[j]
	if g.ctrl>>(8*j)&0x80 == 0 && len(s.key) == len(name) && unsafe.StringData(s.key) == hint.key.Load() {
		return s.val, true
	}
	return nil, false
}

// slotScan looks name up in a small map's slots, the hinted one first,
// and points the hint at the slot found. small is false when src is not
// a small map holding entries (the caller reads it as Go does).
func slotScan(src map[string]any, name string, hint *FieldHint) (x any, ok, small bool) {
	if !slotReads {
		return nil, false, false
	}
	g := groupOf(src)
	if g == nil {
		return nil, false, false
	}
	x, ok = g.scan(name, hint)
	return x, ok, true
}

// scan finds name among g's full slots, the hinted one first, and points
// the hint at it.
func (g *swissGroup) scan(name string, hint *FieldHint) (any, bool) {
	j := hint.slot.Load() & 7
	if s := &g.slots[j]; g.ctrl>>(8*j)&0x80 == 0 && s.key == name {
		hint.key.Store(unsafe.StringData(s.key))
		return s.val, true
	}
	for i := range uint32(8) {
		if s := &g.slots[i]; g.ctrl>>(8*i)&0x80 == 0 && len(s.key) == len(name) && s.key == name {
			hint.slot.Store(i)
			hint.key.Store(unsafe.StringData(s.key))
			return s.val, true
		}
	}
	return nil, false
}

// slotLayoutOK checks the group reads against the runtime's own: maps of
// one to eight entries, built in different orders and after deletes,
// must give every key's value and no absent key, and a map of many
// entries must not look small.
func slotLayoutOK() bool {
	names := []string{"id", "name", "category", "price", "qty", "active", "text", "user"}
	var hint FieldHint
	for n := 1; n <= len(names); n++ {
		for rot := range n {
			m := make(map[string]any, n)
			for i := range n {
				k := names[(i+rot)%n]
				m[k] = k + "!"
			}
			if rot%2 == 1 {
				delete(m, names[rot])
				m[names[rot]] = names[rot] + "!"
			}
			g := groupOf(m)
			if g == nil {
				return false
			}
			for _, k := range names {
				want, in := m[k]
				if got, ok := g.scan(k, &hint); ok != in || got != want {
					return false
				}
			}
		}
	}
	big := make(map[string]any, 64)
	for i := range 64 {
		big[string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	return groupOf(big) == nil
}
