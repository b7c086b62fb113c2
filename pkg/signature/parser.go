package signature

import (
	"fmt"
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

// parseType parses a type; what describes it for "expected ..." messages.
func (p *parser) parseType(what string) (Type, error) {
	var t Type
	switch tok := p.tok; tok.kind {
	case tKeyword:
		prim, ok := primByName(tok.text[1:])
		if !ok {
			return nil, p.errAt(tok, "unknown type %s (want :string, :int, :float, :bool, :keyword, :any or :map)", tok.text)
		}
		p.advance()
		t = prim
	case tIdent:
		if _, ok := primByName(tok.text); ok {
			return nil, p.errAt(tok, "expected %s, got %s (did you mean :%s?)", what, tok.describe(), tok.text)
		}
		return nil, p.expected(what)
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
	if p.tok.kind == tQuestion {
		p.advance()
		if p.tok.kind == tQuestion {
			return nil, p.errAt(p.tok, `duplicate "?"`)
		}
		t = Optional{Elem: t}
	}
	return t, nil
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
