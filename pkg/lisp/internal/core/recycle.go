package core

import "unsafe"

// Recycling a finished run's Thread and Host for the next run of the same
// program. Assigning zero structs would do, but while the collector marks
// (on a small heap, about half of the time) each pointer slot such an
// assignment covers pays a write barrier, and a Thread and its Host have
// some sixty: Recycle reads every field and writes only those that hold
// something. It keeps what costs a run to make again and refers to no
// run's values: the Thread's link to its Host, its frames (linked to the
// Thread) and its value stack, emptied.

// maxKeptFrames and maxKeptStack bound the frames and stack slots a
// recycled Thread keeps (deeper runs make theirs again).
const (
	maxKeptFrames = 16
	maxKeptStack  = 1024
)

// Recycle readies th and its host h (th.Host) for another run, which sets
// them up as it would a zero Thread and Host: every field is zero but
// th.Host, th.frames (each frame's Th is th, its other fields nil), the
// frame buffer that backs them, and th.stack (every slot nil). The run
// they come from must be over and must have left nothing that refers to
// them (no goroutine, context, closure or lazy sequence).
func Recycle(th *Thread, h *Host) {
	th.recycle()
	h.recycle()
}

func (th *Thread) recycle() {
	if th.Ctx != nil {
		th.Ctx = nil
	}
	th.Deadline, th.TimeoutMs, th.Steps, th.NextCheck, th.MaxSteps = 0, 0, 0, 0, 0
	th.Alloc, th.floor, th.MaxMem = 0, 0, 0
	th.Depth, th.MaxDepth, th.loops, th.MaxLoops, th.Sp = 0, 0, 0, 0, 0
	th.CallPos, th.child, th.branched = Pos{}, false, false

	if len(th.stack) > maxKeptStack {
		th.stack = nil
	}
	for i := range th.stack {
		if th.stack[i] != nil {
			th.stack[i] = nil
		}
	}
	if len(th.frames) > maxKeptFrames {
		th.frames = nil
		th.frame0 = Frame{}
		th.frameBuf = [2]*Frame{}
	}
	for _, fr := range th.frames {
		if fr.Slots != nil {
			fr.Slots = nil
		}
		if fr.Caps != nil {
			fr.Caps = nil
		}
		if fr.Self != nil {
			fr.Self = nil
		}
	}
	if th.RecurArgs != nil {
		th.RecurArgs = nil
	}
	if th.Mem != nil {
		th.Mem = nil
	}
	th.MemShared = false
	if th.Prints != nil {
		th.Prints = nil
	}
	if th.toolCtx != nil {
		th.toolCtx = nil
	}
	if th.ToolCancel != nil {
		th.ToolCancel = nil
	}
	th.Intern = false
	if th.interned != nil {
		th.interned = nil
	}
	for i := range th.few[:th.nFew] {
		th.few[i] = nil
	}
	th.nFew = 0
	if th.shapes != nil {
		th.shapes = nil
	}
}

func (h *Host) recycle() {
	if h.Tools != nil {
		h.Tools = nil
	}
	if h.HostFns != nil {
		h.HostFns = nil
	}
	if h.Ctx != nil {
		h.Ctx = nil
	}
	for i := range h.ctxSmall {
		e := &h.ctxSmall[i]
		if e.key != "" {
			e.key = ""
		}
		if e.v != nil {
			e.v = nil
		}
	}
	if h.ctxVals != nil {
		h.ctxVals = nil
	}
	if h.ProgKeywords != nil {
		h.ProgKeywords = nil
	}
	if h.Keywords != nil {
		h.Keywords = nil
	}
	if h.Calls != nil {
		h.Calls = nil
	}
	h.MaxCalls, h.nCalls = 0, 0
	if h.Scrub != nil {
		h.Scrub = nil
	}
	if h.Meter != nil {
		h.Meter = nil
	}
	h.OwnMeter, h.MeterLimit = false, 0
}

// maxCheckedValues bounds the values SelfContained looks at: a larger
// result is taken as not self-contained (its run's state is not reused).
const maxCheckedValues = 64

// SelfContained reports whether v, the value a run of th ended with, is
// made only of scalars, keywords, and array maps and vectors of them
// (at most maxCheckedValues values in all), none of whose slices lies in
// th's value stack. Such a value refers to nothing of the run's Thread or
// Host: a lazy sequence or a closure may hold the run's frames or
// Thread, a view or a trie map is not looked into, and any other kind is
// taken as one that may.
func SelfContained(th *Thread, v Value) bool {
	budget := maxCheckedValues
	return th.selfContained(v, &budget)
}

func (th *Thread) selfContained(v Value, budget *int) bool {
	*budget--
	if *budget < 0 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string, *Keyword:
		return true
	case *Map:
		if x.Src != nil || x.Root != nil || x.Edit != nil || x.Ord || x.Shape == nil ||
			x.Cache.Load() != nil || len(x.Vals) < len(x.Shape.Keys) || th.onStack(x.Vals) || th.onStack(x.Shape.Keys) {
			return false
		}
		for i, k := range x.Shape.Keys {
			if !th.selfContained(k, budget) || !th.selfContained(x.Vals[i], budget) {
				return false
			}
		}
		return true
	case *Vector:
		if x.src != nil || th.onStack(x.Slots) {
			return false
		}
		for _, it := range x.Slots {
			if !th.selfContained(it, budget) {
				return false
			}
		}
		return true
	}
	return false
}

// onStack reports whether s shares its backing array with th's value
// stack.
func (th *Thread) onStack(s []Value) bool {
	if cap(s) == 0 || cap(th.stack) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(th.stack)))
	hi := lo + uintptr(cap(th.stack))*unsafe.Sizeof(Value(nil))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= lo && p < hi
}
