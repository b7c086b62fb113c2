package core

import (
	"strings"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// Converting values back to plain Go data (ToGo, ShareToGo).

// ToGo converts a Value to plain Go data: keywords become their names,
// vectors, sets and realised lazy seqs become []any, maps become
// map[string]any. Map keys follow the boundary rule: a keyword key is
// spelled with '_' for '-' (:row-count → "row_count"); a string key is data
// and goes out exactly as it is; any other key (a number, a vector, ...)
// becomes its str form. When two keys of one map give the same host key, a
// key spelled exactly (a string, or a keyword without '-') wins over a
// respelled one; between two respelled keys the first in key order wins.
// Functions and regexes become their printed form ("#fn[x]", "#\"p\""),
// vars "#'name": the result is always plain data (use Result.Memory to keep
// closures between runs).
func ToGo(v Value) any { return toGo(v, false) }

// ShareToGo is ToGo that hands host data back without copying it, at
// whatever depth it sits: a host map, a host record or a host vector of
// records read in place (a view of the caller's Go data) comes back as the
// caller's own map or slice; other host data (a tool result decoded from
// its wire bytes, Go data FromGo had to convert) comes back as a *Kept
// holding the interpreter value, which encodes and converts as its Go
// form. A program cannot change either (its changes make new values), so
// converting data a program kept unchanged costs nothing whatever its
// size. Values a program made are converted as ToGo converts them. A run's
// memory (Result.Step, the agent's Step.Memory) uses it; a return value,
// which a caller may change in place (rounding floats), uses ToGo.
func ShareToGo(v Value) any { return toGo(v, true) }

func toGo(v Value, share bool) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return x
	case *Keyword:
		return x.Name
	case *Vector:
		if share && x.src != nil {
			return x.src.src.hostSlice()
		}
		if share && x.FromHost {
			return &Kept{v: x}
		}
		out := make([]any, x.Len())
		for i, it := range x.Items() {
			out[i] = toGo(it, share)
		}
		return out
	case *LazySeq:
		items, _ := x.Snapshot()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = toGo(it, share)
		}
		return out
	case *Set:
		items := x.Items()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = toGo(it, share)
		}
		return out
	case HostMap:
		if share {
			return x.Src()
		}
		return viewToGo(x.Src())
	case *Map:
		if x.Src != nil {
			if share {
				return x.Src
			}
			return viewToGo(x.Src)
		}
		if share && x.host {
			return &Kept{v: x}
		}
		return mapToGo(x, share)
	case *Var:
		return "#'" + x.Name
	case *Reduced:
		return toGo(x.Val, share)
	case *Closure, *Builtin, *Regex:
		return PrStr(x)
	}
	return v
}

// mapToGo converts a map (not a view) entry by entry, its keys by the
// boundary rule.
func mapToGo(x *Map, share bool) map[string]any {
	out := make(map[string]any, x.Len())
	var respelled []MapEntry
	add := func(e MapEntry) {
		k, exact := hostKey(e.Key)
		if !exact {
			respelled = append(respelled, e)
			return
		}
		out[k] = toGo(e.Val, share)
	}
	if x = x.Form(); x.Root == nil && x.Cache.Load() == nil {
		// a small map whose entries were not listed before: its keys and
		// values in the order Entries would list them, without the slice
		// Entries makes and keeps
		for i, k := range x.Shape.Keys {
			add(MapEntry{k, x.Vals[i]})
		}
	} else {
		for _, e := range x.Entries() {
			add(e)
		}
	}
	for _, e := range respelled {
		k, _ := hostKey(e.Key)
		if _, taken := out[k]; !taken {
			out[k] = toGo(e.Val, share)
		}
	}
	return out
}

// hostKey renders a map key for the host (the boundary rule, see ToGo):
// a string as is, a keyword's name with '-' replaced by '_', any other key
// by its str form. exact reports whether the key is spelled as it is in
// the program (a string or a keyword without '-').
func hostKey(k Value) (name string, exact bool) {
	switch x := k.(type) {
	case string:
		return x, true
	case *Keyword:
		if strings.IndexByte(x.Name, '-') < 0 {
			return x.Name, true
		}
		return strings.ReplaceAll(x.Name, "-", "_"), false
	}
	return Str(k), false
}

// viewToGo is ToGo of a view: a copy of the host's map with the values
// converted as FromGo and ToGo convert them (plain data is copied as it
// is, without conversion). It is a copy, not the host's map, because what
// ToGo gives is the caller's to change: rounding a return value's floats,
// adding a fail value's reason, a tool normalising its arguments all
// write in place, and host data must come back as it came. A value the
// interpreter cannot represent goes back as it came.
func viewToGo(src map[string]any) any { return copyHost(src) }

// copyHost copies plain host data, converting what is not plain.
func copyHost(x any) any {
	switch v := x.(type) {
	case nil, bool, int64, float64, string:
		return x
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyHost(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyHost(e)
		}
		return out
	}
	hv, err := hostValue(x)
	if err != nil {
		return x
	}
	return ToGo(hv)
}

// goOf returns v's Go form (ToGo), made on the first call and shared by
// every later one.
func (g *goForm) goOf(v Value) any {
	g.plainOnce.Do(func() { g.plain = ToGo(v) })
	return g.plain
}

// firewalledIn reports whether v holds a firewalled map key at any depth,
// found on the first call.
func (g *goForm) firewalledIn(v Value) bool {
	g.fwOnce.Do(func() { g.fw = hasFirewalledKey(v) })
	return g.fw
}

// hasFirewalledKey reports whether v holds a map key that
// signature.IsFirewalled at any depth.
func hasFirewalledKey(v Value) bool {
	found := false
	switch x := MapValue(v).(type) {
	case *Map:
		x.Each(func(k, e Value) bool {
			if s, ok := k.(string); ok && signature.IsFirewalled(s) || hasFirewalledKey(e) {
				found = true
				return false
			}
			return true
		})
	case *Vector:
		for _, e := range x.Items() {
			if hasFirewalledKey(e) {
				return true
			}
		}
	}
	return found
}
