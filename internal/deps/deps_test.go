// Package deps holds the module-wide tests: the dependency rule (which of
// the module's packages each package may import) and the docs' references
// to the repository (docrefs_test.go). It has no code of its own.
package deps

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ptcfleet/ptc/"

// rules is the dependency rule, written as in Go's own go/build deps_test:
// "a, b < c, d" means that c and d may import a and b and everything a and
// b may import. A package may import only what the rules allow it, every
// package of the module appears on the right of exactly one rule, and
// NONE stands for "nothing of this module". Only imports of non-test files
// count; a test may import test helpers from anywhere below cmd.
//
// The layers, from the bottom: the signature DSL and the wire types; the
// interpreter in its stages (values and the Thread; the reader and the
// builtins on them; the compiler on those; the package's API on top); the
// model clients; the agent loop; the fleet, which knows no interpreter and
// no agent (a tool service or a dispatch client links neither); agentrun,
// where the fleet meets the agent loop; the binaries.
const rules = `
NONE < pkg/signature, pkg/messages, pkg/agent/llm, pkg/agent/llm/internal/sse,
       pkg/fleet/embedded, internal/syncbuf, internal/testnode, internal/webtest, internal/version,
       internal/ctxval, deploy/k8s;

pkg/signature, pkg/messages, internal/ctxval < pkg/lisp/internal/core;
pkg/lisp/internal/core < pkg/lisp/internal/syntax, pkg/lisp/internal/builtins;
pkg/lisp/internal/syntax, pkg/lisp/internal/builtins < pkg/lisp/internal/compile;
pkg/lisp/internal/compile < pkg/lisp;

pkg/agent/llm, pkg/agent/llm/internal/sse, internal/version < pkg/agent/llm/internal/httpx;
pkg/agent/llm/internal/httpx < pkg/agent/llm/openai, pkg/agent/llm/anthropic;
pkg/agent/llm < pkg/agent/llm/llmtest, pkg/agent/llm/internal/fakeserver;
pkg/agent/llm/openai, pkg/agent/llm/anthropic < pkg/agent/llm/llmconfig;

pkg/lisp, pkg/agent/llm < pkg/agent;

pkg/signature, pkg/messages < pkg/fleet;

pkg/fleet, pkg/agent, pkg/agent/llm/llmconfig < pkg/fleet/agentrun;

pkg/messages, pkg/signature < internal/missionfile;
pkg/fleet/embedded, pkg/messages < internal/fleettest;
pkg/fleet, pkg/fleet/agentrun < internal/fleettest/agentworker;
pkg/agent < internal/ctxbench;
pkg/lisp < internal/clojurediff;

pkg/fleet < examples/shop, examples/toolservice, deploy/k8s/natsauth;
pkg/fleet, internal/version < internal/cli;

internal/cli, examples/shop < cmd/shoptools;
internal/cli < cmd/mcpbridge;
internal/cli, examples/shop, pkg/fleet/agentrun, pkg/fleet/embedded < cmd/worker;
internal/cli, examples/shop, internal/ctxbench, internal/missionfile,
    pkg/fleet/agentrun, pkg/fleet/embedded < cmd/dispatcher;
`

// toolServices are the binaries and libraries a tool owner links: none of
// them may link the interpreter or the agent loop.
var toolServices = []string{"pkg/fleet", "examples/shop", "cmd/shoptools", "cmd/mcpbridge"}

// allowed parses rules into, for each package, the set of module packages
// it may import.
func allowed(t *testing.T, rules string) map[string]map[string]bool {
	t.Helper()
	allow := map[string]map[string]bool{}
	for _, stmt := range strings.Split(rules, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		below, above, ok := strings.Cut(stmt, "<")
		if !ok {
			t.Fatalf("rule %q has no <", strings.TrimSpace(stmt))
		}
		set := map[string]bool{}
		for _, p := range list(below) {
			if p == "NONE" {
				continue
			}
			lower, ok := allow[p]
			if !ok {
				t.Fatalf("rule %q names %s before a rule placing it", strings.TrimSpace(stmt), p)
			}
			set[p] = true
			for q := range lower {
				set[q] = true
			}
		}
		for _, p := range list(above) {
			if _, dup := allow[p]; dup {
				t.Fatalf("%s is placed by two rules", p)
			}
			allow[p] = set
		}
	}
	return allow
}

func list(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}

// walkRepo calls fn for root and each file and directory under it, except
// under the directories the go tool leaves out (testdata, names starting
// with . or _) and node_modules.
func walkRepo(root string, fn func(path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := d.Name(); d.IsDir() && path != root &&
			(n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		return fn(path, d)
	})
}

// imports reads the module's packages from the files on disk (the
// module root is two levels up): for each package directory, the module
// packages its non-test Go files import, whatever their build tags
// (a file for another platform or tag still may not break the rule);
// files marked //go:build ignore are not part of any package.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err = walkRepo(root, func(path string, d fs.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			if g.Pos() > f.Package {
				break
			}
			for _, c := range g.List {
				if expr, err := constraint.Parse(c.Text); err == nil && mentionsIgnore(expr) {
					return nil
				}
			}
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := graph[pkg]; !ok {
			graph[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if q, ok := strings.CutPrefix(p, module); ok && !slices.Contains(graph[pkg], q) {
				graph[pkg] = append(graph[pkg], q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

func mentionsIgnore(e constraint.Expr) bool {
	switch e := e.(type) {
	case *constraint.TagExpr:
		return e.Tag == "ignore"
	case *constraint.NotExpr:
		return mentionsIgnore(e.X)
	case *constraint.AndExpr:
		return mentionsIgnore(e.X) || mentionsIgnore(e.Y)
	case *constraint.OrExpr:
		return mentionsIgnore(e.X) || mentionsIgnore(e.Y)
	}
	return false
}

// violations lists each import in graph that allow does not permit, and
// each package of graph that allow does not place.
func violations(allow map[string]map[string]bool, graph map[string][]string) []string {
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var out []string
	for _, p := range pkgs {
		ok, placed := allow[p]
		if !placed {
			out = append(out, p+" is not in the dependency rules: add it to rules in internal/deps/deps_test.go at the layer it belongs to")
			continue
		}
		for _, q := range graph[p] {
			if !ok[q] {
				out = append(out, p+" imports "+q+", which the dependency rules do not allow")
			}
		}
	}
	return out
}

// TestDependencyRule fails when a package imports a module package the
// rules do not allow it, or when a package is missing from the rules.
func TestDependencyRule(t *testing.T) {
	allow := allowed(t, rules)
	graph := imports(t)
	if len(graph) < 20 {
		t.Fatalf("found only %d packages: is the module root two levels up?", len(graph))
	}
	for _, v := range violations(allow, graph) {
		t.Error(v)
	}
	for p := range allow {
		if _, ok := graph[p]; !ok {
			t.Errorf("the rules place %s, which is not a package of the module (remove it)", p)
		}
	}
}

// TestToolServicesDoNotLinkTheInterpreter follows the imports transitively
// from what a tool owner links: the interpreter, the agent loop and the
// model clients stay out of their binaries.
func TestToolServicesDoNotLinkTheInterpreter(t *testing.T) {
	graph := imports(t)
	for _, start := range toolServices {
		if _, ok := graph[start]; !ok {
			t.Fatalf("%s is not a package of the module", start)
		}
		seen := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, q := range graph[p] {
				if _, ok := seen[q]; !ok {
					seen[q] = p
					queue = append(queue, q)
				}
			}
		}
		for _, banned := range []string{"pkg/lisp", "pkg/agent", "pkg/agent/llm"} {
			if via, ok := seen[banned]; ok {
				t.Errorf("%s links %s (imported by %s)", start, banned, via)
			}
		}
	}
}

// TestRulesRejectABackEdge checks the checker: the closure of a rule set
// allows imports downward only, and an upward import, as from pkg/lisp to
// pkg/fleet, or an unplaced package is reported.
func TestRulesRejectABackEdge(t *testing.T) {
	allow := allowed(t, `NONE < a; a < b; b < c;`)
	if !allow["c"]["a"] || !allow["c"]["b"] || allow["a"]["c"] || allow["b"]["c"] {
		t.Fatalf("allowance %v, want c over b over a", allow)
	}
	got := violations(allowed(t, rules), map[string][]string{
		"pkg/lisp":  {"pkg/messages", "pkg/fleet"},
		"pkg/fleet": {"pkg/messages"},
		"pkg/new":   nil,
	})
	want := []string{
		"pkg/lisp imports pkg/fleet, which the dependency rules do not allow",
		"pkg/new is not in the dependency rules: add it to rules in internal/deps/deps_test.go at the layer it belongs to",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%q\nwant\n%q", got, want)
	}
}
