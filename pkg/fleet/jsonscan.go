package fleet

// jsonScan reads the JSON of the JetStream API's usual answers without
// encoding/json: strings of ASCII that need no unescaping and unsigned
// integers without leading zeros. What it refuses (escapes, control
// characters, non-ASCII bytes, which encoding/json would replace when
// invalid, other forms of numbers) is left to encoding/json by its
// callers (scanPublishAck, scanMsgGet).
type jsonScan struct {
	data []byte
	i    int
}

// ws skips white space.
func (s *jsonScan) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and c, reporting whether c came next.
func (s *jsonScan) next(c byte) bool {
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its bytes, which the data holds.
func (s *jsonScan) str() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.data); j++ {
		switch c := s.data[j]; {
		case c == '"':
			v := s.data[s.i+1 : j]
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// digits reads an unsigned integer's digits: at least one, no leading
// zero (JSON has none).
func (s *jsonScan) digits() ([]byte, bool) {
	s.ws()
	j := s.i
	for j < len(s.data) && s.data[j] >= '0' && s.data[j] <= '9' {
		j++
	}
	v := s.data[s.i:j]
	if len(v) == 0 || len(v) > 1 && v[0] == '0' {
		return nil, false
	}
	s.i = j
	return v, true
}

// uint reads an unsigned integer that fits in 64 bits.
func (s *jsonScan) uint() (uint64, bool) {
	v, ok := s.digits()
	if !ok {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// object reads an object's keys, each with field (which reads its value),
// to the object's end.
func (s *jsonScan) object(field func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.next(':') || !field(key) {
			return false
		}
		if !s.next(',') {
			return s.next('}')
		}
	}
}

// end skips white space and reports whether the data ends there.
func (s *jsonScan) end() bool {
	s.ws()
	return s.i == len(s.data)
}
