package lisp

import "strings"

// countSplitCall compiles (count (split s sep)) without building the
// pieces: for a string and a string separator it counts them with the same
// steps, budget charge and trailing-empty rule as split; anything else
// (a regex, a limit, nil, bad arguments) runs the two builtins as usual.
// ok is false when f is not that shape.
func (c *compiler) countSplitCall(count *Builtin, f *form) (node, bool) {
	if len(f.items) != 2 {
		return nil, false
	}
	inner := f.items[1]
	if inner.kind != fList || len(inner.items) != 3 || inner.items[0].kind != fSym {
		return nil, false
	}
	split, ok := c.constArg(inner.items[0])
	if sb, isB := split.(*Builtin); !ok || !isB || sb.Name != "split" {
		return nil, false
	}
	splitB := split.(*Builtin)
	// (split s sep) has a valid arity, so there is no static check to keep
	sa, sb := c.compile(inner.items[1], false), c.compile(inner.items[2], false)
	spos, pos := inner.pos, f.pos
	countFn := count.Fn
	return func(fr *frame) Value {
		th := fr.th
		mark := th.sp
		a := th.allocArgs(2)
		a[0] = sa(fr)
		a[1] = sb(fr)
		th.pos = spos
		th.tick()
		s, isStr := a[0].(string)
		sep, isSep := a[1].(string)
		if isStr && isSep && sep != "" {
			th.sp = mark
			n := countSplitLiteral(th, s, sep)
			th.pos = pos
			th.tick()
			return Int(int64(n))
		}
		v := splitB.Fn(th, a)
		a = a[:1]
		a[0] = v
		th.pos = pos
		th.tick()
		v = countFn(th, a)
		th.sp = mark
		return v
	}, true
}

// countSplitLiteral is len(splitLiteral(th, s, sep, 0)) for a non-empty
// sep, without the pieces.
func countSplitLiteral(th *Thread, s, sep string) int {
	if !strings.Contains(s, sep) {
		return 1
	}
	n := strings.Count(s, sep) + 1
	th.allocSlots(n)
	last := 0 // pieces up to the last non-empty one
	for k := 0; k < n-1; k++ {
		th.tick()
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
