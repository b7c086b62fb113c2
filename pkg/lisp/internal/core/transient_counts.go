package core

import (
	"math"
	"math/bits"
)

// Running sums in a transient map. A reduce that counts into a map,
//
//	(reduce (fn [m r] (update m (:category r) (fnil + 0) (:qty r))) {} rs)
//
// would box every new sum (an integer beyond the small-integer cache is a
// Go allocation) only for the next item to unbox it again. When the
// compiler can see that nothing but that update reads the accumulator
// while the reduce runs (the function's body is the update alone, on a
// transient: see compile's countUpdate), the sums stay unboxed in the
// transient's edit token, by slot, and are boxed once: before any other
// write to the map and when the transient ends (FlushCounts). A Value is
// never written after it is made: the map's value slots change, not a
// box.

// maxCountSlots bounds the slots a transient keeps sums for (one bit of
// pendingCounts.set each).
const maxCountSlots = 64

// AddCount adds x (an int64 or a float64) to the number at slot i of the
// transient m (a slot TransientSlot returned), nil counting as d when
// hasD (else a nil fails), as (+ (or old d) x) computes it: integers add as integers, a float on
// either side makes a float. It keeps the sum unboxed and reports false,
// changing nothing, when it cannot: the old value is not a number, x is
// neither int64 nor float64, or an integer sum overflows (the caller then
// flushes and runs the update as written, which raises what + raises).
func (m *Map) AddCount(i int, d int64, hasD bool, x Value) bool {
	if i >= maxCountSlots {
		return false
	}
	t := m.Edit
	pc := t.counts
	if pc == nil {
		pc = &pendingCounts{}
		t.counts = pc
	}
	bit := uint64(1) << i
	var ci int64
	var cf float64
	isFloat := false
	if pc.set&bit != 0 {
		if pc.float&bit != 0 {
			cf, isFloat = math.Float64frombits(pc.n[i]), true
		} else {
			ci = int64(pc.n[i])
		}
	} else {
		switch old := m.Vals[i].(type) {
		case nil:
			if !hasD {
				return false
			}
			ci = d
		case int64:
			ci = old
		case float64:
			cf, isFloat = old, true
		default:
			return false
		}
	}
	var sum uint64
	switch y := x.(type) {
	case int64:
		if isFloat {
			sum = math.Float64bits(cf + float64(y))
			break
		}
		s := ci + y
		if (s > ci) != (y > 0) {
			return false
		}
		sum = uint64(s)
	case float64:
		if !isFloat {
			cf = float64(ci)
		}
		sum, isFloat = math.Float64bits(cf+y), true
	default:
		return false
	}
	if len(pc.n) <= i {
		n := make([]uint64, max(len(m.Vals), i+1))
		copy(n, pc.n)
		pc.n = n
	}
	pc.n[i] = sum
	pc.set |= bit
	if isFloat {
		pc.float |= bit
	} else {
		pc.float &^= bit
	}
	return true
}

// FlushCounts boxes the sums m keeps unboxed (AddCount) into its values;
// it does nothing for a map that keeps none.
func (m *Map) FlushCounts() {
	if m.Edit == nil || m.Edit.counts == nil || m.Edit.counts.set == 0 {
		return
	}
	pc := m.Edit.counts
	for set := pc.set; set != 0; set &= set - 1 {
		i := bits.TrailingZeros64(set)
		if pc.float&(uint64(1)<<i) != 0 {
			m.Vals[i] = math.Float64frombits(pc.n[i])
		} else {
			m.Vals[i] = Int(int64(pc.n[i]))
		}
	}
	pc.set, pc.float = 0, 0
	if m.Cache.Load() != nil {
		m.Cache.Store(nil)
	}
}
