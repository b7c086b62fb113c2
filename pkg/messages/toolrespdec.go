package messages

import "math"

// A tool response is read at every tool call. ReadToolResult reads the
// form a tool service writes for a result (a map of "v", "call_id" and
// "result", each at most once, string keys) without the msgpack
// decoder's reflection and with no copy: the call id and the result's
// encoding are subslices of data. Anything else (an error, a result
// stored apart, an unknown or repeated key, another encoding of a field,
// trailing bytes, data CheckBounds refuses) is left to the decoder.

// ReadToolResult reads data, a msgpack ToolResponse that carries a
// result, and returns its version, its call id's bytes and its result's
// encoding (nil when it has no "result" key or its result is nil), all
// within data, and true; false when data is in any other form, which is
// for Unmarshal. When it returns true, Unmarshal of data into a struct of ToolResponse's "v",
// "call_id", "result" (a msgpack.RawMessage), "result_ref" and "error"
// fields reads the same version, call id and result bytes, and no
// result_ref or error (FuzzToolResultReader).
func ReadToolResult(data []byte) (version int, callID, result []byte, ok bool) {
	if CheckBounds(data) != nil {
		return 0, nil, nil, false
	}
	r := approvalReader{data: data}
	n, ok := r.mapLen()
	if !ok {
		return 0, nil, nil, false
	}
	var seenV, seenID, seenResult bool
	for range n {
		key, ok := r.rawString()
		if !ok {
			return 0, nil, nil, false
		}
		switch string(key) {
		case "v":
			v, ok := r.int()
			if !ok || seenV || v < math.MinInt || v > math.MaxInt {
				return 0, nil, nil, false
			}
			version, seenV = int(v), true
		case "call_id":
			c, ok := r.byte()
			if !ok || seenID || !isStrCode(c) {
				return 0, nil, nil, false
			}
			r.pos--
			if callID, ok = r.rawString(); !ok {
				return 0, nil, nil, false
			}
			seenID = true
		case "result":
			start := r.pos
			if seenResult || !r.skip() {
				return 0, nil, nil, false
			}
			result, seenResult = data[start:r.pos:r.pos], true
			if len(result) == 1 && result[0] == 0xc0 {
				result = nil // the decoder's RawMessage of a nil
			}
		default:
			return 0, nil, nil, false
		}
	}
	if r.pos != len(data) {
		return 0, nil, nil, false
	}
	return version, callID, result, true
}

// isStrCode reports whether c starts a msgpack string (not a binary,
// which the decoder reads into a string too, but which no tool service
// writes for a call id).
func isStrCode(c byte) bool {
	return c >= 0xa0 && c <= 0xbf || c == 0xd9 || c == 0xda || c == 0xdb
}

// skip reads past one value of any type, containers with what they hold.
func (r *approvalReader) skip() bool {
	for pending := 1; pending > 0; pending-- {
		c, ok := r.byte()
		if !ok {
			return false
		}
		var size, count int // bytes that follow, values that follow
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			count = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			count = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf, c >= 0xc4 && c <= 0xc6, c >= 0xd9 && c <= 0xdb:
			r.pos--
			if _, ok := r.rawString(); !ok {
				return false
			}
		case c >= 0xc7 && c <= 0xc9: // ext 8, 16, 32: length, type, data
			n, ok := r.length(1<<(c-0xc7), 1)
			if !ok {
				return false
			}
			size = 1 + n
		case c == 0xca:
			size = 4
		case c == 0xcb:
			size = 8
		case c >= 0xcc && c <= 0xcf:
			size = 1 << (c - 0xcc)
		case c >= 0xd0 && c <= 0xd3:
			size = 1 << (c - 0xd0)
		case c >= 0xd4 && c <= 0xd8: // fixext 1 to 16: type, data
			size = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xdd:
			n, ok := r.length(2<<(c-0xdc), 1)
			if !ok {
				return false
			}
			count = n
		case c == 0xde || c == 0xdf:
			n, ok := r.length(2<<(c-0xde), 2)
			if !ok {
				return false
			}
			count = 2 * n
		default: // 0xc1, never used
			return false
		}
		if size > len(r.data)-r.pos {
			return false
		}
		r.pos += size
		pending += count
	}
	return true
}
