package core

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Regex limits.
const (
	MaxRegexPattern = 256
	MaxRegexInput   = 32 << 10
)

// CompileRegex compiles an RE2 pattern with the size cap; the error names
// unsupported features (lookaround, backreferences). Java's \uXXXX escape,
// which RE2 lacks, means the same character as RE2's \x{XXXX}; the
// Regex keeps src as written.
func CompileRegex(src string) (*Regex, error) {
	if len(src) > MaxRegexPattern {
		return nil, fmt.Errorf("regex pattern too long: %d bytes (limit %d)", len(src), MaxRegexPattern)
	}
	re, err := regexp.Compile(javaUnicodeEscapes(src))
	if err != nil {
		switch {
		case strings.Contains(src, "(?=") || strings.Contains(src, "(?!") || strings.Contains(src, "(?<=") || strings.Contains(src, "(?<!"):
			return nil, fmt.Errorf("invalid regex %q: lookaround is not supported (RE2 engine)", src)
		case regexp.MustCompile(`\\[1-9]`).MatchString(src):
			return nil, fmt.Errorf("invalid regex %q: backreferences are not supported (RE2 engine)", src)
		}
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("invalid regex %q: %s", src, strings.TrimPrefix(msg, "error parsing regexp: "))
	}
	r := &Regex{Source: src, Compiled: re}
	r.lit, r.isLit = literalOf(re)
	return r, nil
}

// Literal returns the text r matches when it matches exactly that text
// wherever it occurs: no anchor, class, repetition or case folding. The
// split and replace fast paths take it. regexp's LiteralPrefix alone is
// not enough: it calls ^a$ the complete literal "a". A Regex not made by
// CompileRegex answers false, which is never wrong: its callers then
// match it as a regex.
func (r *Regex) Literal() (string, bool) { return r.lit, r.isLit }

// literalOf is Literal for a compiled pattern: its literal prefix, when
// complete and the parsed pattern is one literal (in capture groups or
// not) or empty.
func literalOf(re *regexp.Regexp) (string, bool) {
	lit, complete := re.LiteralPrefix()
	if !complete {
		return "", false
	}
	p, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return "", false
	}
	p = p.Simplify()
	for p.Op == syntax.OpCapture {
		p = p.Sub[0]
	}
	switch {
	case p.Op == syntax.OpEmptyMatch && lit == "":
		return "", true
	case p.Op == syntax.OpLiteral && p.Flags&syntax.FoldCase == 0 && string(p.Rune) == lit:
		return lit, true
	}
	return "", false
}

// javaUnicodeEscapes rewrites each \uXXXX escape of pattern src (four hex
// digits, its backslash not itself escaped) as \x{XXXX}.
func javaUnicodeEscapes(src string) string {
	if !strings.Contains(src, `\u`) {
		return src
	}
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' || i+1 >= len(src) {
			b.WriteByte(src[i])
			continue
		}
		if src[i+1] == 'u' && i+6 <= len(src) && hex4(src[i+2:i+6]) {
			b.WriteString(`\x{`)
			b.WriteString(src[i+2 : i+6])
			b.WriteByte('}')
			i += 5
			continue
		}
		b.WriteString(src[i : i+2])
		i++
	}
	return b.String()
}

// Regex compiles pattern, raising a regex error on failure.
func (th *Thread) Regex(pattern string) *Regex {
	re, err := CompileRegex(pattern)
	if err != nil {
		th.Raise(KindRegex, "%s", err.Error())
	}
	return re
}

// Re returns the compiled regexp (read-only).
func (r *Regex) Re() *regexp.Regexp { return r.Compiled }

// regexInput caps the input scanned by a regex to MaxRegexInput bytes.
func regexInput(s string) string {
	if len(s) > MaxRegexInput {
		s = s[:MaxRegexInput]
	}
	return s
}

// RegexInput returns s cut to the scanned-input cap (32 KB).
func RegexInput(s string) string { return regexInput(s) }

// hex4 reports whether s is four hex digits, as the reader reads \uXXXX.
func hex4(s string) bool {
	_, err := strconv.ParseUint(s, 16, 16)
	return err == nil && len(s) == 4
}
