package builtins

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerRegex registers the regex builtins and the parsers: parse-long
// and the other nil-returning parse-*, and the Java statics
// Integer/parseInt, Long/parseLong, Double/parseDouble,
// Boolean/parseBoolean (which raise on bad input, as Java throws). Patterns
// may be a regex or a string; inputs past MaxRegexInput bytes are not
// scanned.
func registerRegex(r *registry) {
	r.Add("parse-long", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, ok := parseArg(th, "parse-long", a[0])
		if !ok {
			return nil
		}
		if n, ok := ParseLongStrict(s, 10); ok {
			return core.Int(n)
		}
		return nil
	}).doc("the integer a string spells, or nil").ref(RefRegex).pure()
	r.alias("parse-int", "parse-long").
		ref(RefRegex)
	r.Add("parse-boolean", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, ok := parseArg(th, "parse-boolean", a[0])
		if !ok {
			return nil
		}
		switch s {
		case "true":
			return true
		case "false":
			return false
		}
		return nil
	}).doc("true for \"true\", false for \"false\", else nil").ref(RefRegex).pure()
	r.Add("Boolean/parseBoolean", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return false
		}
		return strings.EqualFold(strArg(th, "Boolean/parseBoolean", a[0], 1), "true")
	}).doc("true when the string is \"true\" in any case, else false")
	r.Add("parse-double", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, ok := parseArg(th, "parse-double", a[0])
		if !ok {
			return nil
		}
		if f, ok := ParseDoubleClojure(s); ok {
			return f
		}
		return nil
	}).doc("the float a string spells, or nil").ref(RefRegex).pure()
	r.Add("Integer/parseInt", 1, 2, func(th *core.Thread, a []core.Value) core.Value { return javaParseInt(th, "Integer/parseInt", a, 32) }).
		doc("the integer a string spells (in a radix); an error otherwise")
	r.Add("Long/parseLong", 1, 2, func(th *core.Thread, a []core.Value) core.Value { return javaParseInt(th, "Long/parseLong", a, 64) }).
		doc("the integer a string spells (in a radix); an error otherwise")
	r.alias("Long/valueOf", "Long/parseLong")
	r.alias("Integer/valueOf", "Integer/parseInt")
	r.Add("Double/parseDouble", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, "Double/parseDouble", a[0], 1)
		// Java trims ASCII whitespace and accepts a d/f suffix.
		t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
		if u := strings.TrimRight(t, "dDfF"); len(u) == len(t)-1 && u != "" && u != "NaN" && !strings.HasSuffix(u, "Infinity") {
			t = u
		}
		if f, ok := ParseDoubleClojure(t); ok {
			return f // Java's grammar, hexadecimal ("0x1.8p1") too
		}
		th.RaiseHint(core.KindValue, "use parse-double, which returns nil for text that is not a number",
			"Double/parseDouble: cannot parse %s as a number", core.ErrorPreview(s))
		return nil
	}).doc("the float a string spells; an error otherwise")
	r.alias("Double/valueOf", "Double/parseDouble")
	r.Add("re-pattern", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return regexArg(th, "re-pattern", a[0], 1) }).
		doc("a regex compiled from a string").ref(RefRegex)
	r.Add("regex?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Regex); return ok }).
		doc("true for regexes")
	r.Add("re-find", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		re := regexArg(th, "re-find", a[0], 1)
		if a[1] == nil {
			return nil
		}
		in := cutRegexInput(strArg(th, "re-find", a[1], 2))
		m := re.Compiled.FindStringSubmatchIndex(in)
		if m == nil {
			return nil
		}
		return groupsValue(th, in, m)
	}).doc("the first match (with its groups), or nil").ref(RefRegex).pure()
	r.Add("re-matches", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		re := regexArg(th, "re-matches", a[0], 1)
		if a[1] == nil {
			return nil
		}
		in := strArg(th, "re-matches", a[1], 2)
		if len(in) > core.MaxRegexInput {
			// a match of the scanned prefix says nothing about the whole string
			th.RaiseHint(core.KindValue, "use re-find, or subs to cut the input",
				"re-matches: input of %d bytes exceeds the %d-byte regex scan limit", len(in), core.MaxRegexInput)
		}
		m := re.Compiled.FindStringSubmatchIndex(in)
		if m == nil || m[0] != 0 { // the leftmost match does not start at 0: none does
			return nil
		}
		if m[1] != len(in) {
			// leftmost-first may prefer a shorter match; retry anchored
			whole := th.Regex(`^(?:` + re.Source + `)$`)
			if m = whole.Compiled.FindStringSubmatchIndex(in); m == nil {
				return nil
			}
		}
		return groupsValue(th, in, m)
	}).doc("the match of the whole string (with its groups), or nil").ref(RefRegex).pure()
	r.Add("re-seq", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		re := regexArg(th, "re-seq", a[0], 1)
		if a[1] == nil {
			return nil
		}
		in := cutRegexInput(strArg(th, "re-seq", a[1], 2))
		locs := re.Compiled.FindAllStringSubmatchIndex(in, -1)
		if len(locs) == 0 {
			return nil
		}
		th.AllocSlots(len(locs))
		out := make([]core.Value, len(locs))
		for i, m := range locs {
			th.Tick()
			out[i] = groupsValue(th, in, m)
		}
		return th.MakeVector(out)
	}).doc("every match (with its groups), or nil when none").ref(RefRegex).pure()
	r.Add("re-split", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		re := regexArg(th, "re-split", a[0], 1)
		if a[1] == nil {
			return core.EmptyVector
		}
		limit := 0
		if len(a) == 3 {
			limit = int(th.Index("re-split", a[2], 3))
		}
		return sliceVec(SplitRegex(th, strArg(th, "re-split", a[1], 2), re, limit))
	}).doc("the parts of a string around a regex").ref(RefRegex)
	r.Add("re-quote-replacement", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, "re-quote-replacement", a[0], 1)
		return strings.NewReplacer(`\`, `\\`, `$`, `\$`).Replace(s)
	}).doc("a replacement string with \\ and $ escaped")
	r.Add("extract", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		g := int64(1)
		if len(a) == 3 {
			g = th.Int("extract", a[2], 3)
		}
		return extractGroup(th, "extract", a[0], a[1], g)
	}).doc("group n (1) of a regex's first match in a string, or nil")
	r.Add("extract-int", 2, 4, func(th *core.Thread, a []core.Value) core.Value {
		g := int64(1)
		var dflt core.Value
		if len(a) >= 3 {
			g = th.Int("extract-int", a[2], 3)
		}
		if len(a) == 4 {
			dflt = a[3]
		}
		s, ok := extractGroup(th, "extract-int", a[0], a[1], g).(string)
		if !ok {
			return dflt
		}
		if n, ok := ParseLongStrict(s, 10); ok {
			return core.Int(n)
		}
		return dflt
	}).doc("group n (1) of a regex's first match, parsed as an integer, or the default")
}

// regexArg accepts a regex or a pattern string (compiled with the caps).
func regexArg(th *core.Thread, fn string, v core.Value, argN int) *core.Regex {
	switch x := v.(type) {
	case *core.Regex:
		return x
	case string:
		return th.Regex(x)
	}
	th.TypeError(fn, "a regex or pattern string", v, argN)
	return nil
}

// extractGroup returns group g of the first match of pattern in s, or nil.
func extractGroup(th *core.Thread, fn string, pattern, s core.Value, g int64) core.Value {
	re := regexArg(th, fn, pattern, 1)
	if s == nil {
		return nil
	}
	in := cutRegexInput(strArg(th, fn, s, 2))
	m := re.Compiled.FindStringSubmatchIndex(in)
	if m == nil || g < 0 || g >= int64(len(m)/2) || m[2*g] < 0 {
		return nil
	}
	return in[m[2*g]:m[2*g+1]]
}

// ParseLongStrict accepts exactly [+-]?digits (in base) that fit int64,
// like Clojure's parse-long: no whitespace, no underscores, no 0x.
func ParseLongStrict(s string, base int) (int64, bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	if t == "" {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'z':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, base, 64)
	return n, err == nil
}

// javaParseInt is Integer/parseInt and Long/parseLong: (s [radix]); bad
// text or an out-of-range value is a value error.
func javaParseInt(th *core.Thread, fn string, a []core.Value, bits int) core.Value {
	s := strArg(th, fn, a[0], 1)
	base := int64(10)
	if len(a) == 2 {
		base = th.Int(fn, a[1], 2)
		if base < 2 || base > 36 {
			th.Raise(core.KindValue, "%s: radix %d out of range (2 to 36)", fn, base)
		}
	}
	n, ok := ParseLongStrict(s, int(base))
	if ok && bits == 32 && (n > math.MaxInt32 || n < math.MinInt32) {
		ok = false
	}
	if !ok {
		th.RaiseHint(core.KindValue, "use parse-long, which returns nil for text that is not an integer",
			"%s: cannot parse %s as an integer", fn, core.ErrorPreview(s))
	}
	return core.Int(n)
}

// parseDoubleStrict accepts Java's decimal float grammar without
// surrounding whitespace: [+-]? (digits [. digits?] | . digits) ([eE]
// [+-]? digits)?, and NaN, Infinity, +Infinity, -Infinity.
// parseDoubleClojure is Clojure 1.11's parse-double: Java's decimal
// grammar (parseDoubleStrict) or a hexadecimal float (0x1.8p1), with
// surrounding control characters and spaces (up to U+0020) and a float
// suffix (f, F, d, D) allowed.
func ParseDoubleClojure(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if n := len(s); n > 1 && strings.IndexByte("fFdD", s[n-1]) >= 0 {
		if c := s[n-2]; c == '.' || c >= '0' && c <= '9' {
			s = s[:n-1]
		}
	}
	if f, ok := ParseDoubleStrict(s); ok {
		return f, true
	}
	return parseHexDouble(s)
}

// parseHexDouble reads Java's hexadecimal float: a sign, 0x or 0X, hex
// digits with an optional point, and a binary exponent (p or P), which
// is required. Past the float range it is an infinity, as Java's.
func parseHexDouble(s string) (float64, bool) {
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || len(body) < 4 || body[0] != '0' || body[1] != 'x' && body[1] != 'X' || strings.ContainsRune(body, '_') {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// ParseDoubleStrict parses s as parse-double does: NaN, Infinity or a
// whole decimal or scientific number, else false.
func ParseDoubleStrict(s string) (float64, bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracDigits++
		}
	}
	if intDigits+fracDigits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		expDigits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// out of range: Java gives ±Infinity or 0.0
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// parseArg is the argument of parse-long, parse-double and parse-boolean:
// a string, or nil (ok false: the parse gives nil, by nil-punning). Any
// other value is a type error, as Clojure's "Expected string": a number
// read from JSON must not silently parse to nil.
func parseArg(th *core.Thread, fn string, v core.Value) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case int64, float64:
		th.RaiseHint(core.KindType, "the value is already a number: use it as it is",
			"%s: expected string, got %s (arg 1)", fn, core.ErrorPreview(v))
	}
	th.TypeError(fn, "string", v, 1)
	return "", false
}
