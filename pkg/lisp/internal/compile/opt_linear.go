package compile

import "github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"

// Linear accumulators: a reducing function (fn [acc x] ...) or a loop
// binding whose every use hands the map on to a tail assoc, update or
// dissoc of it (or returns it as is) may update it in place as a
// transient, since no other reference can see the old value. The checks
// ask the resolver what each head names, so a local spelled like a
// builtin is a call of that local here.

// isFnForm reports whether f is a literal (fn [params] body...) form.
func (c *Compiler) isFnForm(f *syntax.Form) bool {
	return len(f.Items) >= 3 && c.headSpecial(f) == spFn && f.Items[1].Kind == syntax.FVec
}

// LinearAccFn checks (fn [acc x] body...) for a linearly used acc: every
// use of acc is the map argument of a tail assoc/update/dissoc (whose other
// arguments do not mention acc), or acc returned as is, possibly through
// if/when/cond/let/do. No nested form may capture or rebind it. Each head
// counts as what it names there (resolve.go): a local named assoc or when
// is a function call, which may keep acc.
func (c *Compiler) LinearAccFn(f *syntax.Form) bool {
	params := f.Items[1].Items
	if len(params) != 2 || params[0].Kind != syntax.FSym || params[0].Ns != "" || params[0].Name == "&" {
		return false
	}
	acc := bindingOf(params[0])
	if acc.usedIn(params[1]) {
		return false
	}
	body := f.Items[2:]
	for _, b := range body[:len(body)-1] {
		if acc.usedIn(b) {
			return false
		}
	}
	return c.linearTail(body[len(body)-1], acc, -1)
}

// linearUpdates are the builtins whose first argument a linear use may
// update in place.
var linearUpdates = map[string]bool{"assoc": true, "update": true, "dissoc": true, "assoc-in": true, "update-in": true}

// linearUpdate reports whether f is a call of a linearUpdates builtin.
func (c *Compiler) linearUpdate(f *syntax.Form) bool {
	return linearUpdates[c.headBuiltin(f)]
}

// linearFirst reports whether f, the map an update changes, is acc or a
// linear update of acc.
func (c *Compiler) linearFirst(f *syntax.Form, acc binding) bool {
	return acc.is(f) || f.Kind == syntax.FList && c.linearTail(f, acc, -1)
}

// linearTail checks that f, in tail position, uses acc linearly. In a
// loop whose binding recurArg is acc (recurArg < 0 elsewhere), a recur
// may hand acc on as that binding the same way: its other arguments must
// not mention acc.
func (c *Compiler) linearTail(f *syntax.Form, acc binding, recurArg int) bool {
	if acc.is(f) || !acc.usedIn(f) {
		return true
	}
	if f.Kind != syntax.FList || len(f.Items) == 0 || f.Items[0].Kind != syntax.FSym || f.Items[0].Ns != "" {
		return false
	}
	it := f.Items
	noneUse := func(fs []*syntax.Form) bool {
		for _, x := range fs {
			if acc.usedIn(x) {
				return false
			}
		}
		return true
	}
	if c.linearUpdate(f) {
		// (assoc acc ...), or of a linear update of acc: (assoc (assoc acc ...) ...)
		return len(it) >= 3 && c.linearFirst(it[1], acc) && noneUse(it[2:])
	}
	switch sp := c.headSpecial(f); sp {
	case spIf, spIfNot:
		return len(it) >= 3 && len(it) <= 4 && !acc.usedIn(it[1]) && c.linearTail(it[2], acc, recurArg) && (len(it) == 3 || c.linearTail(it[3], acc, recurArg))
	case spWhen, spWhenNot, spDo:
		start := 1
		if sp != spDo {
			if len(it) < 3 || acc.usedIn(it[1]) {
				return false
			}
			start = 2
		}
		if len(it) <= start {
			return true
		}
		return noneUse(it[start:len(it)-1]) && c.linearTail(it[len(it)-1], acc, recurArg)
	case spCond:
		if len(it)%2 == 0 {
			return false
		}
		for i := 1; i+1 < len(it); i += 2 {
			if acc.usedIn(it[i]) || !c.linearTail(it[i+1], acc, recurArg) {
				return false
			}
		}
		return true
	case spLet:
		if len(it) < 3 || it[1].Kind != syntax.FVec || acc.usedIn(it[1]) {
			return false
		}
		return noneUse(it[2:len(it)-1]) && c.linearTail(it[len(it)-1], acc, recurArg)
	case spThread:
		// (-> acc (assoc ...) (update ...)): each step an update of the last
		if len(it) < 2 || !c.linearFirst(it[1], acc) {
			return false
		}
		for _, step := range it[2:] {
			if step.Kind != syntax.FList || len(step.Items) < 2 || !c.linearUpdate(step) || !noneUse(step.Items[1:]) {
				return false
			}
		}
		return true
	case spRecur:
		if recurArg < 0 || recurArg+1 >= len(it) {
			return false
		}
		for j, x := range it[1:] {
			if j != recurArg && acc.usedIn(x) {
				return false
			}
		}
		return c.linearTail(it[recurArg+1], acc, -1)
	}
	return false
}
