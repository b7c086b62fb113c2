package signature

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tIllegal          // text is the offending input, msg says why
	tLParen           // (
	tRParen           // )
	tLBrack           // [
	tRBrack           // ]
	tLBrace           // {
	tRBrace           // }
	tArrow            // ->
	tQuestion         // ?
	tKeyword          // :name (text includes the colon)
	tIdent            // name
	tEllipsis         // ... (last in an input list: extra arguments allowed)
	tPipe             // | (between the alternatives of a union or enum)
	tString           // "text" (a literal; text is the source, quotes included)
	tNumber           // 42, -1.5, 1e3 (a literal)
)

// token is one lexical token; off is its byte offset in the source.
type token struct {
	kind tokKind
	text string
	off  int
	msg  string // why a tIllegal token is illegal
}

// describe returns how a token is named in messages: its quoted text, or
// "end of input".
func (t token) describe() string {
	if t.kind == tEOF {
		return "end of input"
	}
	return strconv.Quote(t.text)
}

// lexer splits signature source into tokens. Whitespace, commas and ";"
// comments separate tokens and are otherwise ignored (as in Clojure, commas
// are whitespace).
type lexer struct {
	src string
	off int
}

func isNameStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isNameRune(r rune) bool {
	return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// IsName reports whether s can be written as a field or input name in
// signature syntax: a letter or "_" followed by letters, digits, "_" or "-".
func IsName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if i == 0 && !isNameStart(r) || !isNameRune(r) {
			return false
		}
	}
	return true
}

// next returns the next token.
func (l *lexer) next() token {
	for l.off < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[l.off:])
		if r == ';' { // a comment runs to the end of the line
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.off++
			}
			continue
		}
		if r != ',' && !unicode.IsSpace(r) {
			break
		}
		l.off += size
	}
	start := l.off
	if start >= len(l.src) {
		return token{kind: tEOF, off: start}
	}
	one := func(k tokKind) token {
		l.off++
		return token{kind: k, text: l.src[start:l.off], off: start}
	}
	switch c := l.src[start]; c {
	case '(':
		return one(tLParen)
	case ')':
		return one(tRParen)
	case '[':
		return one(tLBrack)
	case ']':
		return one(tRBrack)
	case '{':
		return one(tLBrace)
	case '}':
		return one(tRBrace)
	case '?':
		return one(tQuestion)
	case '|':
		return one(tPipe)
	case '"':
		return l.scanString(start)
	case '.':
		if strings.HasPrefix(l.src[start:], "...") {
			l.off += 3
			return token{kind: tEllipsis, text: "...", off: start}
		}
	case '-':
		if start+1 < len(l.src) && l.src[start+1] == '>' {
			l.off += 2
			return token{kind: tArrow, text: "->", off: start}
		}
		if start+1 < len(l.src) && isDigit(l.src[start+1]) {
			return l.scanNumber(start)
		}
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return l.scanNumber(start)
	case ':':
		l.off++
		end := l.scanName()
		if end == l.off {
			return token{kind: tIllegal, text: ":", off: start, msg: `expected a name after ":"`}
		}
		l.off = end
		return token{kind: tKeyword, text: l.src[start:end], off: start}
	}
	r, size := utf8.DecodeRuneInString(l.src[start:])
	if isNameStart(r) {
		l.off = l.scanName()
		return token{kind: tIdent, text: l.src[start:l.off], off: start}
	}
	l.off += size
	text := l.src[start:l.off]
	if r == utf8.RuneError && size == 1 {
		return token{kind: tIllegal, text: text, off: start, msg: "invalid utf-8 encoding"}
	}
	return token{kind: tIllegal, text: text, off: start, msg: "unexpected character " + strconv.QuoteRune(r)}
}

// scanName returns the end offset of the name starting at l.off, which is
// l.off itself when there is none. A name stops before "->".
func (l *lexer) scanName() int {
	off := l.off
	for off < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[off:])
		if off == l.off && !isNameStart(r) || !isNameRune(r) {
			break
		}
		if r == '-' && off+1 < len(l.src) && l.src[off+1] == '>' {
			break
		}
		off += size
	}
	return off
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanString scans a string literal starting at the '"' at start: Go
// (and JSON) escapes, on one line.
func (l *lexer) scanString(start int) token {
	off := start + 1
	for off < len(l.src) {
		switch l.src[off] {
		case '\\':
			off += 2
			continue
		case '\n':
			l.off = off
			return token{kind: tIllegal, text: l.src[start:off], off: start, msg: "string literal not closed before the end of the line"}
		case '"':
			l.off = off + 1
			return token{kind: tString, text: l.src[start:l.off], off: start}
		}
		off++
	}
	l.off = len(l.src)
	return token{kind: tIllegal, text: l.src[start:], off: start, msg: "string literal not closed"}
}

// scanNumber scans a number literal at start: an optional "-", digits,
// an optional fraction and an optional exponent.
func (l *lexer) scanNumber(start int) token {
	off := start
	if l.src[off] == '-' {
		off++
	}
	digits := func() {
		for off < len(l.src) && isDigit(l.src[off]) {
			off++
		}
	}
	digits()
	if off+1 < len(l.src) && l.src[off] == '.' && isDigit(l.src[off+1]) {
		off++
		digits()
	}
	if off < len(l.src) && (l.src[off] == 'e' || l.src[off] == 'E') {
		e := off + 1
		if e < len(l.src) && (l.src[e] == '+' || l.src[e] == '-') {
			e++
		}
		if e < len(l.src) && isDigit(l.src[e]) {
			off = e
			digits()
		}
	}
	l.off = off
	return token{kind: tNumber, text: l.src[start:off], off: start}
}
