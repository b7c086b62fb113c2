package core

import "unsafe"

// Retained-memory accounting.
//
// Builtins charge what they build (slotBytes per collection slot, string
// bytes) to th.alloc before or as they build it, and the run fails with
// memory_limit as soon as th.alloc exceeds the limit. th.alloc is kept an
// upper bound of what the program still holds, not of what it ever
// allocated: when a scope ends — a closure call returns, a loop iteration
// recurs, a top-level form finishes — whatever the scope charged and does
// not hand on is given back. What a scope hands on is its result (the
// return value, or the new loop bindings); credit measures the part of it
// that is new (not reachable from what the scope was given, nor host data)
// and lowers th.alloc to the mark at the scope's start plus that.
//
// Values are immutable, so a scope's allocations can outlive it only
// through its result, memory writes (def, memory/put), printed lines and
// the realised items of lazy sequences made before it. Those three move
// th.floor up to th.alloc: a credit never goes below the floor. Builtins
// that hold what they build in Go variables while they call back into the
// program (map, mapv, reduce, ...) keep it charged: a callback's credit
// only covers what the callback itself charged.

// IsHostData reports whether v is a collection converted from host data
// (FromGo: Options.Context, Options.Memory given as Go data, tool
// results) or a view of one. Such values are the host's memory: they do
// not count against a run's memory limit, and keeping them in memory keeps
// a reference, not a copy.
func IsHostData(v Value) bool {
	switch x := v.(type) {
	case *Vector:
		return x.FromHost
	case *Map:
		return x.host
	case HostMap:
		return true
	}
	return false
}

// Credit ends a scope that started when th.alloc was mark, was given ins
// and hands on outs.
func (th *Thread) Credit(mark int64, ins []Value, outs ...Value) {
	c := th.Alloc - mark
	if c <= 0 || th.Alloc <= th.floor {
		return
	}
	s := sizer{budget: c, ins: ins}
	for _, o := range outs {
		if s.Add(o) {
			return
		}
	}
	th.handOn(mark, s.size)
}

// credit2 is credit for a scope given at most two values.
func (th *Thread) credit2(mark int64, x, y Value, out Value) {
	if th.Alloc-mark <= 0 || th.Alloc <= th.floor {
		return
	}
	ins := [2]Value{x, y}
	th.Credit(mark, ins[:], out)
}

// creditGrown ends a call of a reducing function that was given the
// reduce's transient accumulator m (holding n0 entries) and item y, and
// returned m grown in place. Measured whole, m would always look new
// (credit keeps all it charged, churn included); what the call can have
// added that m holds is its new entries and the keys and values it wrote
// (logged by m's edit token), so only those are measured. When the call
// wrote more than the log holds, nothing is given back.
func (th *Thread) creditGrown(mark int64, m *Map, n0 int, y Value) {
	c := th.Alloc - mark
	if c <= 0 || th.Alloc <= th.floor {
		return
	}
	kvs, ok := m.Edit.written()
	if !ok {
		return
	}
	ins := [2]Value{m, y}
	s := sizer{budget: c, ins: ins[:]}
	if added := m.Len() - n0; added > 0 && s.over(int64(added)*entryCharge(m)) {
		return
	}
	for _, v := range kvs {
		if s.Add(v) {
			return
		}
	}
	th.handOn(mark, s.size)
}

// sizer measures the new part of values, up to a budget.
type sizer struct {
	budget, size int64
	ins          []Value
}

// over adds n bytes and reports whether the budget is exceeded.
func (s *sizer) over(n int64) bool {
	s.size += n
	return s.size >= s.budget
}

// given reports whether v is one of the scope's inputs (by identity).
func (s *sizer) given(v Value) bool {
	for _, in := range s.ins {
		if sameRef(in, v) {
			return true
		}
	}
	return false
}

// sameRef reports whether a and b are the same reference value.
func sameRef(a, b Value) bool {
	switch x := a.(type) {
	case *Vector:
		y, ok := b.(*Vector)
		return ok && x == y
	case *Map:
		y, ok := b.(*Map)
		return ok && x == y && x.Edit == nil // a transient may have grown in place
	case *Set:
		y, ok := b.(*Set)
		return ok && x == y
	case *Closure:
		y, ok := b.(*Closure)
		return ok && x == y
	case *LazySeq:
		y, ok := b.(*LazySeq)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && len(x) == len(y) && len(x) > 0 && unsafe.StringData(x) == unsafe.StringData(y)
	}
	return false
}

// sharedPrefix returns how many leading items of v are shared with an
// input vector on the same backing array (conj appends in place).
func (s *sizer) sharedPrefix(v *Vector) int {
	if v.Len() == 0 {
		return 0
	}
	p := unsafe.SliceData(v.Items())
	best := 0
	for _, in := range s.ins {
		if iv, ok := in.(*Vector); ok && iv.Len() > best && iv.Len() <= v.Len() && unsafe.SliceData(iv.Items()) == p {
			best = iv.Len()
		}
	}
	return best
}

// Add measures v; it reports true when the budget is exceeded.
func (s *sizer) Add(v Value) bool {
	switch x := v.(type) {
	case string:
		if len(x) <= slotString || s.given(x) {
			return false
		}
		return s.over(int64(len(x)))
	case *Vector:
		if x.FromHost || s.given(x) {
			return false
		}
		from := s.sharedPrefix(x)
		if from == 0 && s.over(VectorBytes) {
			return true
		}
		per := int64(SlotBytes)
		if x.Claim != nil { // grown by conj
			per = ConjSlotBytes
		}
		if s.over(int64(x.Len()-from) * per) {
			return true
		}
		for _, it := range x.Items()[from:] {
			if s.Add(it) {
				return true
			}
		}
	case HostMap:
		return false // the host's memory
	case *Map:
		if x.host || s.given(x) {
			return false
		}
		if s.over(int64(x.N) * entryCharge(x)) {
			return true
		}
		stop := false
		x.eachUnordered(func(k, v Value) bool {
			stop = s.Add(k) || s.Add(v)
			return !stop
		})
		return stop
	case *Set:
		if s.given(x) {
			return false
		}
		return s.Add(x.M)
	case *LazySeq:
		if s.given(x) {
			return false
		}
		items, _ := x.Snapshot()
		if s.over(int64(len(items))*SlotBytes + 64) {
			return true
		}
		for _, it := range items {
			if s.Add(it) {
				return true
			}
		}
	case *Closure:
		if s.given(x) {
			return false
		}
		if s.over(int64(len(x.Caps)) * SlotBytes) {
			return true
		}
		for _, it := range x.Caps {
			if s.Add(it) {
				return true
			}
		}
	case *Reduced:
		return s.Add(x.Val)
	case *Builtin:
		// partial, comp, juxt...: their captured arguments are a few
		// slots; count them at a fixed size
		return s.over(4 * SlotBytes)
	}
	return false
}

// eachUnordered calls fn for each entry in storage order (no sorting).
func (m *Map) eachUnordered(fn func(k, v Value) bool) {
	if m.Shape == nil && m.Root == nil {
		if s := m.Store(); s != nil {
			s.each(fn)
			return
		}
		m = m.Form()
	}
	if m.Root == nil {
		m.eachSmall(fn)
		return
	}
	stop := false
	m.Root.each(func(e MapEntry) {
		if !stop && !fn(e.Key, e.Val) {
			stop = true
		}
	})
}

// LoopIter credits the iterations of a loop whose bindings live in frame
// slots: an iteration is a scope given the bindings it started with and
// handing on the ones it recurs with.
type LoopIter struct {
	Mark   int64
	iters  int // iterations since mark
	given  [4]Value
	nGiven int // how many of given are set (0 after an iteration that charged nothing)
	churn  bool
}

// creditEvery and creditBytes bound a loop's credit scope: the
// iterations since the last credit are credited together once there are
// creditEvery of them, or sooner once they charged creditBytes. A scope of
// several iterations gives back the same (what they built and did not hand
// on) for a fraction of the measuring: a loop that conj's one item an
// iteration measures its new tail once every 64 items, not every item.
const (
	creditEvery = 64
	creditBytes = 64 << 10
)

// Next ends an iteration of a loop whose bindings are slots[idx[i]],
// crediting the iterations since the last credit when they are due. An
// iteration that charged nothing after one that charged nothing (a loop
// over numbers or over fields read in place) returns at once, inlined
// into the loop; the rest is next.
func (it *LoopIter) Next(th *Thread, slots []Value, idx []int) {
	if th.Alloc == it.Mark && !it.churn {
		return
	}
	it.next(th, slots, idx)
}

// next is Next past its first test.
func (it *LoopIter) next(th *Thread, slots []Value, idx []int) {
	d := th.Alloc - it.Mark
	if d == 0 { // it.churn: nothing charged since the last credit: forget its inputs
		it.End(th, slots, idx)
		it.Begin(th, slots, idx)
		return
	}
	if it.iters++; it.iters < creditEvery && d < creditBytes {
		return
	}
	it.End(th, slots, idx)
	it.Begin(th, slots, idx)
}

// NextArgs is next for a loop whose bindings may be destructured: the
// iterations are given nothing and hand on args.
func (it *LoopIter) NextArgs(th *Thread, args []Value) {
	d := th.Alloc - it.Mark
	if d == 0 {
		return
	}
	if it.iters++; it.iters < creditEvery && d < creditBytes {
		return
	}
	it.endArgs(th, args)
	it.Mark, it.iters = th.Alloc, 0
}

// Begin starts an iteration whose bindings are slots[idx[i]].
func (it *LoopIter) Begin(th *Thread, slots []Value, idx []int) {
	it.Mark, it.iters = th.Alloc, 0
	it.nGiven = 0
	if it.churn && len(idx) <= len(it.given) {
		for i, s := range idx {
			it.given[i] = slots[s]
		}
		it.nGiven = len(idx)
	}
}

// End credits the iteration that recurs with slots[idx[i]].
func (it *LoopIter) End(th *Thread, slots []Value, idx []int) {
	it.churn = th.Alloc != it.Mark
	if !it.churn || len(idx) > 4 {
		return
	}
	var outs [4]Value
	for i, s := range idx {
		outs[i] = slots[s]
	}
	th.Credit(it.Mark, it.given[:it.nGiven], outs[:len(idx)]...)
}

// endArgs credits the iteration that recurs with args.
func (it *LoopIter) endArgs(th *Thread, args []Value) {
	it.churn = th.Alloc != it.Mark
	if it.churn {
		th.Credit(it.Mark, it.given[:it.nGiven], args...)
	}
}
