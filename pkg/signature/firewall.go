package signature

import "strings"

// FirewalledText is what every printer and message shows in place of a
// firewalled value.
const FirewalledText = "<Firewalled>"

// IsFirewalled reports whether a field or input name is firewalled: it starts
// with "_". Firewalled fields are available to programs (ctx/_ids) and to Go
// callers, but never shown to a model and left out of the schema a parent
// agent sees.
func IsFirewalled(name string) bool { return strings.HasPrefix(name, "_") }

// Public returns t without its firewalled fields, removed recursively through
// lists, optionals and maps. It returns t itself when nothing is firewalled.
func Public(t Type) Type {
	pt, _ := public(t)
	return pt
}

// public returns the public view of t and whether it differs from t.
func public(t Type) (Type, bool) {
	switch t := t.(type) {
	case List:
		if e, changed := public(t.Elem); changed {
			return List{Elem: e}, true
		}
	case Optional:
		if e, changed := public(t.Elem); changed {
			return Optional{Elem: e}, true
		}
	case Map:
		fs, changed := publicFields(t.Fields)
		if changed {
			return Map{Fields: fs}, true
		}
	case Refined:
		if b, changed := public(t.Base); changed {
			t.Base = b
			return t, true
		}
	case Union:
		var alts []Type
		for i, a := range t.Alts {
			pa, changed := public(a)
			if changed && alts == nil {
				alts = append(make([]Type, 0, len(t.Alts)), t.Alts[:i]...)
			}
			if alts != nil {
				alts = append(alts, pa)
			}
		}
		if alts != nil {
			return Union{Alts: alts}, true
		}
	}
	return t, false
}

func publicFields(in []Field) ([]Field, bool) {
	var out []Field
	changed := false
	for _, f := range in {
		if IsFirewalled(f.Name) {
			changed = true
			continue
		}
		pt, c := public(f.Type)
		changed = changed || c
		out = append(out, Field{Name: f.Name, Type: pt})
	}
	return out, changed
}

// Public returns the signature as a model may see it: firewalled inputs and
// every firewalled field of the inputs and the output removed, recursively.
// It returns s itself when nothing is firewalled.
func (s *Signature) Public() *Signature {
	fs, inChanged := publicFields(s.inputsMap().Fields)
	out, outChanged := public(s.Output)
	if !inChanged && !outChanged {
		return s
	}
	ins := make([]Param, len(fs))
	for i, f := range fs {
		ins[i] = Param(f)
	}
	return &Signature{Inputs: ins, Output: out}
}

// Prompt returns the public canonical form, the signature as a model sees it:
// "(query :string, limit :int?) -> {count :int, items [{id :int}]}".
func (s *Signature) Prompt() string { return s.Public().String() }

// PromptInputs returns the public input list, such as
// "(query :string, limit :int?)".
func (s *Signature) PromptInputs() string { return s.Public().InputsString() }

// PromptOutput returns the public output type, such as
// "{count :int, items [{id :int}]}".
func (s *Signature) PromptOutput() string { return PromptType(s.Output) }

// PromptType returns the public canonical form of t: t.String() without
// firewalled fields.
func PromptType(t Type) string {
	var b strings.Builder
	writeType(&b, Public(t))
	return b.String()
}

// Equal reports whether two types are structurally the same: they have the
// same canonical form (so nil and :any are equal, as are Optional(Optional(t))
// and Optional(t)).
func Equal(a, b Type) bool {
	return orAny(a).String() == orAny(b).String()
}
