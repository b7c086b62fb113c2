package signature

import "strings"

// Closest returns the candidate closest to name when it is close enough to
// be a typo of it (at most two edits, or one being a prefix of the other),
// "" otherwise. Ties go to the earlier candidate. It is the one
// did-you-mean of the module's names that are not PTC-Lisp symbols: tool
// arguments, tool names, mission-file fields and prompt placeholders.
func Closest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := EditDistance(name, c, bestD)
		if strings.HasPrefix(c, name) || strings.HasPrefix(name, c) {
			d = min(d, 2)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is Closest as a message suffix: " (did you mean x?)", or ""
// when no candidate is close.
func DidYouMean(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" {
		return " (did you mean " + c + "?)"
	}
	return ""
}

// EditDistance is the Levenshtein distance of a and b, in runes, giving
// up above limit: any distance over limit is returned as limit+1. It is
// the one edit distance of the module's did-you-means (Closest, and
// PTC-Lisp's hints for unknown names).
func EditDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}
