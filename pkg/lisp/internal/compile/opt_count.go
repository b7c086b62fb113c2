package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Counting into a reduce's map. A reducing function whose whole body is
//
//	(update acc k (fnil + 0) x)     (update acc k (fnil inc 0))
//	(update acc k + x)              (update acc k inc)
//
// on its linear accumulator (LinearAccFn: acc appears nowhere else) is
// the only code that reads the transient map while the reduce runs. Its
// update adds to the slot's sum kept unboxed in the transient
// (Map.AddCount) instead of calling the function and boxing the new sum;
// the sums are boxed into the map before any other write to it and when
// the transient ends (Map.FlushCounts, EndTransient). Anything else (a new
// key, a value or an x that is not a number, an overflow) boxes the sums
// and runs the update as written, so results, errors and their positions
// are the general path's; the steps counted are the same too.

// counter is what a counting update adds: x (or 1 for inc), nil counting
// as d when hasD (the fnil default).
type counter struct {
	d     int64
	hasD  bool
	inc   bool // no x: add 1
	ticks int  // the steps the call of f and the slot's write count
}

// countBody returns the update form that is the whole body of f, a
// literal (fn [acc x] (update acc ...)) whose accumulator is linear, or
// nil. A function given as #(...) or with several body forms does not
// count.
func (c *Compiler) countBody(f *syntax.Form, plain bool) *syntax.Form {
	if plain || f == nil || !c.isFnForm(f) || len(f.Items) != 3 || !c.LinearAccFn(f) {
		return nil
	}
	b := f.Items[2]
	if len(b.Items) < 4 || len(b.Items) > 5 || !c.callsBuiltin(b, "update") || !bindingOf(f.Items[1].Items[0]).is(b.Items[1]) {
		return nil
	}
	return b
}

// counterOf returns the counter of fn, the function form of a counting
// update (withX: the update passes x), or nil when fn is not +, inc,
// (fnil + d) or (fnil inc d) with those names the builtins and d an
// integer literal.
func (c *Compiler) counterOf(fn *syntax.Form, withX bool) *counter {
	cnt := c.counterFor(fn, withX)
	if cnt != nil {
		c.Counts++
	}
	return cnt
}

// counterFor is counterOf without counting the counter in c.Counts.
func (c *Compiler) counterFor(fn *syntax.Form, withX bool) *counter {
	want := "inc"
	if withX {
		want = "+"
	}
	if c.isBuiltinSym(fn, want) {
		// update's tick is the node's; the call of the builtin and the
		// slot's write (SetSlot) count one each
		return &counter{inc: !withX, ticks: 2}
	}
	if fn.Kind != syntax.FList || len(fn.Items) != 3 || !c.isBuiltinSym(fn.Items[0], "fnil") || !c.isBuiltinSym(fn.Items[1], want) {
		return nil
	}
	d, ok := fn.Items[2].Val.(int64)
	if fn.Items[2].Kind != syntax.FLit || !ok {
		return nil
	}
	// the call of the fnil function, its call of f, the slot's write
	return &counter{d: d, hasD: true, inc: !withX, ticks: 3}
}

// add adds x (1 for inc) to slot i of the transient mp, counting the
// steps the update as written counts; false when AddCount cannot.
func (cnt *counter) add(th *core.Thread, mp *core.Map, i int, x core.Value) bool {
	if cnt.inc {
		x = int64(1)
	}
	if !mp.AddCount(i, cnt.d, cnt.hasD, x) {
		return false
	}
	for range cnt.ticks {
		th.Tick()
	}
	return true
}
