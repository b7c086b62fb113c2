package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// Reducing functions that reduce runs over host records without their
// call (FnProto.RecordStep, core's loopCaller.Step): a counting update
// whose key and x are fields of the item (recordCount, over the
// counters of opt_count.go) and an index built with assoc,
//
//	(fn [m r] (assoc m (:k r) (:v r)))
//
// whose accumulator is linear (LinearAccFn) and whose key and value are
// keyword reads of its item. The step reads the two fields from the
// record's Go map and assocs them into the transient as the builtin does
// (builtins.AssocCharged), counting the call's steps; reduce credits what
// it charged as it credits the call. A key that is not a string or an
// integer, a value that is not a scalar (a nested map or vector would be
// a view), or an item that is not a host record goes through the call.

// itemField returns the keyword k when g is (:k r), r the reducing
// function f's second parameter (a plain symbol), else nil.
func itemField(f, g *syntax.Form) *core.Keyword {
	item := f.Items[1].Items[1]
	if item.Kind != syntax.FSym || item.Ns != "" || item.Name == "&" {
		return nil
	}
	if g.Kind != syntax.FList || len(g.Items) != 2 || g.Items[0].Kind != syntax.FLit || !bindingOf(item).is(g.Items[1]) {
		return nil
	}
	kw, _ := g.Items[0].Val.(*core.Keyword)
	return kw
}

// recordCount is a counting update whose key and x are fields of the
// reduce's item, (update acc (:k r) f (:x r)) or (update acc (:k r) f)
// with r the reducing function's second parameter: over host records
// reduce runs it without calling the function (FnProto.RecordStep). An
// item it does not serve (a key not yet in the map, a key that is not a
// string or an integer, an x that is not a number, an overflow, an item
// that is not a host record) goes through the call as written, which does
// the same again and what the general path does.
type recordCount struct {
	cnt   *counter
	key   *core.Keyword
	x     *core.Keyword // nil: inc
	ticks int           // the steps the call counts: the call, f's form, the update, cnt's
	pos   core.Pos      // the update's
}

// recordCountOf returns the recordCount of the reducing function f whose
// body is the counting update u (countBody), or nil when u's key or x is
// not a keyword read of f's second parameter or f's function is not a
// counter's.
func (c *Compiler) recordCountOf(f, u *syntax.Form) *recordCount {
	withX := len(u.Items) == 5
	cnt := c.counterFor(u.Items[3], withX)
	key := itemField(f, u.Items[2])
	if cnt == nil || key == nil {
		return nil
	}
	rc := &recordCount{cnt: cnt, key: key, pos: u.Pos, ticks: 2 + cnt.ticks}
	if withX {
		if rc.x = itemField(f, u.Items[4]); rc.x == nil {
			return nil
		}
	}
	if u.Items[3].Kind == syntax.FList {
		rc.ticks++ // the (fnil ...) form's call
	}
	return rc
}

// step is FnProto.RecordStep: the update of acc by the record recs[j],
// when the key is in the transient acc and its sum takes x (nothing is
// charged).
func (rc *recordCount) step(th *core.Thread, acc *core.Map, recs []map[string]any, j int) (core.Value, bool) {
	rec := recs[j]
	k := core.FieldOf(rec, rc.key)
	switch k.(type) {
	case string, int64:
	default:
		return nil, false
	}
	i := acc.TransientSlot(k)
	if i < 0 {
		return nil, false
	}
	var x core.Value = int64(1)
	if rc.x != nil {
		x = core.FieldOf(rec, rc.x)
	}
	if !acc.AddCount(i, rc.cnt.d, rc.cnt.hasD, x) {
		return nil, false
	}
	th.CallPos = rc.pos
	th.Ticks(rc.ticks)
	return acc, true
}

// recordAssoc is (assoc acc (:k r) (:v r)) as a record step.
type recordAssoc struct {
	key, val *core.Keyword
	pos      core.Pos // the assoc's
}

// recordStepOf returns the RecordStep of the reducing function form f
// (a fn whose accumulator is linear), counting update or assoc, or nil.
// counting is f's counting update (countBody), nil when it has none.
func (c *Compiler) recordStepOf(f, counting *syntax.Form) func(*core.Thread, *core.Map, []map[string]any, int) (core.Value, bool) {
	if counting != nil {
		if rc := c.recordCountOf(f, counting); rc != nil {
			return rc.step
		}
		return nil
	}
	if c.PlainLoops || f == nil || !c.isFnForm(f) || len(f.Items) != 3 || !c.LinearAccFn(f) {
		return nil
	}
	b := f.Items[2]
	if len(b.Items) != 4 || !c.callsBuiltin(b, "assoc") || !bindingOf(f.Items[1].Items[0]).is(b.Items[1]) {
		return nil
	}
	ra := &recordAssoc{key: itemField(f, b.Items[2]), val: itemField(f, b.Items[3]), pos: b.Pos}
	if ra.key == nil || ra.val == nil {
		return nil
	}
	return ra.step
}

// step is FnProto.RecordStep: (assoc acc k v) for the fields k and v of
// the record recs[i], with the steps of the call, the assoc node and
// assoc's own, charged and credited as the call is.
func (ra *recordAssoc) step(th *core.Thread, acc *core.Map, recs []map[string]any, i int) (core.Value, bool) {
	rec := recs[i]
	k := core.FieldOf(rec, ra.key)
	switch k.(type) {
	case string, int64:
	default:
		return nil, false
	}
	v := core.FieldOf(rec, ra.val)
	switch v.(type) {
	case nil, bool, int64, float64, string:
	default:
		return nil, false
	}
	mark, n0 := th.StepMark(acc)
	th.CallPos = ra.pos
	th.Ticks(3)
	m := builtins.AssocCharged(th, acc, k, v)
	th.StepCredit(mark, acc, n0, recs, i, m)
	return m, true
}
