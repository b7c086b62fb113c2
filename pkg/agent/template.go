package agent

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Template is a parsed prompt template: Mustache-style {{name}} and
// {{a.b}} variables, {{#list}}...{{/list}} sections (iteration over a list,
// or rendered once for a truthy value; an empty list renders nothing),
// {{^x}}...{{/x}} inverted sections and {{! comments}}.
//
// A Template is immutable and safe for concurrent use. Parse it once
// (MustTemplate for package-level variables) and render it many times.
type Template struct {
	src   string
	nodes []mnode
}

// ParseTemplate parses src. Errors name the byte offset: an unclosed "{{",
// a section closed by the wrong name, or a section never closed.
func ParseTemplate(src string) (*Template, error) {
	nodes, rest, closer, err := parseNodes(src, 0, "")
	if err != nil {
		return nil, err
	}
	if closer != "" || rest != len(src) {
		return nil, fmt.Errorf("template: offset %d: unexpected {{/%s}}", rest, closer)
	}
	return &Template{src: src, nodes: nodes}, nil
}

// MustTemplate is ParseTemplate that panics on error, for package-level
// variables initialised from constant text.
func MustTemplate(src string) *Template {
	t, err := ParseTemplate(src)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template source.
func (t *Template) String() string { return t.src }

// Placeholders returns the template's variables (see signature.Placeholders).
func (t *Template) Placeholders() []signature.Placeholder { return signature.Placeholders(t.src) }

// parseNodes parses from offset i until the end or a closing tag; it
// returns the nodes, the offset after the closing tag and the closer's name.
func parseNodes(src string, i int, open string) ([]mnode, int, string, error) {
	var out []mnode
	for i < len(src) {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			out = append(out, mnode{text: src[i:]})
			return out, len(src), "", closeErr(open, len(src))
		}
		if j > 0 {
			out = append(out, mnode{text: src[i : i+j]})
		}
		start := i + j
		endTok := "}}"
		inner := start + 2
		if strings.HasPrefix(src[inner:], "{") {
			endTok = "}}}"
			inner++
		}
		k := strings.Index(src[inner:], endTok)
		if k < 0 {
			return nil, 0, "", fmt.Errorf("template: offset %d: unclosed {{", start)
		}
		tag := strings.TrimSpace(src[inner : inner+k])
		i = inner + k + len(endTok)
		if tag == "" {
			return nil, 0, "", fmt.Errorf("template: offset %d: empty tag", start)
		}
		switch tag[0] {
		case '!':
			continue
		case '/':
			name := strings.TrimSpace(tag[1:])
			if name != open {
				if open == "" {
					return nil, 0, "", fmt.Errorf("template: offset %d: {{/%s}} closes no section", start, name)
				}
				return nil, 0, "", fmt.Errorf("template: offset %d: {{/%s}} closes section {{#%s}}", start, name, open)
			}
			return out, i, name, nil
		case '#', '^':
			name := strings.TrimSpace(tag[1:])
			kids, next, _, err := parseNodes(src, i, name)
			if err != nil {
				return nil, 0, "", err
			}
			out = append(out, mnode{kind: tag[0], path: strings.Split(name, "."), children: kids})
			i = next
		case '&':
			out = append(out, mnode{kind: 'v', path: splitPath(strings.TrimSpace(tag[1:]))})
		case '>', '=':
			return nil, 0, "", fmt.Errorf("template: offset %d: partials and delimiter changes are not supported", start)
		default:
			out = append(out, mnode{kind: 'v', path: splitPath(tag)})
		}
	}
	return out, i, "", closeErr(open, len(src))
}

func splitPath(tag string) []string {
	if tag == "." {
		return []string{"."}
	}
	return strings.Split(tag, ".")
}

func closeErr(open string, off int) error {
	if open == "" {
		return nil
	}
	return fmt.Errorf("template: offset %d: section {{#%s}} is not closed", off, open)
}

// Render expands the template with data (plain Go data, string keys).
// Strings render raw, other values as PTC-Lisp data with the firewall on;
// a path with a "_"-prefixed segment renders as <Firewalled> (so a prompt
// never leaks a firewalled input); a missing value renders as "".
func (t *Template) Render(data map[string]any) string { return t.render(data, nil) }

// render is Render with every rendered string passed through scrub (the
// firewall's redact hook; nil: none).
func (t *Template) render(data map[string]any, scrub func(string, bool) string) string {
	var b strings.Builder
	renderNodes(&b, t.nodes, []any{data}, &templateRules{plain: identity, truthy: truthyT,
		value: func(v any) string { return renderValue(v, scrub) }})
	return b.String()
}

// templateRules are what a template dialect decides at rendering: plain
// reads a value reached by a path (identity for Template, conversion of
// Go values to plain data in text mode), truthy says whether a section
// renders, value prints a variable; limit bounds the output in bytes (0:
// none).
type templateRules struct {
	plain  func(any) any
	truthy func(any) bool
	value  func(any) string
	limit  int
}

// renderNodes renders nodes under the rules r. It returns false once b
// passes r.limit.
func renderNodes(b *strings.Builder, nodes []mnode, stack []any, r *templateRules) bool {
	for _, n := range nodes {
		if r.limit > 0 && b.Len() > r.limit {
			return false
		}
		switch n.kind {
		case 0:
			b.WriteString(n.text)
		case 'v':
			if firewalledPath(n.path) {
				b.WriteString(firewalledText)
				continue
			}
			if v, ok := lookupVia(stack, n.path, r.plain); ok {
				b.WriteString(r.value(v))
			}
		case '#', '^':
			v, ok := lookupVia(stack, n.path, r.plain)
			if firewalledPath(n.path) {
				v, ok = nil, false
			}
			v = r.plain(v)
			truthy := ok && r.truthy(v)
			if n.kind == '^' {
				if !truthy && !renderNodes(b, n.children, stack, r) {
					return false
				}
				continue
			}
			if !truthy {
				continue
			}
			if list, isList := v.([]any); isList {
				for _, it := range list {
					if !renderNodes(b, n.children, append(stack, r.plain(it)), r) {
						return false
					}
				}
				continue
			}
			if !renderNodes(b, n.children, append(stack, v), r) {
				return false
			}
		}
	}
	return r.limit <= 0 || b.Len() <= r.limit
}

// truthyT is the truth of a Template section's value: missing, nil, false
// and an empty list are false.
func truthyT(v any) bool {
	if v == nil || v == false {
		return false
	}
	if list, ok := v.([]any); ok {
		return len(list) > 0
	}
	return true
}

func identity(v any) any { return v }

const firewalledText = signature.FirewalledText

func firewalledPath(p []string) bool {
	for _, s := range p {
		if signature.IsFirewalled(s) {
			return true
		}
	}
	return false
}

// lookupVia resolves a dotted path against the innermost context that has
// its first segment, the rest inside that value; "." is the current
// element. asPlain reads each map it looks into (text mode converts
// structs to plain data there).
func lookupVia(stack []any, path []string, asPlain func(any) any) (any, bool) {
	if len(path) == 1 && path[0] == "." {
		return stack[len(stack)-1], true
	}
	for i := len(stack) - 1; i >= 0; i-- {
		m, ok := asPlain(stack[i]).(map[string]any)
		if !ok {
			continue
		}
		v, ok := m[path[0]]
		if !ok {
			continue
		}
		for _, seg := range path[1:] {
			mm, ok := asPlain(v).(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = mm[seg]; !ok {
				return nil, false
			}
		}
		return v, true
	}
	return nil, false
}

// renderValue prints a value for a prompt: strings raw, the rest as
// firewalled PTC-Lisp data.
func renderValue(v any, scrub func(string, bool) string) string {
	if s, ok := v.(string); ok {
		if scrub != nil {
			return scrub(s, false)
		}
		return s
	}
	lv, err := lisp.FromGo(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return lisp.Sprint(lv, lisp.PrintOptions{Raw: true, Scrub: scrub})
}
