package compile

import (
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// countSplitCall compiles (count (split s sep)) without building the
// pieces: for a string and a string separator it counts them with the same
// steps, budget charge and trailing-empty rule as split; anything else
// (a regex, a limit, nil, bad arguments) runs the two builtins as usual.
// ok is false when f is not that shape.
func (c *Compiler) countSplitCall(count *core.Builtin, f *syntax.Form) (core.Node, bool) {
	if len(f.Items) != 2 {
		return nil, false
	}
	inner := f.Items[1]
	if inner.Kind != syntax.FList || len(inner.Items) != 3 || inner.Items[0].Kind != syntax.FSym {
		return nil, false
	}
	split, ok := c.constArg(inner.Items[0])
	if sb, isB := split.(*core.Builtin); !ok || !isB || sb.Name != "split" {
		return nil, false
	}
	splitB := split.(*core.Builtin)
	// (split s sep) has a valid arity, so there is no static check to keep
	sa, sb := c.compile(inner.Items[1], false), c.compile(inner.Items[2], false)
	spos, pos := inner.Pos, f.Pos
	countFn := count.Fn
	return func(fr *core.Frame) core.Value {
		th := fr.Th
		mark := th.Sp
		a := th.AllocArgs(2)
		a[0] = sa(fr)
		a[1] = sb(fr)
		th.CallPos = spos
		th.Tick()
		s, isStr := a[0].(string)
		sep, isSep := a[1].(string)
		if isStr && isSep && sep != "" {
			th.Sp = mark
			n := countSplitLiteral(th, s, sep)
			th.CallPos = pos
			th.Tick()
			return core.Int(int64(n))
		}
		v := splitB.Fn(th, a)
		a = a[:1]
		a[0] = v
		th.CallPos = pos
		th.Tick()
		v = countFn(th, a)
		th.Sp = mark
		return v
	}, true
}

// countSplitLiteral is len(splitLiteral(th, s, sep, 0)) for a non-empty
// sep, without the pieces.
func countSplitLiteral(th *core.Thread, s, sep string) int {
	if !strings.Contains(s, sep) {
		return 1
	}
	n := strings.Count(s, sep) + 1
	th.AllocSlots(n)
	last := 0 // pieces up to the last non-empty one
	for k := 0; k < n-1; k++ {
		th.Tick()
		i := strings.Index(s, sep)
		if i > 0 {
			last = k + 1
		}
		s = s[i+len(sep):]
	}
	if s != "" {
		last = n
	}
	return last
}
