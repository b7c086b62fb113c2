package builtins

import (
	"cmp"
	"slices"
	"sync"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// BuiltinGroups are the groups in reference order; names must be unique
// across groups.
var BuiltinGroups = []*builtinGroup{
	{"core", "Core: arithmetic, comparison, count, get, map/filter/reduce, output, memory, return and fail", registerCore},
	{"lazy", "Lazy sequences", registerLazy},
	{"access", "Access", registerAccess},
	{"seq", "Sequences", registerSeq},
	{"agg", "Aggregation", registerAgg},
	{"maps", "Maps", registerMaps},
	{"sets", "Sets", registerSets},
	{"math", "Math", registerMath},
	{"logic", "Predicates and logic", registerLogic},
	{"strings", "Strings", registerStrings},
	{"regex", "Regular expressions and parsing", registerRegex},
	{"hof", "Functions and more collections", registerHOF},
	{"interop", "Host interop", registerInterop},
	{"services", "Host services: given by the agent that runs the program", registerServices},
}

// BuiltinEntries returns the immutable entry table, built on first use.
var BuiltinEntries = sync.OnceValue(func() map[string]*Entry {
	r := NewRegistry()
	for _, g := range BuiltinGroups {
		r.Group = g
		g.Register(r)
	}
	attachFast(r)
	return r.Entries
})

// BuiltinTable returns the immutable name → builtin table.
var BuiltinTable = sync.OnceValue(func() map[string]*core.Builtin {
	es := BuiltinEntries()
	m := make(map[string]*core.Builtin, len(es))
	for n, e := range es {
		m[n] = e.B
	}
	return m
})

// Facts returns the entry of builtin name for its optimiser facts, or the
// zero entry, which claims nothing, when there is none. The compiler asks
// for every call head, so this is one map lookup and no copy; callers
// only read the entry.
func Facts(name string) *Entry {
	if e := BuiltinEntries()[name]; e != nil {
		return e
	}
	return &noFacts
}

// noFacts is the zero entry (never written).
var noFacts Entry

// Reference returns the language reference's lines: the special forms and
// the builtins that the builtin table lists for the model, in table order.
// The result is freshly allocated.
func Reference() []ReferenceLine {
	lines := ReferenceLines()
	out := make([]ReferenceLine, len(lines))
	for i, l := range lines {
		out[i] = ReferenceLine{Title: l.Title, Names: slices.Clone(l.Names)}
	}
	return out
}

// ReferenceLines are the language reference's lines, built once from the
// table (Reference gives callers their own copy).
var ReferenceLines = sync.OnceValue(func() []ReferenceLine {
	var byLine [refLines][]*Entry
	for _, e := range BuiltinEntries() {
		if e.RefLine != RefNone {
			byLine[e.RefLine] = append(byLine[e.RefLine], e)
		}
	}
	var out []ReferenceLine
	for l := refForms; l < refLines; l++ {
		var names []string
		if l == refForms {
			for _, f := range SpecialForms {
				if f.ref {
					names = append(names, f.Name)
				}
			}
		}
		es := byLine[l]
		slices.SortFunc(es, func(a, b *Entry) int { return cmp.Compare(a.seq, b.seq) })
		for _, e := range es {
			names = append(names, e.RefSpelling())
		}
		if len(names) > 0 {
			out = append(out, ReferenceLine{Title: RefTitles[l], Names: names})
		}
	}
	return out
})

// Builtins describes every builtin, by group and then by name.
func Builtins() []BuiltinInfo {
	es := BuiltinEntries()
	out := make([]BuiltinInfo, 0, len(es))
	gi := map[*builtinGroup]int{}
	for i, g := range BuiltinGroups {
		gi[g] = i
	}
	names := make([]string, 0, len(es))
	for n := range es {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(gi[es[a].Group], gi[es[b].Group]), cmp.Compare(a, b))
	})
	for _, n := range names {
		e := es[n]
		out = append(out, BuiltinInfo{Name: n, Group: e.Group.Title, MinArgs: e.B.MinArgs, MaxArgs: e.B.MaxArgs,
			Doc: e.DocLine, AliasOf: e.AliasOf, Usage: e.UsageForm})
	}
	return out
}

// HostBuiltins describes the host builtins, by name, with their usage
// forms: what an agent shows its model for the ones it enables.
func HostBuiltins() map[string]BuiltinInfo {
	out := map[string]BuiltinInfo{}
	for _, bi := range Builtins() {
		if bi.Usage != "" && BuiltinEntries()[bi.Name].IsHost {
			out[bi.Name] = bi
		}
	}
	return out
}
