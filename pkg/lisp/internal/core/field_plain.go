//go:build !ptc_swissmaps || go1.27

package core

// The default build: every field read is a plain map read, and a scan
// asks for nothing ahead of time. The slot cache and the prefetch read the
// Go runtime's private map layout, so they are built only with the tag
// ptc_swissmaps, and only on the Go releases field_swiss.go was checked
// against.

// FieldHint holds nothing: there is no slot to remember.
type FieldHint struct{}

func slotHit(map[string]any, string, *FieldHint) (any, bool) { return nil, false }

func slotScan(map[string]any, string, *FieldHint) (any, bool, bool) { return nil, false, false }
