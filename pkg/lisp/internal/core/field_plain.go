//go:build !ptc_swissmaps || go1.27

package core

// The default build: every field read is a plain map read, and a scan
// asks for nothing ahead of time. The slot cache and the prefetch read the
// Go runtime's private map layout, so they are built only with the tag
// ptc_swissmaps, and only on the Go releases field_swiss.go was checked
// against.

// FieldHint holds nothing: there is no slot to remember.
type FieldHint struct{}

// LookupField returns src[name] and whether it is present: one Go map
// read (the hint is for the build with ptc_swissmaps).
func LookupField(src map[string]any, name string, _ *FieldHint) (any, bool) {
	x, ok := src[name]
	return x, ok
}

// ReadField is LookupField without the presence (nil when absent).
func ReadField(src map[string]any, name string, _ *FieldHint) any { return src[name] }

// RecordField returns (kw m) for the host record m (nil: the empty
// record), as KwGet reads it (recordValue): one map read, inlined.
func RecordField(m map[string]any, kw *Keyword) Value { return recordValue(kw, m[kw.Name]) }
