package lisp

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// formKind is the syntactic kind of a form.
type formKind uint8

const (
	fLit   formKind = iota // nil, bool, int64, float64, string, *Keyword
	fSym                   // symbol: ns (may be "") and name
	fList                  // (a b c)
	fVec                   // [a b]
	fMap                   // {k v}
	fSet                   // #{a}
	fFnLit                 // #(...), items are the list's items
	fRegex                 // #"...", val is the pattern text
)

// form is a read form with its position.
type form struct {
	kind  formKind
	pos   Pos
	val   Value
	ns    string
	name  string
	items []*form
}

func (f *form) isSym(name string) bool { return f.kind == fSym && f.ns == "" && f.name == name }

// symText returns the symbol as written (ns/name).
func (f *form) symText() string {
	if f.ns != "" {
		return f.ns + "/" + f.name
	}
	return f.name
}

const maxReadDepth = 512

type reader struct {
	src      string
	off      int
	line     int
	col      int
	depth    int
	fnLit    bool
	keywords map[string]*Keyword
	opens    []openBracket
	// scratch collects the items of the sequences being read; each
	// finished sequence gets one exact-size copy (not an append chain).
	scratch []*form
}

type openBracket struct {
	c   rune
	pos Pos
}

// read parses src into top-level forms, interning keywords in kw. A
// closing bracket that closes nothing is a parse error, as in Clojure.
func read(src string, kw map[string]*Keyword) ([]*form, error) {
	r := &reader{src: src, line: 1, col: 1, keywords: kw, opens: make([]openBracket, 0, 8), scratch: make([]*form, 0, 32)}
	return r.readAll()
}

func (r *reader) readAll() (forms []*form, err error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*Error)
			if !ok {
				panic(p)
			}
			e.src = r.src
			forms, err = nil, e
		}
	}()
	for {
		r.skipSpace()
		if r.off >= len(r.src) {
			return forms, nil
		}
		c := r.src[r.off]
		if c == ')' || c == ']' || c == '}' {
			r.fail(r.pos(), "remove the extra closing bracket", "unbalanced parentheses: unexpected '%c'", c)
		}
		f := r.read()
		if f != nil {
			forms = append(forms, f)
		}
	}
}

func (r *reader) pos() Pos { return Pos{Line: r.line, Col: r.col, Offset: r.off} }

func (r *reader) fail(pos Pos, hint, format string, args ...any) {
	e := errorf(KindParse, pos, format, args...)
	e.Hint = hint
	panic(e)
}

func (r *reader) peek() rune {
	if r.off >= len(r.src) {
		return -1
	}
	c, _ := utf8.DecodeRuneInString(r.src[r.off:])
	return c
}

func (r *reader) advance() rune {
	c, n := utf8.DecodeRuneInString(r.src[r.off:])
	r.off += n
	if c == '\n' {
		r.line++
		r.col = 1
	} else {
		r.col++
	}
	return c
}

func (r *reader) skipSpace() {
	for r.off < len(r.src) {
		c := r.src[r.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '\f':
			r.advance()
		case c == ';':
			for r.off < len(r.src) && r.src[r.off] != '\n' {
				r.advance()
			}
		case c == 0xEF && strings.HasPrefix(r.src[r.off:], "\uFEFF"):
			r.off += 3
		default:
			return
		}
	}
}

func isDelim(c rune) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '\f', '(', ')', '[', ']', '{', '}', '"', ';', -1:
		return true
	}
	return false
}

var closerOf = map[rune]rune{'(': ')', '[': ']', '{': '}'}

// read reads one form; it returns nil for a discarded #_ form.
func (r *reader) read() *form {
	r.skipSpace()
	start := r.pos()
	if r.off >= len(r.src) {
		r.fail(start, "", "unexpected end of input")
	}
	c := r.peek()
	switch c {
	case '(', '[', '{':
		r.advance()
		items := r.readSeq(c, start)
		switch c {
		case '(':
			return &form{kind: fList, pos: start, items: items}
		case '[':
			return &form{kind: fVec, pos: start, items: items}
		}
		if len(items)%2 != 0 {
			r.fail(start, "a map literal needs key value pairs", "map literal must contain an even number of forms, got %d", len(items))
		}
		return &form{kind: fMap, pos: start, items: items}
	case ')', ']', '}':
		r.fail(start, "", "unexpected '%c'", c)
	case '"':
		r.advance()
		return &form{kind: fLit, pos: start, val: r.readString(start)}
	case '\\':
		r.advance()
		return &form{kind: fLit, pos: start, val: r.readChar(start)}
	case ':':
		r.advance()
		tok := r.token()
		if tok == "" || strings.HasPrefix(tok, ":") {
			r.fail(start, "", "invalid keyword: :%s", tok)
		}
		return &form{kind: fLit, pos: start, val: r.keyword(tok)}
	case '\'':
		r.advance()
		inner := r.readNonNil(start)
		return &form{kind: fList, pos: start, items: []*form{{kind: fSym, pos: start, name: "quote"}, inner}}
	case '#':
		return r.readDispatch(start)
	case '@':
		r.fail(start, "atoms and deref are not supported; use let bindings or memory (def)", "@ (deref) is not supported")
	case '^':
		r.fail(start, "metadata is not supported; remove the ^ annotation", "^ (metadata) is not supported")
	case '`', '~':
		r.fail(start, "macros are not supported; write the code directly", "syntax quote is not supported")
	}
	tok := r.token()
	return r.atom(tok, start)
}

func (r *reader) readNonNil(start Pos) *form {
	for {
		r.skipSpace()
		if r.off >= len(r.src) {
			r.fail(start, "", "unexpected end of input")
		}
		if f := r.read(); f != nil {
			return f
		}
	}
}

func (r *reader) readDispatch(start Pos) *form {
	r.advance() // '#'
	c := r.peek()
	switch c {
	case '{':
		r.advance()
		return &form{kind: fSet, pos: start, items: r.readSeq('{', start)}
	case '(':
		if r.fnLit {
			r.fail(start, "use (fn [x] ...) for the inner function", "nested #() is not allowed")
		}
		r.advance()
		r.fnLit = true
		items := r.readSeq('(', start)
		r.fnLit = false
		return &form{kind: fFnLit, pos: start, items: items}
	case '"':
		r.advance()
		return &form{kind: fRegex, pos: start, val: r.readString(start)}
	case '_':
		r.advance()
		r.readNonNil(start)
		return nil
	case '\'':
		r.advance()
		return r.readNonNil(start)
	case '#':
		r.advance()
		tok := r.token()
		switch tok {
		case "Inf":
			return &form{kind: fLit, pos: start, val: math.Inf(1)}
		case "-Inf":
			return &form{kind: fLit, pos: start, val: math.Inf(-1)}
		case "NaN":
			return &form{kind: fLit, pos: start, val: math.NaN()}
		}
		r.fail(start, "", "invalid symbolic value: ##%s", tok)
	}
	tok := r.token()
	r.fail(start, "", "unsupported reader form: #%s", tok)
	return nil
}

func (r *reader) readSeq(open rune, start Pos) []*form {
	r.depth++
	if r.depth > maxReadDepth {
		r.fail(start, "", "nesting too deep (more than %d levels)", maxReadDepth)
	}
	closer := closerOf[open]
	r.opens = append(r.opens, openBracket{open, start})
	base := len(r.scratch)
	for {
		r.skipSpace()
		if r.off >= len(r.src) {
			outer := r.opens[0]
			r.fail(outer.pos, "add the missing closing bracket", "unbalanced parentheses: %d unclosed '%c'", len(r.opens), outer.c)
		}
		c := r.peek()
		if c == ')' || c == ']' || c == '}' {
			if c != closer {
				r.fail(r.pos(), "", "mismatched '%c': expected '%c' to close '%c' at %s", c, closer, open, start)
			}
			r.advance()
			r.depth--
			r.opens = r.opens[:len(r.opens)-1]
			var items []*form
			if n := len(r.scratch) - base; n > 0 {
				items = make([]*form, n)
				copy(items, r.scratch[base:])
				clear(r.scratch[base:])
				r.scratch = r.scratch[:base]
			}
			return items
		}
		if f := r.read(); f != nil {
			r.scratch = append(r.scratch, f)
		}
	}
}

func (r *reader) token() string {
	s := r.off
	for r.off < len(r.src) && !isDelim(r.peek()) {
		r.advance()
	}
	return r.src[s:r.off]
}

func (r *reader) keyword(name string) *Keyword {
	if k, ok := r.keywords[name]; ok {
		return k
	}
	k := NewKeyword(name)
	r.keywords[name] = k
	return k
}

func (r *reader) readString(start Pos) string {
	var b strings.Builder
	for {
		if r.off >= len(r.src) {
			r.fail(start, "add the closing \"", "unterminated string")
		}
		c := r.advance()
		switch c {
		case '"':
			return b.String()
		case '\\':
			if r.off >= len(r.src) {
				r.fail(start, "add the closing \"", "unterminated string")
			}
			e := r.advance()
			switch e {
			case '"':
				b.WriteByte('"')
			case '\\':
				b.WriteByte('\\')
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if r.off+4 <= len(r.src) {
					if n, err := strconv.ParseUint(r.src[r.off:r.off+4], 16, 32); err == nil {
						for i := 0; i < 4; i++ {
							r.advance()
						}
						b.WriteRune(rune(n))
						continue
					}
				}
				b.WriteString(`\u`)
			default:
				b.WriteByte('\\')
				b.WriteRune(e)
			}
		default:
			b.WriteRune(c)
		}
	}
}

var charNames = map[string]string{
	"newline": "\n", "space": " ", "tab": "\t", "return": "\r",
	"backspace": "\b", "formfeed": "\f",
}

func (r *reader) readChar(start Pos) string {
	if r.off >= len(r.src) {
		r.fail(start, "", "unexpected end of input after \\")
	}
	c := r.advance()
	if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
		return string(c)
	}
	s := r.off
	for r.off < len(r.src) && !isDelim(r.peek()) {
		r.advance()
	}
	rest := r.src[s:r.off]
	if rest == "" {
		return string(c)
	}
	name := string(c) + rest
	if v, ok := charNames[name]; ok {
		return v
	}
	if c == 'u' && len(rest) == 4 {
		if n, err := strconv.ParseUint(rest, 16, 32); err == nil {
			return string(rune(n))
		}
	}
	r.fail(start, "", "unsupported character: \\%s", name)
	return ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (r *reader) atom(tok string, pos Pos) *form {
	switch tok {
	case "nil":
		return &form{kind: fLit, pos: pos, val: nil}
	case "true":
		return &form{kind: fLit, pos: pos, val: true}
	case "false":
		return &form{kind: fLit, pos: pos, val: false}
	}
	c := tok[0]
	if isDigit(c) || ((c == '-' || c == '+') && len(tok) > 1 && isDigit(tok[1])) {
		return &form{kind: fLit, pos: pos, val: r.number(tok, pos)}
	}
	if !isSymbolStart(rune(c)) && c < utf8.RuneSelf {
		r.fail(pos, "", "invalid token: %s", tok)
	}
	if tok == "/" {
		return &form{kind: fSym, pos: pos, name: "/"}
	}
	if i := strings.IndexByte(tok, '/'); i > 0 && i < len(tok)-1 {
		return &form{kind: fSym, pos: pos, ns: tok[:i], name: tok[i+1:]}
	}
	if strings.HasPrefix(tok, "/") || strings.HasSuffix(tok, "/") {
		r.fail(pos, "", "invalid symbol: %s", tok)
	}
	return &form{kind: fSym, pos: pos, name: tok}
}

func isSymbolStart(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.ContainsRune("+-*/<>=?!_%.&$", c)
}

// number parses an integer or float token strictly.
func (r *reader) number(tok string, pos Pos) Value {
	s := tok
	if s[0] == '+' {
		r.fail(pos, "write the number without '+'", "invalid number: %s", tok)
	}
	body := strings.TrimPrefix(s, "-")
	if strings.Contains(body, "/") {
		r.fail(pos, "ratios are not supported; use (/ a b) or a decimal", "invalid number: %s", tok)
	}
	isInt := true
	for i := 0; i < len(body); i++ {
		if !isDigit(body[i]) {
			isInt = false
			break
		}
	}
	if isInt {
		if len(body) > 1 && body[0] == '0' {
			r.fail(pos, "", "invalid number: %s", tok)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			r.fail(pos, "", "integer out of range: %s", tok)
		}
		return Int(n)
	}
	if !validFloat(body) {
		r.fail(pos, "", "invalid number: %s", tok)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		r.fail(pos, "", "invalid number: %s", tok)
	}
	return f
}

// validFloat checks digits [. digits] [e|E [+|-] digits].
func validFloat(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return false
	}
	frac := false
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
		frac = true
	}
	exp := false
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
		exp = true
	}
	return i == len(s) && (frac || exp)
}
