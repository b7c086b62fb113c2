package compile

import (
	"slices"
	"strings"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Hints for names the program uses but the language does not have: a
// close known name, an explanation for Clojure features left out, or the
// functions of the category the name belongs to (from the builtin table's
// reference lines).

func (c *Compiler) categoryHint(name string) string {
	if h, ok := unavailableHints[name]; ok {
		return h
	}
	if s := c.didYouMean(name); s != "" {
		return "did you mean " + s
	}
	if rel := c.relatedNames(name, 6); len(rel) > 0 {
		return "no such name; related names: " + strings.Join(rel, ", ")
	}
	return ""
}

// relatedNames lists up to max known names (locals, memory, builtins,
// special forms) that share a word of at least 3 letters with name
// ("filter-by-name" → filter, filterv, ...), most shared words first.
func (c *Compiler) relatedNames(name string, max int) []string {
	words := nameWords(name)
	if len(words) == 0 {
		return nil
	}
	score := map[string]int{}
	consider := func(cand string) {
		if strings.ContainsAny(cand, "/.") || cand == name {
			return
		}
		n := 0
		for _, w := range nameWords(cand) {
			for _, x := range words {
				if w == x || (len(x) >= 4 && strings.HasPrefix(w, x)) || (len(w) >= 4 && strings.HasPrefix(x, w)) {
					n++
				}
			}
		}
		if n > 0 {
			score[cand] = n
		}
	}
	for s := c.sc; s != nil; s = s.parent {
		for _, l := range s.locals {
			consider(l.name)
		}
	}
	for n := range c.MemNames {
		consider(n)
	}
	for n := range c.Builtins {
		consider(n)
	}
	for _, n := range specialFormNames {
		consider(n)
	}
	out := make([]string, 0, len(score))
	for n := range score {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int {
		if score[a] != score[b] {
			return score[b] - score[a]
		}
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// nameWords splits a name into its words of at least 3 letters.
func nameWords(name string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') }) {
		if len(w) >= 3 {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}

// unavailableHints explains Clojure names the language does not have.
var unavailableHints = map[string]string{
	"atom": "atoms are not supported; use let bindings, loop/recur or def", "swap!": "atoms are not supported; use def to store state",
	"reset!": "atoms are not supported; use def to store state", "deref": "deref is not supported",
	"try":   "try/catch is not supported; use (fail {:reason :x :message \"...\"}) to stop with an error",
	"catch": "try/catch is not supported", "throw": "throw is not supported; use (fail \"message\")",
	"dotimes": "dotimes is not supported; use doseq over (range n)", "while": "while is not supported; use loop/recur",
	"lazy-seq": "lazy-seq is not supported; use range, iterate or loop/recur", "defmacro": "macros are not supported",
	"eval": "eval is not supported", "read-string": "read-string is not supported; use parse-long or parse-double",
	"slurp": "there is no I/O; use tools", "spit": "there is no I/O; use tools",
	"ns": "namespaces are not supported", "require": "require is not needed: clojure.string/, clojure.set/ and clojure.walk/ functions are built in",
	"import": "Java interop is not supported", "future": "use pmap or pcalls for parallel work",
	"ctx": "read inputs as ctx/name", "memory": "read memory as memory/name or by its plain name",
	"%": "% can only be used inside #(...)", "%1": "% can only be used inside #(...)", "%2": "% can only be used inside #(...)",
	"%&": "% can only be used inside #(...)", "else": "use :else in cond",
	"transduce": "transducers are not supported; thread the collection through map, filter and reduce with ->>",
	"sequence":  "transducers are not supported; thread the collection through map and filter with ->>",
	"eduction":  "transducers are not supported; thread the collection through map and filter with ->>",
	"printf":    "use (println (format ...))",
}

func (c *Compiler) unbound(f *syntax.Form) {
	name := f.Name
	if cat, ok := clojureOnly[name]; ok {
		c.fail(core.KindUnbound, f.Pos, c.categoryList(cat), "%s is not available", name)
	}
	c.fail(core.KindUnbound, f.Pos, c.categoryHint(name), "undefined symbol: %s", name)
}

// namespacedHint explains an unknown ns/name: a close name first, else the
// functions of the namespace's category.
func (c *Compiler) namespacedHint(canon, name string) string {
	if h := c.categoryHint(name); h != "" {
		return h
	}
	if cat, ok := clojureOnly[name]; ok {
		return c.categoryList(cat)
	}
	for _, cat := range hintCategories {
		if cat.ns == canon {
			return c.categoryList(cat.title)
		}
	}
	return ""
}

// categoryList renders "string functions: str, subs, ..." with the names
// the language reference lists on the category's lines.
func (c *Compiler) categoryList(title string) string {
	for _, cat := range hintCategories {
		if cat.title != title {
			continue
		}
		var names []string
		for _, l := range builtins.ReferenceLines() {
			if slices.Contains(cat.lines, l.Title) {
				names = append(names, l.Names...)
			}
		}
		return title + ": " + strings.Join(names, ", ")
	}
	return ""
}

// hintCategories group the reference lines for the "not available" hint;
// ns is the canonical namespace whose unknown names list the category.
var hintCategories = []struct {
	title, ns string
	lines     []string
}{
	{"string functions", "str", []string{builtins.RefTitles[builtins.RefStrings], builtins.RefTitles[builtins.RefRegex]}},
	{"set functions", "set", []string{builtins.RefTitles[builtins.RefSets]}},
	{"math functions", "Math", []string{builtins.RefTitles[builtins.RefMath]}},
	{"collection functions", "core", []string{builtins.RefTitles[builtins.RefSeq]}},
}

// clojureOnly maps Clojure functions this language does not provide to the
// category whose functions the hint lists.
var clojureOnly = map[string]string{
	"numerator": "math functions", "denominator": "math functions", "rationalize": "math functions",
	"bigint": "math functions", "bigdec": "math functions", "log1p": "math functions", "expm1": "math functions",
	"char-array": "string functions",
	"subseq":     "collection functions", "rsubseq": "collection functions", "sorted-map-by": "collection functions",
	"vector-of": "collection functions", "bounded-count": "collection functions",
}

// didYouMean suggests the closest known name (locals, memory, builtins,
// special forms), also trying '-' for '_'.
func (c *Compiler) didYouMean(name string) string {
	alt := strings.ReplaceAll(name, "_", "-")
	best, bestD := "", 3
	if len(name) <= 3 {
		bestD = 2
	}
	try := func(cand string) {
		if cand == alt && alt != name {
			best, bestD = cand, -1
			return
		}
		if d := signature.EditDistance(name, cand, bestD); d < bestD {
			best, bestD = cand, d
		}
	}
	for s := c.sc; s != nil; s = s.parent {
		for _, l := range s.locals {
			try(l.name)
		}
	}
	for n := range c.MemNames {
		try(n)
	}
	names := make([]string, 0, len(c.Builtins)+len(specialFormNames))
	for n := range c.Builtins {
		if !strings.Contains(n, "/") {
			names = append(names, n)
		}
	}
	names = append(names, specialFormNames...)
	slices.Sort(names)
	for _, n := range names {
		try(n)
	}
	return best
}
