package lisp

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// myGroups are the builtin groups whose every name must appear in their
// testdata files.
var myGroups = []struct {
	name     string
	register func(registry)
	files    []string
}{
	{"math", registerMath, []string{"testdata/math.lisp"}},
	{"logic", registerLogic, []string{"testdata/logic.lisp"}},
	{"strings", registerStrings, []string{"testdata/strings.lisp", "testdata/format.lisp"}},
	{"regex", registerRegex, []string{"testdata/regex.lisp"}},
	{"hof", registerHOF, []string{"testdata/hof.lisp"}},
	{"interop", registerInterop, []string{"testdata/interop.lisp"}},
}

// TestGroupBuiltinsCovered fails when a builtin of these groups is not
// called in any chunk of its testdata files.
func TestGroupBuiltinsCovered(t *testing.T) {
	for _, g := range myGroups {
		t.Run(g.name, func(t *testing.T) {
			r := registry{}
			g.register(r)
			if len(r) == 0 {
				t.Fatal("group registers no builtins")
			}
			var text strings.Builder
			for _, f := range g.files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				text.Write(data)
			}
			src := text.String()
			for name := range r {
				// the name as a symbol: not part of a longer symbol
				short := name
				if i := strings.IndexByte(name, '/'); i > 0 && !strings.HasPrefix(name, "java.") {
					short = name[i+1:]
				}
				pat := `(^|[\s(\[{#'])` + `(\S+/)?` + regexp.QuoteMeta(short) + `($|[\s)\]}])`
				if !regexp.MustCompile(pat).MatchString(src) {
					t.Errorf("builtin %s is not used in %v", name, g.files)
				}
			}
		})
	}
}

// TestGroupNamesResolve checks that every name of these groups is in the
// builtin table under the same *Builtin (no other group took the name).
func TestGroupNamesResolve(t *testing.T) {
	table := builtinTable()
	for _, g := range myGroups {
		r := registry{}
		g.register(r)
		for name, b := range r {
			got, ok := table[name]
			if !ok {
				t.Errorf("%s: %s missing from the builtin table", g.name, name)
				continue
			}
			if got.Name != b.Name || got.MinArgs != b.MinArgs || got.MaxArgs != b.MaxArgs {
				t.Errorf("%s: %s resolves to another builtin (%s)", g.name, name, got.Name)
			}
		}
	}
}
