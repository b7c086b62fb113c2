package agent

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

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
	// nums holds the decimal forms of firewalled integers of at least
	// minSecretDigits digits.
	nums map[string]struct{}
	// long holds the recorded strings of at least minSecretLen bytes (and
	// their printed forms), longest first, once built; nil when stale.
	long     []string
	r        *strings.Replacer
	byPrefix map[string][]string // first minSecretLen bytes → long secrets
	// starts holds the first 1 to minSecretLen-1 bytes of every secret
	// and firewalled integer: what a cut can leave of one.
	starts map[string]struct{}
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
				s.add(k)
			}
			s.collectLocked(e, fw)
		}
	case []any:
		for _, e := range x {
			s.collectLocked(e, under)
		}
	case *lisp.Map:
		x.Each(func(k, e lisp.Value) bool {
			if under {
				s.collectLocked(k, true)
			}
			s.collectLocked(e, under || isFirewalledKey(k))
			return true
		})
	case *lisp.Vector:
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

func isFirewalledKey(k lisp.Value) bool {
	switch x := k.(type) {
	case string:
		return signature.IsFirewalled(x)
	case *lisp.Keyword:
		return signature.IsFirewalled(x.Name)
	}
	return false
}

func (s *secrets) add(x string) {
	if x == "" {
		return
	}
	if s.set == nil {
		s.set = map[string]struct{}{}
	}
	if _, ok := s.set[x]; !ok {
		s.set[x] = struct{}{}
		s.long, s.r, s.byPrefix, s.starts = nil, nil, nil, nil
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
	s.nums[strings.TrimPrefix(d, "-")] = struct{}{}
	s.long, s.r, s.byPrefix, s.starts = nil, nil, nil, nil
}

// has reports whether x is a recorded secret.
func (s *secrets) has(x string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[x]
	return ok
}

// redact is the printers' Scrub hook: a recorded secret, whatever its
// length, becomes <Firewalled>; any other string is scrubbed.
func (s *secrets) redact(x string) string {
	if s.has(x) {
		return firewalledText
	}
	return s.scrub(x)
}

// redactData returns a copy of plain data v for rendering into a prompt:
// strings equal to a recorded secret become <Firewalled>, map keys too.
func (s *secrets) redactData(v any) any {
	switch x := v.(type) {
	case string:
		if s.has(x) {
			return firewalledText
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s.has(k) {
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
func (s *secrets) hook() func(string) string {
	if s == nil {
		return nil
	}
	return s.redact
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
	s.build()
	r, byPrefix, set := s.r, s.byPrefix, s.set
	if r != nil {
		text = r.Replace(text)
	}
	text = cutSecrets(text, byPrefix, s.starts)
	text = quoted.ReplaceAllStringFunc(text, func(q string) string {
		inner := q[1 : len(q)-1]
		if _, ok := set[inner]; ok || inner == firewalledText || isSecretPrefix(inner, byPrefix) {
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

// build makes the replacer and the prefix index (s.mu held).
func (s *secrets) build() {
	if s.long != nil || s.r != nil {
		return
	}
	s.starts = map[string]struct{}{}
	addStarts := func(k string) {
		for n := 1; n < minSecretLen && n <= len(k); n++ {
			s.starts[k[:n]] = struct{}{}
		}
	}
	for k := range s.set {
		addStarts(k)
	}
	for k := range s.nums {
		addStarts(k)
	}
	forms := map[string]struct{}{}
	for k := range s.set {
		if len(k) < minSecretLen {
			continue
		}
		forms[k] = struct{}{}
		// the forms printers give it: PTC-Lisp/Go quoting and JSON
		forms[strings.Trim(lisp.PrStr(k), `"`)] = struct{}{}
		q := strconv.Quote(k)
		forms[q[1:len(q)-1]] = struct{}{}
	}
	long := make([]string, 0, len(forms))
	for k := range forms {
		long = append(long, k)
	}
	// longest first, so a secret containing another is replaced whole
	slices.SortFunc(long, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	s.long = long
	s.byPrefix = make(map[string][]string, len(long)+len(s.nums))
	for _, k := range long {
		p := k[:minSecretLen]
		s.byPrefix[p] = append(s.byPrefix[p], k)
	}
	// a firewalled integer cut short is caught like a string; whole ones
	// only as whole runs of digits (see scrub)
	for k := range s.nums {
		s.byPrefix[k[:minSecretLen]] = append(s.byPrefix[k[:minSecretLen]], k)
	}
	if len(long) == 0 {
		return
	}
	pairs := make([]string, 0, 2*len(long))
	for _, k := range long {
		pairs = append(pairs, k, firewalledText)
	}
	s.r = strings.NewReplacer(pairs...)
}

// cutSecrets replaces the visible start of a secret that a printer cut
// short (text ending in "..." or "…") with <Firewalled>: at least
// minSecretLen bytes of one, or fewer right after a quote, a keyword's
// colon or as a run of digits.
func cutSecrets(text string, byPrefix map[string][]string, starts map[string]struct{}) string {
	if len(byPrefix) == 0 && len(starts) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
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
		start := cutStart(text, last, i, byPrefix)
		if start < 0 {
			start = shortCutStart(text, last, i, starts)
		}
		if start >= 0 {
			b.WriteString(text[last:start])
			b.WriteString(firewalledText)
			last = i
		}
		i += mark - 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// isSecretPrefix reports whether s (at least minSecretLen bytes) is the
// start of a recorded secret.
func isSecretPrefix(s string, byPrefix map[string][]string) bool {
	if len(s) < minSecretLen {
		return false
	}
	for _, c := range byPrefix[s[:minSecretLen]] {
		if strings.HasPrefix(c, s) {
			return true
		}
	}
	return false
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
// is at least minSecretLen bytes and the start of a recorded secret; -1
// when there is none.
func cutStart(text string, lo, end int, byPrefix map[string][]string) int {
	from := max(lo, end-maxSecretPrefix)
	for j := from; j+minSecretLen <= end; j++ {
		cands := byPrefix[text[j:j+minSecretLen]]
		for _, c := range cands {
			if strings.HasPrefix(c, text[j:end]) {
				return j
			}
		}
	}
	return -1
}
