package compile

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// compilePattern compiles a binding pattern (symbol, vector or map
// pattern), declaring its names in the current scope.
func (c *Compiler) compilePattern(p *syntax.Form) core.Binder {
	switch p.Kind {
	case syntax.FSym:
		if p.Ns != "" || p.Name == "&" {
			c.fail(core.KindAnalysis, p.Pos, "", "invalid binding name: %s", p.SymText())
		}
		slot := c.sc.declareSym(p)
		return func(fr *core.Frame, v core.Value) { fr.Slots[slot] = v }
	case syntax.FVec:
		return c.vectorPattern(p)
	case syntax.FMap:
		return c.mapPattern(p, false)
	case syntax.FLit:
		if p.Val == nil || p.Val == true || p.Val == false {
			c.fail(core.KindAnalysis, p.Pos, "", "cannot bind %s: it is reserved", core.PrStr(p.Val))
		}
	}
	c.fail(core.KindAnalysis, p.Pos, "bind a symbol, a [vector] or a {map} pattern", "invalid binding pattern: %s", FormText(p))
	return nil
}

func (c *Compiler) vectorPattern(p *syntax.Form) core.Binder {
	var elems []core.Binder
	var rest, as core.Binder
	items := p.Items
	for i := 0; i < len(items); i++ {
		it := items[i]
		if it.IsSym("&") {
			if i+1 >= len(items) {
				c.fail(core.KindAnalysis, it.Pos, "", "& must be followed by a binding")
			}
			rest = c.restPattern(items[i+1])
			i++
			continue
		}
		if it.Kind == syntax.FLit {
			if k, ok := it.Val.(*core.Keyword); ok && k.Name == "as" {
				if i+1 >= len(items) || items[i+1].Kind != syntax.FSym {
					c.fail(core.KindAnalysis, it.Pos, "", ":as must be followed by a symbol")
				}
				as = c.compilePattern(items[i+1])
				i++
				continue
			}
		}
		elems = append(elems, c.compilePattern(it))
	}
	pos := p.Pos
	return func(fr *core.Frame, v core.Value) {
		var seq []core.Value
		switch x := v.(type) {
		case nil:
		case *core.Vector:
			seq = x.Items()
		case *core.LazySeq:
			n := len(elems)
			if rest != nil {
				seq = fr.Th.Seq(x, "destructure", 0)
			} else {
				for i := 0; i < n; i++ {
					if _, ok := x.Nth(fr.Th, i); !ok {
						break
					}
				}
				seq, _ = x.Snapshot()
			}
		case *core.Set, string:
			seq = fr.Th.Seq(x, "destructure", 0)
		case *core.Map, core.HostMap:
			// As Clojure: a pattern with & reads the map as a sequence
			// of [key value] entries (first and next); one without
			// reads by index (nth), which a map has not.
			if rest == nil {
				panic(&core.Error{Kind: core.KindDestructure, Pos: pos, Msg: "a map has no positions to destructure (nth): destructure (seq m) for its [key value] entries, got " + core.ErrorPreview(v)})
			}
			seq = fr.Th.Seq(x, "destructure", 0)
		default:
			panic(&core.Error{Kind: core.KindDestructure, Pos: pos, Msg: "expected a collection or nil, got " + core.ErrorPreview(v)})
		}
		for i, e := range elems {
			if i < len(seq) {
				e(fr, seq[i])
			} else {
				e(fr, nil)
			}
		}
		if rest != nil {
			if len(seq) > len(elems) {
				r := seq[len(elems):]
				rest(fr, &core.Vector{Slots: r[:len(r):len(r)]})
			} else {
				rest(fr, nil)
			}
		}
		if as != nil {
			as(fr, v)
		}
	}
}

type mapPatEntry struct {
	bind  core.Binder
	key   core.Value
	dflt  core.Node
	local string
}

// restPattern compiles the pattern after &: a map pattern there reads
// the rest arguments as keyword arguments (& {:keys [a]}), as Clojure
// reads a seq as a map.
func (c *Compiler) restPattern(p *syntax.Form) core.Binder {
	if p.Kind == syntax.FMap {
		return c.mapPattern(p, true)
	}
	return c.compilePattern(p)
}

// mapPattern compiles {a :a :keys [b] ...}. A vector is looked up by
// index, as Clojure's get does ({a 0} binds its first item); rest
// arguments (rest) are read as keyword arguments.
func (c *Compiler) mapPattern(p *syntax.Form, rest bool) core.Binder {
	var entries []mapPatEntry
	var as core.Binder
	defaults := map[string]*syntax.Form{}
	// first pass: collect :or defaults
	for i := 0; i+1 < len(p.Items); i += 2 {
		k := p.Items[i]
		if k.Kind == syntax.FLit {
			if kw, ok := k.Val.(*core.Keyword); ok && kw.Name == "or" {
				m := p.Items[i+1]
				if m.Kind != syntax.FMap {
					c.fail(core.KindAnalysis, m.Pos, "", ":or must be followed by a map")
				}
				for j := 0; j+1 < len(m.Items); j += 2 {
					if m.Items[j].Kind != syntax.FSym {
						c.fail(core.KindAnalysis, m.Items[j].Pos, "", ":or keys must be symbols")
					}
					defaults[m.Items[j].Name] = m.Items[j+1]
				}
			}
		}
	}
	add := func(target *syntax.Form, key core.Value, local string) {
		var dflt core.Node
		if target.Kind == syntax.FSym {
			if d, ok := defaults[target.Name]; ok {
				dflt = c.compile(d, false)
			}
		}
		entries = append(entries, mapPatEntry{bind: c.compilePattern(target), key: key, dflt: dflt, local: local})
	}
	for i := 0; i < len(p.Items); i += 2 {
		k, v := p.Items[i], p.Items[i+1]
		if k.Kind == syntax.FLit {
			if kw, ok := k.Val.(*core.Keyword); ok {
				kind, nsPre := kw.Name, "" // :a/keys [b] reads :a/b
				if i := strings.LastIndexByte(kind, '/'); i > 0 && kind[i+1:] == "keys" {
					kind, nsPre = "keys", kind[:i+1]
				}
				switch kind {
				case "keys", "strs", "syms":
					if v.Kind != syntax.FVec {
						c.fail(core.KindAnalysis, v.Pos, "", ":%s must be followed by a vector", kw.Name)
					}
					for _, s := range v.Items {
						// a/b (or :a/b) reads the key :a/b into the local b
						var full string
						switch {
						case s.Kind == syntax.FSym && s.Ns != "":
							full = s.Ns + "/" + s.Name
						case s.Kind == syntax.FSym:
							full = nsPre + s.Name
						case s.Kind == syntax.FLit:
							if k2, ok := s.Val.(*core.Keyword); ok {
								full = k2.Name
							}
						}
						name := full
						if i := strings.LastIndexByte(full, '/'); i > 0 && i < len(full)-1 {
							name = full[i+1:]
						}
						if name == "" {
							c.fail(core.KindAnalysis, s.Pos, "", ":%s entries must be symbols", kw.Name)
						}
						var key core.Value = c.Host.Keyword(full)
						if kind != "keys" {
							key = full
						}
						t := mkSym(name, s.Pos)
						t.Res = s.Res // the binding occurrence the resolver recorded
						add(t, key, name)
					}
					continue
				case "or":
					continue
				case "as":
					if v.Kind != syntax.FSym {
						c.fail(core.KindAnalysis, v.Pos, "", ":as must be followed by a symbol")
					}
					as = c.compilePattern(v)
					continue
				}
			}
		}
		// rename: target pattern k, source key v
		var key core.Value
		switch v.Kind {
		case syntax.FLit:
			key = v.Val
		case syntax.FSym:
			key = v.Name
		default:
			c.fail(core.KindAnalysis, v.Pos, "", "map pattern source key must be a keyword, string or symbol")
		}
		add(k, key, "")
	}
	pos := p.Pos
	return func(fr *core.Frame, v core.Value) {
		var m *core.Map
		switch x := v.(type) {
		case nil:
			m = core.EmptyMap
		case core.HostMap: // a host record is read in place
			for _, e := range entries {
				val, ok := x.Get(e.key)
				if !ok && e.dflt != nil {
					val = e.dflt(fr)
				}
				e.bind(fr, val)
			}
			if as != nil {
				as(fr, v)
			}
			return
		case *core.Map:
			m = x
		case *core.Vector:
			if !rest {
				for _, e := range entries {
					val, ok := vectorGet(x, e.key)
					if !ok && e.dflt != nil {
						val = e.dflt(fr)
					}
					e.bind(fr, val)
				}
				if as != nil {
					as(fr, v)
				}
				return
			}
			// keyword arguments: & {:keys [...]}
			if x.Len()%2 != 0 {
				panic(&core.Error{Kind: core.KindDestructure, Pos: pos, Msg: "expected map or nil, got " + core.ErrorPreview(v)})
			}
			b := core.NewMapBuilder(x.Len() / 2)
			for i := 0; i < x.Len(); i += 2 {
				b.SetExactLast(x.At(i), x.At(i+1))
			}
			m = b.Build()
		default:
			panic(&core.Error{Kind: core.KindDestructure, Pos: pos, Msg: fmt.Sprintf("expected map or nil, got %s", core.ErrorPreview(v))})
		}
		for _, e := range entries {
			val, ok := m.Get(e.key)
			if !ok && e.dflt != nil {
				val = e.dflt(fr)
			}
			e.bind(fr, val)
		}
		if as != nil {
			as(fr, v)
		}
	}
}

// vectorGet is (get v k) on a vector: the item at an integer index.
func vectorGet(v *core.Vector, k core.Value) (core.Value, bool) {
	if i, ok := k.(int64); ok && i >= 0 && i < int64(v.Len()) {
		return v.At(int(i)), true
	}
	return nil, false
}
