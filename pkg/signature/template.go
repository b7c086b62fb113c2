package signature

import (
	"strings"
)

// Placeholder is one {{path}} variable found in a prompt template.
type Placeholder struct {
	// Path is the dotted path split at the dots: {{user.name}} is
	// ["user", "name"].
	Path []string
	// Offset is the byte offset of the opening "{{" in the template.
	Offset int
	// Section is the name of the innermost enclosing {{#name}} or {{^name}}
	// section, or "" at top level. Inside a section a variable names a field
	// of the current element, so CheckPlaceholders leaves it to text mode.
	Section string
}

// String returns the placeholder as written, without spaces: "{{user.name}}".
func (p Placeholder) String() string { return "{{" + strings.Join(p.Path, ".") + "}}" }

// Placeholders lists the {{name}} and {{a.b.c}} variables of a Mustache-style
// template in order of appearance, spaces inside the braces ignored.
// {{{name}}} and {{&name}} count as variables too. Section tags ({{#x}},
// {{^x}}, {{/x}}), comments ({{!...}}), partials ({{>x}}), delimiter changes
// ({{=...=}}), {{.}} and tags that are not dotted names are not variables; the
// section tags set Section on the variables they enclose. An unclosed "{{"
// ends the scan.
func Placeholders(template string) []Placeholder {
	var out []Placeholder
	var sections []string
	for off := 0; ; {
		i := strings.Index(template[off:], "{{")
		if i < 0 {
			return out
		}
		start := off + i
		j := strings.Index(template[start+2:], "}}")
		if j < 0 {
			return out
		}
		end := start + 2 + j + 2
		body := template[start+2 : end-2]
		if strings.HasPrefix(body, "{") && strings.HasPrefix(template[end:], "}") {
			body = body[1:] // {{{name}}}
			end++
		}
		off = end
		body = strings.TrimSpace(body)
		if body == "" {
			continue
		}
		switch body[0] {
		case '#', '^':
			sections = append(sections, strings.TrimSpace(body[1:]))
			continue
		case '/':
			name := strings.TrimSpace(body[1:])
			for k := len(sections) - 1; k >= 0; k-- {
				if sections[k] == name {
					sections = sections[:k]
					break
				}
			}
			continue
		case '!', '>', '=', '<':
			continue
		case '&':
			body = strings.TrimSpace(body[1:])
		}
		path := strings.Split(body, ".")
		valid := true
		for _, p := range path {
			if !IsName(p) {
				valid = false
				break
			}
		}
		if !valid {
			continue
		}
		ph := Placeholder{Path: path, Offset: start}
		if len(sections) > 0 {
			ph.Section = sections[len(sections)-1]
		}
		out = append(out, ph)
	}
}

// CheckPlaceholders checks that every top-level placeholder of template names
// an input of the signature, following dotted paths into typed map inputs:
// {{user.name}} needs an input user whose type, if it is a typed map, has a
// field name (:map and :any inputs accept any path; a path into a primitive
// or a list does not resolve). Placeholders inside sections are not checked
// (see Placeholder.Section).
//
// The error is an *Error of KindPlaceholder listing every unresolved
// placeholder once, in order, a top-level one with the closest input:
// "placeholders {{user}}, {{regoin}} (did you mean {{region}}?) not found
// in signature".
func (s *Signature) CheckPlaceholders(template string) error {
	var missing []string
	seen := map[string]bool{}
	for _, ph := range Placeholders(template) {
		if ph.Section != "" {
			continue
		}
		name := ph.String()
		if seen[name] || s.resolves(ph.Path) {
			continue
		}
		seen[name] = true
		if len(ph.Path) == 1 {
			if c := Closest(ph.Path[0], s.inputNames()); c != "" {
				name += " (did you mean {{" + c + "}}?)"
			}
		}
		missing = append(missing, name)
	}
	if len(missing) == 0 {
		return nil
	}
	return &Error{Kind: KindPlaceholder, Msg: "placeholders " + strings.Join(missing, ", ") + " not found in signature"}
}

// inputNames lists the inputs' names in order.
func (s *Signature) inputNames() []string {
	names := make([]string, len(s.Inputs))
	for i, p := range s.Inputs {
		names[i] = p.Name
	}
	return names
}

func (s *Signature) resolves(path []string) bool {
	p, ok := s.Input(path[0])
	if !ok {
		return false
	}
	return typeResolves(p.Type, path[1:])
}

// typeResolves reports whether a dotted path leads into t: through typed
// maps by field, into :map and :any anywhere, into a union when it leads
// into one of its alternatives.
func typeResolves(t Type, path []string) bool {
	for i, name := range path {
		switch u := unwrapOptional(t).(type) {
		case Map:
			f, ok := u.Field(name)
			if !ok {
				return false
			}
			t = f.Type
		case Prim:
			return u == Any || u == AnyMap
		case Union:
			for _, a := range u.Alts {
				if typeResolves(a, path[i:]) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return true
}
