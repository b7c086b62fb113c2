package deps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// raceMarks are the names a test reads to behave otherwise under the
// race detector: each package's build-tagged constant, and fleettest's.
var raceMarks = map[string]bool{"raceEnabled": true, "raceBuild": true, "raceAllocSlack": true}

// TestRaceLoosenedTestsRunWithoutRace: every test that skips, shrinks or
// loosens itself under the race detector also runs in .ci/run's pass
// without it, either because its package is one that pass runs whole or
// because its package is under the pass's -run line and its name matches
// that line's pattern. Otherwise CI, whose main run is the README's -race
// command, would check it only in its loosened form.
func TestRaceLoosenedTestsRunWithoutRace(t *testing.T) {
	root := filepath.Join("..", "..")
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	whole, named, pattern := raceFreePass(t, string(ci))
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || !readsRaceMark(fn.Body) {
				continue
			}
			found++
			if underAny(rel, whole) || underAny(rel, named) && pattern.MatchString(fn.Name.Name) {
				continue
			}
			t.Errorf("%s: %s behaves otherwise under -race, and .ci/run's pass without -race runs neither its package whole nor it by name (add it to that pass's -run pattern)",
				fset.Position(fn.Pos()), fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// the marks are read by dozens of tests; finding few means the search
	// itself broke
	if found < 20 {
		t.Fatalf("found %d tests that read a race mark; the search is broken", found)
	}
}

// raceFreePass reads .ci/run's pass without -race: the package trees it
// runs whole (its "go test -count=1 ./a/... ./b/..." line), and the trees
// and -run pattern of its other line, which runs the tests of those trees
// the pattern names.
func raceFreePass(t *testing.T, ci string) (whole, named []string, pattern *regexp.Regexp) {
	t.Helper()
	for _, line := range strings.Split(ci, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "go test -count=1 ")
		if !ok {
			continue
		}
		trees := &whole
		if r, ok := strings.CutPrefix(rest, "-run '"); ok {
			expr, pkgs, ok := strings.Cut(r, "'")
			if !ok {
				t.Fatalf(".ci/run: unterminated -run pattern: %s", line)
			}
			pattern, rest, trees = regexp.MustCompile(expr), pkgs, &named
		}
		for _, p := range strings.Fields(rest) {
			*trees = append(*trees, strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/..."))
		}
	}
	if len(whole) == 0 || len(named) == 0 || pattern == nil {
		t.Fatal(".ci/run has no pass without -race (a go test -count=1 line of packages and one with -run and its packages)")
	}
	return whole, named, pattern
}

// readsRaceMark reports whether body names a race mark: one of raceMarks,
// or fleettest.Race.
func readsRaceMark(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if raceMarks[n.Name] {
				found = true
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "fleettest" && n.Sel.Name == "Race" {
				found = true
			}
		}
		return !found
	})
	return found
}

// underAny reports whether path lies in one of the trees.
func underAny(path string, trees []string) bool {
	for _, tree := range trees {
		if strings.HasPrefix(path, tree+"/") {
			return true
		}
	}
	return false
}
