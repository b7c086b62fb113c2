package compile

import (
	"fmt"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

func (c *Compiler) compileSym(f *syntax.Form, inOr bool) core.Node {
	if f.Ns == "" {
		if kind, idx, ok := c.sc.lookup(f); ok {
			switch kind {
			case refLocal:
				return func(fr *core.Frame) core.Value { return fr.Slots[idx] }
			case refCap:
				return func(fr *core.Frame) core.Value { return fr.Caps[idx] }
			default:
				return func(fr *core.Frame) core.Value { return fr.Self }
			}
		}
		// not a local: what the resolver says it is (a symbol the
		// compiler made, unresolved, by its name)
		k, _ := resOf(f)
		if k == resSpecial || k == resNone && IsSpecialForm(f.Name) {
			c.fail(core.KindAnalysis, f.Pos, fmt.Sprintf("write (%s ...)", f.Name), "%s is a special form and cannot be used as a value", f.Name)
		}
		if k == resBuiltin || k == resNone {
			if b, ok := c.Builtins[f.Name]; ok {
				return constNode(b)
			}
		}
		if v, ok := hostConstant(f); ok { // a def of the name does not hide it
			return constNode(v)
		}
		name := f.Name
		pos := f.Pos
		if k == resGlobal || k == resNone && c.MemNames[name] || inOr {
			return func(fr *core.Frame) core.Value {
				if v, ok := fr.Th.Mem[name]; ok {
					return v
				}
				if inOr {
					return nil
				}
				panic(&core.Error{Kind: core.KindUnbound, Pos: pos, Msg: "undefined symbol: " + name, Hint: "it is def'd later in the program; define it before use"})
			}
		}
		c.unbound(f)
	}
	switch f.Ns {
	case "ctx", "data":
		key := f.Name
		return func(fr *core.Frame) core.Value { return fr.Th.Host.CtxGet(fr.Th, key) }
	case "memory", "mem":
		name := f.Name
		if b, ok := c.Builtins["memory/"+name]; ok {
			return constNode(b)
		}
		return func(fr *core.Frame) core.Value { return fr.Th.Mem[name] }
	case "tool":
		name := c.checkTool(f.Name, f.Pos)
		return constNode(&core.Builtin{Name: "tool/" + name, MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			return th.Host.CallToolArgs(th, name, args)
		}})
	}
	if b, ok := c.LookupBuiltin(f.Ns, f.Name); ok {
		return constNode(b)
	}
	if v, ok := hostConstant(f); ok {
		return constNode(v)
	}
	if canon, ok := NsAliases[f.Ns]; ok {
		c.fail(core.KindUnbound, f.Pos, c.namespacedHint(canon, f.Name), "%s/%s is not available", f.Ns, f.Name)
	}
	c.fail(core.KindUnbound, f.Pos, "", "unknown namespace %s/; use tool/ for tools, ctx/ for inputs", f.Ns)
	return nil
}

// hostConstant returns the value of the host constant symbol f names
// (Math/PI, NaN).
func hostConstant(f *syntax.Form) (core.Value, bool) {
	name := f.Name
	if f.Ns != "" {
		name = f.Ns + "/" + f.Name
	}
	v, ok := builtins.HostConstants[name]
	return v, ok
}
