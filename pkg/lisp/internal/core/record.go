package core

// A host record as a map: its size and the *Map view made of it, for code
// that dispatches on a value's type (see view.go for what a view reads).

// Src returns the host's map.
func (h HostMap) Src() map[string]any { return *h.p }

// view returns the *Map view of h (an empty map is the empty map).
func (h HostMap) view() *Map { return newMapView(h.Src()) }

// newMapView returns a view of src (an empty map is the empty map).
func newMapView(src map[string]any) *Map {
	if len(src) == 0 {
		return EmptyMap
	}
	return &Map{Src: src, host: true}
}

// AsMap returns v as a *Map when it is a map: a *Map as it is, a host
// record as its view (a new header). It is the one way a value that must
// be a map is taken as one.
func AsMap(v Value) (*Map, bool) {
	switch x := v.(type) {
	case *Map:
		return x, true
	case HostMap:
		return x.view(), true
	}
	return nil, false
}

// MapValue returns v with a host record replaced by its *Map view, for
// code that dispatches on a value's type.
func MapValue(v Value) Value {
	if h, ok := v.(HostMap); ok {
		return h.view()
	}
	return v
}

// Len returns the number of entries.
func (m *Map) Len() int {
	if m.Src != nil {
		return len(m.Src)
	}
	return int(m.N)
}

// Len returns the number of members.
func (s *Set) Len() int { return int(s.M.N) }
