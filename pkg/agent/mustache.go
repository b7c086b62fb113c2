package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Text-mode prompts are full Mustache templates (without partials, lambdas
// and delimiter changes):
//
//	{{name}} {{a.b}}           variables (dotted paths), {{{x}}} and {{&x}} alike
//	{{#list}}...{{/list}}      sections: once per element of a list, once
//	                           with a non-empty map or truthy scalar
//	{{^x}}...{{/x}}            inverted sections: when x is falsy or empty
//	{{.}}                      the current element (scalar lists)
//	{{! comment }}             comments
//
// Section, inverted-section, closing and comment tags that stand alone on a
// line remove that whole line (the Mustache "standalone" rule), so a section
// written on its own lines leaves no blank lines behind.
//
// Rendering never HTML-escapes: prompts are not HTML, so {{x}} and {{{x}}}
// render the same. Strings render raw, numbers in their shortest exact form,
// booleans as true/false, nil or a missing value as "", lists and maps as
// JSON. Values under "_" (firewalled) keys render as <Firewalled>.
//
// Falsy values (for sections) are: missing, nil, false, "", an empty list
// and an empty map.

// mustache is a parsed text-mode template. It is immutable after parsing
// and safe for concurrent use.
type mustache struct {
	src   string
	nodes []mnode
}

// mnode is a node of a parsed template, text-mode or Template (which
// leaves name and offset empty).
type mnode struct {
	kind     byte // 0 text, 'v' variable, '#' section, '^' inverted
	text     string
	name     string   // tag name as written ("items", "a.b", ".")
	path     []string // name split at dots; ["."] for the current element
	offset   int      // byte offset of the tag
	children []mnode
}

// templateError is a syntax error of a text-mode template; its message
// names the byte offset.
func templateError(off int, format string, args ...any) error {
	return fmt.Errorf("template: offset %d: %s", off, fmt.Sprintf(format, args...))
}

type mtag struct {
	kind       byte // 'v', '#', '^', '/', '!'
	name       string
	start, end int // the tag itself
	cutFrom    int // text removed: the tag, or its whole standalone line
	cutTo      int
}

// parseMustache parses src. Errors name the byte offset: an unclosed tag,
// an empty or malformed name, a section closed by another name or never
// closed, and the unsupported partials and delimiter changes.
func parseMustache(src string) (*mustache, error) {
	var tags []mtag
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			break
		}
		start := i + j
		inner, closeTok := start+2, "}}"
		triple := strings.HasPrefix(src[inner:], "{")
		if triple {
			inner++
			closeTok = "}}}"
		}
		k := strings.Index(src[inner:], closeTok)
		if k < 0 {
			return nil, templateError(start, "unclosed tag %q", abbrev(src[start:], 20))
		}
		end := inner + k + len(closeTok)
		body := strings.TrimSpace(src[inner : inner+k])
		tg := mtag{kind: 'v', start: start, end: end, cutFrom: start, cutTo: end}
		if body == "" {
			return nil, templateError(start, "empty tag")
		}
		switch c := body[0]; {
		case triple:
			tg.name = body
		case c == '!':
			tg.kind = '!'
		case c == '#' || c == '^' || c == '/':
			tg.kind, tg.name = c, strings.TrimSpace(body[1:])
		case c == '&':
			tg.name = strings.TrimSpace(body[1:])
		case c == '>' || c == '=' || c == '<' || c == '$':
			return nil, templateError(start, "partials, blocks and delimiter changes are not supported")
		default:
			tg.name = body
		}
		if tg.kind != '!' {
			if err := checkTagName(tg.name, tg.kind); err != nil {
				return nil, templateError(start, "%v", err)
			}
		}
		if tg.kind != 'v' {
			standalone(src, &tg)
		}
		tags = append(tags, tg)
		i = end
	}
	t := &mustache{src: src}
	pos := 0
	nodes, _, err := buildNodes(src, tags, &pos, 0, nil)
	if err != nil {
		return nil, err
	}
	t.nodes = nodes
	return t, nil
}

func abbrev(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}

// checkTagName accepts "." (variables and sections) or a dotted path of
// non-empty segments without spaces or braces.
func checkTagName(name string, kind byte) error {
	if name == "" {
		return fmt.Errorf("empty tag name")
	}
	if name == "." {
		return nil
	}
	for _, seg := range strings.Split(name, ".") {
		if seg == "" {
			return fmt.Errorf("invalid name %q", name)
		}
	}
	if strings.ContainsAny(name, " \t\r\n{}") {
		return fmt.Errorf("invalid name %q", name)
	}
	return nil
}

// standalone widens tg's cut to its whole line when nothing but
// whitespace surrounds it on that line.
func standalone(src string, tg *mtag) {
	ls := strings.LastIndexByte(src[:tg.start], '\n') + 1
	if strings.TrimLeft(src[ls:tg.start], " \t") != "" {
		return
	}
	le := strings.IndexByte(src[tg.end:], '\n')
	var after int
	if le < 0 {
		le = len(src)
		after = len(src)
	} else {
		le += tg.end
		after = le + 1
	}
	rest := src[tg.end:le]
	rest = strings.TrimSuffix(rest, "\r")
	if strings.TrimLeft(rest, " \t") != "" {
		return
	}
	tg.cutFrom, tg.cutTo = ls, after
}

// buildNodes consumes tags from *pos until the closing tag of open (or the
// end); last is the end offset of the text consumed so far.
func buildNodes(src string, tags []mtag, pos *int, last int, open *mtag) ([]mnode, int, error) {
	var out []mnode
	text := func(from, to int) {
		if to > from {
			out = append(out, mnode{text: src[from:to]})
		}
	}
	for *pos < len(tags) {
		tg := tags[*pos]
		*pos++
		text(last, tg.cutFrom)
		last = tg.cutTo
		switch tg.kind {
		case '!':
		case 'v':
			out = append(out, mnode{kind: 'v', name: tg.name, path: splitPath(tg.name), offset: tg.start})
		case '#', '^':
			kids, next, err := buildNodes(src, tags, pos, last, &tg)
			if err != nil {
				return nil, 0, err
			}
			last = next
			out = append(out, mnode{kind: tg.kind, name: tg.name, path: splitPath(tg.name), offset: tg.start, children: kids})
		case '/':
			if open == nil {
				return nil, 0, templateError(tg.start, "{{/%s}} closes no section", tg.name)
			}
			if tg.name != open.name {
				return nil, 0, templateError(tg.start, "{{/%s}} closes section {{%c%s}}", tg.name, open.kind, open.name)
			}
			return out, last, nil
		}
	}
	if open != nil {
		return nil, 0, templateError(open.start, "section {{%c%s}} is not closed", open.kind, open.name)
	}
	text(last, len(src))
	return out, len(src), nil
}

// render expands the template with data (plain Go data; other Go values
// are converted through encoding/json first).
func (t *mustache) render(data map[string]any) string {
	out, _ := t.renderLimit(data, 0)
	return out
}

// maxPromptBytes bounds a rendered text-mode prompt: nested sections
// multiply (k elements at depth d render k^d times), and a spec may come
// from the wire.
const maxPromptBytes = 8 << 20

// errPromptTooLarge is returned by renderLimit past its limit.
var errPromptTooLarge = errors.New("rendered prompt too large")

// renderLimit is render that stops once the output passes limit bytes
// (0: no limit) and returns errPromptTooLarge.
func (t *mustache) renderLimit(data map[string]any, limit int) (string, error) {
	var b strings.Builder
	if !renderNodes(&b, t.nodes, []any{data}, &templateRules{plain: plainValue, truthy: truthyM, value: textValue, limit: limit}) {
		return "", fmt.Errorf("%w: more than %d bytes", errPromptTooLarge, limit)
	}
	return b.String(), nil
}

// truthyM is the text-mode truth of a section's value: missing, nil,
// false, "", an empty list and an empty map are false.
func truthyM(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// plainValue converts Go values that are not plain data (structs, typed
// slices and maps) to plain data through encoding/json; plain data is
// returned as is.
func plainValue(v any) any {
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case bool, string, int, int64, float64, []any, map[string]any, json.Number:
		return v
	case *lisp.WireResult:
		return x.Plain()
	}
	k := reflect.TypeOf(v).Kind()
	if k == reflect.Struct || k == reflect.Pointer || k == reflect.Slice || k == reflect.Array || k == reflect.Map || k == reflect.Interface {
		if p, err := messages.FromJSON(v); err == nil {
			return p
		}
	}
	return v
}

// textValue renders one value for a text-mode prompt.
func textValue(v any) string {
	switch x := plainValue(v).(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case []any, map[string]any:
		return jsonText(firewallData(x))
	default:
		return fmt.Sprint(x)
	}
}

// jsonText encodes v as compact JSON without HTML escaping.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// firewallData returns a copy of v with every value under a "_" key
// replaced by <Firewalled>.
func firewallData(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if signature.IsFirewalled(k) {
				out[k] = firewalledText
				continue
			}
			out[k] = firewallData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = firewallData(e)
		}
		return out
	}
	return v
}

// check validates the template against sig with the text-mode rules:
// every (public) input is used, every top-level name is an input, fields
// inside a section exist in the element type, and {{.}} appears only in
// sections over scalar lists. A signature without inputs checks nothing.
// With requireAll false, unused inputs are allowed (LLMTool).
func (t *mustache) check(sig *signature.Signature, requireAll bool) error {
	if sig == nil || len(sig.Inputs) == 0 {
		return nil
	}
	used := map[string]bool{}
	if err := checkNodes(t.nodes, inputScope(sig), used); err != nil {
		return err
	}
	if !requireAll {
		return nil
	}
	var unused []string
	for _, p := range sig.Inputs {
		if !used[p.Name] && !signature.IsFirewalled(p.Name) {
			unused = append(unused, strconv.Quote(p.Name))
		}
	}
	if len(unused) > 0 {
		//lint:ignore ST1005 the message is text-mode.md's, word for word
		return fmt.Errorf("Text mode requires all signature params in prompt. Unused: [%s]", strings.Join(unused, ", "))
	}
	return nil
}

// scope is one level of the type stack: the type of the current element
// and the section that pushed it.
type scope struct {
	typ     signature.Type // nil: :any
	section string         // "" at the top level
	list    bool           // the section iterates a list
}

func unwrapOpt(t signature.Type) signature.Type {
	if o, ok := t.(signature.Optional); ok {
		return o.Elem
	}
	return t
}

// openType reports whether any field may be looked up in t (:any, :map).
func openType(t signature.Type) bool {
	t = unwrapOpt(t)
	if t == nil {
		return true
	}
	p, ok := t.(signature.Prim)
	return ok && (p == signature.Any || p == signature.AnyMap)
}

// resolveField follows path inside t; ok is false when a segment is not a
// field of a typed map.
func resolveField(t signature.Type, path []string) (signature.Type, bool) {
	for _, seg := range path {
		if openType(t) {
			return nil, true
		}
		m, ok := unwrapOpt(t).(signature.Map)
		if !ok {
			return nil, false
		}
		f, ok := m.Field(seg)
		if !ok {
			return nil, false
		}
		t = f.Type
	}
	return t, true
}

// lookupType resolves path in the innermost scope that has its first
// segment (the rendering rule); depth is the index of that scope.
func lookupType(scopes []scope, path []string) (signature.Type, int, bool) {
	for i := len(scopes) - 1; i >= 0; i-- {
		t := scopes[i].typ
		if openType(t) {
			return nil, i, true
		}
		m, ok := unwrapOpt(t).(signature.Map)
		if !ok {
			continue
		}
		if _, ok := m.Field(path[0]); !ok {
			continue
		}
		rt, ok := resolveField(t, path)
		return rt, i, ok
	}
	return nil, -1, false
}

func checkNodes(nodes []mnode, scopes []scope, used map[string]bool) error {
	cur := scopes[len(scopes)-1]
	for _, n := range nodes {
		if n.kind == 0 {
			continue
		}
		var t signature.Type
		if len(n.path) == 1 && n.path[0] == "." {
			if cur.section == "" {
				return fmt.Errorf("{{.}} outside a section (offset %d)", n.offset)
			}
			if n.kind == 'v' {
				if _, ok := unwrapOpt(cur.typ).(signature.Map); ok || isMapPrim(cur.typ) {
					if cur.list {
						return fmt.Errorf("{{.}} inside {{#%s}} - use {{field}} instead (list contains maps)", cur.section)
					}
					return fmt.Errorf("{{.}} inside {{#%s}} - use {{field}} instead (%s is a map)", cur.section, cur.section)
				}
				continue
			}
			t = cur.typ // {{#.}}: a section over the current element
		} else {
			rt, depth, ok := lookupType(scopes, n.path)
			if !ok || depth < 0 {
				if cur.section != "" {
					return fmt.Errorf("{{%s}} inside {{#%s}} not found in element type", n.name, cur.section)
				}
				return fmt.Errorf("placeholder {{%s}} not found in signature%s", n.name, fieldsHint(scopes[0].typ, n.path))
			}
			if depth == 0 {
				used[n.path[0]] = true
			}
			t = rt
		}
		if n.kind == 'v' {
			continue
		}
		inner := scopes
		if n.kind == '#' {
			et := unwrapOpt(t)
			l, isList := et.(signature.List)
			if isList {
				et = l.Elem
			}
			inner = append(slices.Clip(scopes), scope{typ: et, section: n.name, list: isList})
		}
		if err := checkNodes(n.children, inner, used); err != nil {
			return err
		}
	}
	return nil
}

func isMapPrim(t signature.Type) bool {
	p, ok := unwrapOpt(t).(signature.Prim)
	return ok && p == signature.AnyMap
}

// fieldsHint explains a dotted path that fails inside a typed map:
// "; user has fields: name".
func fieldsHint(top signature.Type, path []string) string {
	t := top
	for i, seg := range path[:len(path)-1] {
		m, ok := unwrapOpt(t).(signature.Map)
		if !ok {
			return ""
		}
		f, ok := m.Field(seg)
		if !ok {
			return ""
		}
		t = f.Type
		if fm, ok := unwrapOpt(t).(signature.Map); ok {
			if _, ok := fm.Field(path[i+1]); !ok {
				names := make([]string, len(fm.Fields))
				for j, ff := range fm.Fields {
					names[j] = ff.Name
				}
				return "; " + strings.Join(path[:i+1], ".") + " has fields: " + strings.Join(names, ", ")
			}
		}
	}
	return ""
}

// inputScope is the top-level scope of a signature: its inputs as the
// fields of a map.
func inputScope(sig *signature.Signature) []scope {
	top := make([]signature.Field, 0, len(sig.Inputs))
	for _, p := range sig.Inputs {
		top = append(top, signature.Field(p))
	}
	return []scope{{typ: signature.Map{Fields: top}}}
}
