package signature

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of lists and maps, so hostile input cannot
// exhaust memory through recursion.
const maxDepth = 100

// Parse parses a signature: "(inputs) -> output" or the output-only shorthand
// "output" (equivalent to "() -> output"). See the package documentation for
// the syntax. A parse error is an *Error of KindSyntax naming the line, the
// column and what was expected, with a caret snippet.
//
// Parse is safe for concurrent use. Parse once and keep the *Signature.
func Parse(src string) (*Signature, error) {
	p := newParser(src)
	var sig Signature
	if p.tok.kind == tLParen {
		params, extra, err := p.parseParams()
		if err != nil {
			return nil, err
		}
		sig.Inputs, sig.ExtraInputs = params, extra
		if p.tok.kind != tArrow {
			return nil, p.expected(`"->" after the inputs`)
		}
		p.advance()
		out, err := p.parseType(`output type after "->"`)
		if err != nil {
			return nil, err
		}
		sig.Output = out
	} else {
		out, err := p.parseType(`type or "(" to start the inputs`)
		if err != nil {
			return nil, err
		}
		sig.Output = out
	}
	if p.tok.kind != tEOF {
		return nil, p.expected("end of signature")
	}
	return &sig, nil
}

// MustParse is like Parse but panics on error. Use it only to initialise
// package-level variables from constant source.
func MustParse(src string) *Signature {
	s, err := Parse(src)
	if err != nil {
		panic("signature: MustParse(" + strconv.Quote(src) + "): " + err.Error())
	}
	return s
}

// ParseType parses a single type, such as "[{id :int, tags [:string]?}]".
// Errors are as for Parse.
func ParseType(src string) (Type, error) {
	p := newParser(src)
	t, err := p.parseType("type")
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.expected("end of type")
	}
	return t, nil
}

type parser struct {
	src   string
	lex   lexer
	tok   token
	depth int
}

func newParser(src string) *parser {
	p := &parser{src: src, lex: lexer{src: src}}
	p.advance()
	return p
}

func (p *parser) advance() { p.tok = p.lex.next() }

// errAt returns a syntax error at tok.
func (p *parser) errAt(tok token, format string, args ...any) *Error {
	return syntaxError(p.src, tok.off, fmt.Sprintf(format, args...))
}

// expected returns "expected <what>, got <current token>", or the lexer's
// message when the current token is illegal.
func (p *parser) expected(what string) *Error {
	if p.tok.kind == tIllegal {
		return p.errAt(p.tok, "%s", p.tok.msg)
	}
	return p.errAt(p.tok, "expected %s, got %s", what, p.tok.describe())
}

// parseParams parses "(name type, ...)"; the current token is "(".
func (p *parser) parseParams() (params []Param, extra bool, err error) {
	p.advance()
	for p.tok.kind != tRParen {
		if p.tok.kind == tEllipsis {
			p.advance()
			if p.tok.kind != tRParen {
				return nil, false, p.expected(`")" after "..." (it ends the inputs)`)
			}
			extra = true
			break
		}
		name, nameTok, err := p.parseName("input name, \"...\" or \")\"")
		if err != nil {
			return nil, false, err
		}
		for _, q := range params {
			if q.Name == name {
				return nil, false, p.errAt(nameTok, "duplicate input %q", name)
			}
		}
		t, err := p.parseType(fmt.Sprintf("type after input %q", name))
		if err != nil {
			return nil, false, err
		}
		params = append(params, Param{Name: name, Type: t})
	}
	p.advance()
	return params, extra, nil
}

// parseName parses a field or input name, written bare or as a keyword.
// Hyphens become underscores: names are host keys, and PTC-Lisp turns
// :user-id into "user_id" at the host boundary, so {user-id :int} must
// describe the key "user_id".
func (p *parser) parseName(what string) (string, token, error) {
	tok := p.tok
	switch tok.kind {
	case tIdent:
		p.advance()
		return strings.ReplaceAll(tok.text, "-", "_"), tok, nil
	case tKeyword:
		p.advance()
		return strings.ReplaceAll(tok.text[1:], "-", "_"), tok, nil
	}
	return "", tok, p.expected(what)
}

// parseType parses a type, alternatives joined by "|" included; what
// describes it for "expected ..." messages.
func (p *parser) parseType(what string) (Type, error) {
	first := p.tok
	t, err := p.parseAlt(what)
	if err != nil || p.tok.kind != tPipe {
		return t, err
	}
	alts := []Type{t}
	for p.tok.kind == tPipe {
		p.advance()
		a, err := p.parseAlt(`type after "|"`)
		if err != nil {
			return nil, err
		}
		alts = append(alts, a)
	}
	u, dup := newUnion(alts)
	if dup != "" {
		return nil, p.errAt(first, "value %s listed twice", dup)
	}
	return u, nil
}

// parseAlt parses one alternative: a literal, or a type with its
// refinements and "?".
func (p *parser) parseAlt(what string) (Type, error) {
	var t Type
	switch tok := p.tok; tok.kind {
	case tString:
		v, err := strconv.Unquote(tok.text)
		if err != nil {
			return nil, p.errAt(tok, "invalid string literal %s", tok.text)
		}
		p.advance()
		t = Enum{Values: []any{v}}
	case tNumber:
		v, err := parseNumber(tok.text)
		if err != nil {
			return nil, p.errAt(tok, "%s", err.Error())
		}
		p.advance()
		t = Enum{Values: []any{v}}
	case tKeyword:
		prim, ok := primByName(tok.text[1:])
		if !ok {
			return nil, p.errAt(tok, "unknown type %s (want :string, :int, :float, :bool, :keyword, :any or :map)", tok.text)
		}
		p.advance()
		t = prim
	case tIdent:
		switch tok.text {
		case "true", "false":
			p.advance()
			t = Enum{Values: []any{tok.text == "true"}}
		case "nil":
			return nil, p.errAt(tok, `expected %s, got "nil" (a "?" after a type lets it be nil, as in :string?)`, what)
		default:
			if _, ok := primByName(tok.text); ok {
				return nil, p.errAt(tok, "expected %s, got %s (did you mean :%s?)", what, tok.describe(), tok.text)
			}
			return nil, p.expected(what)
		}
	case tQuestion:
		return nil, p.errAt(tok, `expected %s, got "?" (the "?" goes after the type, as in :string?)`, what)
	case tLBrack:
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.advance()
		elem, err := p.parseType("list element type")
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRBrack {
			return nil, p.expected(`"]" to close the list`)
		}
		p.advance()
		p.depth--
		t = List{Elem: elem}
	case tLBrace:
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.advance()
		var fields []Field
		for p.tok.kind != tRBrace {
			name, nameTok, err := p.parseName(`field name or "}"`)
			if err != nil {
				return nil, err
			}
			for _, f := range fields {
				if f.Name == name {
					return nil, p.errAt(nameTok, "duplicate field %q", name)
				}
			}
			ft, err := p.parseType(fmt.Sprintf("type after field %q", name))
			if err != nil {
				return nil, err
			}
			fields = append(fields, Field{Name: name, Type: ft})
		}
		p.advance()
		p.depth--
		t = Map{Fields: fields}
	default:
		return nil, p.expected(what)
	}
	if p.tok.kind == tLParen {
		r, err := p.parseRefinements(t)
		if err != nil {
			return nil, err
		}
		t = r
	}
	if p.tok.kind == tQuestion {
		p.advance()
		if p.tok.kind == tQuestion {
			return nil, p.errAt(p.tok, `duplicate "?"`)
		}
		t = Optional{Elem: t}
	}
	return t, nil
}

// parseNumber parses a number literal: an int64 when it has no fraction
// or exponent, else a finite float64.
func parseNumber(text string) (any, error) {
	if !strings.ContainsAny(text, ".eE") {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("integer %s does not fit in 64 bits", text)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %s is not a finite float", text)
	}
	return f, nil
}

// parseRefinements parses "(min 0, max 100, pattern "...")" after base;
// the current token is "(".
func (p *parser) parseRefinements(base Type) (Type, error) {
	open := p.tok
	if refineKind(base) == "" {
		return nil, p.errAt(open, "%s takes no refinements (only :int, :float, :string, :keyword and lists do)", typeString(base))
	}
	p.advance()
	var spec RefineSpec
	seen := map[string]bool{}
	for p.tok.kind != tRParen {
		nameTok := p.tok
		if nameTok.kind != tIdent {
			return nil, p.expected(`refinement name (min, max or pattern) or ")"`)
		}
		name := nameTok.text
		if seen[name] {
			return nil, p.errAt(nameTok, "duplicate refinement %q", name)
		}
		seen[name] = true
		p.advance()
		val := p.tok
		switch name {
		case "min", "max":
			if val.kind != tNumber {
				return nil, p.expected(fmt.Sprintf("a number after %q", name))
			}
			n, err := parseNumber(val.text)
			if err != nil {
				return nil, p.errAt(val, "%s", err.Error())
			}
			f := toFloat(n)
			if name == "min" {
				spec.Min = &f
			} else {
				spec.Max = &f
			}
		case "pattern":
			if val.kind != tString {
				return nil, p.expected(`a string after "pattern"`)
			}
			src, err := strconv.Unquote(val.text)
			if err != nil {
				return nil, p.errAt(val, "invalid string literal %s", val.text)
			}
			spec.Pattern = &src
		default:
			return nil, p.errAt(nameTok, "unknown refinement %q (want min, max or pattern)", name)
		}
		p.advance()
	}
	p.advance()
	r, err := Refine(base, spec)
	if err != nil {
		return nil, p.errAt(open, "%s", err.Error())
	}
	return r, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(p.tok, "nesting too deep (more than %d levels)", maxDepth)
	}
	return nil
}

// MarshalText encodes the signature in canonical form, so a *Signature can sit
// in a JSON, YAML or msgpack document as a string.
func (s *Signature) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses b as Parse does and replaces *s with the result.
func (s *Signature) UnmarshalText(b []byte) error {
	parsed, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = *parsed
	return nil
}
