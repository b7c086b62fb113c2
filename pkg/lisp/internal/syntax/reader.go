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
	Kind formKind
	// Res is what a symbol names at its position (a special form, a local
	// and its binder, a global, a builtin), filled by the compile stage's
	// resolver before it compiles the top-level form; 0 until then and on
	// forms the compiler makes itself. Its encoding is the resolver's.
	Res   uint32
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
	// outer is the outermost bracket open (depth > 0), for the error of
	// an unclosed one
	outer openBracket
	// scratch (its first scratchN items in scratchBuf, the rest in
	// scratchMore) collects the items of the sequences being read; each
	// finished sequence gets an exact-size slice of items (popItems).
	// The reader lives on the stack: it holds no pointer into itself.
	scratchN    int
	scratchBuf  [32]*Form
	scratchMore []*Form
	// forms and items are the free parts of the slabs the read forms and
	// their item slices are cut from (newForm, cutItems): a few
	// allocations for a program, not one a form
	forms []Form
	items []*Form
	// slab is the size of the next slab (forms, or item slots)
	slab int
}

// Slab is the first slab of forms and item slots a read cuts its forms
// from: a small program's forms and items all fit (up to 16 forms, such
// as a tool call and its return, TestReadFitsFirstSlab), so that reading
// it makes no slab besides this one. A caller of ReadIn may make it with
// other things it allocates; the forms read point into it.
type Slab struct {
	forms [16]Form
	items [24]*Form
}

// slabMax bounds the forms (or item slots) of one slab: slabs after the
// first double up to it.
const slabMax = 256

// newForm returns a new form of kind at pos, cut from the reader's slab.
func (r *reader) newForm(kind formKind, pos core.Pos) *Form {
	if len(r.forms) == 0 {
		r.slab = min(2*r.slab, slabMax)
		r.forms = make([]Form, r.slab)
	}
	f := &r.forms[0]
	r.forms = r.forms[1:]
	f.Kind, f.Pos = kind, pos
	return f
}

// lit returns a new form of kind (FLit, FRegex) with the value v.
func (r *reader) lit(kind formKind, pos core.Pos, v core.Value) *Form {
	f := r.newForm(kind, pos)
	f.Val = v
	return f
}

// seqForm returns a new form of kind with the items.
func (r *reader) seqForm(kind formKind, pos core.Pos, items []*Form) *Form {
	f := r.newForm(kind, pos)
	f.Items = items
	return f
}

// sym returns a new symbol form.
func (r *reader) sym(pos core.Pos, ns, name string) *Form {
	f := r.newForm(FSym, pos)
	f.Ns, f.Name = ns, name
	return f
}

// push adds f to the items being collected.
func (r *reader) push(f *Form) {
	if r.scratchN < len(r.scratchBuf) {
		r.scratchBuf[r.scratchN] = f
	} else {
		r.scratchMore = append(r.scratchMore, f)
	}
	r.scratchN++
}

// popItems removes the items collected from index base on and returns
// them (cutItems).
func (r *reader) popItems(base int) []*Form {
	n := r.scratchN - base
	var items []*Form
	switch nb := len(r.scratchBuf); {
	case n == 0:
		return nil
	case r.scratchN <= nb:
		items = r.cutItems(r.scratchBuf[base:r.scratchN])
		clear(r.scratchBuf[base:r.scratchN])
	case base >= nb:
		items = r.cutItems(r.scratchMore[base-nb:])
		clear(r.scratchMore[base-nb:])
		r.scratchMore = r.scratchMore[:base-nb]
	default:
		items = make([]*Form, 0, n)
		items = append(append(items, r.scratchBuf[base:]...), r.scratchMore...)
		clear(r.scratchBuf[base:])
		clear(r.scratchMore)
		r.scratchMore = r.scratchMore[:0]
	}
	r.scratchN = base
	return items
}

// cutItems returns a copy of items in an exact-size slice cut from the
// reader's slab of item slots (its capacity is its length: an append to it
// copies, never writing into the next form's items).
func (r *reader) cutItems(items []*Form) []*Form {
	n := len(items)
	if n == 0 {
		return nil
	}
	if n > len(r.items) {
		if n > slabMax/2 {
			return append([]*Form(nil), items...)
		}
		r.items = make([]*Form, min(2*r.slab, slabMax))
	}
	out := r.items[:n:n]
	copy(out, items)
	r.items = r.items[n:]
	return out
}

type openBracket struct {
	c   rune
	pos core.Pos
}

// Read parses src into top-level forms, interning keywords in kw. A
// closing bracket that closes nothing is a parse error, as in Clojure.
func Read(src string, kw map[string]*core.Keyword) ([]*Form, error) {
	return ReadIn(src, kw, new(Slab))
}

// ReadIn is Read with first, a zero Slab used by no other read, as the
// first slab of forms.
func ReadIn(src string, kw map[string]*core.Keyword, first *Slab) ([]*Form, error) {
	r := reader{src: src, line: 1, col: 1, keywords: kw, forms: first.forms[:], items: first.items[:], slab: len(first.forms)}
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
			return r.popItems(0), nil
		}
		c := r.src[r.off]
		if c == ')' || c == ']' || c == '}' {
			r.fail(r.pos(), "remove the extra closing bracket", "unbalanced parentheses: unexpected '%c'", c)
		}
		if f := r.read(); f != nil {
			r.push(f)
		}
	}
}

func (r *reader) pos() core.Pos { return core.Pos{Line: r.line, Col: r.col, Offset: r.off} }

func (r *reader) fail(pos core.Pos, hint, format string, args ...any) {
	e := core.Errorf(core.KindParse, pos, format, args...)
	e.Hint = hint
	panic(e)
}

// peek returns the next character (-1 at the end), not consuming it.
func (r *reader) peek() rune {
	if r.off < len(r.src) {
		if c := r.src[r.off]; c < utf8.RuneSelf {
			return rune(c)
		}
	}
	return r.peekRune()
}

// peekRune is peek past ASCII.
func (r *reader) peekRune() rune {
	if r.off >= len(r.src) {
		return -1
	}
	c, _ := utf8.DecodeRuneInString(r.src[r.off:])
	return c
}

// advance consumes the next character and returns it, counting lines and
// columns (a column is a character).
func (r *reader) advance() rune {
	c := r.src[r.off]
	if c >= utf8.RuneSelf || c == '\n' {
		return r.advanceRune()
	}
	r.off++
	r.col++
	return rune(c)
}

// advanceRune is advance for a newline or past ASCII.
func (r *reader) advanceRune() rune {
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
		case c == ' ' || c == '\t' || c == '\r' || c == ',' || c == '\f':
			r.off++
			r.col++
		case c == '\n':
			r.off++
			r.line++
			r.col = 1
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

// The ASCII delimiters of isDelim as bit sets: bit c of delimLo for c <
// 64, bit c-64 of delimHi for 64 <= c < 128.
const (
	delimLo = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r' | 1<<',' | 1<<'\f' | 1<<'(' | 1<<')' | 1<<'"' | 1<<';'
	delimHi = 1<<('['-64) | 1<<(']'-64) | 1<<('{'-64) | 1<<('}'-64)
)

// isDelimByte is isDelim for an ASCII character.
func isDelimByte(c byte) bool {
	if c < 64 {
		return delimLo>>c&1 != 0
	}
	return delimHi>>(c-64)&1 != 0
}

// closerOf returns the bracket that closes open: '(', '[' or '{'.
func closerOf(open rune) rune {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

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
			return r.seqForm(FList, start, items)
		case '[':
			return r.seqForm(FVec, start, items)
		}
		if len(items)%2 != 0 {
			r.fail(start, "a map literal needs key value pairs", "map literal must contain an even number of forms, got %d", len(items))
		}
		return r.seqForm(FMap, start, items)
	case ')', ']', '}':
		r.fail(start, "", "unexpected '%c'", c)
	case '"':
		r.advance()
		return r.lit(FLit, start, r.readString(start))
	case '\\':
		r.advance()
		return r.lit(FLit, start, r.readChar(start))
	case ':':
		r.advance()
		tok := r.token()
		if tok == "" || strings.HasPrefix(tok, ":") {
			r.fail(start, "", "invalid keyword: :%s", tok)
		}
		return r.lit(FLit, start, r.Keyword(tok))
	case '\'':
		r.advance()
		inner := r.readNonNil(start)
		quote := r.sym(start, "", "quote")
		return r.seqForm(FList, start, r.cutItems([]*Form{quote, inner}))
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
		return r.seqForm(FSet, start, r.readSeq('{', start))
	case '(':
		if r.fnLit {
			r.fail(start, "use (fn [x] ...) for the inner function", "nested #() is not allowed")
		}
		r.advance()
		r.fnLit = true
		items := r.readSeq('(', start)
		r.fnLit = false
		return r.seqForm(FFnLit, start, items)
	case '"':
		r.advance()
		return r.lit(FRegex, start, r.readString(start))
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
			return r.lit(FLit, start, math.Inf(1))
		case "-Inf":
			return r.lit(FLit, start, math.Inf(-1))
		case "NaN":
			return r.lit(FLit, start, math.NaN())
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
	closer := closerOf(open)
	if r.depth == 1 {
		r.outer = openBracket{open, start}
	}
	base := r.scratchN
	for {
		r.skipSpace()
		if r.off >= len(r.src) {
			r.fail(r.outer.pos, "add the missing closing bracket", "unbalanced parentheses: %d unclosed '%c'", r.depth, r.outer.c)
		}
		c := r.peek()
		if c == ')' || c == ']' || c == '}' {
			if c != closer {
				r.fail(r.pos(), "", "mismatched '%c': expected '%c' to close '%c' at %s", c, closer, open, start)
			}
			r.advance()
			r.depth--
			return r.popItems(base)
		}
		if f := r.read(); f != nil {
			r.push(f)
		}
	}
}

func (r *reader) token() string {
	s, i := r.off, r.off
	for i < len(r.src) && r.src[i] < utf8.RuneSelf && !isDelimByte(r.src[i]) {
		i++
	}
	// ASCII to i, on one line (a newline is a delimiter)
	r.col += i - r.off
	r.off = i
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
		return r.lit(FLit, pos, nil)
	case "true":
		return r.lit(FLit, pos, true)
	case "false":
		return r.lit(FLit, pos, false)
	}
	c := tok[0]
	if isDigit(c) || ((c == '-' || c == '+') && len(tok) > 1 && isDigit(tok[1])) {
		return r.lit(FLit, pos, r.number(tok, pos))
	}
	if !isSymbolStart(rune(c)) && c < utf8.RuneSelf {
		r.fail(pos, "", "invalid token: %s", tok)
	}
	if tok == "/" {
		return r.sym(pos, "", "/")
	}
	if i := strings.IndexByte(tok, '/'); i > 0 && i < len(tok)-1 {
		return r.sym(pos, tok[:i], tok[i+1:])
	}
	if strings.HasPrefix(tok, "/") || strings.HasSuffix(tok, "/") {
		r.fail(pos, "", "invalid symbol: %s", tok)
	}
	return r.sym(pos, "", tok)
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
