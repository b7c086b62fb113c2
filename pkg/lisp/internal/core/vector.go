package core

import "sync/atomic"

// Vectors and the items of a sequence (ItemsOf): a vector's own slots, or
// host records read in place (a host vector of records costs no
// allocation per record until a consumer needs its item slots).

// Len returns the number of items.
func (v *Vector) Len() int {
	if v.src != nil {
		return v.src.src.Len()
	}
	return len(v.Slots)
}

// Items returns the backing items; callers must not modify them. A host
// vector of records makes its item slots here on the first call.
func (v *Vector) Items() []Value {
	if v.src != nil {
		return v.src.items()
	}
	return v.Slots
}

// At returns item i (no bounds check beyond Go's).
func (v *Vector) At(i int) Value {
	if v.src != nil {
		return v.src.src.At(i)
	}
	return v.Slots[i]
}

// Sub returns v's items i to j as a vector sharing v's backing array or
// host slice (no copy, nothing charged; not marked host data: see viewOf).
func (v *Vector) Sub(i, j int) *Vector {
	if i >= j {
		return EmptyVector
	}
	items := v.ItemsOf()
	if items.hosted() {
		return &Vector{src: &recsView{src: items.slice(i, j)}}
	}
	return &Vector{Slots: items.Items[i:j:j]}
}

// OwnedRest returns a new vector of v's items from the second on, for a
// loop to own and advance in place (dropFirst). Over host records it views
// the host's slice.
func (v *Vector) OwnedRest() *Vector {
	items := v.ItemsOf()
	if items.hosted() {
		return &Vector{src: &recsView{src: items.slice(1, items.Len())}}
	}
	n := len(items.Items)
	return &Vector{Slots: items.Items[1:n:n]}
}

// DropFirst removes v's first item in place: only for a vector a loop
// owns (no other reference sees it change). A host vector of records
// keeps viewing the host's slice, one record on.
func (v *Vector) DropFirst() {
	if h := v.src; h != nil {
		if p := h.slots.Load(); p != nil {
			v.Slots, v.src = (*p)[1:len(*p):len(*p)], nil
			return
		}
		h.src = h.src.slice(1, h.src.Len())
		return
	}
	v.Slots = v.Slots[1:len(v.Slots):len(v.Slots)]
}

// Conj returns v with x appended.
func (v *Vector) Conj(x Value) *Vector {
	cur := v.Items()
	n := len(cur)
	if v.Claim != nil && n < cap(cur) && v.Claim.CompareAndSwap(int64(n), int64(n+1)) {
		items := cur[:n+1]
		items[n] = x
		return &Vector{Slots: items, Claim: v.Claim}
	}
	c := n * 2
	if c < 4 {
		c = 4
	}
	items := make([]Value, n+1, c)
	copy(items, cur)
	items[n] = x
	claim := new(atomic.Int64)
	claim.Store(int64(n + 1))
	return &Vector{Slots: items, Claim: claim}
}

// ItemsOf returns v's items to be read one by one, without making a host
// vector's item slots.
func (v *Vector) ItemsOf() ItemsOf {
	if h := v.src; h != nil {
		if p := h.slots.Load(); p != nil {
			return ItemsOf{Items: *p}
		}
		return h.src
	}
	return ItemsOf{Items: v.Slots}
}

// Len returns the number of items.
func (s ItemsOf) Len() int {
	switch {
	case s.Recs != nil:
		return len(s.Recs)
	}
	return len(s.Items)
}

// At returns item i (a host record's read asks for the one a scan reads
// next: see prefetch).
func (s ItemsOf) At(i int) Value {
	if s.Recs != nil {
		s.prefetch(i)
		return recordAt(&s.Recs[i])
	}
	return s.Items[i]
}

// From returns the items from i on as a slice (made for host records).
func (s ItemsOf) From(i int) []Value {
	if !s.hosted() {
		return s.Items[i:]
	}
	out := make([]Value, s.Len()-i)
	for j := range out {
		out[j] = s.At(i + j)
	}
	return out
}

// hosted reports whether the items are host records read in place.
func (s ItemsOf) hosted() bool { return s.Recs != nil }

// slice returns items i to j (host records stay read in place).
func (s ItemsOf) slice(i, j int) ItemsOf {
	switch {
	case s.anys != nil:
		return ItemsOf{Recs: s.Recs[i:j:j], anys: s.anys[i:j:j]}
	case s.Recs != nil:
		return ItemsOf{Recs: s.Recs[i:j:j]}
	}
	return ItemsOf{Items: s.Items[i:j:j]}
}

// hostSlice returns the host's own slice the items view: a []any as the
// host gave it, or a []map[string]any.
func (s ItemsOf) hostSlice() any {
	if s.anys != nil {
		return s.anys
	}
	return s.Recs
}

// items returns the item slots, making them on the first call.
func (h *recsView) items() []Value {
	if p := h.slots.Load(); p != nil {
		return *p
	}
	items := h.src.From(0)
	if h.slots.CompareAndSwap(nil, &items) {
		return items
	}
	return *h.slots.Load()
}

// asRecords returns xs as a []map[string]any when every item is a
// map[string]any (a []any of records, as encoding/json gives): one slice of
// map references, so that each record is then read in place through its
// slot (recordAt) like the records of a []map[string]any.
func asRecords(xs []any) ([]map[string]any, bool) {
	for _, x := range xs {
		if _, ok := x.(map[string]any); !ok {
			return nil, false
		}
	}
	recs := make([]map[string]any, len(xs))
	for i, x := range xs {
		recs[i] = x.(map[string]any)
	}
	return recs, true
}

// HostVector returns the host vector viewing the host records recs.
func HostVector(recs ItemsOf) *Vector {
	if recs.Len() == 0 {
		return &Vector{FromHost: true}
	}
	hv := &hostVector{rv: recsView{src: recs}}
	hv.v = Vector{src: &hv.rv, FromHost: true}
	return &hv.v
}

// hostVector is a host vector and its source, made in one allocation.
type hostVector struct {
	v  Vector
	rv recsView
}

// recordOf returns m as a Value: a hostMap, or the empty map for a nil
// map (which, unlike an empty one, it can tell without reading m). The
// record's variable is allocated here; a record of a host vector is
// recordAt of its slot instead, which allocates nothing.
func recordOf(m map[string]any) Value {
	if m == nil {
		return EmptyMap
	}
	return HostMap{&m}
}

// recordAt returns the host record held at *p (the empty map for nil).
func recordAt(p *map[string]any) Value {
	if *p == nil {
		return EmptyMap
	}
	return HostMap{p}
}
