//go:build !go1.27

package lisp

import "unsafe"

// The runtime's map (internal/runtime/maps, Go 1.24 to 1.26): a header
// whose directory is empty while the map holds at most eight entries, its
// one group then at dirPtr: a control word with one byte per slot (high
// bit clear: the slot is full) and eight key/value slots. readSlot reads
// only such a small map, and only after slotLayoutOK has checked the
// layout against maps the runtime built; on a newer Go (field_plain.go)
// or a failed check every read is a plain map read.

// swissHeader is the start of the runtime's map header.
type swissHeader struct {
	used   uint64
	seed   uintptr
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

// readSlot returns src[name] when src is a small map and name sits in a
// full slot: the hinted slot first, then the others (which updates the
// hint). ok is false when src is not small or name is absent.
func readSlot(src map[string]any, name string, hint *fieldHint) (any, bool) {
	h := *(**swissHeader)(unsafe.Pointer(&src))
	if h == nil || h.dirLen != 0 || h.dirPtr == nil {
		return nil, false
	}
	g := (*swissGroup)(h.dirPtr)
	j := hint.Load() & 7
	if s := &g.slots[j]; g.ctrl>>(8*j)&0x80 == 0 && len(s.key) == len(name) &&
		(unsafe.StringData(s.key) == unsafe.StringData(name) || s.key == name) {
		return s.val, true
	}
	for i := range uint32(8) {
		if s := &g.slots[i]; g.ctrl>>(8*i)&0x80 == 0 && len(s.key) == len(name) && s.key == name {
			hint.Store(i)
			return s.val, true
		}
	}
	return nil, false
}

// slotLayoutOK checks readSlot against the runtime's own reads: maps of
// one to eight entries, built in different orders and after deletes,
// must give every key's value and no absent key.
func slotLayoutOK() bool {
	names := []string{"id", "name", "category", "price", "qty", "active", "text", "user"}
	var hint fieldHint
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
			for _, k := range names {
				want, in := m[k]
				got, ok := readSlot(m, k, &hint)
				if ok != in || got != want {
					return false
				}
			}
		}
	}
	big := make(map[string]any, 64)
	for i := range 64 {
		big[string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	if _, ok := readSlot(big, "aa", &hint); ok {
		return false // a map of many entries is not read by slot
	}
	return true
}
