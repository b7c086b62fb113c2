package builtins

import (
	"math"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// The builtin table. Every builtin is one entry, registered by the
// register function of its group (one builtins_<group>.go file each):
//
//	r.Add("inc", 1, 1, fn).
//		doc("x plus one").ref(refMath).pure().owns(1)
//
// The entry's metadata is the single source for everything that lists or
// reasons about builtins: the language reference in the agent's prompt
// (Reference), the "not available" hints (hints.go), the optimiser's facts
// (purity and function arguments for fusion, opt_fuse.go; owned number boxes,
// opt_ownedbox.go) and docs/lisp-builtins.md (TestBuiltinDocsCurrent).

// Entry is one builtin with its metadata.
type Entry struct {
	Name    string
	B       *core.Builtin
	Group   *builtinGroup
	AliasOf string  // set for r.alias entries
	DocLine string  // one line for the docs
	RefLine refLine // the reference line that lists the name (refNone: not listed)
	RefName string  // the spelling listed ("str/join"); "" = name
	// UsageForm shows how a name Clojure lacks is called ("(sum-by f
	// coll)"), for the reference that lists only those (Extensions).
	UsageForm string
	seq       int // registration order: the order within a reference line
	// IsHost marks a host builtin: its host gives its function
	// (Options.Host, builtins_services.go); it is in no reference line, an
	// agent shows the ones it enables.
	IsHost bool

	// Optimiser facts (conservative: the zero value claims nothing).
	IsPure bool // no effect and never calls an argument (fusion may reorder it)
	FnArg  int  // pure higher-order: the 1-based argument called as a function; -1: depends on the call's shape (fnArgAt)
	OwnMin int  // >0: with at least ownMin arguments the result is a new number or boolean, no argument is kept
	// Foldable: a constructor of a function value that neither touches the
	// Thread nor fails once the arity is right, so a call with constant
	// arguments is made once, at compile time (foldCtor).
	Foldable bool
}

// doc sets the entry's one-line description.
func (e *Entry) doc(s string) *Entry { e.DocLine = s; return e }

// ref lists the entry on line l of the model's language reference.
func (e *Entry) ref(l refLine) *Entry { e.RefLine = l; return e }

// refAs lists the entry on line l under another spelling (a namespaced one).
func (e *Entry) refAs(l refLine, spelling string) *Entry {
	e.RefLine, e.RefName = l, spelling
	return e
}

// usage sets how the entry is called, shown where the reference lists the
// names Clojure lacks.
func (e *Entry) usage(form string) *Entry { e.UsageForm = form; return e }

// pure marks a builtin that has no effect and never calls an argument.
func (e *Entry) pure() *Entry { e.IsPure = true; return e }

// hof marks a pure higher-order builtin whose argument i (1-based) is
// called as a function (-1: it depends on the call's shape, see fnArgAt);
// every other argument is plain data.
func (e *Entry) hof(i int) *Entry { e.FnArg = i; return e }

// arity sets the arity error's wording ("2 or 3") where the bounds alone
// do not say it.
func (e *Entry) arity(text string) *Entry { e.B.ArityText = text; return e }

// folds marks a function constructor whose calls with constant arguments
// may be made at compile time: it builds an equivalent value every time,
// without touching the Thread, charging budgets or failing once the arity
// is right. This keeps (update m k (fnil + 0) v) in a loop from allocating
// a closure per item.
func (e *Entry) folds() *Entry { e.Foldable = true; return e }

// owns marks a builtin that, called with at least min arguments, returns a
// new number or boolean and keeps no argument (opt_ownedbox.go).
func (e *Entry) owns(min int) *Entry { e.OwnMin = min; return e }

// registry collects the entries while the table is built (once).
type registry struct {
	Entries map[string]*Entry
	Group   *builtinGroup
}

// NewRegistry returns an empty registry for the groups to register into.
func NewRegistry() *registry { return &registry{Entries: map[string]*Entry{}} }

// Add registers fn under name with its arity bounds (max < 0: variadic).
func (r *registry) Add(name string, min, max int, fn core.BuiltinFunc) *Entry {
	return r.put(name, &core.Builtin{Name: name, MinArgs: min, MaxArgs: max, Fn: fn}, "")
}

// alias registers an existing builtin under another name; the alias
// shares the function and its optimiser facts.
func (r *registry) alias(alias, name string) *Entry {
	e, ok := r.Entries[name]
	if !ok {
		panic("lisp: alias of unknown builtin " + name)
	}
	a := r.put(alias, e.B, name)
	a.IsPure, a.FnArg, a.OwnMin, a.Foldable = e.IsPure, e.FnArg, e.OwnMin, e.Foldable
	return a
}

func (r *registry) put(name string, b *core.Builtin, aliasOf string) *Entry {
	if _, dup := r.Entries[name]; dup {
		panic("lisp: duplicate builtin " + name)
	}
	e := &Entry{Name: name, B: b, Group: r.Group, AliasOf: aliasOf, seq: len(r.Entries)}
	r.Entries[name] = e
	return e
}

// builtin returns the registered builtin name (for attaching fast paths).
func (r *registry) builtin(name string) *core.Builtin { return r.Entries[name].B }

// builtinGroup is one builtins_<group>.go file.
type builtinGroup struct {
	Name     string // the file's <group>
	Title    string // the docs' heading
	Register func(*registry)
}

// refLine is a line of the model's language reference.
type refLine int

const (
	RefNone refLine = iota
	refForms
	RefSeq
	refAgg
	refMaps
	RefSets
	RefStrings
	RefRegex
	RefMath
	refLogic
	refPred
	refLines // the number of lines
)

// RefTitles are the reference lines' titles, in the order shown.
var RefTitles = [refLines]string{
	refForms:   "Special forms",
	RefSeq:     "Sequences",
	refAgg:     "Aggregation",
	refMaps:    "Maps",
	RefSets:    "Sets",
	RefStrings: "Strings",
	RefRegex:   "Regex and parsing",
	RefMath:    "Math",
	refLogic:   "Comparison and logic",
	refPred:    "Predicates",
}

// ReferenceLine is one line of the language reference: a title and the
// names it lists.
type ReferenceLine struct {
	Title string
	Names []string
}

// RefSpelling is the name the reference lists the entry under.
func (e *Entry) RefSpelling() string {
	if e.RefName != "" {
		return e.RefName
	}
	return e.Name
}

// BuiltinInfo describes one builtin for references and documentation.
type BuiltinInfo struct {
	Name  string
	Group string // the group's title
	// MinArgs and MaxArgs bound the argument count; MaxArgs < 0 means variadic.
	MinArgs, MaxArgs int
	Doc              string
	AliasOf          string // the builtin this name is another name for; "" if none
	// Usage shows how a name Clojure lacks is called ("(sum-by f coll)");
	// "" for the others.
	Usage string
}

// HostConstants are symbols that name constant values.
var HostConstants = map[string]core.Value{
	"Double/POSITIVE_INFINITY": math.Inf(1), "Double/NEGATIVE_INFINITY": math.Inf(-1), "Double/NaN": math.NaN(),
	"POSITIVE_INFINITY": math.Inf(1), "NEGATIVE_INFINITY": math.Inf(-1), "NaN": math.NaN(),
	"Math/PI": math.Pi, "Math/E": math.E, "Boolean/TRUE": true, "Boolean/FALSE": false,
	"Long/MAX_VALUE": int64(math.MaxInt64), "Long/MIN_VALUE": int64(math.MinInt64),
	"Integer/MAX_VALUE": int64(math.MaxInt32), "Integer/MIN_VALUE": int64(math.MinInt32),
}
