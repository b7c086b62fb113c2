package builtins

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerStrings registers the string builtins (clojure.string's, also
// as str/), char, name, keyword and format. Strings are indexed by code
// points. nil is punned: transforms of nil give nil, tests give false
// (blank? gives true), split gives [].
func registerStrings(r *registry) {
	r.Add("subs", 2, 3, biSubs).
		doc("the substring from start (to end), by characters").ref(RefStrings).pure()
	r.Add("join", 1, 2, biJoin).
		doc("the printed items joined, optionally with a separator").refAs(RefStrings, "str/join").pure()
	r.Add("split", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyVector
		}
		s := strArg(th, "split", a[0], 1)
		limit := 0
		if len(a) == 3 {
			limit = int(th.Index("split", a[2], 3))
		}
		switch sep := a[1].(type) {
		case string:
			return sliceVec(SplitLiteral(th, s, sep, limit))
		case *core.Regex:
			return sliceVec(SplitRegex(th, s, sep, limit))
		}
		th.TypeError("split", "a string or regex separator", a[1], 2)
		return nil
	}).doc("the parts of a string around a separator string or regex").refAs(RefStrings, "str/split").pure()
	r.Add("split-lines", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyVector
		}
		s := strArg(th, "split-lines", a[0], 1)
		// Clojure splits on #"\r?\n" and drops trailing empty lines.
		parts := SplitLiteral(th, s, "\n", -1)
		if len(parts) == 1 {
			return sliceVec(parts)
		}
		for i, p := range parts[:len(parts)-1] {
			if ps := p.(string); strings.HasSuffix(ps, "\r") {
				parts[i] = ps[:len(ps)-1]
			}
		}
		return sliceVec(dropTrailingEmpty(parts))
	}).doc("the lines of a string").refAs(RefStrings, "str/split-lines").pure()
	r.Add("trim", 1, 1, strMap("trim", func(s string) string { return strings.TrimFunc(s, isJavaSpace) })).
		doc("a string without leading and trailing whitespace").refAs(RefStrings, "str/trim").pure()
	r.Add("triml", 1, 1, strMap("triml", func(s string) string { return strings.TrimLeftFunc(s, isJavaSpace) })).
		doc("a string without leading whitespace").refAs(RefStrings, "str/triml").pure()
	r.Add("trimr", 1, 1, strMap("trimr", func(s string) string { return strings.TrimRightFunc(s, isJavaSpace) })).
		doc("a string without trailing whitespace").refAs(RefStrings, "str/trimr").pure()
	r.Add("trim-newline", 1, 1, strMap("trim-newline", func(s string) string { return strings.TrimRight(s, "\r\n") })).
		doc("a string without trailing newlines and returns")
	r.Add("upper-case", 1, 1, strMapAny("upper-case", javaUpper)).
		doc("a string in upper case").refAs(RefStrings, "str/upper-case").pure()
	r.alias("upcase", "upper-case")
	r.Add("lower-case", 1, 1, strMapAny("lower-case", strings.ToLower)).
		doc("a string in lower case").refAs(RefStrings, "str/lower-case").pure()
	r.alias("downcase", "lower-case")
	r.Add("capitalize", 1, 1, strMapAny("capitalize", func(s string) string {
		if s == "" {
			return s
		}
		r, n := utf8.DecodeRuneInString(s)
		return string(unicode.ToUpper(r)) + strings.ToLower(s[n:])
	})).
		doc("a string with its first character upper case and the rest lower case").refAs(RefStrings, "str/capitalize").pure()
	r.Add("str/reverse", 1, 1, strMap("str/reverse", func(s string) string {
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return string(rs)
	})).
		doc("the characters of a string in reverse order").ref(RefStrings)
	r.Add("starts-with?", 2, 2, strTest("starts-with?", strings.HasPrefix)).
		doc("true when the string starts with the prefix").refAs(RefStrings, "str/starts-with?").pure()
	r.Add("ends-with?", 2, 2, strTest("ends-with?", strings.HasSuffix)).
		doc("true when the string ends with the suffix").refAs(RefStrings, "str/ends-with?").pure()
	r.Add("includes?", 2, 2, strTest("includes?", strings.Contains)).
		doc("true when the string contains the substring").refAs(RefStrings, "str/includes?").pure()
	r.Add("blank?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return true
		}
		s := strArg(th, "blank?", a[0], 1)
		return strings.TrimLeftFunc(s, isJavaSpace) == ""
	}).doc("true for nil, empty and whitespace-only strings").refAs(RefStrings, "str/blank?").pure()
	r.Add("index-of", 2, 3, func(th *core.Thread, a []core.Value) core.Value { return indexOf(th, "index-of", a, false, false) }).
		doc("the index of the first occurrence of a substring (from an index), or nil").refAs(RefStrings, "str/index-of").pure()
	r.Add("last-index-of", 2, 3, func(th *core.Thread, a []core.Value) core.Value { return indexOf(th, "last-index-of", a, true, false) }).
		doc("the index of the last occurrence of a substring, or nil").refAs(RefStrings, "str/last-index-of")
	r.Add("replace", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 2 {
			return replaceColl(th, a[0], a[1])
		}
		return replaceStr(th, "replace", a, -1)
	}).doc("every match of a string or regex replaced (by a string or a function of the match); with two arguments, items replaced by a map").hof(-1)
	r.Add("str/replace", 3, 3, func(th *core.Thread, a []core.Value) core.Value { return replaceStr(th, "replace", a, -1) }).
		doc("every match of a string or regex replaced by a string or a function of the match").ref(RefStrings)
	r.Add("replace-first", 3, 3, func(th *core.Thread, a []core.Value) core.Value { return replaceStr(th, "replace-first", a, 1) }).
		doc("the first match of a string or regex replaced").refAs(RefStrings, "str/replace-first").hof(-1)
	r.Add("escape", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return nil
		}
		s := strArg(th, "escape", a[0], 1)
		var b strings.Builder
		for _, c := range s {
			ch := string(c)
			if rep := th.Call1(a[1], ch); rep != nil {
				b.WriteString(th.StrOf(rep))
			} else {
				b.WriteString(ch)
			}
			th.CheckGrowth(b.Len())
		}
		return th.MakeString(b.String())
	}).doc("a string with each character replaced by (cmap char) when that is not nil")
	r.Add("char", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch x := a[0].(type) {
		case int64:
			if x < 0 || x > unicode.MaxRune {
				th.Raise(core.KindValue, "char: code point out of range: %d", x)
			}
			return string(rune(x))
		case string:
			if utf8.RuneCountInString(x) == 1 {
				return x
			}
		}
		th.TypeError("char", "an integer code point or a 1-char string", a[0], 1)
		return nil
	}).doc("the one-character string of a code point")
	r.Add("name", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch x := a[0].(type) {
		case nil:
			return nil
		case string:
			return x
		case *core.Keyword:
			return keywordName(x)
		}
		th.TypeError("name", "a keyword or string", a[0], 1)
		return nil
	}).doc("the name of a keyword or symbol, or the string itself").ref(RefStrings).pure()
	r.Add("namespace", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch x := a[0].(type) {
		case nil:
			return nil
		case *core.Keyword:
			if ns := keywordNamespace(x); ns != "" {
				return ns
			}
			return nil
		}
		th.TypeError("namespace", "a keyword", a[0], 1)
		return nil
	}).doc("the namespace of a keyword (:a/b gives \"a\"), or nil").pure()
	r.Add("keyword", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 2 {
			name := strArg(th, "keyword", a[1], 2)
			switch ns := a[0].(type) {
			case nil:
				return th.Keyword(name)
			case string:
				return th.Keyword(ns + "/" + name)
			}
			th.TypeError("keyword", "a string namespace", a[0], 1)
		}
		switch x := a[0].(type) {
		case *core.Keyword:
			return x
		case string:
			return th.Keyword(x)
		}
		return nil // as Clojure: (keyword 1) and (keyword nil) are nil
	}).doc("a keyword of a name (and namespace)").ref(RefStrings).pure()
	r.Add("format", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		f := strArg(th, "format", a[0], 1)
		return th.MakeString(FormatJava(th, f, a[1:]))
	}).doc("a string formatted as Java's String.format does").ref(RefStrings).pure()
}

// javaUpperSpecial holds Java's one-to-many upper-case mappings that Go's
// simple case mapping leaves alone (read-only; a Replacer is safe for
// concurrent use).
var javaUpperSpecial = strings.NewReplacer("ß", "SS", "ﬀ", "FF", "ﬁ", "FI", "ﬂ", "FL", "ﬃ", "FFI", "ﬄ", "FFL", "ﬅ", "ST", "ﬆ", "ST", "ŉ", "ʼN")

// javaUpper upper-cases like Java's String.toUpperCase (so "straße" gives
// "STRASSE").
func javaUpper(s string) string {
	u := strings.ToUpper(s)
	if isASCII(u) {
		return u
	}
	return javaUpperSpecial.Replace(u)
}

// strArg returns v as a string or raises a type error.
func strArg(th *core.Thread, fn string, v core.Value, argN int) string {
	if s, ok := v.(string); ok {
		return s
	}
	th.TypeError(fn, "string", v, argN)
	return ""
}

// strReceiver returns the string a clojure.string function works on
// (arg 1 of fn): a string as is, a number, boolean or keyword as str
// prints it (Clojure calls toString on the receiver of upper-case,
// includes?, index-of, replace and their kin, so (upper-case 12) is
// "12"). A collection is a type error, where Clojure would search its
// printed text: (includes? coll x) is a model's slip for contains?.
func strReceiver(th *core.Thread, fn string, v core.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case int64, float64, bool, *core.Keyword:
		return th.StrOf(x)
	}
	th.TypeError(fn, "string", v, 1)
	return ""
}

// strMap builds a one-string transform: nil gives nil.
func strMap(name string, f func(string) string) core.BuiltinFunc {
	return strMapOf(name, f, false)
}

// strMapAny is strMap for a transform that, as in Clojure, takes any
// value through strReceiver.
func strMapAny(name string, f func(string) string) core.BuiltinFunc {
	return strMapOf(name, f, true)
}

func strMapOf(name string, f func(string) string, anyValue bool) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return nil
		}
		var s string
		if anyValue {
			s = strReceiver(th, name, a[0])
		} else {
			s = strArg(th, name, a[0], 1)
		}
		out := f(s)
		if out != s {
			th.AllocBytes(len(out))
		}
		return out
	}
}

// strTest builds a (s x) string test: a nil s gives false, any other
// value is tested as strReceiver gives it.
func strTest(name string, f func(s, x string) bool) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return false
		}
		s := strReceiver(th, name, a[0])
		return f(s, strArg(th, name, a[1], 2))
	}
}

// isJavaSpace is Java's Character.isWhitespace (what clojure.string/trim
// and blank? use): Unicode spaces except the no-break ones, plus the ASCII
// controls \t \n \v \f \r and \x1c-\x1f.
func isJavaSpace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1c && r <= 0x1f)
	}
	switch r {
	case 0xa0, 0x2007, 0x202f:
		return false
	case 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isASCII reports whether s has only single-byte runes (byte index = rune
// index).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// runeLen returns the length of s in runes and whether s is ASCII (for
// runeOffset and runeIndex).
func runeLen(s string) (n int, ascii bool) {
	if isASCII(s) {
		return len(s), true
	}
	return utf8.RuneCountInString(s), false
}

// runeOffset returns the byte offset of rune index i in s, clamped to
// [0, len(s)].
func runeOffset(s string, i int, ascii bool) int {
	if i <= 0 {
		return 0
	}
	if ascii {
		return min(i, len(s))
	}
	n := 0
	for off := range s {
		if n == i {
			return off
		}
		n++
	}
	return len(s)
}

// runeIndex converts a byte offset into a rune index.
func runeIndex(s string, off int, ascii bool) int {
	if ascii {
		return off
	}
	return utf8.RuneCountInString(s[:off])
}

func biSubs(th *core.Thread, a []core.Value) core.Value {
	if a[0] == nil {
		return nil
	}
	s := strArg(th, "subs", a[0], 1)
	start := th.Index("subs", a[1], 2)
	rn, ascii := runeLen(s)
	n := int64(rn)
	end := n
	if len(a) == 3 && a[2] != nil {
		end = th.Index("subs", a[2], 3)
	}
	start = max(0, min(start, n))
	end = max(start, min(end, n))
	b0 := runeOffset(s, int(start), ascii)
	b1 := b0 + runeOffset(s[b0:], int(end-start), ascii)
	return s[b0:b1]
}

func biJoin(th *core.Thread, a []core.Value) core.Value {
	sep, coll := "", a[0]
	if len(a) == 2 {
		coll = a[1]
		switch a[0].(type) {
		case nil:
		case *core.Vector, *core.Set, *core.Map, core.HostMap, *core.LazySeq:
			th.RaiseHint(core.KindType, "the separator comes first: (join \", \" coll)",
				"join: expected a string separator, got %s (arg 1)", core.ErrorPreview(a[0]))
		default:
			sep = th.StrOf(a[0])
		}
	}
	items := th.Seq(coll, "join", len(a))
	switch len(items) {
	case 0:
		return ""
	case 1:
		return th.MakeString(th.StrOf(items[0]))
	}
	size := len(sep) * (len(items) - 1)
	for _, it := range items {
		if x, ok := it.(string); ok {
			size += len(x)
		} else {
			size += 8
		}
	}
	th.CheckGrowth(size)
	var b strings.Builder
	b.Grow(size)
	for i, it := range items {
		th.Tick()
		if i > 0 {
			b.WriteString(sep)
		}
		switch x := it.(type) {
		case string:
			b.WriteString(x)
		case int64:
			var buf [20]byte
			b.Write(strconv.AppendInt(buf[:0], x, 10))
		case *core.Keyword:
			b.WriteByte(':')
			b.WriteString(x.Name)
		case nil:
		default:
			b.WriteString(th.StrOf(x))
		}
		th.CheckGrowth(b.Len())
	}
	return th.MakeString(b.String())
}

// SplitLiteral splits s on a literal separator with Java's String.split
// rules: "" splits into chars; no match gives [s]; limit > 0 caps the
// number of parts; limit 0 drops trailing empty strings. The parts are
// charged to the memory limit before they are made.
func SplitLiteral(th *core.Thread, s, sep string, limit int) []core.Value {
	if sep == "" {
		if s == "" {
			return []core.Value{""}
		}
		n := utf8.RuneCountInString(s)
		if limit > 0 && n > limit {
			n = limit
		}
		th.AllocSlots(n)
		out := make([]core.Value, 0, n)
		for i := 0; i < len(s); {
			if limit > 0 && len(out) == limit-1 {
				return append(out, s[i:])
			}
			th.Tick()
			_, w := utf8.DecodeRuneInString(s[i:]) // w is 1 for invalid UTF-8
			out = append(out, s[i:i+w])
			i += w
		}
		return out
	}
	if !strings.Contains(s, sep) {
		return []core.Value{s}
	}
	n := strings.Count(s, sep) + 1
	if limit > 0 && n > limit {
		n = limit
	}
	th.AllocSlots(n)
	out := make([]core.Value, 0, n)
	for len(out) < n-1 {
		th.Tick()
		i := strings.Index(s, sep)
		out = append(out, s[:i])
		s = s[i+len(sep):]
	}
	out = append(out, s)
	if limit == 0 {
		out = dropTrailingEmpty(out)
	}
	return out
}

func dropTrailingEmpty(out []core.Value) []core.Value {
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// SplitRegex splits s on a regex with Java's Pattern.split rules (see
// splitLiteral); a literal pattern takes the literal fast path. Only the
// first MaxRegexInput bytes are scanned; the rest stays in the last part.
func SplitRegex(th *core.Thread, s string, re *core.Regex, limit int) []core.Value {
	if lit, ok := re.Literal(); ok {
		return SplitLiteral(th, s, lit, limit)
	}
	in := cutRegexInput(s)
	rest := s[len(in):]
	max := -1
	if limit > 0 {
		max = limit
	}
	locs := re.Compiled.FindAllStringIndex(in, max)
	th.AllocSlots(len(locs) + 1)
	out := make([]core.Value, 0, len(locs)+1)
	index := 0
	for _, m := range locs {
		th.Tick()
		if limit > 0 && len(out) >= limit-1 {
			break
		}
		if m[1] == 0 { // a zero-width match at the start gives no leading ""
			continue
		}
		out = append(out, in[index:m[0]])
		index = m[1]
	}
	if index == 0 && len(out) == 0 {
		return []core.Value{s}
	}
	if rest != "" { // the unscanned tail joins the last part (a copy)
		th.AllocBytes(len(in) - index + len(rest))
	}
	out = append(out, in[index:]+rest)
	if limit == 0 {
		out = dropTrailingEmpty(out)
	}
	return out
}

// cutRegexInput cuts s to the scanned-input cap on a rune boundary.
func cutRegexInput(s string) string {
	if len(s) <= core.MaxRegexInput {
		return s
	}
	n := core.MaxRegexInput
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// indexOf implements index-of / last-index-of (nil when absent) and, with
// java set, .indexOf / .lastIndexOf (-1 when absent). Indices are code
// points; from is clamped as in Java.
func indexOf(th *core.Thread, fn string, a []core.Value, last, java bool) core.Value {
	notFound := core.Value(nil)
	if java {
		notFound = core.Int(-1)
	}
	if a[0] == nil && !java {
		return nil
	}
	var s string
	if java {
		s = strArg(th, fn, a[0], 1)
	} else {
		s = strReceiver(th, fn, a[0])
	}
	var sub string
	switch x := a[1].(type) {
	case string:
		sub = x
	case int64: // Java's indexOf(int ch)
		sub = string(rune(x))
	default:
		th.TypeError(fn, "string", a[1], 2)
	}
	n, ascii := runeLen(s)
	if !last {
		from := 0
		if len(a) == 3 {
			from = int(max(0, min(th.Index(fn, a[2], 3), int64(n))))
		}
		off := runeOffset(s, from, ascii)
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return notFound
		}
		return core.Int(int64(runeIndex(s, off+i, ascii)))
	}
	from := n
	if len(a) == 3 {
		f := th.Index(fn, a[2], 3)
		if f < 0 {
			return notFound
		}
		from = int(min(f, int64(n)))
	}
	// the match must start at or before rune index from
	limit := runeOffset(s, from, ascii) + len(sub)
	if limit > len(s) {
		limit = len(s)
	}
	i := strings.LastIndex(s[:limit], sub)
	if i < 0 {
		return notFound
	}
	return core.Int(int64(runeIndex(s, i, ascii)))
}

// replaceColl is Clojure's (replace smap coll): items found as keys of
// smap are replaced by their values.
func replaceColl(th *core.Thread, smap, coll core.Value) core.Value {
	m, ok := core.AsMap(smap)
	if !ok {
		if v, isVec := smap.(*core.Vector); isVec {
			items := th.Seq(coll, "replace", 2)
			out := make([]core.Value, len(items))
			for i, it := range items {
				out[i] = it
				if k, isInt := it.(int64); isInt && k >= 0 && k < int64(v.Len()) {
					out[i] = v.At(int(k))
				}
			}
			return th.MakeVector(out)
		}
		th.TypeError("replace", "a string, or a map for (replace smap coll)", smap, 1)
	}
	items := th.Seq(coll, "replace", 2)
	out := make([]core.Value, len(items))
	for i, it := range items {
		th.Tick()
		out[i] = it
		if v, found := m.Get(it); found {
			out[i] = v
		}
	}
	return th.MakeVector(out)
}

// replaceStr implements replace (n < 0: all) and replace-first (n = 1).
// A string match is literal; a regex match takes Java $1 references in a
// string replacement, or a fn of the match.
func replaceStr(th *core.Thread, fn string, a []core.Value, n int) core.Value {
	if a[0] == nil {
		return nil
	}
	s := strReceiver(th, fn, a[0])
	switch m := a[1].(type) {
	case string:
		repl := strArg(th, fn, a[2], 3)
		if len(repl) > len(m) {
			k := strings.Count(s, m)
			if n >= 0 && k > n {
				k = n
			}
			th.CheckGrowth(len(s) + k*(len(repl)-len(m)))
		}
		out := strings.Replace(s, m, repl, n)
		if len(out) > len(s) {
			th.AllocBytes(len(out))
		}
		return out
	case *core.Regex:
		return th.MakeString(RegexReplace(th, fn, s, m, a[2], n))
	}
	th.TypeError(fn, "a string or regex match", a[1], 2)
	return nil
}

// RegexReplace replaces up to n (n < 0: all) matches of re in s. repl is
// a string with Java $n / ${name} references and \ escapes, or a fn called
// with the match (a string, or [whole g1 ...] with groups).
func RegexReplace(th *core.Thread, fn string, s string, re *core.Regex, repl core.Value, n int) string {
	var tmpl string
	switch x := repl.(type) {
	case string:
		if lit, ok := re.Literal(); ok && !strings.ContainsAny(x, `$\`) {
			return strings.Replace(s, lit, x, n)
		}
		tmpl = x
	case *core.Closure, *core.Builtin, *core.Keyword, *core.Map, core.HostMap, *core.Set:
	default:
		th.TypeError(fn, "a string or function replacement", repl, 3)
	}
	in := cutRegexInput(s)
	rest := s[len(in):]
	locs := re.Compiled.FindAllStringSubmatchIndex(in, n)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range locs {
		th.Tick()
		b.WriteString(in[last:m[0]])
		if _, isStr := repl.(string); isStr {
			expandJava(th, fn, &b, tmpl, in, m, re)
		} else {
			r := th.Call1(repl, groupsValue(th, in, m))
			b.WriteString(th.StrOf(r))
		}
		last = m[1]
		th.CheckGrowth(b.Len())
	}
	b.WriteString(in[last:])
	b.WriteString(rest)
	return b.String()
}

// expandJava appends Java's Matcher.appendReplacement expansion of tmpl.
func expandJava(th *core.Thread, fn string, b *strings.Builder, tmpl, in string, m []int, re *core.Regex) {
	ngroups := len(m)/2 - 1
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch c {
		case '\\':
			i++
			if i >= len(tmpl) {
				th.Raise(core.KindValue, "%s: character to be escaped is missing at the end of the replacement", fn)
			}
			b.WriteByte(tmpl[i])
		case '$':
			i++
			if i >= len(tmpl) {
				th.Raise(core.KindValue, "%s: illegal group reference: $ at the end of the replacement", fn)
			}
			g := -1
			if tmpl[i] == '{' {
				j := strings.IndexByte(tmpl[i:], '}')
				if j < 0 {
					th.Raise(core.KindValue, "%s: named group reference is missing its closing }", fn)
				}
				name := tmpl[i+1 : i+j]
				g = re.Compiled.SubexpIndex(name)
				if g < 0 {
					th.Raise(core.KindValue, "%s: no group named %q", fn, name)
				}
				i += j
			} else {
				if tmpl[i] < '0' || tmpl[i] > '9' {
					th.Raise(core.KindValue, "%s: illegal group reference in replacement; write \\$ for a literal $", fn)
				}
				g = int(tmpl[i] - '0')
				if g > ngroups {
					th.Raise(core.KindValue, "%s: no group %d in the pattern", fn, g)
				}
				// Java takes more digits while the number stays a valid group.
				for i+1 < len(tmpl) && tmpl[i+1] >= '0' && tmpl[i+1] <= '9' {
					ng := g*10 + int(tmpl[i+1]-'0')
					if ng > ngroups {
						break
					}
					g = ng
					i++
				}
			}
			if m[2*g] >= 0 {
				b.WriteString(in[m[2*g]:m[2*g+1]])
			}
		default:
			b.WriteByte(c)
		}
	}
}

// groupsValue is re-find's result for one match: the string without
// groups, else [whole g1 ...] with nil for unmatched groups.
func groupsValue(th *core.Thread, in string, m []int) core.Value {
	if len(m) == 2 {
		return in[m[0]:m[1]]
	}
	out := make([]core.Value, len(m)/2)
	for g := range out {
		if m[2*g] >= 0 {
			out[g] = in[m[2*g]:m[2*g+1]]
		}
	}
	return th.MakeVector(out)
}

// fmtSpec is one parsed %[index$][flags][width][.precision]conv.
type fmtSpec struct {
	minus, plus, space, zero, comma, paren, alt bool
	width, prec                                 int // -1: absent
	conv                                        byte
	text                                        string // the spec as written, for messages
}

// FormatJava implements (format fmt args...) with java.util.Formatter's
// syntax and output for the conversions s S b B c C d o x X e E f g G %
// n, the flags - + space 0 , ( #, widths, precisions, explicit indexes
// (%2$s) and %<s. Java rejects %d on a float and %f on an integer; here
// %d takes an integral float and %e/%f/%g take an integer.
func FormatJava(th *core.Thread, f string, args []core.Value) string {
	var stack [256]byte // most results fit: one allocation for the string
	b := stack[:0]
	next, prev := 0, -1
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		start := i
		i++
		if i >= len(f) {
			th.Raise(core.KindValue, "format: incomplete format specifier at the end of %q", f)
		}
		sp := fmtSpec{width: -1, prec: -1}
		argIdx := -2 // -2: next ordinary arg, -1: the previous one
		if f[i] == '<' {
			argIdx = -1
			i++
		} else if j := i; j < len(f) && f[j] >= '1' && f[j] <= '9' {
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if j < len(f) && f[j] == '$' {
				argIdx = atoiSmall(f[i:j]) - 1
				i = j + 1
			}
		}
	flags:
		for ; i < len(f); i++ {
			switch f[i] {
			case '-':
				sp.minus = true
			case '+':
				sp.plus = true
			case ' ':
				sp.space = true
			case '0':
				sp.zero = true
			case ',':
				sp.comma = true
			case '(':
				sp.paren = true
			case '#':
				sp.alt = true
			default:
				break flags
			}
		}
		if j := i; j < len(f) && f[j] >= '1' && f[j] <= '9' {
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			sp.width = atoiSmall(f[i:j])
			i = j
		}
		if i < len(f) && f[i] == '.' {
			j := i + 1
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if j == i+1 {
				th.Raise(core.KindValue, "format: missing precision after '.' in %q", f[start:min(j+1, len(f))])
			}
			sp.prec = atoiSmall(f[i+1 : j])
			i = j
		}
		if i >= len(f) {
			th.Raise(core.KindValue, "format: incomplete format specifier %q", f[start:])
		}
		sp.conv = f[i]
		sp.text = f[start : i+1]
		if sp.minus && sp.zero {
			th.Raise(core.KindValue, "format: flags - and 0 cannot be combined in %s", sp.text)
		}
		if sp.width > 1<<20 || sp.prec > 1<<10 {
			th.Raise(core.KindValue, "format: width or precision too large in %q", sp.text)
		}
		switch sp.conv {
		case '%':
			b = appendPadded(b, "%", sp)
			continue
		case 'n':
			b = append(b, '\n')
			continue
		}
		var arg core.Value
		switch {
		case argIdx == -1:
			if prev < 0 {
				th.Raise(core.KindValue, "format: %s has no previous argument", sp.text)
			}
			arg = args[prev]
		case argIdx >= 0:
			if argIdx >= len(args) {
				th.Raise(core.KindValue, "format: missing argument for %s (%d given)", sp.text, len(args))
			}
			arg, prev = args[argIdx], argIdx
		default:
			if next >= len(args) {
				th.Raise(core.KindValue, "format: missing argument for %s (%d given)", sp.text, len(args))
			}
			arg, prev = args[next], next
			next++
		}
		b = formatOne(th, b, sp, arg)
		th.CheckGrowth(len(b))
	}
	return string(b)
}

func atoiSmall(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<24 {
			return 1 << 24
		}
	}
	return n
}

// appendSpaces appends n spaces.
func appendSpaces(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}

// appendPadded appends s padded with spaces to the spec's width (in code
// points), left-justified with the - flag.
func appendPadded(b []byte, s string, sp fmtSpec) []byte {
	n := 0
	if sp.width > 0 {
		n = sp.width - utf8.RuneCountInString(s)
	}
	if !sp.minus {
		b = appendSpaces(b, n)
	}
	b = append(b, s...)
	if sp.minus {
		b = appendSpaces(b, n)
	}
	return b
}

// upperASCII upper-cases ASCII letters in place (the %S %E %X ... forms).
func upperASCII(s []byte) []byte {
	for i, c := range s {
		if c >= 'a' && c <= 'z' {
			s[i] = c - 'a' + 'A'
		}
	}
	return s
}

func isUpperConv(c byte) bool { return c >= 'A' && c <= 'Z' }

func formatOne(th *core.Thread, b []byte, sp fmtSpec, arg core.Value) []byte {
	var scratch [80]byte
	switch sp.conv {
	case 's', 'S':
		s := "null"
		if arg != nil {
			s = th.StrOf(arg)
		}
		if sp.prec >= 0 && utf8.RuneCountInString(s) > sp.prec {
			s = s[:runeOffset(s, sp.prec, false)]
		}
		if sp.conv == 'S' {
			s = javaUpper(s)
		}
		return appendPadded(b, s, sp)
	case 'b', 'B':
		s := "true"
		if arg == nil || arg == false {
			s = "false"
		}
		if sp.prec >= 0 && len(s) > sp.prec {
			s = s[:sp.prec]
		}
		if sp.conv == 'B' {
			s = javaUpper(s)
		}
		return appendPadded(b, s, sp)
	case 'c', 'C':
		var s string
		switch x := arg.(type) {
		case nil:
			s = "null"
		case string:
			if utf8.RuneCountInString(x) != 1 {
				th.Raise(core.KindValue, "format: %s expects a character, got %s", sp.text, core.ErrorPreview(arg))
			}
			s = x
		case int64:
			if x < 0 || x > unicode.MaxRune {
				th.Raise(core.KindValue, "format: %s: code point out of range: %d", sp.text, x)
			}
			s = string(rune(x))
		default:
			th.Raise(core.KindValue, "format: %s expects a character, got %s", sp.text, core.ErrorPreview(arg))
		}
		if sp.conv == 'C' {
			s = javaUpper(s)
		}
		return appendPadded(b, s, sp)
	case 'd':
		n, ok := fmtInteger(arg)
		if !ok {
			if arg == nil {
				return appendPadded(b, "null", sp)
			}
			if _, isF := arg.(float64); isF {
				th.RaiseHint(core.KindValue, "use %.2f for floats, or round first: (Math/round x)",
					"format: %s expects an integer, got %s", sp.text, core.ErrorPreview(arg))
			}
			th.Raise(core.KindValue, "format: %s expects an integer, got %s", sp.text, core.ErrorPreview(arg))
		}
		neg := n < 0
		u := uint64(n)
		if neg {
			u = -u // two's complement: also right for MinInt64
		}
		body := strconv.AppendUint(scratch[:0], u, 10)
		if sp.comma {
			body = groupDigits(body, len(body))
		}
		return appendNumber(b, body, neg, sp)
	case 'o', 'x', 'X':
		n, ok := fmtInteger(arg)
		if !ok {
			if arg == nil {
				return appendPadded(b, "null", sp)
			}
			th.Raise(core.KindValue, "format: %s expects an integer, got %s", sp.text, core.ErrorPreview(arg))
		}
		base, prefix := 16, "0x"
		if sp.conv == 'o' {
			base, prefix = 8, "0"
		}
		var dbuf [24]byte
		digits := strconv.AppendUint(dbuf[:0], uint64(n), base) // negative: two's complement, as Java
		body := scratch[:0]
		if sp.alt {
			body = append(body, prefix...)
		}
		if sp.zero {
			for z := sp.width - len(body) - len(digits); z > 0; z-- {
				body = append(body, '0')
			}
		}
		body = append(body, digits...)
		if sp.conv == 'X' {
			body = upperASCII(body)
		}
		return appendPadded(b, string(body), sp)
	case 'e', 'E', 'f', 'g', 'G':
		var x float64
		switch v := arg.(type) {
		case float64:
			x = v
		case int64:
			x = float64(v)
		case nil:
			return appendPadded(b, "null", sp)
		default:
			th.Raise(core.KindValue, "format: %s expects a number, got %s", sp.text, core.ErrorPreview(arg))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s := "NaN"
			switch {
			case x > 0 && sp.plus:
				s = "+Infinity"
			case x > 0:
				s = "Infinity"
			case x < 0 && sp.paren:
				s = "(Infinity)"
			case x < 0:
				s = "-Infinity"
			}
			if isUpperConv(sp.conv) {
				s = javaUpper(s)
			}
			return appendPadded(b, s, sp)
		}
		neg := math.Signbit(x)
		x = math.Abs(x)
		prec := sp.prec
		if prec < 0 {
			prec = 6
		}
		var dbuf [32]byte
		ds, exp := shortestDigits(dbuf[:0], x)
		body := scratch[:0]
		switch sp.conv {
		case 'f':
			ds, exp = roundDigits(ds, exp, exp+prec)
			body = appendFixed(body, ds, exp, prec, sp.comma)
			if prec == 0 && sp.alt {
				body = append(body, '.')
			}
		case 'e', 'E':
			ds, exp = roundDigits(ds, exp, prec+1)
			body = appendSci(body, ds, exp, prec, sp.alt)
		default:
			if prec == 0 {
				prec = 1
			}
			// Java uses %f when 10^-4 <= the value rounded to prec
			// significant digits < 10^prec, and for zero.
			if e := roundedExp(ds, exp, prec); x == 0 || (e >= -3 && e <= prec) {
				p := prec - e
				if x == 0 {
					p = prec - 1
				}
				ds, exp = roundDigits(ds, exp, exp+p)
				body = appendFixed(body, ds, exp, p, sp.comma)
			} else {
				ds, exp = roundDigits(ds, exp, prec)
				body = appendSci(body, ds, exp, prec-1, false)
			}
		}
		if isUpperConv(sp.conv) {
			body = upperASCII(body)
		}
		return appendNumber(b, body, neg, sp)
	}
	th.Raise(core.KindValue, "format: unknown conversion %q in %s", string(sp.conv), sp.text)
	return b
}

// fmtInteger reads an integer argument (an integral float counts).
func fmtInteger(v core.Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && x > -9.2e18 && x < 9.2e18 {
			return int64(x), true
		}
	}
	return 0, false
}

// groupDigits inserts ',' every three digits into the first intLen
// bytes of body (the integer part).
func groupDigits(body []byte, intLen int) []byte {
	commas := (intLen - 1) / 3
	if commas <= 0 {
		return body
	}
	out := make([]byte, 0, len(body)+commas)
	for i := 0; i < intLen; i++ {
		if i > 0 && (intLen-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, body[i])
	}
	return append(out, body[intLen:]...)
}

// appendNumber appends sign, zero padding and width around body (the
// digits of d, e, f and g).
func appendNumber(b []byte, body []byte, neg bool, sp fmtSpec) []byte {
	prefix, suffix := "", ""
	switch {
	case neg && sp.paren:
		prefix, suffix = "(", ")"
	case neg:
		prefix = "-"
	case sp.plus:
		prefix = "+"
	case sp.space:
		prefix = " "
	}
	n := len(prefix) + len(body) + len(suffix)
	pad := 0
	if sp.width > n {
		pad = sp.width - n
	}
	if pad > 0 && !sp.minus && !sp.zero {
		b = appendSpaces(b, pad)
	}
	b = append(b, prefix...)
	if pad > 0 && sp.zero && !sp.minus {
		for ; pad > 0; pad-- {
			b = append(b, '0')
		}
	}
	b = append(b, body...)
	b = append(b, suffix...)
	if pad > 0 && sp.minus {
		b = appendSpaces(b, pad)
	}
	return b
}

// shortestDigits appends to buf the shortest round-trip decimal digits of
// x >= 0 and returns them with exp such that x = 0.digits × 10^exp (zero:
// no digits). Java's Formatter rounds from these digits, HALF_UP, which is
// why (format "%.2f" 2.675) is "2.68".
func shortestDigits(buf []byte, x float64) ([]byte, int) {
	if x == 0 {
		return buf[:0], 0
	}
	s := strconv.AppendFloat(buf[:0], x, 'e', -1, 64) // d.ddde±XX
	e := 0
	for e < len(s) && s[e] != 'e' {
		e++
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	n := 1
	for i := 2; i < e; i++ { // drop the '.'
		s[n] = s[i]
		n++
	}
	return s[:n], exp + 1
}

// roundedExp returns the exp of 0.ds × 10^exp rounded HALF_UP to keep
// significant digits (a carry out of the top digit adds one).
func roundedExp(ds []byte, exp, keep int) int {
	if keep < 0 || keep >= len(ds) || ds[keep] < '5' {
		return exp
	}
	for i := 0; i < keep; i++ {
		if ds[i] != '9' {
			return exp
		}
	}
	return exp + 1
}

// roundDigits rounds 0.ds × 10^exp HALF_UP to its first keep digits, in
// place. Digits past the returned slice are zeros.
func roundDigits(ds []byte, exp, keep int) ([]byte, int) {
	if keep < 0 {
		return ds[:0], exp
	}
	if keep >= len(ds) {
		return ds, exp
	}
	up := ds[keep] >= '5'
	ds = ds[:keep]
	if !up {
		return ds, exp
	}
	i := keep - 1
	for i >= 0 && ds[i] == '9' {
		ds[i] = '0'
		i--
	}
	if i >= 0 {
		ds[i]++
		return ds, exp
	}
	// carried out of the top digit: the value is 10^exp
	ds = ds[:1]
	ds[0] = '1'
	return ds, exp + 1
}

// appendFixed appends 0.ds × 10^exp with prec decimals (Java %f).
func appendFixed(b, ds []byte, exp, prec int, comma bool) []byte {
	digit := func(i int) byte {
		if i >= 0 && i < len(ds) {
			return ds[i]
		}
		return '0'
	}
	if exp <= 0 {
		b = append(b, '0')
	} else {
		for i := 0; i < exp; i++ {
			if comma && i > 0 && (exp-i)%3 == 0 {
				b = append(b, ',')
			}
			b = append(b, digit(i))
		}
	}
	if prec > 0 {
		b = append(b, '.')
		for i := exp; i < exp+prec; i++ {
			b = append(b, digit(i))
		}
	}
	return b
}

// appendSci appends 0.ds × 10^exp as d.ddd e±XX with prec decimals (Java
// %e); alt keeps the '.' when prec is 0.
func appendSci(b, ds []byte, exp, prec int, alt bool) []byte {
	digit := func(i int) byte {
		if i < len(ds) {
			return ds[i]
		}
		return '0'
	}
	e := exp - 1
	if len(ds) == 0 {
		e = 0
	}
	b = append(b, digit(0))
	if prec > 0 || alt {
		b = append(b, '.')
		for i := 1; i <= prec; i++ {
			b = append(b, digit(i))
		}
	}
	b = append(b, 'e')
	if e < 0 {
		b = append(b, '-')
		e = -e
	} else {
		b = append(b, '+')
	}
	if e < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(e), 10)
}
