package messages

import (
	"encoding/binary"
	"fmt"
)

// CheckBounds walks msgpack data without decoding it and reports an error
// when a declared string, binary, extension, array or map length does not fit
// in the bytes that follow. The msgpack decoder allocates a slice of the
// declared length before reading its elements, so a 10-byte message claiming
// a billion-element array would allocate gigabytes; Unmarshal calls
// CheckBounds first, so every decoder of this package is protected. It runs in O(len(data)) with no
// allocation.
func CheckBounds(data []byte) error {
	pos := 0
	pending := 1 // values still to read
	for pending > 0 {
		if pos >= len(data) {
			return fmt.Errorf("messages: msgpack truncated at byte %d", pos)
		}
		c := data[pos]
		pos++
		pending--
		rest := len(data) - pos
		var skip, items int // payload bytes to skip; nested values announced
		var lenBytes int
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
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
				return fmt.Errorf("messages: msgpack truncated at byte %d", pos)
			}
			items = int(binary.BigEndian.Uint16(data[pos:]))
			pos += 2
		case c == 0xdd, c == 0xdf:
			if rest < 4 {
				return fmt.Errorf("messages: msgpack truncated at byte %d", pos)
			}
			items = int(binary.BigEndian.Uint32(data[pos:]))
			pos += 4
		default:
			return fmt.Errorf("messages: msgpack invalid code 0x%02x at byte %d", c, pos-1)
		}
		if c == 0xde || c == 0xdf {
			items *= 2
		}
		if lenBytes > 0 {
			if rest < lenBytes {
				return fmt.Errorf("messages: msgpack truncated at byte %d", pos)
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
			return fmt.Errorf("messages: msgpack length %d at byte %d exceeds the %d bytes left", skip, pos, len(data)-pos)
		}
		pos += skip
		// Every announced value takes at least one byte.
		if items > len(data)-pos || pending+items > len(data)-pos {
			return fmt.Errorf("messages: msgpack container of %d values at byte %d exceeds the %d bytes left", items, pos, len(data)-pos)
		}
		pending += items
	}
	return nil
}
