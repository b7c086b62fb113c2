package messages

import (
	"encoding/binary"
	"fmt"
)

// Limits of a msgpack message that CheckBounds enforces while scanning,
// before anything is decoded.
const (
	// MaxNesting bounds how deeply arrays and maps may nest. The decoder
	// recurses once per level (a 1 MiB message of nested one-element arrays
	// is a million levels deep) and so does every walk over the decoded
	// value.
	MaxNesting = 512
	// MaxValues bounds the values of a message of up to 512 KiB; a larger
	// message may hold one value per two bytes (MaxValuesFor). Every
	// scalar, array, map and map key counts one. A decoded value costs
	// tens of bytes (an empty map about 60), so without a bound a 1 MiB
	// message of a million empty maps becomes 60 MB of heap; with it a
	// message decodes to at most ~16 MB, or ~30 bytes per byte of a larger
	// one (a large tool result), whose decoded values a program's memory
	// budget is charged for as they are built.
	MaxValues = 1 << 18
)

// CheckBounds walks msgpack data without decoding it and reports an error
// when a declared string, binary, extension, array or map length does not fit
// in the bytes that follow, when containers nest deeper than MaxNesting, or
// when the message holds more than MaxValuesFor(len(data)) values. The msgpack decoder
// allocates a slice of the declared length before reading its elements and
// recurses once per nesting level, so a 10-byte message claiming a
// billion-element array, or a small one nested a million levels deep, would
// exhaust memory or stack; Unmarshal calls CheckBounds first, so every
// decoder of this package is protected. It runs in O(len(data)) and
// allocates only for data nesting deeper than checkBoundsStack levels.
func CheckBounds(data []byte) error {
	_, err := CheckBoundsMaps(data)
	return err
}

// CheckBoundsMaps is CheckBounds that also counts the maps data holds,
// nested ones and empty ones included, so that a decoder can size what it
// makes for them before it decodes.
func CheckBoundsMaps(data []byte) (maps int, err error) {
	// open[i] counts the values still to read in the i-th open container;
	// the outermost level is the one top-level value. It starts in a small
	// array on the stack (one sized for MaxNesting would make every new
	// goroutine that checks a message grow its stack) and moves to the
	// heap only for deeper data.
	var stack [checkBoundsStack]int
	open := append(stack[:0], 1)
	pos, values := 0, 0
	maxValues := MaxValuesFor(int64(len(data)))
	pending := 1 // values still to read, over every open container
	for len(open) > 0 {
		top := len(open) - 1
		if open[top] == 0 {
			open = open[:top]
			continue
		}
		if pos >= len(data) {
			return 0, fmt.Errorf("messages: msgpack truncated at byte %d", pos)
		}
		open[top]--
		pending--
		values++
		if int64(values) > maxValues {
			return 0, fmt.Errorf("messages: msgpack holds more than %d values (at byte %d)", maxValues, pos)
		}
		c := data[pos]
		pos++
		rest := len(data) - pos
		var skip, items int // payload bytes to skip; nested values announced
		var lenBytes int
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items, container = 2*int(c&0x0f), true
			maps++
		case c >= 0x90 && c <= 0x9f:
			items, container = int(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			lenBytes = 1
		case c == 0xc5 || c == 0xda:
			lenBytes = 2
		case c == 0xc6 || c == 0xdb:
			lenBytes = 4
		case c == 0xc7:
			lenBytes, skip = 1, 1
		case c == 0xc8:
			lenBytes, skip = 2, 1
		case c == 0xc9:
			lenBytes, skip = 4, 1
		case c == 0xca:
			skip = 4
		case c == 0xcb:
			skip = 8
		case c == 0xcc || c == 0xd0:
			skip = 1
		case c == 0xcd || c == 0xd1:
			skip = 2
		case c == 0xce || c == 0xd2:
			skip = 4
		case c == 0xcf || c == 0xd3:
			skip = 8
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc, c == 0xde:
			if rest < 2 {
				return 0, fmt.Errorf("messages: msgpack truncated at byte %d", pos)
			}
			items, container = int(binary.BigEndian.Uint16(data[pos:])), true
			pos += 2
		case c == 0xdd, c == 0xdf:
			if rest < 4 {
				return 0, fmt.Errorf("messages: msgpack truncated at byte %d", pos)
			}
			items, container = int(binary.BigEndian.Uint32(data[pos:])), true
			pos += 4
		default:
			return 0, fmt.Errorf("messages: msgpack invalid code 0x%02x at byte %d", c, pos-1)
		}
		if c == 0xde || c == 0xdf {
			items *= 2
			maps++
		}
		if lenBytes > 0 {
			if rest < lenBytes {
				return 0, fmt.Errorf("messages: msgpack truncated at byte %d", pos)
			}
			var n int
			switch lenBytes {
			case 1:
				n = int(data[pos])
			case 2:
				n = int(binary.BigEndian.Uint16(data[pos:]))
			case 4:
				n = int(binary.BigEndian.Uint32(data[pos:]))
			}
			pos += lenBytes
			skip += n
		}
		if skip > len(data)-pos {
			return 0, fmt.Errorf("messages: msgpack length %d at byte %d exceeds the %d bytes left", skip, pos, len(data)-pos)
		}
		pos += skip
		if !container {
			continue
		}
		// Every announced value takes at least one byte, and so does every
		// value still pending in the containers already open.
		if items > len(data)-pos || pending+items > len(data)-pos {
			return 0, fmt.Errorf("messages: msgpack container of %d values at byte %d exceeds the %d bytes left", items, pos, len(data)-pos)
		}
		if items == 0 {
			continue
		}
		if len(open) > MaxNesting {
			return 0, fmt.Errorf("messages: msgpack nested deeper than %d levels at byte %d", MaxNesting, pos)
		}
		if len(open) == cap(open) {
			// Deeper than the array: one slice for every level allowed.
			open = append(make([]int, 0, MaxNesting+1), open...)
		}
		open = append(open, items)
		pending += items
	}
	return maps, nil
}

// checkBoundsStack is how many nesting levels CheckBounds tracks without
// allocating: deeper than any message the fleet sends.
const checkBoundsStack = 32

// MaxValuesFor bounds the values of one encoded value of size bytes, a
// message or a large tool result read as a stream: MaxValues, or one
// value per two bytes of a value over 512 KiB. The bound scales with the
// data, so a result of any size can be read, and a small message still
// never decodes into a large heap.
func MaxValuesFor(size int64) int64 { return max(MaxValues, size/2) }
