package agent

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// minSecretLen is the shortest firewalled string the scrubber removes
// where it occurs inside other text; shorter ones would match ordinary
// words, so they are hidden only where they stand alone (a printed
// string, keyword or map key, or a quoted string in a message).
const minSecretLen = 6

// minSecretDigits is the fewest digits a firewalled integer needs to be
// hidden in model-bound text; shorter numbers collide with the counts and
// positions every message holds.
const minSecretDigits = 6

// maxSecretPrefix bounds how far back from a cut ("...") the scrubber
// looks for the start of a cut secret.
const maxSecretPrefix = 16 << 10

// secrets is the firewall's registry of one agent tree (docs/firewall.md).
// Every string, keyword name and map key found under a "_" key anywhere in
// the tree (inputs, tool results, sub-agent returns and failures, memory)
// is recorded; the printers that build model-bound text consult it for
// every string they print (redact), and every composed text passes scrub
// before it is cut or sent. It is safe for concurrent use: sub-agents and
// pmap branches record into their caller's registry.
type secrets struct {
	mu  sync.Mutex
	set map[string]struct{}
	// fields holds the keys under "_" keys shaped like field names (see
	// isFieldName): hidden where printed as values, never as keys.
	fields map[string]struct{}
	// nums holds the decimal forms of firewalled integers of at least
	// minSecretDigits digits.
	nums map[string]struct{}
	// The indexes below grow with the sets (sorted lazily, on use).
	// strs indexes every recorded string of at least minSecretLen bytes
	// (and its quoted forms); ints the recorded integers.
	strs, ints *prefixIndex
	// escaped indexes unescape(x) of every recorded string x that a
	// printer or encoder may escape (escapable): found in the unescaped
	// form of a text, under any number of levels of escaping.
	escaped *prefixIndex
	// starts holds the first 1 to minSecretLen-1 bytes of every secret
	// and firewalled integer: what a cut can leave of one.
	starts map[string]struct{}
	// walked holds the collections already collected (by identity, with
	// their "under" flag): memory is collected after every turn.
	walked map[walkKey]struct{}
	// hookFn is the method value redact, which hook returns: made once,
	// not at each call (a run's printers ask for it several times).
	hookOnce sync.Once
	hookFn   func(string, bool) string
}

type walkKey struct {
	v     any
	under bool
}

// collect records the strings under firewalled keys of v (plain Go data or
// interpreter values); under is true when v itself is firewalled.
func (s *secrets) collect(v any, under bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collectLocked(v, under)
}

func (s *secrets) collectLocked(v any, under bool) {
	if m, ok := lisp.AsMap(v); ok { // a host record read in place, as its view
		v = m
	}
	switch x := v.(type) {
	case string:
		if under {
			s.add(x)
		}
	case int64:
		if under {
			s.addNum(x)
		}
	case int:
		if under {
			s.addNum(int64(x))
		}
	case *lisp.Keyword:
		if under {
			s.add(x.Name)
		}
	case map[string]any:
		for k, e := range x {
			fw := under || signature.IsFirewalled(k)
			if under {
				s.addKey(k)
			}
			s.collectLocked(e, fw)
		}
	case []any:
		for _, e := range x {
			s.collectLocked(e, under)
		}
	case *lisp.WireResult:
		// a tool result decoded from its bytes: only a firewalled key
		// in it, or a firewalled key above it, makes secrets
		if under || x.Firewalled() {
			s.collectLocked(x.Plain(), under)
		}
	case *lisp.Map:
		if (!under && lisp.IsHostData(x)) || !s.firstWalk(x, under) {
			// host data (inputs, tool results) was collected in its Go
			// form when it arrived, by the same rules
			return
		}
		x.Each(func(k, e lisp.Value) bool {
			if under {
				switch k := k.(type) {
				case string:
					s.addKey(k)
				case *lisp.Keyword:
					s.addKey(k.Name)
				default:
					s.collectLocked(k, true)
				}
			}
			s.collectLocked(e, under || isFirewalledKey(k))
			return true
		})
	case *lisp.Vector:
		if (!under && lisp.IsHostData(x)) || !s.firstWalk(x, under) {
			return
		}
		for _, e := range x.Items() {
			s.collectLocked(e, under)
		}
	case *lisp.Set:
		for _, e := range x.Items() {
			s.collectLocked(e, under)
		}
	case *lisp.LazySeq:
		s.collectLocked(lisp.ToGo(x), under)
	}
}

// firstWalk reports whether the interpreter collection v (immutable) is
// collected for the first time with this under flag, and marks it.
func (s *secrets) firstWalk(v any, under bool) bool {
	k := walkKey{v, under}
	if _, ok := s.walked[k]; ok {
		return false
	}
	if s.walked == nil {
		s.walked = map[walkKey]struct{}{}
	}
	s.walked[k] = struct{}{}
	return true
}

// isFieldName reports whether a map key looks like a record's field name
// (a letter or "_", then letters, digits, "_" or "-", at most 32 bytes).
// Such keys under a "_" key are structure ({:_raw {:id 1 :name "x"}}), not
// data: recording them would hide every public field of the same name.
// Other keys (e-mail addresses, numbers, phrases) are data and recorded.
func isFieldName(k string) bool {
	if k == "" || len(k) > 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func isFirewalledKey(k lisp.Value) bool {
	switch x := k.(type) {
	case string:
		return signature.IsFirewalled(x)
	case *lisp.Keyword:
		return signature.IsFirewalled(x.Name)
	}
	return false
}

// addKey records a map key found under a "_" key.
func (s *secrets) addKey(k string) {
	if !isFieldName(k) {
		s.add(k)
		return
	}
	if s.fields == nil {
		s.fields = map[string]struct{}{}
	}
	s.fields[k] = struct{}{}
}

func (s *secrets) add(x string) {
	if x == "" {
		return
	}
	if s.set == nil {
		s.set = map[string]struct{}{}
	}
	if _, ok := s.set[x]; ok {
		return
	}
	s.set[x] = struct{}{}
	s.index()
	s.addStarts(x)
	s.strs.add(x)
	if escapable(x) {
		// the forms printers give it: PTC-Lisp/Go quoting and JSON
		s.strs.add(strings.Trim(lisp.PrStr(x), `"`))
		q := strconv.Quote(x)
		s.strs.add(q[1 : len(q)-1])
		// and any escaping of any depth (pr-str of pr-str, JSON in an
		// error message ...), found by unescaping the text
		u := unescape(x, nil)
		s.escaped.add(u)
		s.addStarts(u)
	}
}

// index makes the indexes on first use, the three in one allocation.
func (s *secrets) index() {
	if s.strs == nil {
		x := new([3]prefixIndex)
		s.strs, s.ints, s.escaped, s.starts = &x[0], &x[1], &x[2], map[string]struct{}{}
	}
}

func (s *secrets) addStarts(k string) {
	for n := 1; n < minSecretLen && n <= len(k); n++ {
		s.starts[k[:n]] = struct{}{}
	}
}

func (s *secrets) addNum(n int64) {
	d := strconv.FormatInt(n, 10)
	if len(strings.TrimPrefix(d, "-")) < minSecretDigits {
		return
	}
	if s.nums == nil {
		s.nums = map[string]struct{}{}
	}
	d = strings.TrimPrefix(d, "-")
	if _, ok := s.nums[d]; !ok {
		s.nums[d] = struct{}{}
		// a firewalled integer cut short is caught like a string; whole
		// ones only as whole runs of digits (see scrub)
		s.index()
		s.addStarts(d)
		s.ints.add(d)
	}
}

// has reports whether x is a recorded secret; as a value (key false) a
// field-name key recorded under a "_" key counts too.
func (s *secrets) has(x string, key bool) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[x]; ok {
		return true
	}
	_, ok := s.fields[x]
	return ok && !key
}

// redact is the printers' Scrub hook: a recorded secret, whatever its
// length, becomes <Firewalled>; any other string is scrubbed. key is true
// for a map key or a name (memory names are keys).
func (s *secrets) redact(x string, key bool) string {
	if s.has(x, key) {
		return firewalledText
	}
	return s.scrub(x)
}

// redactData returns a copy of plain data v for rendering into a prompt:
// strings equal to a recorded secret become <Firewalled>, map keys too.
func (s *secrets) redactData(v any) any {
	switch x := v.(type) {
	case string:
		if s.has(x, false) {
			return firewalledText
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s.has(k, true) {
				k = firewalledText
			}
			out[k] = s.redactData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.redactData(e)
		}
		return out
	}
	return v
}

// hook returns the Scrub hook for lisp printers.
func (s *secrets) hook() func(string, bool) string {
	if s == nil {
		return nil
	}
	s.hookOnce.Do(func() { s.hookFn = s.redact })
	return s.hookFn
}

// quoted matches a double-quoted string literal in a message, keyword a
// printed keyword, digits a whole run of digits.
var (
	quoted  = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
	keyword = regexp.MustCompile(`:[^\s"(){}\[\],;:]+`)
	digits  = regexp.MustCompile(`[0-9]+`)
)

// scrub hides every recorded secret in text: occurrences of secrets of at
// least minSecretLen bytes (raw, as printed in quotes, and as JSON), the
// start of such a secret cut short by "...", quoted strings and keywords
// equal to a secret of any length (or a quoted start of one), and whole runs of digits equal to a firewalled
// integer of at least minSecretDigits digits. Call it on every model-bound text before cutting.
func (s *secrets) scrub(text string) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.Lock()
	if len(s.set) == 0 && len(s.nums) == 0 {
		s.mu.Unlock()
		return text
	}
	s.strs.finish()
	s.ints.finish()
	s.escaped.finish()
	strs, set := s.strs, s.set
	// escaped forms first, then cut starts, then whole secrets: a
	// shorter secret inside a longer one must not hide the longer one's
	// start from the later passes
	text = escapedSecrets(text, s.escaped, set, s.starts)
	text = cutSecrets(text, strs, s.ints, s.starts)
	text = replaceSecrets(text, strs)
	text = quoted.ReplaceAllStringFunc(text, func(q string) string {
		inner := q[1 : len(q)-1]
		if _, ok := set[inner]; ok || inner == firewalledText || strs.isPrefix(inner) {
			return firewalledText
		}
		if u, err := strconv.Unquote(q); err == nil {
			if _, ok := set[u]; ok {
				return firewalledText
			}
		}
		return q
	})
	text = keyword.ReplaceAllStringFunc(text, func(k string) string {
		if _, ok := set[k[1:]]; ok {
			return firewalledText
		}
		return k
	})
	if len(s.nums) > 0 {
		nums := s.nums
		text = digits.ReplaceAllStringFunc(text, func(d string) string {
			if _, ok := nums[d]; ok {
				return firewalledText
			}
			return d
		})
	}
	s.mu.Unlock()
	return text
}

// prefixIndex finds recorded strings of at least minSecretLen bytes in
// text: by their first minSecretLen bytes, then by exact match over the
// few lengths of that group (occurrences) or by binary search (prefixes).
type prefixIndex struct {
	groups map[string]*prefixGroup
	exact  map[string]struct{}
	dirty  []*prefixGroup // groups added to since the last finish
	// first marks the first bytes of the indexed strings (one bit a byte
	// value): most offsets of a text start none, and are passed over
	// without a map lookup
	first [4]uint64
	// dirty0 holds dirty while one group is dirty (a run records a
	// secret or two): no allocation for it
	dirty0 [1]*prefixGroup
}

// starts reports whether an indexed string starts with the byte c.
func (x *prefixIndex) starts(c byte) bool { return x.first[c>>6]&(1<<(c&63)) != 0 }

type prefixGroup struct {
	lens   []int    // the distinct lengths, longest first
	sorted []string // the strings, sorted (once finish ran)
	dirty  bool     // in prefixIndex.dirty
	// lens0 and sorted0 hold lens and sorted while the group holds one
	// string, as most do: the group is then one allocation
	lens0   [1]int
	sorted0 [1]string
}

// add indexes k; the maps are made by the first add (most of a run's
// indexes stay empty).
func (x *prefixIndex) add(k string) {
	if len(k) < minSecretLen {
		return
	}
	if _, ok := x.exact[k]; ok {
		return
	}
	if x.exact == nil {
		x.exact, x.groups = map[string]struct{}{}, map[string]*prefixGroup{}
		x.dirty = x.dirty0[:0]
	}
	x.exact[k] = struct{}{}
	x.first[k[0]>>6] |= 1 << (k[0] & 63)
	g := x.groups[k[:minSecretLen]]
	if g == nil {
		g = &prefixGroup{}
		g.lens, g.sorted = g.lens0[:0], g.sorted0[:0]
		x.groups[k[:minSecretLen]] = g
	}
	if !g.dirty {
		g.dirty = true
		x.dirty = append(x.dirty, g)
	}
	g.sorted = append(g.sorted, k)
	if !slices.Contains(g.lens, len(k)) {
		g.lens = append(g.lens, len(k))
	}
}

// finish sorts the groups added to since the last call.
func (x *prefixIndex) finish() {
	for _, g := range x.dirty {
		slices.Sort(g.sorted)
		slices.SortFunc(g.lens, func(a, b int) int { return b - a })
		g.dirty = false
	}
	x.dirty = x.dirty[:0]
}

// longestAt returns the length of the longest indexed string that text
// has at offset i (0: none).
func (x *prefixIndex) longestAt(text string, i int) int {
	if x == nil || i+minSecretLen > len(text) || !x.starts(text[i]) {
		return 0
	}
	g := x.groups[text[i:i+minSecretLen]]
	if g == nil {
		return 0
	}
	for _, n := range g.lens {
		if i+n <= len(text) {
			if _, ok := x.exact[text[i:i+n]]; ok {
				return n
			}
		}
	}
	return 0
}

// isPrefix reports whether p (at least minSecretLen bytes) starts an
// indexed string.
func (x *prefixIndex) isPrefix(p string) bool {
	if x == nil || len(p) < minSecretLen {
		return false
	}
	g := x.groups[p[:minSecretLen]]
	if g == nil {
		return false
	}
	i, _ := slices.BinarySearch(g.sorted, p)
	return i < len(g.sorted) && strings.HasPrefix(g.sorted[i], p)
}

// escapable reports whether a printer or an encoder may write s other
// than as its raw bytes: it holds a control character, a quote, a
// backslash, a byte of a multi-byte character (or an invalid one), or a
// character JSON encoders escape for HTML.
func escapable(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c >= 0x7f, c == '<', c == '>', c == '&':
			return true
		}
	}
	return false
}

// unescape decodes every backslash escape in text as if each run of
// backslashes were one: `\n`, `\\n` and `\\\\n` all become a newline,
// `\"` and `\\\"` a quote, `\u00e9` (JSON, Go), `\xe9` and `\U0001f600`
// (Go) the character or byte, any other escaped character itself, and a
// run of backslashes at the end nothing. Escaping (PTC-Lisp's pr-str, Go's
// strconv.Quote, JSON) writes every character as itself or as a run of
// backslashes and one of those forms, so a string escaped any number of
// times unescapes to what the string itself unescapes to. When at is not
// nil, unescape appends to it, for every byte of the result, the offset in
// text of the escape or byte it came from, and then len(text).
func unescape(text string, at *[]int) string {
	if at != nil {
		*at = slices.Grow(*at, len(text)+1)
	}
	i := strings.IndexByte(text, '\\')
	if i < 0 {
		if at != nil {
			for j := 0; j <= len(text); j++ {
				*at = append(*at, j)
			}
		}
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	mark := func(from, n int) {
		if at != nil {
			for range n {
				*at = append(*at, from)
			}
		}
	}
	b.WriteString(text[:i])
	if at != nil {
		for j := 0; j < i; j++ {
			*at = append(*at, j)
		}
	}
	for i < len(text) {
		c := text[i]
		if c != '\\' {
			b.WriteByte(c)
			mark(i, 1)
			i++
			continue
		}
		start := i
		for i < len(text) && text[i] == '\\' {
			i++
		}
		if i == len(text) {
			break
		}
		n := b.Len()
		switch c := text[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'a':
			b.WriteByte('\a')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			if v, ok := hexAt(text, i+1, 2); ok {
				b.WriteByte(byte(v))
				i += 2
			} else {
				b.WriteByte(c)
			}
		case 'u', 'U':
			digits := 4
			if c == 'U' {
				digits = 8
			}
			v, ok := hexAt(text, i+1, digits)
			if !ok {
				b.WriteByte(c)
				break
			}
			i += digits
			r := rune(v)
			if utf16.IsSurrogate(r) {
				// JSON writes a character beyond the BMP as a pair:
				// \ud83d\ude00, each escaped alike
				j := i + 1
				for j < len(text) && text[j] == '\\' {
					j++
				}
				if j > i+1 && j < len(text) && text[j] == 'u' {
					if lo, ok := hexAt(text, j+1, 4); ok {
						if p := utf16.DecodeRune(r, rune(lo)); p != utf8.RuneError {
							r, i = p, j+4
						}
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
		i++
		mark(start, b.Len()-n)
	}
	if at != nil {
		*at = append(*at, len(text))
	}
	return b.String()
}

// escapedCutStart finds the start of a secret cut short at end in
// unescaped text: at least minSecretLen bytes of an indexed one, or fewer
// right after a quote; -1 when there is none.
func escapedCutStart(u string, lo, end int, escaped *prefixIndex, starts map[string]struct{}) int {
	if j := cutStart(u, lo, end, escaped); j >= 0 {
		return j
	}
	from := max(lo, end-minSecretLen)
	q := strings.LastIndexByte(u[from:end], '"')
	if q < 0 || from+q+1 == end {
		return -1
	}
	if _, ok := starts[u[from+q+1:end]]; ok {
		return from + q + 1
	}
	return -1
}

// maxEscape is the longest escape unescape decodes, after its
// backslashes (`U0001f600`, a surrogate pair `ud83d\\ude00` counted from
// its second part).
const maxEscape = 9

// hexAt reads n hex digits of text at i.
func hexAt(text string, i, n int) (uint64, bool) {
	if i+n > len(text) {
		return 0, false
	}
	v, err := strconv.ParseUint(text[i:i+n], 16, 32)
	return v, err == nil
}

// escapedSecrets replaces the escaped forms of recorded secrets in text:
// every occurrence of an indexed one, a start cut short by "..." (see
// cutSecrets), and a secret shorter than minSecretLen quoted alone (as in
// `\"US\"`), found in the unescaped text and replaced in text over the
// bytes they came from. Text without a backslash holds no escaped form.
func escapedSecrets(text string, escaped *prefixIndex, set, starts map[string]struct{}) string {
	if strings.IndexByte(text, '\\') < 0 {
		return text
	}
	var at []int
	u := unescape(text, &at)
	type span struct{ from, to int } // in u
	// cuts first: a shorter secret inside a cut one must not hide the
	// start of the cut one
	var cuts []span
	lo := 0 // where the next cut may start: after the previous mark
	for i := 0; i < len(u); i++ {
		if !strings.HasPrefix(u[i:], "...") && !strings.HasPrefix(u[i:], "…") {
			continue
		}
		j := escapedCutStart(u, lo, i, escaped, starts)
		// a cut inside an escape (`\\u00...`) left its start, which
		// unescapes to other characters: the secret's visible start
		// ends before it
		for e := i - 1; j < 0 && e > lo && e >= i-maxEscape; e-- {
			if text[at[e]] == '\\' {
				j = escapedCutStart(u, lo, e, escaped, starts)
			}
		}
		if j >= 0 {
			cuts = append(cuts, span{j, i})
		}
		i += 2 // "…" is three bytes too
		lo = i + 1
	}
	var spans []span
	for i := 0; i < len(u); {
		if len(cuts) > 0 && i >= cuts[0].from {
			i = max(i, cuts[0].to)
			spans = append(spans, cuts[0])
			cuts = cuts[1:]
			continue
		}
		n := escaped.longestAt(u, i)
		if n == 0 && u[i] == '"' && escaped.longestAt(u, i+1) == 0 {
			// a short secret quoted alone (unless a long one starts
			// right after the quote)
			if k := strings.IndexByte(u[i+1:min(len(u), i+1+minSecretLen)], '"'); k > 0 {
				if _, ok := set[u[i+1:i+1+k]]; ok {
					i++
					n = k
				}
			}
		}
		if n == 0 {
			i++
			continue
		}
		sp := span{i, i + n}
		// a match running into a cut takes the cut along
		for len(cuts) > 0 && cuts[0].from < sp.to {
			sp.to = max(sp.to, cuts[0].to)
			cuts = cuts[1:]
		}
		spans = append(spans, sp)
		i = sp.to
	}
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		from, to := at[sp.from], at[sp.to]
		if from < last {
			from = last
		}
		b.WriteString(text[last:from])
		b.WriteString(firewalledText)
		last = max(last, to)
	}
	b.WriteString(text[last:])
	return b.String()
}

// replaceSecrets replaces every occurrence of an indexed secret in text.
func replaceSecrets(text string, strs *prefixIndex) string {
	if strs == nil || len(strs.exact) == 0 || len(text) < minSecretLen {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; i+minSecretLen <= len(text); {
		n := strs.longestAt(text, i)
		if n == 0 {
			i++
			continue
		}
		b.WriteString(text[last:i])
		b.WriteString(firewalledText)
		i += n
		last = i
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// cutSecrets replaces the visible start of a secret that a printer cut
// short (text ending in "..." or "…") with <Firewalled>: at least
// minSecretLen bytes of one, or fewer right after a quote, a keyword's
// colon or as a run of digits.
func cutSecrets(text string, strs, ints *prefixIndex, starts map[string]struct{}) string {
	if len(starts) == 0 {
		return text
	}
	var b strings.Builder
	// last is the end of the text copied so far; lo where the next cut
	// may start (after the previous mark: each byte is looked at once)
	last, lo := 0, 0
	for i := 0; i < len(text); i++ {
		var mark int
		switch {
		case strings.HasPrefix(text[i:], "..."):
			mark = 3
		case strings.HasPrefix(text[i:], "…"):
			mark = len("…")
		default:
			continue
		}
		start := cutStart(text, lo, i, strs)
		if start < 0 {
			start = cutStart(text, lo, i, ints)
		}
		if start < 0 {
			start = shortCutStart(text, lo, i, starts)
		}
		if start >= 0 {
			b.WriteString(text[last:start])
			b.WriteString(firewalledText)
			last = i
		}
		i += mark - 1
		lo = i + 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// shortCutStart finds a cut start of fewer than minSecretLen bytes ending
// at end: after a quote or a colon, or a whole run of digits; -1 when there
// is none.
func shortCutStart(text string, lo, end int, starts map[string]struct{}) int {
	j := end
	for j > lo && end-j < minSecretLen && !strings.ContainsRune(" \t\n\"():[]{},;", rune(text[j-1])) {
		j--
	}
	tok := text[j:end]
	if tok == "" || end-j >= minSecretLen {
		return -1
	}
	if _, ok := starts[tok]; !ok {
		return -1
	}
	if j > lo && (text[j-1] == '"' || text[j-1] == ':') {
		return j - 1
	}
	if strings.Trim(tok, "0123456789") == "" && (j == lo || text[j-1] < '0' || text[j-1] > '9') {
		return j
	}
	return -1
}

// cutStart finds the earliest start j in [lo, end) such that text[j:end]
// is at least minSecretLen bytes and the start of an indexed string; -1
// when there is none.
func cutStart(text string, lo, end int, x *prefixIndex) int {
	if x == nil || len(x.exact) == 0 {
		return -1
	}
	for j := max(lo, end-maxSecretPrefix); j+minSecretLen <= end; j++ {
		if x.starts(text[j]) && x.isPrefix(text[j:end]) {
			return j
		}
	}
	return -1
}
