package agent

import (
	"strings"
	"unicode/utf8"
)

// ParseResponse extracts the PTC-Lisp program from a model's answer:
//   - every ```clojure or ```lisp fenced block (also ```clj and a bare ```
//     block whose content starts with "("), joined in order so that they
//     run as one (do ...);
//   - otherwise the whole answer when, trimmed, it starts with "(".
//
// The code is cleaned of Unicode that models and editors insert: smart
// quotes become ASCII quotes, zero-width characters and the BOM are
// removed, non-breaking spaces become spaces. ok is false when the answer
// holds no code (the loop then sends the boundary reminder).
func ParseResponse(content string) (code string, ok bool) {
	var blocks []string
	rest := content
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		after := rest[i+3:]
		nl := strings.IndexByte(after, '\n')
		if nl < 0 {
			break
		}
		lang := strings.ToLower(strings.TrimSpace(after[:nl]))
		body := after[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			// an unterminated block: take the rest
			end = len(body)
		}
		block := body[:end]
		switch lang {
		case "clojure", "lisp", "clj", "ptc-lisp", "ptc_lisp", "edn":
			blocks = append(blocks, block)
		case "":
			if strings.HasPrefix(strings.TrimSpace(cleanCode(block)), "(") {
				blocks = append(blocks, block)
			}
		}
		if end+3 > len(body) {
			break
		}
		rest = body[end+3:]
	}
	if len(blocks) > 0 {
		var nonEmpty []string
		for _, b := range blocks {
			if b = strings.TrimSpace(cleanCode(b)); b != "" {
				nonEmpty = append(nonEmpty, b)
			}
		}
		if len(nonEmpty) == 0 {
			return "", false
		}
		// Top-level forms of a program already run in order as one do;
		// joining the blocks with newlines gives exactly that.
		return strings.Join(nonEmpty, "\n"), true
	}
	c := strings.TrimSpace(cleanCode(content))
	if strings.HasPrefix(c, "(") {
		return c, true
	}
	return "", false
}

var codeReplacer = strings.NewReplacer(
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`, "\u2033", `"`,
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'", "\u2032", "'",
	"\u200b", "", "\u200c", "", "\u200d", "", "\u2060", "", "\ufeff", "", "\u00ad", "",
	"\u00a0", " ", "\u202f", " ", "\u2007", " ", "\u2009", " ", "\u3000", " ",
)

// cleanCode applies the Unicode clean-up of ParseResponse. Every character
// it replaces is outside ASCII, so ASCII text is returned as it is (the
// replacer would copy it).
func cleanCode(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return codeReplacer.Replace(s)
		}
	}
	return s
}
