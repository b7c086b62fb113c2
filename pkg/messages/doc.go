// Package messages holds the types that cross a boundary: the Step every run
// returns (a scripted PTC-Lisp run, an agent, a fleet mission), and the wire
// messages the fleet exchanges over NATS. Every type has explicit msgpack tags
// and a version, and Marshal/Unmarshal give values back as plain Go data
// (nil, bool, int64, float64, string, []any, map[string]any), so an int stays
// an int and a float stays a float across the wire.
//
// The package imports nothing else of this module; everything else may import it.
package messages
