package builtins

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerInterop registers the host interop builtins: (java.util.Date.) and (java.util.Date.
// ms-secs-or-iso), (.getTime d), (System/currentTimeMillis),
// (LocalDate/parse s), .isBefore / .isAfter, and the string methods
// .indexOf .lastIndexOf (-1 when absent), .contains .startsWith .endsWith
// .toUpperCase .toLowerCase .trim .length .substring .charAt .isEmpty
// .split (a regex, as Java) .replace (literal) .toString .equals (.indexOf,
// .lastIndexOf and .contains also work on vectors, as java.util.List).
//
// There is no date type: a date is its ISO-8601 text (UTC, millisecond
// precision for java.util.Date, "YYYY-MM-DD" for LocalDate/parse), so it
// prints as that string and round-trips through tools and memory; .getTime
// and .isBefore parse it back.
func registerInterop(r *registry) {
	r.Add("java.util.Date.", 0, 1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 0 {
			return isoMillis(time.Now())
		}
		switch x := a[0].(type) {
		case int64:
			// below 10^12 the number counts seconds, else milliseconds
			if x > -1_000_000_000_000 && x < 1_000_000_000_000 {
				return isoMillis(time.Unix(x, 0))
			}
			return isoMillis(time.UnixMilli(x))
		case float64:
			return isoMillis(time.UnixMilli(int64(x)))
		case string:
			t, ok := parseInstant(x)
			if !ok {
				th.Raise(core.KindValue, "java.util.Date.: cannot parse %s; expected ISO-8601 (2024-01-31 or 2024-01-31T10:00:00Z), RFC 2822 or a timestamp", core.ErrorPreview(x))
			}
			return isoMillis(t)
		}
		th.TypeError("java.util.Date.", "a timestamp or date string", a[0], 1)
		return nil
	}).doc("a date of the current time or of epoch milliseconds")
	r.alias("Date.", "java.util.Date.")
	r.Add(".getTime", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return core.Int(dateArg(th, ".getTime", a[0], 1).UnixMilli())
	}).doc("the epoch milliseconds of a date")
	r.Add(".isBefore", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return dateArg(th, ".isBefore", a[0], 1).Before(dateArg(th, ".isBefore", a[1], 2))
	}).doc("true when the first date is before the second")
	r.Add(".isAfter", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return dateArg(th, ".isAfter", a[0], 1).After(dateArg(th, ".isAfter", a[1], 2))
	}).doc("true when the first date is after the second")
	r.Add("Boolean/valueOf", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch x := a[0].(type) {
		case nil:
			return false
		case bool:
			return x
		}
		return strings.EqualFold(strArg(th, "Boolean/valueOf", a[0], 1), "true")
	}).doc("a boolean itself, or true when the string is \"true\" in any case")
	r.Add("Long/toString", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		n := th.Index("Long/toString", a[0], 1)
		radix := int64(10)
		if len(a) == 2 {
			// Java: a radix outside 2..36 is 10
			if r := th.Index("Long/toString", a[1], 2); r >= 2 && r <= 36 {
				radix = r
			}
		}
		return strconv.FormatInt(n, int(radix))
	}).doc("the digits of an integer, in a radix when given")
	r.alias("Integer/toString", "Long/toString")
	r.Add(".equalsIgnoreCase", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, ".equalsIgnoreCase", a[0], 1)
		if a[1] == nil {
			return false
		}
		return strings.EqualFold(s, strArg(th, ".equalsIgnoreCase", a[1], 2))
	}).doc("Java's String.equalsIgnoreCase")
	r.Add(".toEpochDay", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return core.Int(localDateArg(th, ".toEpochDay", a[0]).Unix() / 86400)
	}).doc("the days since 1970-01-01 of a yyyy-mm-dd date")
	r.Add(".plusDays", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return localDatePlus(th, ".plusDays", a, 1)
	}).doc("a yyyy-mm-dd date n days later")
	r.Add(".minusDays", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return localDatePlus(th, ".minusDays", a, -1)
	}).doc("a yyyy-mm-dd date n days earlier")
	r.Add("System/currentTimeMillis", 0, 0, func(th *core.Thread, a []core.Value) core.Value { return core.Int(time.Now().UnixMilli()) }).
		doc("the current time in epoch milliseconds")
	r.Add("LocalDate/parse", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, "LocalDate/parse", a[0], 1)
		if _, ok := parseInstant(s); ok && len(s) > len(time.DateOnly) {
			th.RaiseHint(core.KindValue, "take its date part: (LocalDate/parse (subs s 0 10))",
				"LocalDate/parse: %s is a date-time, not a date (expected YYYY-MM-DD)", core.ErrorPreview(s))
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			th.Raise(core.KindValue, "LocalDate/parse: invalid ISO-8601 date %s (expected YYYY-MM-DD)", core.ErrorPreview(s))
		}
		return t.Format(time.DateOnly)
	}).doc("a date from an ISO yyyy-mm-dd string")
	r.Add(".indexOf", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		if v, ok := a[0].(*core.Vector); ok && len(a) == 2 { // java.util.List.indexOf
			for i, x := range v.Items() {
				th.Tick()
				if core.Equal(x, a[1]) {
					return core.Int(int64(i))
				}
			}
			return core.Int(-1)
		}
		return indexOf(th, ".indexOf", a, false, true)
	}).doc("Java's indexOf of a string or vector (-1 when absent)")
	r.Add(".lastIndexOf", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		if v, ok := a[0].(*core.Vector); ok && len(a) == 2 {
			items := v.Items()
			for i := len(items) - 1; i >= 0; i-- {
				th.Tick()
				if core.Equal(items[i], a[1]) {
					return core.Int(int64(i))
				}
			}
			return core.Int(-1)
		}
		return indexOf(th, ".lastIndexOf", a, true, true)
	}).doc("Java's lastIndexOf of a string or vector (-1 when absent)")
	r.Add(".contains", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		switch c := a[0].(type) {
		case *core.Vector: // java.util.Collection.contains
			for _, x := range c.Items() {
				th.Tick()
				if core.Equal(x, a[1]) {
					return true
				}
			}
			return false
		case *core.Set:
			return c.Has(a[1])
		}
		return strings.Contains(strArg(th, ".contains", a[0], 1), strArg(th, ".contains", a[1], 2))
	}).doc("Java's contains of a string or vector")
	r.Add(".startsWith", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		s, prefix := strArg(th, ".startsWith", a[0], 1), strArg(th, ".startsWith", a[1], 2)
		if len(a) == 3 {
			// Java's startsWith(prefix, offset): an offset outside the
			// string is false
			off := th.Index(".startsWith", a[2], 3)
			n, ascii := runeLen(s)
			if off < 0 || off > int64(n) {
				return false
			}
			s = s[runeOffset(s, int(off), ascii):]
		}
		return strings.HasPrefix(s, prefix)
	}).doc("Java's String.startsWith, from an offset when given")
	r.Add(".endsWith", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return strings.HasSuffix(strArg(th, ".endsWith", a[0], 1), strArg(th, ".endsWith", a[1], 2))
	}).doc("Java's String.endsWith")
	r.Add(".toUpperCase", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeString(javaUpper(strArg(th, ".toUpperCase", a[0], 1)))
	}).doc("Java's String.toUpperCase")
	r.Add(".toLowerCase", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeString(strings.ToLower(strArg(th, ".toLowerCase", a[0], 1)))
	}).doc("Java's String.toLowerCase")
	r.Add(".trim", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		// Java's String.trim strips chars <= ' '.
		return strings.TrimFunc(strArg(th, ".trim", a[0], 1), func(r rune) bool { return r <= ' ' })
	}).doc("Java's String.trim")
	r.Add(".length", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return core.Int(int64(utf8.RuneCountInString(strArg(th, ".length", a[0], 1))))
	}).doc("the length of a string in characters")
	r.Add(".toString", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			th.TypeError(".toString", "a value", nil, 1)
		}
		return th.MakeString(th.StrOf(a[0]))
	}).doc("the printed form of a value")
	r.Add(".equals", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return core.Equal(a[0], a[1]) }).
		doc("Java's equals")
	r.Add(".isEmpty", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Vector, *core.Map, core.HostMap, *core.Set:
			return isEmpty(th, ".isEmpty", a[0])
		}
		return strArg(th, ".isEmpty", a[0], 1) == ""
	}).doc("true for an empty string")
	r.Add(".charAt", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, ".charAt", a[0], 1)
		i := th.Index(".charAt", a[1], 2)
		rn, ascii := runeLen(s)
		n := int64(rn)
		if i < 0 || i >= n {
			th.Raise(core.KindValue, ".charAt: index %d out of bounds for a string of length %d", i, n)
		}
		off := runeOffset(s, int(i), ascii)
		_, w := utf8.DecodeRuneInString(s[off:])
		return s[off : off+w]
	}).doc("the character at an index, as a string")
	// Java's String.split takes a regex (and drops trailing empty strings).
	r.Add(".split", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, ".split", a[0], 1)
		re := regexArg(th, ".split", a[1], 2)
		limit := 0
		if len(a) == 3 {
			limit = int(th.Index(".split", a[2], 3))
		}
		return sliceVec(SplitRegex(th, s, re, limit))
	}).doc("Java's String.split by a regex")
	// Java's String.replace is literal and replaces every occurrence.
	r.Add(".replace", 3, 3, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, ".replace", a[0], 1)
		return replaceStr(th, ".replace", []core.Value{s, strArg(th, ".replace", a[1], 2), strArg(th, ".replace", a[2], 3)}, -1)
	}).doc("Java's String.replace: every literal occurrence replaced")
	r.Add(".substring", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		s := strArg(th, ".substring", a[0], 1)
		rn, ascii := runeLen(s)
		n := int64(rn)
		start, end := th.Index(".substring", a[1], 2), n
		if len(a) == 3 {
			end = th.Index(".substring", a[2], 3)
		}
		if start < 0 || end > n || start > end {
			th.Raise(core.KindValue, ".substring: range %d..%d out of bounds for a string of length %d", start, end, n)
		}
		b0 := runeOffset(s, int(start), ascii)
		return s[b0 : b0+runeOffset(s[b0:], int(end-start), ascii)]
	}).doc("Java's String.substring")
}

// isoMillis renders t as UTC ISO-8601 with milliseconds.
func isoMillis(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// instantLayouts are the accepted date texts, tried in order.
var instantLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	time.DateOnly,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05",
}

// parseInstant reads an ISO-8601 (offset optional: UTC), date-only or RFC
// 2822 text.
func parseInstant(s string) (time.Time, bool) {
	for _, l := range instantLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// dateArg reads a date: its ISO text, or a millisecond timestamp.
func dateArg(th *core.Thread, fn string, v core.Value, argN int) time.Time {
	switch x := v.(type) {
	case string:
		if t, ok := parseInstant(x); ok {
			return t
		}
		th.Raise(core.KindValue, "%s: cannot read %s as a date", fn, core.ErrorPreview(x))
	case int64:
		return time.UnixMilli(x).UTC()
	}
	th.TypeError(fn, "a date", v, argN)
	return time.Time{}
}

// localDateArg reads a LocalDate: its yyyy-mm-dd text.
func localDateArg(th *core.Thread, fn string, v core.Value) time.Time {
	s := strArg(th, fn, v, 1)
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		th.Raise(core.KindValue, "%s: invalid ISO-8601 date %s (expected YYYY-MM-DD)", fn, core.ErrorPreview(s))
	}
	return t
}

// localDatePlus is .plusDays (sign 1) and .minusDays (sign -1). The day
// count converts as Java's interop does: a float truncates, NaN is 0.
func localDatePlus(th *core.Thread, fn string, a []core.Value, sign int64) core.Value {
	t := localDateArg(th, fn, a[0])
	var n int64
	switch x := a[1].(type) {
	case int64:
		n = x
	case float64:
		switch {
		case x != x:
		case math.Abs(x) >= 1e7*366:
			th.Raise(core.KindValue, "%s: day count out of range: %s", fn, core.FormatFloat(x, 0))
		default:
			n = int64(x)
		}
	default:
		th.TypeError(fn, "number", a[1], 2)
	}
	if n > 1e7*366 || n < -1e7*366 {
		th.Raise(core.KindValue, "%s: day count out of range: %d", fn, n)
	}
	return t.AddDate(0, 0, int(sign*n)).Format(time.DateOnly)
}
