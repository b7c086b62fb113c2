package lisp

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unsafeDocsFile holds the table of the package's unsafe uses.
const unsafeDocsFile = "../../docs/lisp.md"

// TestUnsafeUsesListed checks the table "Uses of unsafe" in docs/lisp.md
// against the package's source: for each build (default and
// ptc_swissmaps, on amd64 and arm64), the files that use package unsafe,
// with the functions they use, and the assembly files are exactly the
// table's rows for that build. A new use, or one removed, fails until the
// table says so (and why it is sound).
func TestUnsafeUsesListed(t *testing.T) {
	rows := unsafeTable(t)
	for _, arch := range []string{"amd64", "arm64"} {
		for _, tags := range [][]string{nil, {"ptc_swissmaps"}} {
			ctx := build.Default
			ctx.GOARCH, ctx.BuildTags = arch, tags
			got := unsafeUses(t, ctx)
			want := map[string]string{}
			for _, r := range rows {
				if r.builtIn(arch, len(tags) > 0) {
					want[r.file] = r.uses
				}
			}
			for f, u := range got {
				if w, ok := want[f]; !ok {
					t.Errorf("%s %v: %s uses %s: not in the table of %s", arch, tags, f, u, unsafeDocsFile)
				} else if w != u {
					t.Errorf("%s %v: %s uses %s, the table says %s", arch, tags, f, u, w)
				}
			}
			for f := range want {
				if _, ok := got[f]; !ok {
					t.Errorf("%s %v: the table lists %s, which this build does not use", arch, tags, f)
				}
			}
		}
	}
}

// TestDefaultBuildReadsNoRuntimeLayout checks that the default build has
// no assembly and no file that reads the runtime's private map layout.
func TestDefaultBuildReadsNoRuntimeLayout(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		ctx := build.Default
		ctx.GOARCH, ctx.BuildTags = arch, nil
		for _, dir := range stageDirs(t) {
			p, err := ctx.ImportDir(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.SFiles) > 0 {
				t.Errorf("%s: the default build of %s has assembly: %v", arch, dir, p.SFiles)
			}
			for _, f := range []string{"field_swiss.go", "prefetch.go"} {
				if slices.Contains(p.GoFiles, f) {
					t.Errorf("%s: the default build compiles %s", arch, path.Join(dir, f))
				}
			}
		}
	}
}

// unsafeRow is a row of the table: a file, the builds that compile it
// ("always", "ptc_swissmaps", "ptc_swissmaps, amd64" or "ptc_swissmaps,
// not amd64") and its uses ("unsafe.X, unsafe.Y" sorted, or "assembly").
type unsafeRow struct{ file, built, uses string }

func (r unsafeRow) builtIn(arch string, swiss bool) bool {
	switch r.built {
	case "always":
		return true
	case "ptc_swissmaps":
		return swiss
	case "ptc_swissmaps, amd64":
		return swiss && arch == "amd64"
	case "ptc_swissmaps, not amd64":
		return swiss && arch != "amd64"
	}
	return false
}

// unsafeTable reads the rows of the table under "### Uses of unsafe".
func unsafeTable(t *testing.T) []unsafeRow {
	t.Helper()
	b, err := os.ReadFile(unsafeDocsFile)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Uses of unsafe\n")
	if !ok {
		t.Fatalf("%s has no section \"### Uses of unsafe\"", unsafeDocsFile)
	}
	sec, _, _ = strings.Cut(sec, "\n#")
	var rows []unsafeRow
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		clean := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "`", "") }
		rows = append(rows, unsafeRow{file: clean(cells[1]), built: clean(cells[2]), uses: clean(cells[3])})
	}
	if len(rows) == 0 {
		t.Fatalf("%s: the table under \"### Uses of unsafe\" has no rows", unsafeDocsFile)
	}
	return rows
}

// stageDirs are the directories of the interpreter's packages, relative to
// this one: the table names files by these paths.
func stageDirs(t *testing.T) []string {
	t.Helper()
	dirs := []string{"."}
	ents, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, "internal/"+e.Name())
		}
	}
	return dirs
}

// unsafeUses returns, for the interpreter's packages as ctx builds them,
// each non-test file (by its path relative to this package) that uses
// package unsafe with the functions it uses, and each assembly file
// ("assembly").
func unsafeUses(t *testing.T, ctx build.Context) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range stageDirs(t) {
		p, err := ctx.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.SFiles {
			out[path.Join(dir, f)] = "assembly"
		}
		unsafeGoUses(t, p, dir, out)
	}
	return out
}

// unsafeGoUses adds p's Go files that use package unsafe to out.
func unsafeGoUses(t *testing.T, p *build.Package, dir string, out map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := ""
		for _, im := range f.Imports {
			if im.Path.Value == `"unsafe"` {
				local = "unsafe"
				if im.Name != nil {
					local = im.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		var uses []string
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && id.Name == local {
					if u := "unsafe." + s.Sel.Name; !slices.Contains(uses, u) {
						uses = append(uses, u)
					}
				}
			}
			return true
		})
		slices.Sort(uses)
		out[path.Join(dir, name)] = strings.Join(uses, ", ")
	}
}
