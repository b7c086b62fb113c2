package syntax

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// formKind is the syntactic kind of a form.
type formKind uint8

const (
	FLit   formKind = iota // nil, bool, int64, float64, string, *Keyword
	FSym                   // symbol: ns (may be "") and name
	FList                  // (a b c)
	FVec                   // [a b]
	FMap                   // {k v}
	FSet                   // #{a}
	FFnLit                 // #(...), items are the list's items
	FRegex                 // #"...", val is the pattern text
)

// Form is a read form with its position.
type Form struct {
	Kind  formKind
	Pos   core.Pos
	Val   core.Value
	Ns    string
	Name  string
	Items []*Form
}

// IsSym reports whether f is the unqualified symbol name.
func (f *Form) IsSym(name string) bool { return f.Kind == FSym && f.Ns == "" && f.Name == name }

// SymText returns the symbol as written (ns/name).
func (f *Form) SymText() string {
	if f.Ns != "" {
		return f.Ns + "/" + f.Name
	}
	return f.Name
}

const maxReadDepth = 512

type reader struct {
	src      string
	off      int
	line     int
	col      int
	depth    int
	fnLit    bool
	keywords map[string]*core.Keyword
	opens    []openBracket
	// scratch collects the items of the sequences being read; each
	// finished sequence gets one exact-size copy (not an append chain).
	scratch []*Form
	// opensBuf and scratchBuf back opens and scratch for most programs,
	// so a reader is one allocation
	opensBuf   [8]openBracket
	scratchBuf [32]*Form
}

type openBracket struct {
	c   rune
	pos core.Pos
}

// Read parses src into top-level forms, interning keywords in kw. A
// closing bracket that closes nothing is a parse error, as in Clojure.
func Read(src string, kw map[string]*core.Keyword) ([]*Form, error) {
	r := &reader{src: src, line: 1, col: 1, keywords: kw}
	r.opens, r.scratch = r.opensBuf[:0], r.scratchBuf[:0]
	return r.readAll()
}

func (r *reader) readAll() (forms []*Form, err error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*core.Error)
			if !ok {
				panic(p)
			}
			e.Src = r.src
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

func (r *reader) pos() core.Pos { return core.Pos{Line: r.line, Col: r.col, Offset: r.off} }

func (r *reader) fail(pos core.Pos, hint, format string, args ...any) {
	e := core.Errorf(core.KindParse, pos, format, args...)
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
func (r *reader) read() *Form {
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
			return &Form{Kind: FList, Pos: start, Items: items}
		case '[':
			return &Form{Kind: FVec, Pos: start, Items: items}
		}
		if len(items)%2 != 0 {
			r.fail(start, "a map literal needs key value pairs", "map literal must contain an even number of forms, got %d", len(items))
		}
		return &Form{Kind: FMap, Pos: start, Items: items}
	case ')', ']', '}':
		r.fail(start, "", "unexpected '%c'", c)
	case '"':
		r.advance()
		return &Form{Kind: FLit, Pos: start, Val: r.readString(start)}
	case '\\':
		r.advance()
		return &Form{Kind: FLit, Pos: start, Val: r.readChar(start)}
	case ':':
		r.advance()
		tok := r.token()
		if tok == "" || strings.HasPrefix(tok, ":") {
			r.fail(start, "", "invalid keyword: :%s", tok)
		}
		return &Form{Kind: FLit, Pos: start, Val: r.Keyword(tok)}
	case '\'':
		r.advance()
		inner := r.readNonNil(start)
		return &Form{Kind: FList, Pos: start, Items: []*Form{{Kind: FSym, Pos: start, Name: "quote"}, inner}}
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

func (r *reader) readNonNil(start core.Pos) *Form {
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

func (r *reader) readDispatch(start core.Pos) *Form {
	r.advance() // '#'
	c := r.peek()
	switch c {
	case '{':
		r.advance()
		return &Form{Kind: FSet, Pos: start, Items: r.readSeq('{', start)}
	case '(':
		if r.fnLit {
			r.fail(start, "use (fn [x] ...) for the inner function", "nested #() is not allowed")
		}
		r.advance()
		r.fnLit = true
		items := r.readSeq('(', start)
		r.fnLit = false
		return &Form{Kind: FFnLit, Pos: start, Items: items}
	case '"':
		r.advance()
		return &Form{Kind: FRegex, Pos: start, Val: r.readString(start)}
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
			return &Form{Kind: FLit, Pos: start, Val: math.Inf(1)}
		case "-Inf":
			return &Form{Kind: FLit, Pos: start, Val: math.Inf(-1)}
		case "NaN":
			return &Form{Kind: FLit, Pos: start, Val: math.NaN()}
		}
		r.fail(start, "", "invalid symbolic value: ##%s", tok)
	}
	tok := r.token()
	r.fail(start, "", "unsupported reader form: #%s", tok)
	return nil
}

func (r *reader) readSeq(open rune, start core.Pos) []*Form {
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
			var items []*Form
			if n := len(r.scratch) - base; n > 0 {
				items = make([]*Form, n)
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

// Keyword interns the keyword name for the program being read.
func (r *reader) Keyword(name string) *core.Keyword {
	if k, ok := r.keywords[name]; ok {
		return k
	}
	k := core.NewKeyword(name)
	r.keywords[name] = k
	return k
}

func (r *reader) readString(start core.Pos) string {
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

func (r *reader) readChar(start core.Pos) string {
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

func (r *reader) atom(tok string, pos core.Pos) *Form {
	switch tok {
	case "nil":
		return &Form{Kind: FLit, Pos: pos, Val: nil}
	case "true":
		return &Form{Kind: FLit, Pos: pos, Val: true}
	case "false":
		return &Form{Kind: FLit, Pos: pos, Val: false}
	}
	c := tok[0]
	if isDigit(c) || ((c == '-' || c == '+') && len(tok) > 1 && isDigit(tok[1])) {
		return &Form{Kind: FLit, Pos: pos, Val: r.number(tok, pos)}
	}
	if !isSymbolStart(rune(c)) && c < utf8.RuneSelf {
		r.fail(pos, "", "invalid token: %s", tok)
	}
	if tok == "/" {
		return &Form{Kind: FSym, Pos: pos, Name: "/"}
	}
	if i := strings.IndexByte(tok, '/'); i > 0 && i < len(tok)-1 {
		return &Form{Kind: FSym, Pos: pos, Ns: tok[:i], Name: tok[i+1:]}
	}
	if strings.HasPrefix(tok, "/") || strings.HasSuffix(tok, "/") {
		r.fail(pos, "", "invalid symbol: %s", tok)
	}
	return &Form{Kind: FSym, Pos: pos, Name: tok}
}

func isSymbolStart(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.ContainsRune("+-*/<>=?!_%.&$", c)
}

// number parses an integer or float token strictly.
func (r *reader) number(tok string, pos core.Pos) core.Value {
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
		return core.Int(n)
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
