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
