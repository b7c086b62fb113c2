package lisp

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
)

// groupTestFiles are the testdata files of each builtin group (default:
// testdata/<group>.lisp); the core and lazy builtins are used everywhere.
var groupTestFiles = map[string][]string{
	"core":    {"testdata/*.lisp"},
	"lazy":    {"testdata/*.lisp"},
	"strings": {"testdata/strings.lisp", "testdata/format.lisp"},
}

// TestGroupBuiltinsCovered fails when a builtin is not called in any chunk
// of its group's testdata files: adding a builtin means adding its chunk.
func TestGroupBuiltinsCovered(t *testing.T) {
	for _, g := range builtins.BuiltinGroups {
		t.Run(g.Name, func(t *testing.T) {
			r := builtins.NewRegistry()
			r.Group = g
			g.Register(r)
			if len(r.Entries) == 0 {
				t.Fatal("group registers no builtins")
			}
			files := groupTestFiles[g.Name]
			if files == nil {
				files = []string{"testdata/" + g.Name + ".lisp"}
			}
			var text strings.Builder
			for _, pat := range files {
				fs, err := filepath.Glob(pat)
				if err != nil || len(fs) == 0 {
					t.Fatalf("%s: no files (%v)", pat, err)
				}
				for _, f := range fs {
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					text.Write(data)
				}
			}
			src := text.String()
			for name := range r.Entries {
				// the name as a symbol: not part of a longer symbol
				short := name
				if i := strings.IndexByte(name, '/'); i > 0 && !strings.HasPrefix(name, "java.") {
					short = name[i+1:]
				}
				pat := `(^|[\s(\[{#'])` + `(\S+/)?` + regexp.QuoteMeta(short) + `($|[\s)\]}])`
				if !regexp.MustCompile(pat).MatchString(src) {
					t.Errorf("builtin %s is not used in %v", name, files)
				}
			}
		})
	}
}

// TestBuiltinEntriesComplete checks every entry's metadata: a doc line
// (aliases take their target's), a group, facts that agree with each other,
// and reference lines that name real builtins.
func TestBuiltinEntriesComplete(t *testing.T) {
	es := builtins.BuiltinEntries()
	if len(es) < 300 {
		t.Fatalf("only %d builtins", len(es))
	}
	for name, e := range es {
		if e.Name != name || e.Group == nil {
			t.Errorf("%s: entry name %q, group %v", name, e.Name, e.Group)
		}
		if e.AliasOf == "" && (e.DocLine == "" || strings.Contains(e.DocLine, "\n")) {
			t.Errorf("%s: needs a one-line doc", name)
		}
		if e.AliasOf != "" && es[e.AliasOf].B != e.B {
			t.Errorf("%s: alias of %s with another function", name, e.AliasOf)
		}
		if e.IsPure && e.FnArg != 0 {
			t.Errorf("%s: pure() means it calls no argument; use hof(i) alone", name)
		}
		if e.RefName != "" {
			ns, n, _ := strings.Cut(e.RefName, "/")
			b, ok := (&compile.Compiler{Builtins: builtins.BuiltinTable()}).LookupBuiltin(ns, n)
			if !ok || b != e.B {
				t.Errorf("%s: listed as %s, which resolves elsewhere", name, e.RefName)
			}
		}
	}
	for _, l := range builtins.Reference() {
		if len(l.Names) == 0 {
			t.Errorf("reference line %s is empty", l.Title)
		}
	}
	for _, f := range builtins.SpecialForms {
		if !compile.IsSpecialForm(f.Name) || f.Doc == "" {
			t.Errorf("special form %s: not compiled as one, or no doc", f.Name)
		}
	}
}
