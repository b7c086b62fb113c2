package lisp

import (
	"fmt"
	"strings"
)

// compilePattern compiles a binding pattern (symbol, vector or map
// pattern), declaring its names in the current scope.
func (c *compiler) compilePattern(p *form) binder {
	switch p.kind {
	case fSym:
		if p.ns != "" || p.name == "&" {
			c.fail(KindAnalysis, p.pos, "", "invalid binding name: %s", p.symText())
		}
		slot := c.sc.declare(p.name)
		return func(fr *frame, v Value) { fr.slots[slot] = v }
	case fVec:
		return c.vectorPattern(p)
	case fMap:
		return c.mapPattern(p, false)
	case fLit:
		if p.val == nil || p.val == true || p.val == false {
			c.fail(KindAnalysis, p.pos, "", "cannot bind %s: it is reserved", PrStr(p.val))
		}
	}
	c.fail(KindAnalysis, p.pos, "bind a symbol, a [vector] or a {map} pattern", "invalid binding pattern: %s", formText(p))
	return nil
}

func (c *compiler) vectorPattern(p *form) binder {
	var elems []binder
	var rest, as binder
	items := p.items
	for i := 0; i < len(items); i++ {
		it := items[i]
		if it.isSym("&") {
			if i+1 >= len(items) {
				c.fail(KindAnalysis, it.pos, "", "& must be followed by a binding")
			}
			rest = c.restPattern(items[i+1])
			i++
			continue
		}
		if it.kind == fLit {
			if k, ok := it.val.(*Keyword); ok && k.Name == "as" {
				if i+1 >= len(items) || items[i+1].kind != fSym {
					c.fail(KindAnalysis, it.pos, "", ":as must be followed by a symbol")
				}
				as = c.compilePattern(items[i+1])
				i++
				continue
			}
		}
		elems = append(elems, c.compilePattern(it))
	}
	pos := p.pos
	return func(fr *frame, v Value) {
		var seq []Value
		switch x := v.(type) {
		case nil:
		case *Vector:
			seq = x.Items()
		case *LazySeq:
			n := len(elems)
			if rest != nil {
				seq = fr.th.Seq(x, "destructure", 0)
			} else {
				for i := 0; i < n; i++ {
					if _, ok := x.nth(fr.th, i); !ok {
						break
					}
				}
				seq, _ = x.snapshot()
			}
		case *Set, string:
			seq = fr.th.Seq(x, "destructure", 0)
		default:
			panic(&Error{Kind: KindDestructure, Pos: pos, Msg: "expected vector or nil, got " + preview(v)})
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
				rest(fr, &Vector{slots: r[:len(r):len(r)]})
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
	bind  binder
	key   Value
	dflt  node
	local string
}

// restPattern compiles the pattern after &: a map pattern there reads
// the rest arguments as keyword arguments (& {:keys [a]}), as Clojure
// reads a seq as a map.
func (c *compiler) restPattern(p *form) binder {
	if p.kind == fMap {
		return c.mapPattern(p, true)
	}
	return c.compilePattern(p)
}

// mapPattern compiles {a :a :keys [b] ...}. A vector is looked up by
// index, as Clojure's get does ({a 0} binds its first item); rest
// arguments (rest) are read as keyword arguments.
func (c *compiler) mapPattern(p *form, rest bool) binder {
	var entries []mapPatEntry
	var as binder
	defaults := map[string]*form{}
	// first pass: collect :or defaults
	for i := 0; i+1 < len(p.items); i += 2 {
		k := p.items[i]
		if k.kind == fLit {
			if kw, ok := k.val.(*Keyword); ok && kw.Name == "or" {
				m := p.items[i+1]
				if m.kind != fMap {
					c.fail(KindAnalysis, m.pos, "", ":or must be followed by a map")
				}
				for j := 0; j+1 < len(m.items); j += 2 {
					if m.items[j].kind != fSym {
						c.fail(KindAnalysis, m.items[j].pos, "", ":or keys must be symbols")
					}
					defaults[m.items[j].name] = m.items[j+1]
				}
			}
		}
	}
	add := func(target *form, key Value, local string) {
		var dflt node
		if target.kind == fSym {
			if d, ok := defaults[target.name]; ok {
				dflt = c.compile(d, false)
			}
		}
		entries = append(entries, mapPatEntry{bind: c.compilePattern(target), key: key, dflt: dflt, local: local})
	}
	for i := 0; i < len(p.items); i += 2 {
		k, v := p.items[i], p.items[i+1]
		if k.kind == fLit {
			if kw, ok := k.val.(*Keyword); ok {
				kind, nsPre := kw.Name, "" // :a/keys [b] reads :a/b
				if i := strings.LastIndexByte(kind, '/'); i > 0 && kind[i+1:] == "keys" {
					kind, nsPre = "keys", kind[:i+1]
				}
				switch kind {
				case "keys", "strs", "syms":
					if v.kind != fVec {
						c.fail(KindAnalysis, v.pos, "", ":%s must be followed by a vector", kw.Name)
					}
					for _, s := range v.items {
						// a/b (or :a/b) reads the key :a/b into the local b
						var full string
						switch {
						case s.kind == fSym && s.ns != "":
							full = s.ns + "/" + s.name
						case s.kind == fSym:
							full = nsPre + s.name
						case s.kind == fLit:
							if k2, ok := s.val.(*Keyword); ok {
								full = k2.Name
							}
						}
						name := full
						if i := strings.LastIndexByte(full, '/'); i > 0 && i < len(full)-1 {
							name = full[i+1:]
						}
						if name == "" {
							c.fail(KindAnalysis, s.pos, "", ":%s entries must be symbols", kw.Name)
						}
						var key Value = c.host.keyword(full)
						if kind != "keys" {
							key = full
						}
						add(mkSym(name, s.pos), key, name)
					}
					continue
				case "or":
					continue
				case "as":
					if v.kind != fSym {
						c.fail(KindAnalysis, v.pos, "", ":as must be followed by a symbol")
					}
					as = c.compilePattern(v)
					continue
				}
			}
		}
		// rename: target pattern k, source key v
		var key Value
		switch v.kind {
		case fLit:
			key = v.val
		case fSym:
			key = v.name
		default:
			c.fail(KindAnalysis, v.pos, "", "map pattern source key must be a keyword, string or symbol")
		}
		add(k, key, "")
	}
	pos := p.pos
	return func(fr *frame, v Value) {
		var m *Map
		switch x := v.(type) {
		case nil:
			m = emptyMap
		case hostMap: // a host record is read in place
			for _, e := range entries {
				val, ok := x.get(e.key)
				if !ok && e.dflt != nil {
					val = e.dflt(fr)
				}
				e.bind(fr, val)
			}
			if as != nil {
				as(fr, v)
			}
			return
		case *Map:
			m = x
		case *Vector:
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
				panic(&Error{Kind: KindDestructure, Pos: pos, Msg: "expected map or nil, got " + preview(v)})
			}
			b := newMapBuilder(x.Len() / 2)
			for i := 0; i < x.Len(); i += 2 {
				b.setExactLast(x.At(i), x.At(i+1))
			}
			m = b.build()
		default:
			panic(&Error{Kind: KindDestructure, Pos: pos, Msg: fmt.Sprintf("expected map or nil, got %s", preview(v))})
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

// compileFnLit compiles #(...).
func (c *compiler) compileFnLit(f *form) node {
	fn := fnLitAsFn(f)
	return c.compileFn(f, "", "", []fnSpec{{params: fn.items[1], body: fn.items[2:]}})
}

// fnLitAsFn returns the (fn [%1 %2 ...] body) form that #(...) stands for.
func fnLitAsFn(f *form) *form {
	info := &fnLitInfo{}
	scanPercent(f.items, info)
	params := make([]*form, 0, info.maxN+2)
	for i := 1; i <= info.maxN; i++ {
		params = append(params, mkSym("%"+fmt.Sprint(i), f.pos))
	}
	if info.rest {
		params = append(params, mkSym("&", f.pos), mkSym("%&", f.pos))
	}
	var body *form
	if len(f.items) == 1 && f.items[0].kind != fSym && f.items[0].kind != fList {
		body = f.items[0]
	} else {
		body = &form{kind: fList, pos: f.pos, items: f.items}
	}
	body = renamePercent(body)
	return &form{kind: fList, pos: f.pos, items: []*form{mkSym("fn", f.pos), mkVec(f.pos, params...), body}}
}

func scanPercent(fs []*form, info *fnLitInfo) {
	for _, f := range fs {
		if f.kind == fSym && f.ns == "" && len(f.name) > 0 && f.name[0] == '%' {
			switch {
			case f.name == "%":
				info.maxN = max(info.maxN, 1)
			case f.name == "%&":
				info.rest = true
			default:
				var n int
				if _, err := fmt.Sscanf(f.name[1:], "%d", &n); err == nil && n > 0 && n <= 20 {
					info.maxN = max(info.maxN, n)
				}
			}
		}
		scanPercent(f.items, info)
	}
}

func renamePercent(f *form) *form {
	if f.kind == fSym && f.ns == "" && f.name == "%" {
		return mkSym("%1", f.pos)
	}
	if len(f.items) == 0 {
		return f
	}
	cp := *f
	cp.items = make([]*form, len(f.items))
	for i, it := range f.items {
		cp.items[i] = renamePercent(it)
	}
	return &cp
}

// vectorGet is (get v k) on a vector: the item at an integer index.
func vectorGet(v *Vector, k Value) (Value, bool) {
	if i, ok := k.(int64); ok && i >= 0 && i < int64(v.Len()) {
		return v.At(int(i)), true
	}
	return nil, false
}
