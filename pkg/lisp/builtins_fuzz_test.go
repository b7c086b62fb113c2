package lisp

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// testThread is a bare thread for calling builtin helpers directly.
func testThread() *core.Thread {
	return &core.Thread{Ctx: context.Background(), NextCheck: core.CheckEvery, MaxMem: DefaultMaxMemory, Host: &core.Host{}}
}

// catchLisp runs fn and returns the *Error it raised, if any; any other
// panic fails the test.
func catchLisp(t *testing.T, fn func()) (err *core.Error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*core.Error)
			if !ok {
				t.Fatalf("panic that is not a *lisp.Error: %v", p)
			}
			err = e
		}
	}()
	fn()
	return nil
}

// FuzzFormat: any format string with a mix of arguments ends in a string
// or a value error, never another panic.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"%s", "%d", "%.2f", "%5d|%-5s|", "%03d", "%x", "%%", "%n", "%,.3f", "%2$s %1$s", "%<s",
		"%(+,012.4f", "%#o", "%e", "%.0g", "%S", "%c", "%b", "%.", "%1$", "%-", "%999999999d", "%.99999f", "%q"} {
		f.Add(s, int64(42), 2.675, "héllo")
	}
	f.Fuzz(func(t *testing.T, format string, i int64, x float64, s string) {
		args := []core.Value{i, x, s, nil, core.NewKeyword("k"), math.Inf(-1), core.Int(65)}
		var out string
		err := catchLisp(t, func() { out = builtins.FormatJava(testThread(), format, args) })
		if err != nil {
			if err.Kind != core.KindValue && err.Kind != core.KindMemory {
				t.Fatalf("format %q: unexpected error kind %v: %v", format, err.Kind, err)
			}
			return
		}
		if !strings.Contains(format, "%") && out != format {
			t.Fatalf("format %q without specs gave %q", format, out)
		}
	})
}

var (
	javaDouble = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	javaLong   = regexp.MustCompile(`^[+-]?[0-9]+$`)
	// Clojure 1.11's parse-double grammar
	javaDoubleTrimmed = regexp.MustCompile(`^[\x00-\x20]*(NaN|[+-]Infinity|Infinity|[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)[\x00-\x20]*$`)
)

// FuzzParseNumbers checks parse-double and parse-long against their
// grammars: accepted exactly when the text matches, and then equal to
// strconv's value.
func FuzzParseNumbers(f *testing.F) {
	for _, s := range []string{"1", "-1.5", "1.", ".5", "1e5", "+1E-3", " 1", "1 ", "1_0", "0x10", "0x1.8p1", "0x1_0p0", "0xp1", "0x.8p-1d", "NaN", "Infinity", "-Infinity",
		"inf", "1e", "9223372036854775808", "-9223372036854775808", "1.5d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := builtins.ParseDoubleStrict(s)
		special := s == "NaN" || s == "Infinity" || s == "+Infinity" || s == "-Infinity"
		if ok != (special || javaDouble.MatchString(s)) {
			t.Fatalf("parse-double %q: ok=%v, grammar says %v", s, ok, !ok)
		}
		if ok && !special {
			want, _ := strconv.ParseFloat(s, 64)
			if d != want {
				t.Fatalf("parse-double %q = %v, want %v", s, d, want)
			}
		}
		_, okC := builtins.ParseDoubleClojure(s)
		if okC != javaDoubleTrimmed.MatchString(s) {
			t.Fatalf("parse-double (Clojure's) %q: ok=%v", s, okC)
		}
		n, ok := builtins.ParseLongStrict(s, 10)
		want, err := strconv.ParseInt(s, 10, 64)
		if ok != (javaLong.MatchString(s) && err == nil) {
			t.Fatalf("parse-long %q: ok=%v", s, ok)
		}
		if ok && n != want {
			t.Fatalf("parse-long %q = %d, want %d", s, n, want)
		}
	})
}

// FuzzSplit checks split's Java rules on literal separators (the parts
// joined give s minus trailing separators) and that the regex path agrees
// with the literal fast path.
func FuzzSplit(f *testing.F) {
	for _, c := range [][2]string{{"a,b,,c,,", ","}, {",a", ","}, {"", ","}, {"abc", ""}, {",", ","}, {"a::b:::c", "::"}, {"héllo wörld", "ö"}} {
		f.Add(c[0], c[1], 0)
	}
	f.Add("a,b,c", ",", 2)
	f.Add("a,b,,", ",", -1)
	f.Fuzz(func(t *testing.T, s, sep string, limit int) {
		if len(s) > 4096 || len(sep) > 16 {
			return
		}
		limit = limit%5 - 1 // -1 .. 3
		th := testThread()
		var lit []core.Value
		if err := catchLisp(t, func() { lit = builtins.SplitLiteral(th, s, sep, limit) }); err != nil {
			t.Fatalf("split %q %q: %v", s, sep, err)
		}
		parts := make([]string, len(lit))
		for i, p := range lit {
			parts[i] = p.(string)
		}
		if sep != "" && limit <= 0 {
			joined := strings.Join(parts, sep)
			if !strings.HasPrefix(s, joined) || strings.ReplaceAll(s[len(joined):], sep, "") != "" || (limit < 0 && joined != s) {
				t.Fatalf("split %q on %q = %q: does not rebuild the input", s, sep, parts)
			}
		}
		if limit > 0 && len(parts) > limit {
			t.Fatalf("split %q on %q limit %d gave %d parts", s, sep, limit, len(parts))
		}
		if sep == "" || len(s) > core.MaxRegexInput {
			return
		}
		// a non-literal regex matching exactly sep takes the regex path
		re, err := core.CompileRegex(`(?:` + regexp.QuoteMeta(sep) + `)|\x{10FFFF}[^\x00-\x{10FFFE}]`)
		if err != nil {
			return
		}
		if _, complete := re.Compiled.LiteralPrefix(); complete {
			t.Fatal("test regex unexpectedly literal")
		}
		var viaRe []core.Value
		if err := catchLisp(t, func() { viaRe = builtins.SplitRegex(th, s, re, limit) }); err != nil {
			t.Fatalf("re-split %q %q: %v", s, sep, err)
		}
		if core.PrStr(core.NewVector(viaRe)) != core.PrStr(core.NewVector(lit)) {
			t.Fatalf("split %q on %q limit %d: regex path %s, literal path %s", s, sep, limit, core.PrStr(core.NewVector(viaRe)), core.PrStr(core.NewVector(lit)))
		}
	})
}

// FuzzReplace: a regex replacement template either expands or raises a
// value error; with no $ or \ it equals a literal replace.
func FuzzReplace(f *testing.F) {
	f.Add("abc abc", "(b)(c)", "$2$1")
	f.Add("x-y", `(?P<first>\w)-(\w)`, "${first}+$2")
	f.Add("aaa", "a", `\$`)
	f.Add("abc", "b", "$")
	f.Fuzz(func(t *testing.T, s, pattern, repl string) {
		if len(s) > 4096 {
			return
		}
		re, err := core.CompileRegex(pattern)
		if err != nil {
			return
		}
		th := testThread()
		var out string
		if e := catchLisp(t, func() { out = builtins.RegexReplace(th, "replace", s, re, repl, -1) }); e != nil {
			if e.Kind != core.KindValue {
				t.Fatalf("replace %q %q %q: %v", s, pattern, repl, e)
			}
			return
		}
		if !strings.ContainsAny(repl, `$\`) {
			if want := re.Compiled.ReplaceAllLiteralString(s, repl); out != want {
				t.Fatalf("replace %q /%s/ %q = %q, want %q", s, pattern, repl, out, want)
			}
		}
	})
}
