package signature

import "maps"

// ListView is a list that validation (Validate, ValidateOutput) reads in
// place, element by element, instead of as a []any: a tool result kept as
// interpreter values (pkg/lisp's WireResult) is checked without being
// converted to Go data. Elements are plain Go scalars, ListViews or
// MapViews.
type ListView interface {
	Len() int
	At(i int) any
}

// MapView is a map with string keys that validation reads in place (see
// ListView). Lookup is exact: no key respelling.
type MapView interface {
	Len() int
	Lookup(key string) (any, bool)
	Keys() []string
}

// plainMap is a map[string]any as a MapView.
type plainMap map[string]any

func (m plainMap) Len() int { return len(m) }

func (m plainMap) Lookup(key string) (any, bool) {
	x, ok := m[key]
	return x, ok
}

func (m plainMap) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	return keys
}
