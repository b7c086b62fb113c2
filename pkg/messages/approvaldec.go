package messages

import (
	"encoding/binary"
	"math"
	"time"
)

// An approval record is read at each decision and at each resumption
// (the decider's list and the gate's). decodeApproval reads the form
// Marshal writes (a map of the record's fields, each at most once, string
// keys, times as the timestamp extension) without the msgpack decoder's
// reflection, into the Go values Unmarshal gives: its strings share one
// copy of the data, and the arguments' dynamic values come out plain
// (Normalize's form) as they are read instead of being boxed by the
// decoder and converted again. Anything else it does not read (an unknown
// key, a repeated one, an extension among the arguments, a map key that
// is not a string, another encoding of a field) is left to the msgpack
// decoder, so the result is Unmarshal's in every case.

// approvalField names a field of Approval in decodeApproval's bit set of
// the fields seen.
type approvalField uint32

const (
	afVersion approvalField = 1 << iota
	afMissionID
	afCall
	afState
	afTool
	afService
	afArgs
	afTurn
	afProgram
	afPosition
	afRule
	afPriority
	afSubmitter
	afRequestedAt
	afDeadline
	afDecidedBy
	afDecidedAt
	afReason
	afEditedArgs
)

// approvalReader reads an approval record from data; str is data as one
// string, whose substrings the record's strings are.
type approvalReader struct {
	data []byte
	str  string
	pos  int
}

// decodeApproval decodes data into a, which must be zero, and reports
// whether it could; on false a is unchanged and data is for the msgpack
// decoder. data has passed CheckBounds.
func decodeApproval(data []byte, a *Approval) bool {
	r := approvalReader{data: data}
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	var x Approval
	var seen approvalField
	for range n {
		key, ok := r.rawString()
		if !ok {
			return false
		}
		f := approvalFieldOf(key)
		if f == 0 || seen&f != 0 {
			return false
		}
		seen |= f
		switch f {
		case afVersion, afTurn:
			v, ok := r.int()
			if !ok || v < math.MinInt || v > math.MaxInt {
				return false
			}
			if f == afVersion {
				x.Version = int(v)
			} else {
				x.Turn = int(v)
			}
		case afRequestedAt, afDeadline, afDecidedAt:
			t, ok := r.time()
			if !ok {
				return false
			}
			switch f {
			case afRequestedAt:
				x.RequestedAt = t
			case afDeadline:
				x.Deadline = t
			default:
				x.DecidedAt = t
			}
		case afArgs, afEditedArgs:
			m, ok := r.argsMap()
			if !ok {
				return false
			}
			if f == afArgs {
				x.Args = m
			} else {
				x.EditedArgs = m
			}
		default:
			s, ok := r.string()
			if !ok {
				return false
			}
			*approvalString(&x, f) = s
		}
	}
	if r.pos != len(data) {
		return false
	}
	*a = x
	return true
}

// approvalFieldOf is the field key names (as Approval's msgpack tags do),
// or 0.
func approvalFieldOf(key []byte) approvalField {
	switch string(key) {
	case "v":
		return afVersion
	case "mission_id":
		return afMissionID
	case "call":
		return afCall
	case "state":
		return afState
	case "tool":
		return afTool
	case "service":
		return afService
	case "args":
		return afArgs
	case "turn":
		return afTurn
	case "program":
		return afProgram
	case "position":
		return afPosition
	case "rule":
		return afRule
	case "priority":
		return afPriority
	case "submitter":
		return afSubmitter
	case "requested_at":
		return afRequestedAt
	case "deadline":
		return afDeadline
	case "decided_by":
		return afDecidedBy
	case "decided_at":
		return afDecidedAt
	case "reason":
		return afReason
	case "edited_args":
		return afEditedArgs
	}
	return 0
}

// approvalString is a's string field f.
func approvalString(a *Approval, f approvalField) *string {
	switch f {
	case afMissionID:
		return &a.MissionID
	case afCall:
		return &a.Call
	case afState:
		return &a.State
	case afTool:
		return &a.Tool
	case afService:
		return &a.Service
	case afProgram:
		return &a.Program
	case afPosition:
		return &a.Position
	case afRule:
		return &a.Rule
	case afPriority:
		return &a.Priority
	case afSubmitter:
		return &a.Submitter
	case afDecidedBy:
		return &a.DecidedBy
	}
	return &a.Reason
}

// approvalZero reports whether a is the zero Approval, which
// decodeApproval decodes into (TestApprovalDecoderKnowsEveryField keeps
// it to Approval's fields).
func approvalZero(a *Approval) bool {
	return a.Version == 0 && a.MissionID == "" && a.Call == "" && a.State == "" && a.Tool == "" && a.Service == "" &&
		a.Args == nil && a.Turn == 0 && a.Program == "" && a.Position == "" && a.Rule == "" && a.Priority == "" &&
		a.Submitter == "" && a.RequestedAt == (time.Time{}) && a.Deadline == (time.Time{}) && a.DecidedBy == "" &&
		a.DecidedAt == (time.Time{}) && a.Reason == "" && a.EditedArgs == nil
}

// byte returns the next byte.
func (r *approvalReader) byte() (byte, bool) {
	if r.pos >= len(r.data) {
		return 0, false
	}
	c := r.data[r.pos]
	r.pos++
	return c, true
}

// uint reads a big-endian unsigned integer of size bytes.
func (r *approvalReader) uint(size int) (uint64, bool) {
	if len(r.data)-r.pos < size {
		return 0, false
	}
	b := r.data[r.pos : r.pos+size]
	r.pos += size
	switch size {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), true
	}
	return binary.BigEndian.Uint64(b), true
}

// length reads the length that follows a str, bin, array or map code of
// size bytes, and checks that at least that many bytes (per) follow.
func (r *approvalReader) length(size, per int) (int, bool) {
	n, ok := r.uint(size)
	if !ok || n > uint64(len(r.data)-r.pos)/uint64(per) {
		return 0, false
	}
	return int(n), true
}

// mapLen reads a map's header.
func (r *approvalReader) mapLen() (int, bool) {
	c, ok := r.byte()
	switch {
	case !ok:
		return 0, false
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == 0xde:
		return r.length(2, 2)
	case c == 0xdf:
		return r.length(4, 2)
	}
	return 0, false
}

// strLen reads the header of a string or binary whose code is c.
func (r *approvalReader) strLen(c byte) (int, bool) {
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n := int(c & 0x1f)
		return n, n <= len(r.data)-r.pos
	case c == 0xd9 || c == 0xc4:
		return r.length(1, 1)
	case c == 0xda || c == 0xc5:
		return r.length(2, 1)
	case c == 0xdb || c == 0xc6:
		return r.length(4, 1)
	}
	return 0, false
}

// rawString reads a string or binary and returns its bytes in data.
func (r *approvalReader) rawString() ([]byte, bool) {
	c, ok := r.byte()
	if !ok {
		return nil, false
	}
	n, ok := r.strLen(c)
	if !ok {
		return nil, false
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	return b, true
}

// string reads a string or binary as a substring of r.str.
func (r *approvalReader) string() (string, bool) {
	c, ok := r.byte()
	if !ok {
		return "", false
	}
	n, ok := r.strLen(c)
	if !ok {
		return "", false
	}
	if n == 0 {
		return "", true
	}
	if r.str == "" {
		r.str = string(r.data)
	}
	s := r.str[r.pos : r.pos+n]
	r.pos += n
	return s, true
}

// int reads an integer as msgpack's decoder reads one into an int field.
func (r *approvalReader) int() (int64, bool) {
	c, ok := r.byte()
	if !ok {
		return 0, false
	}
	switch {
	case c <= 0x7f:
		return int64(c), true
	case c >= 0xe0:
		return int64(int8(c)), true
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		u, ok := r.uint(1 << (c - 0xcc))
		return int64(u), ok
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64
		size := 1 << (c - 0xd0)
		u, ok := r.uint(size)
		if !ok {
			return 0, false
		}
		switch size {
		case 1:
			return int64(int8(u)), true
		case 2:
			return int64(int16(u)), true
		case 4:
			return int64(int32(u)), true
		}
		return int64(u), true
	}
	return 0, false
}

// time reads a time as the timestamp extension (-1) of 4, 8 or 12 bytes,
// as msgpack's decoder reads it into a time.Time field: in the local
// zone, the zero time in UTC.
func (r *approvalReader) time() (time.Time, bool) {
	c, ok := r.byte()
	if !ok {
		return time.Time{}, false
	}
	var size int
	switch c {
	case 0xd6:
		size = 4
	case 0xd7:
		size = 8
	case 0xc7:
		n, ok := r.uint(1)
		if !ok || n != 12 {
			return time.Time{}, false
		}
		size = 12
	default:
		return time.Time{}, false
	}
	if id, ok := r.byte(); !ok || int8(id) != -1 || len(r.data)-r.pos < size {
		return time.Time{}, false
	}
	b := r.data[r.pos : r.pos+size]
	r.pos += size
	var t time.Time
	switch size {
	case 4:
		t = time.Unix(int64(binary.BigEndian.Uint32(b)), 0)
	case 8:
		v := binary.BigEndian.Uint64(b)
		t = time.Unix(int64(v&0x00000003ffffffff), int64(v>>34))
	default:
		t = time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b)))
	}
	if t.IsZero() {
		t = t.UTC()
	}
	return t, true
}

// argsMap reads a map[string]any field: nil, or a map with string keys
// and plain values.
func (r *approvalReader) argsMap() (map[string]any, bool) {
	if r.pos < len(r.data) && r.data[r.pos] == 0xc0 {
		r.pos++
		return nil, true
	}
	return r.plainMap()
}

// plainMap reads a map with string keys and plain values.
func (r *approvalReader) plainMap() (map[string]any, bool) {
	n, ok := r.mapLen()
	if !ok {
		return nil, false
	}
	m := make(map[string]any, n)
	for range n {
		k, ok := r.string()
		if !ok {
			return nil, false
		}
		v, ok := r.plain()
		if !ok {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}

// plain reads a dynamic value as Unmarshal returns it: nil, bool, int64
// (an unsigned integer beyond its range a float64), float64, string (of
// a string or binary), []any or map[string]any.
func (r *approvalReader) plain() (any, bool) {
	if r.pos >= len(r.data) {
		return nil, false
	}
	c := r.data[r.pos]
	switch {
	case c <= 0x7f || c >= 0xe0 || c >= 0xd0 && c <= 0xd3:
		return r.int()
	case c >= 0xa0 && c <= 0xbf, c == 0xd9, c == 0xda, c == 0xdb, c == 0xc4, c == 0xc5, c == 0xc6:
		return r.string()
	case c >= 0x80 && c <= 0x8f, c == 0xde, c == 0xdf:
		return r.plainMap()
	case c >= 0x90 && c <= 0x9f, c == 0xdc, c == 0xdd:
		return r.plainArray()
	}
	r.pos++
	switch c {
	case 0xc0:
		return nil, true
	case 0xc2:
		return false, true
	case 0xc3:
		return true, true
	case 0xca:
		u, ok := r.uint(4)
		return float64(math.Float32frombits(uint32(u))), ok
	case 0xcb:
		u, ok := r.uint(8)
		return math.Float64frombits(u), ok
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, ok := r.uint(1 << (c - 0xcc))
		if u > math.MaxInt64 {
			return float64(u), ok
		}
		return int64(u), ok
	}
	return nil, false
}

// plainArray reads an array of plain values.
func (r *approvalReader) plainArray() (any, bool) {
	c, _ := r.byte()
	var n int
	var ok bool
	switch c {
	case 0xdc:
		n, ok = r.length(2, 1)
	case 0xdd:
		n, ok = r.length(4, 1)
	default:
		n, ok = int(c&0x0f), true
	}
	if !ok {
		return nil, false
	}
	s := make([]any, n)
	for i := range s {
		if s[i], ok = r.plain(); !ok {
			return nil, false
		}
	}
	return s, true
}
