package compile

import (
	"strconv"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// What a resolved symbol names (syntax.Form.Res), and the special forms
// by their ids: the resolver (resolve.go) writes these, the compiler's
// state and every pass read them.

// resKind is the kind of a resolved symbol (the low resBits of Res).
type resKind uint32

const (
	resNone    resKind = iota // not resolved: made by the compiler, or data
	resSpecial                // the head of a special form; id: its specialID
	resLocal                  // a use of a local; id: its binder's number
	resBinder                 // a binding occurrence; id: its number
	resGlobal                 // a name def'd in the program
	resBuiltin                // a builtin of the table (by its unqualified name)
	resOther                  // anything else: qualified, unbound, a host constant
)

const resBits = 3

// resMade marks the Res of a head the compiler made for an expansion
// (mkSpecial, mkBuiltin): it names what it says whatever locals are in
// scope there.
const resMade = 1 << 31

func mkRes(k resKind, id uint32) uint32 { return id<<resBits | uint32(k) }

// resOf returns the kind and id f's Res holds.
func resOf(f *syntax.Form) (resKind, uint32) {
	r := f.Res &^ resMade
	return resKind(r & (1<<resBits - 1)), r >> resBits
}

// specialID names a special form: 1 + its index in builtins.SpecialForms,
// the one list of them (0: none).
type specialID uint8

// specialIDs maps each special form's name to its id.
var specialIDs = func() map[string]specialID {
	m := make(map[string]specialID, len(builtins.SpecialForms))
	for i, f := range builtins.SpecialForms {
		m[f.Name] = specialID(i + 1)
	}
	return m
}()

// specialNamed returns the id of a special form the compiler names; the
// list must have it.
func specialNamed(name string) specialID {
	id, ok := specialIDs[name]
	if !ok {
		panic("compile: no special form " + name)
	}
	return id
}

// The special forms the resolver and the passes tell apart.
var (
	spDo          = specialNamed("do")
	spIf          = specialNamed("if")
	spIfNot       = specialNamed("if-not")
	spWhen        = specialNamed("when")
	spWhenNot     = specialNamed("when-not")
	spCond        = specialNamed("cond")
	spCase        = specialNamed("case")
	spIfLet       = specialNamed("if-let")
	spWhenLet     = specialNamed("when-let")
	spIfSome      = specialNamed("if-some")
	spWhenSome    = specialNamed("when-some")
	spWhenFrst    = specialNamed("when-first")
	spLet         = specialNamed("let")
	spLetfn       = specialNamed("letfn")
	spFn          = specialNamed("fn")
	spDefn        = specialNamed("defn")
	spDefnP       = specialNamed("defn-")
	spDef         = specialNamed("def")
	spDefonce     = specialNamed("defonce")
	spLoop        = specialNamed("loop")
	spRecur       = specialNamed("recur")
	spAnd         = specialNamed("and")
	spOr          = specialNamed("or")
	spThread      = specialNamed("->")
	spThreadL     = specialNamed("->>")
	spSomeThread  = specialNamed("some->")
	spSomeThreadL = specialNamed("some->>")
	spCondThread  = specialNamed("cond->")
	spCondThreadL = specialNamed("cond->>")
	spAs          = specialNamed("as->")
	spFor         = specialNamed("for")
	spDoseq       = specialNamed("doseq")
	spQuote       = specialNamed("quote")
	spComment     = specialNamed("comment")
	spWhere       = specialNamed("where")
)

// IsSpecialForm reports whether name is a special form's.
func IsSpecialForm(name string) bool { return specialIDs[name] != 0 }

// unshadowable are the forms that are special forms in Clojure too (the
// others are macros there): a local of the same name does not shadow them
// in call position, so (let [if inc] (if true 1 2)) is 1.
func unshadowable(id specialID) bool {
	return id == spIf || id == spDo || id == spQuote || id == spDef || id == spRecur
}

// testFirst reports whether id is a special form whose first argument is
// a test, evaluated once before the one branch that runs: the passes that
// reason about a loop's body (cursors, owned boxes, walks) treat them
// alike.
func testFirst(id specialID) bool {
	return id == spIf || id == spIfNot || id == spWhen || id == spWhenNot
}

// percentNames are the parameter names of #(...): %& first, then %1 ...
var percentNames = func() []string {
	names := []string{"%&"}
	for i := 1; i <= maxPercent; i++ {
		names = append(names, "%"+strconv.Itoa(i))
	}
	return names
}()

// maxPercent is the highest numbered % parameter #(...) takes.
const maxPercent = 20

// implicitBinder returns the binder number the resolver recorded on a
// form that declares a local no symbol of it spells: the fn of a defn
// (its own name, in its body), the conditions map of a fn arity (% in
// :post) and #(...) (the first of its % parameters, percentNames); 0
// when it recorded none.
func implicitBinder(f *syntax.Form) uint32 {
	if k, id := resOf(f); k == resBinder {
		return id
	}
	return 0
}

// binding is one binding occurrence, as the passes ask about it: does
// this symbol name it, does this form mention it. The answer is the
// resolver's (the binder number each use and binding occurrence
// records), so a local of the same name that shadows it is another
// binding. A symbol the compiler made (unresolved) names it when it is
// spelled alike, and so does every symbol of that spelling when the
// binding itself was made by the compiler (id 0): those forms have no
// binder numbers to compare.
type binding struct {
	name string
	id   uint32 // the binder number; 0: a binding the compiler made
}

// bindingOf returns the binding that binding symbol p declares.
func bindingOf(p *syntax.Form) binding {
	k, id := resOf(p)
	if k != resBinder {
		id = 0
	}
	return binding{p.Name, id}
}

// is reports whether f is a symbol that names b where it is written. A
// binding occurrence of b counts: the compiler reuses an as-> name's
// binding symbol as the value it ends with.
func (b binding) is(f *syntax.Form) bool {
	if f.Kind != syntax.FSym || f.Ns != "" {
		return false
	}
	k, id := resOf(f)
	if b.id != 0 && (k == resLocal || k == resBinder) {
		return id == b.id
	}
	return (b.id == 0 || k == resNone) && f.Name == b.name
}

// usedIn reports whether some symbol in f names b.
func (b binding) usedIn(f *syntax.Form) bool {
	if f.Kind == syntax.FSym {
		return b.is(f)
	}
	for _, it := range f.Items {
		if b.usedIn(it) {
			return true
		}
	}
	return false
}

// declares reports whether binding pattern p declares a local spelled
// name (a binding occurrence of it, or an unresolved symbol of that
// spelling).
func declares(p *syntax.Form, name string) bool {
	if p.Kind == syntax.FSym {
		k, _ := resOf(p)
		return p.Ns == "" && p.Name == name && (k == resBinder || k == resNone)
	}
	for _, it := range p.Items {
		if declares(it, name) {
			return true
		}
	}
	return false
}

// sameRef reports whether symbols a and b name the same thing: spelled
// alike and, when both are resolved, resolved alike (the same binding,
// the same global).
func sameRef(a, b *syntax.Form) bool {
	if a.Kind != syntax.FSym || b.Kind != syntax.FSym || a.Ns != b.Ns || a.Name != b.Name {
		return false
	}
	ka, _ := resOf(a)
	kb, _ := resOf(b)
	return ka == resNone || kb == resNone || a.Res&^resMade == b.Res&^resMade
}

// anyIs reports whether f names one of bs.
func anyIs(bs []binding, f *syntax.Form) bool {
	for _, b := range bs {
		if b.is(f) {
			return true
		}
	}
	return false
}

// resName is a local in scope while resolving.
type resName struct {
	name string
	id   uint32
}
