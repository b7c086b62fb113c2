package lisp

import (
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
)

func TestInClojure(t *testing.T) {
	for _, n := range []string{"map", "group-by", "str/join", "union", "set/union", "Math/sqrt", "if", "let", "parse-long"} {
		if !compile.InClojure(n) {
			t.Errorf("InClojure(%s) = false", n)
		}
	}
	for _, n := range []string{"sum-by", "pluck", "where", "all-of", "parse-int", "str/nope", "# The names Clojure 1.11 has, one a line: the public vars of clojure.core, of"} {
		if compile.InClojure(n) {
			t.Errorf("InClojure(%s) = true", n)
		}
	}
}

// spelledInClojure are the listed builtins that Clojure lacks under their
// name but has under another: the compact reference does not teach them.
var spelledInClojure = map[string]string{
	"parse-int": "parse-long",
	"re-split":  "str/split",
	"floor":     "Math/floor",
	"ceil":      "Math/ceil",
	"round":     "Math/round",
}

// Every name of the reference that Clojure 1.11 lacks is taught by
// Extensions with its usage, or has a Clojure spelling; a usage form is
// given only for such names and starts with the name.
func TestExtensionsCoverWhatClojureLacks(t *testing.T) {
	taught := map[string]bool{}
	for _, l := range compile.Extensions() {
		for _, u := range l.Names {
			if !strings.HasPrefix(u, "(") {
				t.Errorf("%s: not a usage form", u)
				continue
			}
			taught[strings.Fields(u[1:])[0]] = true
		}
	}
	for _, l := range builtins.Reference() {
		for _, n := range l.Names {
			if compile.InClojure(n) {
				if taught[n] {
					t.Errorf("%s is Clojure's, yet taught", n)
				}
				continue
			}
			alt, spelled := spelledInClojure[n]
			switch {
			case taught[n] && spelled:
				t.Errorf("%s is taught and has a Clojure spelling", n)
			case !taught[n] && !spelled:
				t.Errorf("%s: Clojure lacks it; give it a usage form (.usage) or its Clojure spelling in spelledInClojure", n)
			case spelled && (!compile.InClojure(alt) || !builtinNamed(alt)):
				t.Errorf("%s: Clojure spelling %s is not Clojure's or not here", n, alt)
			}
		}
	}
	for name, e := range builtins.BuiltinEntries() {
		if e.UsageForm == "" || e.IsHost {
			// a host builtin's usage is shown by the agent that enables it
			continue
		}
		if compile.InClojure(e.RefSpelling()) || e.RefLine == builtins.RefNone || !strings.HasPrefix(e.UsageForm, "("+e.RefSpelling()+" ") {
			t.Errorf("%s: usage %q on a Clojure name, an unlisted name or another name", name, e.UsageForm)
		}
	}
}

// builtinNamed reports whether name (maybe namespaced) resolves to a builtin.
func builtinNamed(name string) bool {
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		return builtins.BuiltinTable()[name] != nil
	}
	_, found := (&compile.Compiler{Builtins: builtins.BuiltinTable()}).LookupBuiltin(ns, n)
	return found
}
