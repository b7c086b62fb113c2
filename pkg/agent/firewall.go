package agent

import (
	"slices"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// minSecretLen is the shortest firewalled string the scrubber removes
// from model-bound text; shorter ones would match ordinary words.
const minSecretLen = 6

// secrets is defense in depth for the firewall. The printers already show
// "_" fields as <Firewalled>, but a program can still pull a firewalled
// value out of its field (an error message quoting it, a println, a str).
// The loop therefore remembers every string seen under a "_" key (inputs,
// tool results, sub-agent returns, memory) and replaces it in every text
// it sends to the model. Not safe for concurrent use; the loop owns it.
type secrets struct {
	set map[string]struct{}
	r   *strings.Replacer
}

// collect records the strings under firewalled keys of v (plain Go data or
// interpreter values); under is true when v itself is firewalled.
func (s *secrets) collect(v any, under bool) {
	switch x := v.(type) {
	case string:
		if under && len(x) >= minSecretLen {
			if s.set == nil {
				s.set = map[string]struct{}{}
			}
			if _, ok := s.set[x]; !ok {
				s.set[x] = struct{}{}
				s.r = nil
			}
		}
	case map[string]any:
		for k, e := range x {
			s.collect(e, under || signature.IsFirewalled(k))
		}
	case []any:
		for _, e := range x {
			s.collect(e, under)
		}
	case *lisp.Map, *lisp.Vector, *lisp.Set:
		s.collect(lisp.ToGo(x), under)
	}
}

// scrub replaces every known secret in text with <Firewalled>.
func (s *secrets) scrub(text string) string {
	if len(s.set) == 0 {
		return text
	}
	if s.r == nil {
		keys := make([]string, 0, len(s.set))
		for k := range s.set {
			keys = append(keys, k)
		}
		// longest first, so a secret containing another is replaced whole
		slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
		pairs := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			pairs = append(pairs, k, firewalledText)
		}
		s.r = strings.NewReplacer(pairs...)
	}
	return s.r.Replace(text)
}
