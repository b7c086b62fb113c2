package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"

	_ "embed"
	"strings"
	"sync"
)

// What PTC-Lisp adds to Clojure 1.11. A model that knows Clojure needs to
// be told only the names Clojure lacks; Extensions derives them from the
// builtin table and the list of Clojure's own names.
//
// clojure_names.txt was printed by Debian's clojure 1.11.1 with
//
//	(require 'clojure.string 'clojure.set 'clojure.walk)
//	(doseq [[p ns] [["" 'clojure.core] ["str/" 'clojure.string] ["set/" 'clojure.set] ["walk/" 'clojure.walk]]
//	        n (sort (map str (keys (ns-publics ns))))]
//	  (println (str p n)))
//	(doseq [n (sort (map str (keys clojure.lang.Compiler/specials)))] (println n))

//go:embed clojure_names.txt
var clojureNamesText string

// ClojureNames is the set of clojure.core names (clojure_names.txt), read
// once: a name there that PTC-Lisp lacks gets a "not available" hint.
var ClojureNames = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for line := range strings.SplitSeq(clojureNamesText, "\n") {
		if line != "" && !strings.HasPrefix(line, "# ") {
			m[line] = true
		}
	}
	return m
})

// InClojure reports whether Clojure 1.11 has name as the reference spells
// it: a clojure.core name, a clojure.string or clojure.set name under str/
// or set/ (or bare, as PTC-Lisp also accepts it), a clojure.walk name under
// walk/, a special form, or a
// static of java.lang.Math (Math/sqrt).
func InClojure(name string) bool {
	cn := ClojureNames()
	return cn[name] || cn["str/"+name] || cn["set/"+name] || strings.HasPrefix(name, "Math/")
}

// Extensions returns the reference lines restricted to the names Clojure
// 1.11 does not have and that a Clojure programmer needs to learn: the
// special forms, as the fullest usage their doc begins with, and the builtins with
// a usage form ("(sum-by f coll)"), in reference order. A builtin without
// one is another spelling of what Clojure has (parse-int is parse-long,
// floor is Math/floor). The result is freshly allocated.
func Extensions() []builtins.ReferenceLine {
	es := builtins.BuiltinEntries()
	byRef := map[string]*builtins.Entry{}
	for _, e := range es {
		if e.RefLine != builtins.RefNone {
			byRef[e.RefSpelling()] = e
		}
	}
	forms := map[string]string{}
	for _, f := range builtins.SpecialForms {
		// the usage part of the doc, its fullest form: "(where :field) or
		// (where :field op value): ..." gives (where :field op value)
		u, _, ok := strings.Cut(f.Doc, "): ")
		if !ok || !strings.HasPrefix(u, "(") {
			u = f.Name
		} else {
			u += ")"
			if i := strings.LastIndex(u, " or ("); i >= 0 {
				u = u[i+len(" or "):]
			}
		}
		forms[f.Name] = u
	}
	var out []builtins.ReferenceLine
	for _, l := range builtins.ReferenceLines() {
		var names []string
		for _, n := range l.Names {
			if InClojure(n) {
				continue
			}
			switch e := byRef[n]; {
			case e == nil:
				names = append(names, forms[n])
			case e.UsageForm != "":
				names = append(names, e.UsageForm)
			}
		}
		if len(names) > 0 {
			out = append(out, builtins.ReferenceLine{Title: l.Title, Names: names})
		}
	}
	return out
}
