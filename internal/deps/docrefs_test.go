package deps

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The docs name many things of the repository: files, test functions, Go
// identifiers of the module's packages, the binaries' commands, flags and
// environment variables, headers, metrics, subjects, and other docs. The
// tests below read the docs' code spans, code blocks, links and text, and
// fail on a name that does not exist, giving the doc file, the line and
// the name (docs/architecture.md lists the checks). The module's side is
// read with go/parser, not searched as text. Only names that can be
// checked without guessing are checked: a span that could mean something
// else (a bare identifier, a type of another library, a flag of another
// tool) is left alone, and the few exceptions (foreignFlags) carry a
// reason each.

// docFiles lists the docs the checks read, relative to the module root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, relSlash(root, d))
	}
	for _, dir := range []string{"examples", "deploy"} {
		err := walkRepo(filepath.Join(root, dir), func(path string, d fs.DirEntry) error {
			if !d.IsDir() && strings.HasPrefix(d.Name(), "README") {
				files = append(files, relSlash(root, path))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files[1:])
	return files
}

// relSlash is path relative to root, with forward slashes (path is under
// root: every caller found it walking root).
func relSlash(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// span is an inline code span of a doc, or a line of a fenced code block.
type span struct {
	line   int
	text   string
	fenced bool
}

// backtickRun matches a run of backquotes.
var backtickRun = regexp.MustCompile("`+")

// docSpans returns the inline code spans of a markdown text with the line
// each starts on, and the lines of its fenced code blocks. A code span
// closes at the next run of as many backquotes within its paragraph.
func docSpans(text string) []span {
	var out []span
	lines := strings.Split(text, "\n")
	fence := ""
	var para []string // lines of the current paragraph
	paraStart := 0
	flush := func() {
		if len(para) == 0 {
			return
		}
		joined := strings.Join(para, "\n")
		runs := backtickRun.FindAllStringIndex(joined, -1)
		for i := 0; i < len(runs); i++ {
			open := runs[i]
			n := open[1] - open[0]
			for j := i + 1; j < len(runs); j++ {
				if runs[j][1]-runs[j][0] != n {
					continue
				}
				code := joined[open[1]:runs[j][0]]
				code = strings.ReplaceAll(code, "\n", " ")
				if strings.HasPrefix(code, " ") && strings.HasSuffix(code, " ") && strings.TrimSpace(code) != "" {
					code = code[1 : len(code)-1]
				}
				out = append(out, span{line: paraStart + strings.Count(joined[:open[0]], "\n") + 1, text: code})
				i = j
				break
			}
		}
		para = nil
	}
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			} else {
				out = append(out, span{line: i + 1, text: l, fenced: true})
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			flush()
			fence = trimmed[:3]
			for _, c := range trimmed[3:] {
				if string(c) != fence[:1] {
					break
				}
				fence += fence[:1]
			}
			continue
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			flush()
			if trimmed != "" {
				para, paraStart = []string{l}, i
				flush()
			}
			continue
		}
		if len(para) == 0 {
			paraStart = i
		}
		para = append(para, l)
	}
	flush()
	return out
}

// moduleIndex is what the checks know of the module's Go source, read
// with go/parser.
type moduleIndex struct {
	root string
	// pkgs maps a package name to its package; the module's package names
	// are unique (commands, named main, are not in it).
	pkgs map[string]*goPackage
	// testFuncs holds every top-level function of the module's _test.go
	// files; topLevel every top-level name of any file.
	testFuncs, topLevel map[string]bool
	// flags maps a command directory (cmd/NAME) to the flags its
	// files and internal/cli define.
	flags map[string]map[string]bool
	// dirs maps a package directory to its package, commands included.
	dirs map[string]*goPackage
	// commands matches a command line running one of the binaries.
	commands *regexp.Regexp
	// commandNames maps a command directory to the names of its commands
	// (dispatcher local, worker setup): the string cases of a switch on
	// cmd or args[i], and what args[i] is compared with.
	commandNames map[string]map[string]bool
	// usages maps a command directory to its usage texts: its constant
	// usage and the synopses it gives cli.Usage.
	usages map[string][]string
	// fileNames holds the names of the repository's files (fileNamed);
	// internalParents the directories with an internal/ below them
	// other than the root (pathExists), both once needed.
	fileNames       map[string]bool
	internalParents []string
	// buildTags holds the tags the module's build constraints name.
	buildTags map[string]bool
	// literals holds every string literal of the module's Go files;
	// sortedLiterals the same, sorted, once needed.
	literals       map[string]bool
	sortedLiterals []string
	// env holds the environment variables the module reads: each flag's
	// twin (cli.EnvName) and every PTC_ name in a string literal.
	env map[string]bool
	// modelEnvPrefix starts the variables that each configure a model
	// (llmconfig.EnvPrefix): PTC_MODEL_<NAME>, any name.
	modelEnvPrefix string
}

// envPrefix starts the names of the binaries' environment variables.
const envPrefix = "PTC_"

// envVar matches an environment variable of the binaries, or a prefix of
// some (PTC_NATS_TLS_*).
var envVar = regexp.MustCompile(`\bPTC_[A-Z0-9_]+`)

// goPackage is one package of the module: its top-level names and, for
// each type, its fields, methods and embedded types.
type goPackage struct {
	name, dir string
	decls     map[string]ast.Expr // top-level name → type expression (nil if unknown)
	kinds     map[string]token.Token
	types     map[string]*goType
	testFuncs map[string]bool
	consts    map[string]string // string constants by name
}

type goType struct {
	spec    *ast.TypeSpec
	members map[string]ast.Expr // field or method name → field type (nil for a method)
	embeds  []ast.Expr
	alias   ast.Expr // the aliased type of `type A = B`
}

// goFlagMethods are the flag.FlagSet methods that define a flag, with the
// index of the flag name among their arguments.
var goFlagMethods = map[string]int{
	"String": 0, "Bool": 0, "Int": 0, "Int64": 0, "Uint": 0, "Uint64": 0, "Float64": 0, "Duration": 0,
	"Func": 0, "BoolFunc": 0,
	"StringVar": 1, "BoolVar": 1, "IntVar": 1, "Int64Var": 1, "UintVar": 1, "Uint64Var": 1, "Float64Var": 1,
	"DurationVar": 1, "Var": 1, "TextVar": 1,
}

// indexModule reads the Go files of the module rooted at root.
func indexModule(t *testing.T, root string) *moduleIndex {
	t.Helper()
	ix := &moduleIndex{root: root, pkgs: map[string]*goPackage{}, testFuncs: map[string]bool{}, topLevel: map[string]bool{},
		flags: map[string]map[string]bool{}, env: map[string]bool{}, commandNames: map[string]map[string]bool{},
		literals: map[string]bool{}, usages: map[string][]string{}, buildTags: map[string]bool{}}
	byDir := map[string]*goPackage{}
	ix.dirs = byDir
	type flagFile struct {
		dir  string
		file *ast.File
	}
	var flagFiles []flagFile
	fset := token.NewFileSet()
	err := walkRepo(root, func(path string, d fs.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := relSlash(root, filepath.Dir(path))
		p := byDir[dir]
		if p == nil {
			p = &goPackage{dir: dir, decls: map[string]ast.Expr{}, kinds: map[string]token.Token{}, types: map[string]*goType{},
				testFuncs: map[string]bool{}, consts: map[string]string{}}
			byDir[dir] = p
		}
		isTest := strings.HasSuffix(path, "_test.go")
		if !isTest {
			p.name = f.Name.Name
		}
		addPackageDecls(ix, p, f, isTest)
		for _, g := range f.Comments {
			for _, c := range g.List {
				if expr, err := constraint.Parse(c.Text); err == nil {
					expr.Eval(func(tag string) bool { ix.buildTags[tag] = true; return true })
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					ix.literals[v] = true
				}
				for _, v := range envVar.FindAllString(lit.Value, -1) {
					ix.env[v] = true
				}
			}
			return true
		})
		if !isTest && (strings.HasPrefix(dir, "cmd/") || dir == "internal/cli") {
			flagFiles = append(flagFiles, flagFile{dir, f})
		}
		if !isTest && strings.HasPrefix(dir, "cmd/") {
			addCommands(ix, dir, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range byDir {
		if p.name == "" || p.name == "main" {
			continue
		}
		if q, dup := ix.pkgs[p.name]; dup {
			t.Fatalf("packages %s and %s are both named %s: docs references to %s.X are ambiguous", q.dir, p.dir, p.name, p.name)
		}
		ix.pkgs[p.name] = p
	}
	cliFlags := map[string]bool{}
	for _, ff := range flagFiles {
		if ff.dir == "internal/cli" {
			addFlags(t, ix, byDir[ff.dir], ff.file, cliFlags)
		}
	}
	for _, ff := range flagFiles {
		if ff.dir == "internal/cli" || strings.Count(ff.dir, "/") != 1 {
			continue
		}
		set := ix.flags[ff.dir]
		if set == nil {
			// The flag package answers -h and -help with the usage;
			// cli.Main answers -version before any flag is parsed.
			set = map[string]bool{"h": true, "help": true, "version": true}
			for f := range cliFlags {
				set[f] = true
			}
			ix.flags[ff.dir] = set
		}
		addFlags(t, ix, byDir[ff.dir], ff.file, set)
	}
	var bins []string
	for dir := range ix.flags {
		bins = append(bins, regexp.QuoteMeta(strings.TrimPrefix(dir, "cmd/")))
	}
	sort.Strings(bins)
	ix.commands = commandLine(bins)
	for _, set := range ix.flags {
		for f := range set {
			ix.env[envPrefix+strings.ToUpper(strings.ReplaceAll(f, "-", "_"))] = true
		}
	}
	if p := ix.pkgs["llmconfig"]; p != nil {
		ix.modelEnvPrefix = p.consts["EnvPrefix"]
	}
	return ix
}

func addPackageDecls(ix *moduleIndex, p *goPackage, f *ast.File, isTest bool) {
	external := strings.HasSuffix(f.Name.Name, "_test")
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			ix.topLevel[d.Name.Name] = true
			if d.Recv == nil {
				if isTest {
					ix.testFuncs[d.Name.Name] = true
					p.testFuncs[d.Name.Name] = true
					continue
				}
				p.decls[d.Name.Name] = nil
				p.kinds[d.Name.Name] = token.FUNC
				continue
			}
			if external {
				continue
			}
			recv := d.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			switch r := recv.(type) {
			case *ast.IndexExpr:
				recv = r.X
			case *ast.IndexListExpr:
				recv = r.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				typ(p, id.Name).members[d.Name.Name] = nil
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					ix.topLevel[s.Name.Name] = true
					if external || isTest && !ast.IsExported(s.Name.Name) {
						continue
					}
					p.decls[s.Name.Name] = nil
					p.kinds[s.Name.Name] = token.TYPE
					gt := typ(p, s.Name.Name)
					gt.spec = s
					if s.Assign.IsValid() {
						gt.alias = s.Type
					}
					addMembers(gt, s.Type)
				case *ast.ValueSpec:
					for i, n := range s.Names {
						ix.topLevel[n.Name] = true
						if external || isTest {
							continue
						}
						p.decls[n.Name] = s.Type
						p.kinds[n.Name] = d.Tok
						if d.Tok == token.CONST && i < len(s.Values) {
							if lit, ok := s.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								if v, err := strconv.Unquote(lit.Value); err == nil {
									p.consts[n.Name] = v
								}
							}
						}
					}
				}
			}
		}
	}
}

func typ(p *goPackage, name string) *goType {
	gt := p.types[name]
	if gt == nil {
		gt = &goType{members: map[string]ast.Expr{}}
		p.types[name] = gt
	}
	return gt
}

// addMembers records the fields, embedded types and interface methods of
// a type's definition.
func addMembers(gt *goType, e ast.Expr) {
	switch e := e.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				gt.embeds = append(gt.embeds, f.Type)
				if n := embeddedName(f.Type); n != "" {
					gt.members[n] = f.Type
				}
				continue
			}
			for _, n := range f.Names {
				gt.members[n.Name] = f.Type
			}
			// The docs name a field by its wire name too (Turn.raw).
			if f.Tag != nil {
				if tag, err := strconv.Unquote(f.Tag.Value); err == nil {
					for _, key := range []string{"msgpack", "json", "yaml"} {
						if name, _, _ := strings.Cut(reflect.StructTag(tag).Get(key), ","); name != "" && name != "-" {
							if _, dup := gt.members[name]; !dup {
								gt.members[name] = f.Type
							}
						}
					}
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			if len(m.Names) == 0 {
				gt.embeds = append(gt.embeds, m.Type)
				continue
			}
			for _, n := range m.Names {
				gt.members[n.Name] = nil
			}
		}
	}
}

// embeddedName is the field name of an embedded type.
func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	}
	return ""
}

// addCommands records the command names a binary's file dispatches on.
func addCommands(ix *moduleIndex, dir string, f *ast.File) {
	isCommand := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return e.Name == "cmd" || e.Name == "command"
		case *ast.IndexExpr:
			id, ok := e.X.(*ast.Ident)
			return ok && id.Name == "args"
		}
		return false
	}
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && !strings.HasPrefix(v, "-") {
				if ix.commandNames[dir] == nil {
					ix.commandNames[dir] = map[string]bool{}
				}
				ix.commandNames[dir][v] = true
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if name.Name == "usage" && i < len(n.Values) {
					if v, ok := ix.stringValue(nil, n.Values[i]); ok {
						ix.usages[dir] = append(ix.usages[dir], v)
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Usage" && len(n.Args) == 2 {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "cli" {
					if v, ok := ix.stringValue(nil, n.Args[1]); ok {
						ix.usages[dir] = append(ix.usages[dir], v)
					}
				}
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isCommand(n.Tag) {
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						add(e)
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL && isCommand(n.X) {
				add(n.Y)
			}
		}
		return true
	})
}

// addFlags adds to set the names of the flags f defines on a
// *flag.FlagSet: calls of a FlagSet's defining methods on a variable
// declared as *flag.FlagSet or assigned from flag.NewFlagSet, and of the
// flag package's own, with the name a string literal or a string constant
// of the module.
func addFlags(t *testing.T, ix *moduleIndex, p *goPackage, f *ast.File, set map[string]bool) {
	t.Helper()
	isFlagSet := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "flag" && sel.Sel.Name == "FlagSet"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var ftype *ast.FuncType
		var body *ast.BlockStmt
		switch n := n.(type) {
		case *ast.FuncDecl:
			ftype, body = n.Type, n.Body
		case *ast.FuncLit:
			ftype, body = n.Type, n.Body
		default:
			return true
		}
		if body == nil {
			return false
		}
		sets := map[string]bool{"flag": true}
		for _, fl := range ftype.Params.List {
			if isFlagSet(fl.Type) {
				for _, n := range fl.Names {
					sets[n.Name] = true
				}
			}
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, r := range n.Rhs {
					call, ok := r.(*ast.CallExpr)
					if !ok || i >= len(n.Lhs) {
						continue
					}
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "flag" && sel.Sel.Name == "NewFlagSet" {
							if id, ok := n.Lhs[i].(*ast.Ident); ok {
								sets[id.Name] = true
							}
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				arg, defines := goFlagMethods[sel.Sel.Name]
				if !ok || !defines || !sets[x.Name] || arg >= len(n.Args) {
					return true
				}
				name, ok := ix.stringValue(p, n.Args[arg])
				if !ok {
					t.Errorf("%s: a flag's name %s is neither a string literal nor a string constant",
						p.dir, fmt.Sprintf("%T", n.Args[arg]))
					return true
				}
				set[name] = true
			}
			return true
		})
		return false
	})
}

// stringValue is the value of a string literal or of a string constant of
// the module named by e in package p.
func (ix *moduleIndex) stringValue(p *goPackage, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			v, err := strconv.Unquote(e.Value)
			return v, err == nil
		}
	case *ast.Ident:
		if p == nil {
			return "", false
		}
		v, ok := p.consts[e.Name]
		return v, ok
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if q := ix.pkgs[x.Name]; q != nil {
				v, ok := q.consts[e.Sel.Name]
				return v, ok
			}
		}
	}
	return "", false
}

// member reports whether type name of p has the member (field or method,
// promoted ones included), and its type expression if it is a field. known
// is false when the type embeds something this index cannot see into (a
// type of another module), so that a missing member cannot be told.
func (ix *moduleIndex) member(p *goPackage, name, member string, depth int) (typ ast.Expr, pkg *goPackage, found, known bool) {
	gt := p.types[name]
	if gt == nil || depth > 10 {
		return nil, nil, false, gt != nil
	}
	if gt.alias != nil {
		q, n, ok := ix.namedType(p, gt.alias)
		if !ok {
			return nil, nil, false, false
		}
		return ix.member(q, n, member, depth+1)
	}
	if e, ok := gt.members[member]; ok {
		return e, p, true, true
	}
	known = true
	if gt.spec != nil {
		if _, ok := gt.spec.Type.(*ast.StructType); !ok {
			if _, ok := gt.spec.Type.(*ast.InterfaceType); !ok {
				// A defined type of another type (type T U) has U's fields,
				// and U's methods only if U is an interface: a method found
				// on U is left undecided.
				if q, n, ok := ix.namedType(p, gt.spec.Type); ok {
					if e, q2, found, known := ix.member(q, n, member, depth+1); found {
						if e != nil {
							return e, q2, true, true
						}
						return nil, nil, false, false
					} else if !known {
						return nil, nil, false, false
					}
				} else if !isBasic(gt.spec.Type) {
					return nil, nil, false, false
				}
			}
		}
	}
	for _, e := range gt.embeds {
		q, n, ok := ix.namedType(p, e)
		if !ok {
			known = false
			continue
		}
		if e, q2, found, k := ix.member(q, n, member, depth+1); found {
			return e, q2, true, true
		} else if !k {
			known = false
		}
	}
	return nil, nil, false, known
}

func isBasic(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && slices.Contains([]string{"bool", "string", "int", "int8", "int16", "int32", "int64", "uint", "uint8",
		"uint16", "uint32", "uint64", "uintptr", "float32", "float64", "byte", "rune", "any", "error"}, id.Name)
}

// namedType resolves a type expression to a named type of the module.
func (ix *moduleIndex) namedType(p *goPackage, e ast.Expr) (*goPackage, string, bool) {
	switch e := e.(type) {
	case *ast.StarExpr:
		return ix.namedType(p, e.X)
	case *ast.IndexExpr:
		return ix.namedType(p, e.X)
	case *ast.IndexListExpr:
		return ix.namedType(p, e.X)
	case *ast.Ident:
		if _, ok := p.types[e.Name]; ok {
			return p, e.Name, true
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if q := ix.pkgs[x.Name]; q != nil {
				if _, ok := q.types[e.Sel.Name]; ok {
					return q, e.Sel.Name, true
				}
			}
		}
	}
	return nil, "", false
}

// goRef matches a qualified Go name: a package name, an exported name and
// its selectors.
var goRef = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)((?:\.\w+)*)`)

// checkGoRef returns why the reference pkg.Name.Sel... names nothing of
// the module, or "" if it does (or cannot be told).
func (ix *moduleIndex) checkGoRef(p *goPackage, name string, sels []string) string {
	if isTestName(name) && p.testFuncs[name] {
		return ""
	}
	kind, ok := p.kinds[name]
	if !ok {
		return fmt.Sprintf("package %s (%s) has no %s", p.name, p.dir, name)
	}
	var cur ast.Expr
	curPkg := p
	typeName := ""
	switch kind {
	case token.TYPE:
		typeName = name
	case token.VAR:
		cur = p.decls[name]
	default:
		return "" // what a function or constant is selected on is not checked
	}
	path := p.name + "." + name
	for _, s := range sels {
		if typeName == "" {
			if cur == nil {
				return ""
			}
			q, n, ok := ix.namedType(curPkg, cur)
			if !ok {
				return ""
			}
			curPkg, typeName = q, n
		}
		e, q, found, known := ix.member(curPkg, typeName, s, 0)
		if !found {
			if !known {
				return ""
			}
			return fmt.Sprintf("%s has no field or method %s", path, s)
		}
		path += "." + s
		if e == nil { // a method: what follows is not checked
			return ""
		}
		cur, curPkg, typeName = e, q, ""
	}
	return ""
}

// typeRef matches an unqualified selector of an exported name:
// Client.Decide, Limits.MaxTurns.
var typeRef = regexp.MustCompile(`\b([A-Z]\w*)((?:\.\w+)+)`)

// checkTypeRef returns why Name.Sel... names nothing of the module, or ""
// if it does or cannot be told: when no package of the module declares
// Name, it is taken for another library's (KeyValue.Get), and when
// several do, it is stale only if the selector fits none of them.
func (ix *moduleIndex) checkTypeRef(name string, sels []string) string {
	var problems []string
	for _, pkg := range slices.Sorted(maps.Keys(ix.pkgs)) {
		p := ix.pkgs[pkg]
		if _, ok := p.kinds[name]; !ok {
			continue
		}
		problem := ix.checkGoRef(p, name, sels)
		if problem == "" {
			return ""
		}
		problems = append(problems, problem)
	}
	return strings.Join(problems, "; ")
}

func isTestName(s string) bool {
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return rest == "" && prefix != "Test" || rest != "" && (rest[0] == '_' || rest[0] >= 'A' && rest[0] <= 'Z' || rest[0] >= '0' && rest[0] <= '9')
		}
	}
	return false
}

// testName matches a test, benchmark, fuzz test or example name,
// optionally qualified by a package name.
var testName = regexp.MustCompile(`(?:\b([a-z][a-z0-9]*)\.)?\b((?:Test|Benchmark|Fuzz|Example)[A-Z0-9_]\w*)`)

// repoPath matches a path of the repository in a code span.
var repoPath = regexp.MustCompile(`^(?:\./)?((?:pkg|cmd|docs|scripts|deploy|examples|internal)/[\w.<>*/-]*)$`)

// placeholder matches a <placeholder> in a documented path.
var placeholder = regexp.MustCompile(`<[^>/]+>`)

// pathExists reports whether the documented path exists: placeholders
// stand for any name, and a path under internal/ may be given relative to
// the package it is internal to (pkg/lisp's internal/core).
func (ix *moduleIndex) pathExists(p string) bool {
	p = strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/") // ./pkg/fleet/...: a package pattern
	glob := placeholder.ReplaceAllString(p, "*")
	try := []string{glob}
	if strings.HasPrefix(p, "internal/") {
		if ix.internalParents == nil {
			ix.internalParents = []string{}
			_ = walkRepo(ix.root, func(path string, d fs.DirEntry) error {
				if d.IsDir() && d.Name() == "internal" && path != filepath.Join(ix.root, "internal") {
					ix.internalParents = append(ix.internalParents, relSlash(ix.root, filepath.Dir(path)))
				}
				return nil
			})
		}
		for _, dir := range ix.internalParents {
			try = append(try, dir+"/"+glob)
		}
	}
	for _, g := range try {
		if m, _ := filepath.Glob(filepath.Join(ix.root, filepath.FromSlash(g))); len(m) > 0 {
			return true
		}
	}
	return false
}

// commandLine returns a pattern matching how a doc runs one of the
// binaries: `dispatcher local`, `go run ./cmd/dispatcher local`,
// `PTC_SLOTS=4 worker`, at the start of a span or line or after a shell
// separator, so that prose in a code block (worker storing the result)
// is not taken for a command.
func commandLine(bins []string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^\s*|&&\s*|;\s*|\|\s*|\s--\s+)(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:go run \./cmd/|(?:\./|bin/)?)(` +
		strings.Join(bins, "|") + `)(?:\s|$)`)
}

// subject matches a NATS subject or metadata key of the fleet:
// mission.result.<submitter>.<id>, ptc.heartbeat. (A tool's subject,
// tool.<service>.<tool>, is named by its service.)
var subject = regexp.MustCompile(`(?:^|[^\w.])((?:mission|ptc)\.[\w.<>*-]*[\w>*])`)

// fileExtensions end a file name that looks like a subject (mission.go).
var fileExtensions = map[string]bool{"go": true, "md": true, "yaml": true, "yml": true, "json": true, "sh": true,
	"txt": true, "mjs": true, "js": true, "ts": true}

// spellsSubject reports whether a string literal of the module starts with
// the subject words (followed by no more of the word), or is two or more
// of the first words, with or without the dot that follows them
// ("mission.result." + submitter, "tool.shop" + "." + name).
func (ix *moduleIndex) spellsSubject(words string) bool {
	if ix.sortedLiterals == nil {
		ix.sortedLiterals = slices.Sorted(maps.Keys(ix.literals))
	}
	i, _ := slices.BinarySearch(ix.sortedLiterals, words)
	for _, l := range ix.sortedLiterals[i:] {
		if !strings.HasPrefix(l, words) {
			break
		}
		if len(l) == len(words) || !isWordByte(l[len(words)]) {
			return true
		}
	}
	// A literal of two words or more that the code extends with the rest.
	for i := strings.LastIndex(words, "."); strings.Contains(words[:max(i, 0)], "."); i = strings.LastIndex(words[:i], ".") {
		if ix.literals[words[:i+1]] || ix.literals[words[:i]] {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// subjectWord matches a literal word of a subject.
var subjectWord = regexp.MustCompile(`^[a-z_]+$`)

// ptcName matches a name of the fleet's in snake case: a metric
// (ptc_missions_started_total) or a build tag (ptc_swissmaps).
var ptcName = regexp.MustCompile(`\bptc_[a-z0-9_]*[a-z0-9]\b`)

// ptcHeader matches the name of a NATS header of the fleet's own, which
// the code spells out whole.
var ptcHeader = regexp.MustCompile(`\bPtc-[A-Za-z]+(?:-[A-Za-z]+)*(?:-?\*)?`)

// commandWord matches the command a command line names first, alone or
// as alternatives.
var commandWord = regexp.MustCompile(`^[a-z]+(?:[|/][a-z]+)*(?:$|\s)`)

// flagToken matches a flag argument of a command line.
var flagToken = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(?:=.*)?$`)

// standaloneFlag matches a code span that is one flag with perhaps a
// value: `-slots`, `--args`, `-label team=shop`.
var standaloneFlag = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(?:[= ].*)?$`)

// foreignFlags are flags named alone in a code span that belong to other
// programs than the module's binaries, or that a doc names to say they do
// not exist.
var foreignFlags = map[string]string{
	"race":      "go test",
	"count":     "go test",
	"bench":     "go test",
	"run":       "go test",
	"benchtime": "go test",
	"short":     "go test",
	"parallel":  "go test",
	"tags":      "go build and go test",
	"jsz":       "prometheus-nats-exporter",
	"pro":       "a model family's suffix (o1-pro), not a flag",
	"in":        "the Clojure -in forms (assoc-in, update-in), not a flag",
	"version":   "docs/operations.md says the binaries lack it",
}

// TestDocsReferencesExist reads every doc and the binaries' usage texts
// and fails on a name of the repository they give that does not exist
// (the overview at the top of this file). The module is read once for
// both.
func TestDocsReferencesExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ix := indexModule(t, root)
	if len(ix.pkgs) < 20 || len(ix.testFuncs) < 500 {
		t.Fatalf("indexed %d packages and %d test functions: is the module root two levels up?", len(ix.pkgs), len(ix.testFuncs))
	}
	for _, bin := range []string{"cmd/dispatcher", "cmd/worker", "cmd/shoptools", "cmd/mcpbridge"} {
		if len(ix.flags[bin]) < 3 || !ix.flags[bin]["nats-url"] {
			t.Fatalf("%s: read flags %v, want at least -nats-url", bin, ix.flags[bin])
		}
	}
	t.Run("docs", func(t *testing.T) {
		for _, doc := range docFiles(t, ix.root) {
			raw, err := os.ReadFile(filepath.Join(ix.root, doc))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range docSpans(string(raw)) {
				for _, problem := range ix.checkSpan(s) {
					t.Errorf("%s:%d: `%s`: %s", doc, s.line, strings.TrimSpace(s.text), problem)
				}
			}
			for _, problem := range checkLinks(ix.root, doc, string(raw)) {
				t.Error(problem)
			}
			for _, problem := range ix.checkMarkdownNames(doc, string(raw)) {
				t.Error(problem)
			}
			for _, problem := range ix.checkGoBlocks(doc, string(raw)) {
				t.Error(problem)
			}
		}
	})
	// The binaries' usage texts (dispatcher's command list, the
	// synopses) name flags and commands they have.
	t.Run("usage texts", func(t *testing.T) {
		for _, bin := range []string{"cmd/dispatcher", "cmd/worker", "cmd/shoptools", "cmd/mcpbridge"} {
			if len(ix.usages[bin]) == 0 {
				t.Fatalf("read no usage text of %s", bin)
			}
		}
		for _, problem := range ix.checkUsages() {
			t.Error(problem)
		}
	})
}

// goBlock is a ```go code block of a doc and the line before its first.
type goBlock struct {
	line int
	src  string
}

// goBlocks returns the Go code blocks of a markdown text.
func goBlocks(text string) []goBlock {
	var out []goBlock
	var cur *goBlock
	var lines []string
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case cur == nil && (t == "```go" || t == "```golang"):
			cur, lines = &goBlock{line: i + 1}, nil
		case cur != nil && strings.HasPrefix(t, "```"):
			cur.src = strings.Join(lines, "\n")
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, l)
		}
	}
	return out
}

// parseGoBlock parses a doc's Go fragment: a file, declarations, or
// statements (as a function body), with each "..." (code left out) taken
// for an identifier.
// The int is the number of lines added before the block's first.
func parseGoBlock(fset *token.FileSet, src string) (*ast.File, int, error) {
	src = strings.ReplaceAll(src, "...", "_x")
	if strings.HasPrefix(strings.TrimSpace(src), "package ") {
		f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
		return f, 0, err
	}
	f, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+src+"\n}\n", parser.SkipObjectResolution)
	if err == nil {
		return f, 2, nil
	}
	f, err2 := parser.ParseFile(fset, "", "package p\n"+src+"\n", parser.SkipObjectResolution)
	if err2 != nil {
		return nil, 0, err
	}
	return f, 1, nil
}

// checkGoBlocks returns what is stale in the Go code blocks of doc: a
// name of a module package it selects (fleet.NewWorker) that the package
// lacks, and a field of a module struct it sets in a composite literal
// (agent.Spec{Prompt: ...}) that the struct lacks. A block that does not
// parse is reported too.
func (ix *moduleIndex) checkGoBlocks(doc, text string) []string {
	var out []string
	for _, b := range goBlocks(text) {
		fset := token.NewFileSet()
		f, offset, err := parseGoBlock(fset, b.src)
		if err != nil {
			out = append(out, fmt.Sprintf("%s:%d: the Go block parses neither as a file, nor as declarations, nor as statements", doc, b.line))
			continue
		}
		// A name the block declares itself is not a package.
		local := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							local[id.Name] = true
						}
					}
				}
			case *ast.RangeStmt:
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
						local[id.Name] = true
					}
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					local[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					local[id.Name] = true
				}
			}
			return true
		})
		pkgOf := func(e ast.Expr) *goPackage {
			if id, ok := e.(*ast.Ident); ok && !local[id.Name] {
				return ix.pkgs[id.Name]
			}
			return nil
		}
		line := func(n ast.Node) int { return b.line + fset.Position(n.Pos()).Line - offset }
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if p := pkgOf(n.X); p != nil {
					if problem := ix.checkGoRef(p, n.Sel.Name, nil); problem != "" {
						out = append(out, fmt.Sprintf("%s:%d: %s.%s: %s", doc, line(n), p.name, n.Sel.Name, problem))
					}
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				p := pkgOf(sel.X)
				if p == nil {
					return true
				}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, ok := kv.Key.(*ast.Ident)
					if !ok {
						continue
					}
					if problem := ix.checkGoRef(p, sel.Sel.Name, []string{key.Name}); problem != "" {
						out = append(out, fmt.Sprintf("%s:%d: %s.%s{%s: ...}: %s", doc, line(kv), p.name, sel.Sel.Name, key.Name, problem))
					}
				}
			}
			return true
		})
	}
	return out
}

// mdLink matches the target of a markdown link or image.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// urlScheme matches the start of an absolute URL (https:, mailto:).
var urlScheme = regexp.MustCompile(`^[a-z][a-z+.-]*:`)

// mdHeading matches a markdown heading.
var mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// proseLines yields the lines of a markdown text outside its fenced code
// blocks, with their index.
func proseLines(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fenced := false
		for i, l := range strings.Split(text, "\n") {
			if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				fenced = !fenced
				continue
			}
			if !fenced && !yield(i, l) {
				return
			}
		}
	}
}

// checkLinks returns the links of doc (a path relative to root) whose file
// does not exist or whose #anchor is no heading of the target.
func checkLinks(root, doc, text string) []string {
	var out []string
	for i, l := range proseLines(text) {
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if urlScheme.MatchString(target) {
				continue // https:, mailto:
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
			}
			raw, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				if _, statErr := os.Stat(filepath.Join(root, path)); statErr != nil {
					out = append(out, fmt.Sprintf("%s:%d: link %s: no file %s", doc, i+1, target, path))
				}
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !slices.Contains(headingAnchors(string(raw)), anchor) {
				out = append(out, fmt.Sprintf("%s:%d: link %s: %s has no heading #%s", doc, i+1, target, path, anchor))
			}
		}
	}
	return out
}

// headingAnchors lists the anchors GitHub gives the headings of a markdown
// text: lower case, punctuation dropped, spaces as hyphens, a repeated one
// numbered -1, -2, ...
func headingAnchors(text string) []string {
	var out []string
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || r == '-':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n, dup := seen[a]; dup {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n+1)
		} else {
			seen[a] = 0
		}
		out = append(out, a)
	}
	return out
}

// mdName matches the name of a markdown file in text, with its directory
// if it has one: docs/missions.md, README.md.
var mdName = regexp.MustCompile(`(?:^|[^\w/.-])((?:[\w.-]+/)*[\w-]+\.md)\b`)

// prosePath matches a repository path in text outside code spans.
var prosePath = regexp.MustCompile(`(?:^|[^\w/.-])((?:pkg|cmd|docs|scripts|deploy|examples|internal)/[\w./<>*-]*\w)`)

// codeSpans matches an inline code span on one line.
var codeSpans = regexp.MustCompile("(`+)[^`]*?`+")

// checkMarkdownNames returns the repository paths doc names in its text
// that do not exist, and the markdown files it names outside code blocks
// that do not: a path from the repository root or from the doc's
// directory, a bare name anywhere in the repository.
func (ix *moduleIndex) checkMarkdownNames(doc, text string) []string {
	var out []string
	for i, l := range proseLines(text) {
		if !strings.Contains(l, "/") && !strings.Contains(l, ".md") {
			continue // neither a path nor a markdown file: spare the patterns
		}
		for _, m := range prosePath.FindAllStringSubmatch(codeSpans.ReplaceAllString(l, ""), -1) {
			p := m[1]
			if slash := strings.LastIndex(p, "/"); goRef.MatchString(p[slash+1:]) {
				p = p[:slash+1] + strings.SplitN(p[slash+1:], ".", 2)[0] // pkg/fleet.ToolService: the package
			}
			if !strings.HasSuffix(p, ".md") && !ix.pathExists(p) {
				out = append(out, fmt.Sprintf("%s:%d: %s: no such file or directory in the repository", doc, i+1, m[1]))
			}
		}
		for _, m := range mdName.FindAllStringSubmatch(l, -1) {
			name := m[1]
			if strings.Contains(name, "/") {
				if !ix.pathExists(name) && !ix.pathExists(path.Join(path.Dir(doc), name)) {
					out = append(out, fmt.Sprintf("%s:%d: %s: no such file in the repository", doc, i+1, name))
				}
				continue
			}
			if !ix.fileNamed(name) {
				out = append(out, fmt.Sprintf("%s:%d: %s: no file of that name in the repository", doc, i+1, name))
			}
		}
	}
	return out
}

// fileNamed reports whether a file of that name is anywhere in the
// repository (outside node_modules and hidden directories).
func (ix *moduleIndex) fileNamed(name string) bool {
	if ix.fileNames == nil {
		ix.fileNames = map[string]bool{}
		_ = walkRepo(ix.root, func(_ string, d fs.DirEntry) error {
			ix.fileNames[d.Name()] = true
			return nil
		})
	}
	return ix.fileNames[name]
}

// checkSpan returns what is stale in one code span.
func (ix *moduleIndex) checkSpan(s span) []string {
	var out []string
	text := s.text
	if !s.fenced {
		field := strings.TrimRight(strings.Fields(text + " ")[0], ":,")
		field, _, _ = strings.Cut(field, "#")
		if i := strings.LastIndex(field, ":"); i > 0 {
			if _, err := strconv.Atoi(field[i+1:]); err == nil {
				field = field[:i] // file.go:123
			}
		}
		if m := repoPath.FindStringSubmatch(field); m != nil {
			dir, base := path.Split(m[1])
			if r := goRef.FindStringSubmatch(base); r != nil && r[0] == base {
				// internal/httpx.Endpoint: a package by its directory,
				// and a name of it.
				p := ix.pkgs[r[1]]
				switch {
				case p == nil || !strings.HasSuffix("/"+p.dir, "/"+dir+r[1]):
					out = append(out, fmt.Sprintf("no package directory %s%s in the repository", dir, r[1]))
				default:
					if problem := ix.checkGoRef(p, r[2], selectors(r[3])); problem != "" {
						out = append(out, problem)
					}
				}
			} else if !ix.pathExists(m[1]) {
				out = append(out, "no such file or directory in the repository")
			}
		}
		for _, m := range findAll(testName, text, "Test", "Benchmark", "Fuzz", "Example") {
			qual, name := m[1], m[2]
			if p := ix.pkgs[qual]; p != nil {
				if !p.testFuncs[name] && p.kinds[name] == token.ILLEGAL {
					out = append(out, fmt.Sprintf("package %s (%s) has no %s", qual, p.dir, name))
				}
				continue
			}
			if qual == "" && !ix.testFuncs[name] && !ix.topLevel[name] {
				out = append(out, fmt.Sprintf("no function or type %s in the module", name))
			}
		}
		for _, m := range goRef.FindAllStringSubmatchIndex(text, -1) {
			if m[0] > 0 && strings.ContainsAny(text[m[0]-1:m[0]], "./-_") {
				continue
			}
			p := ix.pkgs[text[m[2]:m[3]]]
			if p == nil {
				continue
			}
			name := text[m[4]:m[5]]
			if isTestName(name) {
				continue // checked above
			}
			sels := selectors(text[m[6]:m[7]])
			if m[1] < len(text) && text[m[1]] == '*' && len(sels) == 0 {
				// messages.Default*: a family of names.
				if !slices.ContainsFunc(slices.Collect(maps.Keys(p.kinds)), func(d string) bool { return strings.HasPrefix(d, name) }) {
					out = append(out, fmt.Sprintf("package %s (%s) has no name starting with %s", p.name, p.dir, name))
				}
				continue
			}
			if problem := ix.checkGoRef(p, name, sels); problem != "" {
				out = append(out, problem)
			}
		}
		for _, m := range typeRef.FindAllStringSubmatchIndex(text, -1) {
			if m[0] > 0 && strings.ContainsAny(text[m[0]-1:m[0]], "./-_") {
				continue
			}
			if problem := ix.checkTypeRef(text[m[2]:m[3]], selectors(text[m[4]:m[5]])); problem != "" {
				out = append(out, problem)
			}
		}
		if m := standaloneFlag.FindStringSubmatch(text); m != nil {
			if _, foreign := foreignFlags[m[1]]; !foreign && !ix.anyFlag(m[1]) {
				out = append(out, fmt.Sprintf("no binary of cmd/ has a flag -%s", m[1]))
			}
		}
	}
	if i := strings.Index(text, "go test "); i >= 0 {
		out = append(out, ix.checkGoTest(text[i:])...)
	}
	if s.fenced && strings.Contains(text, "go test ") {
		// A test command of a code block: the tests it runs exist.
		for _, m := range testName.FindAllStringSubmatch(text, -1) {
			if m[1] == "" && !ix.testFuncs[m[2]] {
				out = append(out, fmt.Sprintf("no test function %s in the module", m[2]))
			}
		}
	}
	// Packages and files a command names (go test ./pkg/fleet/...).
	for i, arg := range strings.Fields(text) {
		if i == 0 && !s.fenced {
			continue // the span's path, checked above
		}
		rest, ok := strings.CutPrefix(strings.Trim(arg, "'\"(),;"), "./")
		if m := repoPath.FindStringSubmatch(rest); ok && m != nil && !ix.pathExists(m[1]) {
			out = append(out, fmt.Sprintf("no such file or directory ./%s in the repository", rest))
		}
	}
	for _, h := range findAllString(ptcHeader, text, "Ptc-") {
		if prefix, ok := strings.CutSuffix(h, "*"); ok { // Ptc-Parked-*
			if !slices.ContainsFunc(slices.Collect(maps.Keys(ix.literals)), func(l string) bool { return strings.HasPrefix(l, prefix) }) {
				out = append(out, fmt.Sprintf("no string starting with %q in the module's code", prefix))
			}
			continue
		}
		if !ix.literals[h] {
			out = append(out, fmt.Sprintf("no string %q in the module's code", h))
		}
	}
	for _, name := range findAllString(ptcName, text, "ptc_") {
		// A metric (a histogram's series too), a bucket or a build tag.
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && ix.literals[b] {
				base = b
			}
		}
		if !ix.literals[base] && !ix.buildTags[base] {
			out = append(out, fmt.Sprintf("no string %q in the module's code", name))
		}
	}
	for _, m := range findAll(subject, text, "mission.", "ptc.") {
		// The words before the first placeholder or wildcard are the
		// subject's literal part: the code spells it out.
		var words []string
		for _, w := range strings.Split(m[1], ".") {
			if !subjectWord.MatchString(w) {
				break
			}
			words = append(words, w)
		}
		if len(words) < 2 {
			continue
		}
		prefix := strings.Join(words, ".")
		if len(words) == len(strings.Split(m[1], ".")) && fileExtensions[words[len(words)-1]] {
			continue // mission.go
		}
		if !ix.spellsSubject(prefix) {
			out = append(out, fmt.Sprintf("no subject %s in the module's code", prefix))
		}
	}
	for _, v := range findAllString(envVar, text, envPrefix) {
		if !ix.knownEnv(v) {
			out = append(out, fmt.Sprintf("no binary reads %s", v))
		}
	}
	for _, m := range ix.commands.FindAllStringSubmatchIndex(text, -1) {
		bin := "cmd/" + text[m[2]:m[3]]
		rest := text[m[1]:]
		if names := ix.commandNames[bin]; names != nil {
			// dispatcher approve|deny, dispatcher wait/status/trace
			if sub := strings.TrimSpace(commandWord.FindString(rest)); sub != "" {
				for _, w := range strings.FieldsFunc(sub, func(r rune) bool { return r == '|' || r == '/' }) {
					if !names[w] {
						out = append(out, fmt.Sprintf("%s has no command %s", bin, w))
					}
				}
			}
		}
		// The command line ends at a shell separator or at prose.
		if i := strings.IndexAny(rest, ";&|`#"); i >= 0 {
			rest = rest[:i]
		}
		for _, arg := range strings.Fields(rest) {
			if f := flagToken.FindStringSubmatch(arg); f != nil && !ix.flags[bin][f[1]] {
				out = append(out, fmt.Sprintf("%s has no flag -%s", bin, f[1]))
			}
		}
	}
	return out
}

// knownEnv reports whether v is a variable the binaries read, or (ending
// in _) the prefix of some.
func (ix *moduleIndex) knownEnv(v string) bool {
	if ix.env[v] || ix.modelEnvPrefix != "" && strings.HasPrefix(v, ix.modelEnvPrefix) && v != ix.modelEnvPrefix {
		return true
	}
	if strings.HasSuffix(v, "_") {
		for e := range ix.env {
			if strings.HasPrefix(e, v) {
				return true
			}
		}
		return v == ix.modelEnvPrefix
	}
	return false
}

// checkGoTest returns what a go test command line runs that does not
// exist: a -bench pattern that matches no benchmark of the packages it
// names, and a -run pattern (of a command without -bench, where -run
// often excludes all tests on purpose) that matches no test. A pattern's
// first level (before a /) is matched against the functions' names as
// go test does; sub-tests are not known here.
func (ix *moduleIndex) checkGoTest(line string) []string {
	if i := strings.IndexAny(line, ";&|#"); i >= 0 {
		line = line[:i]
	}
	args := strings.Fields(line)[2:]
	patterns := map[string]string{}
	var dirs []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		if name, v, ok := strings.Cut(a, "="); ok && (name == "run" || name == "bench") && strings.HasPrefix(args[i], "-") {
			patterns[name] = strings.Trim(v, `'"`)
			continue
		}
		if (a == "run" || a == "bench") && strings.HasPrefix(args[i], "-") && i+1 < len(args) {
			patterns[a] = strings.Trim(args[i+1], `'"`)
			i++
			continue
		}
		if rest, ok := strings.CutPrefix(args[i], "./"); ok && rest != "..." {
			rest = strings.TrimSuffix(rest, "/")
			if base, ok := strings.CutSuffix(rest, "/..."); ok {
				for dir := range ix.dirs {
					if dir == base || strings.HasPrefix(dir, base+"/") {
						dirs = append(dirs, dir)
					}
				}
			} else {
				dirs = append(dirs, rest)
			}
		}
	}
	if len(dirs) == 0 {
		return nil // the packages are not known
	}
	slices.Sort(dirs)
	var out []string
	check := func(flag string, prefixes ...string) {
		pat, ok := patterns[flag]
		if !ok {
			return
		}
		first, _, _ := strings.Cut(pat, "/")
		re, err := regexp.Compile(first)
		if err != nil {
			return
		}
		for _, dir := range dirs {
			if p := ix.dirs[dir]; p != nil {
				for name := range p.testFuncs {
					if slices.ContainsFunc(prefixes, func(pre string) bool { return strings.HasPrefix(name, pre) }) && re.MatchString(name) {
						return
					}
				}
			}
		}
		out = append(out, fmt.Sprintf("-%s %s matches no function of %s", flag, pat, strings.Join(dirs, ", ")))
	}
	check("bench", "Benchmark")
	if _, bench := patterns["bench"]; !bench {
		check("run", "Test", "Fuzz", "Example")
	}
	return out
}

// findAll is re.FindAllStringSubmatch(text), skipped when text holds
// none of the words the matches start with.
func findAll(re *regexp.Regexp, text string, words ...string) [][]string {
	if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(text, w) }) {
		return nil
	}
	return re.FindAllStringSubmatch(text, -1)
}

// findAllString is findAll for whole matches.
func findAllString(re *regexp.Regexp, text string, words ...string) []string {
	if !slices.ContainsFunc(words, func(w string) bool { return strings.Contains(text, w) }) {
		return nil
	}
	return re.FindAllString(text, -1)
}

// selectors splits ".A.B" into A and B.
func selectors(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s[1:], ".")
}

func (ix *moduleIndex) anyFlag(name string) bool {
	for _, set := range ix.flags {
		if set[name] {
			return true
		}
	}
	return false
}

// usageFlag matches a flag a usage text names.
var usageFlag = regexp.MustCompile(`(?:^|[\s(,\[])--?([a-z][a-z0-9-]*)`)

// usageCommand matches a command a usage text lists: an indented line
// that starts with the command's name.
var usageCommand = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)\b`)

// checkUsages returns what is stale in the usage texts.
func (ix *moduleIndex) checkUsages() []string {
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(ix.usages)) {
		for _, u := range ix.usages[dir] {
			for _, m := range usageFlag.FindAllStringSubmatch(u, -1) {
				if !ix.flags[dir][m[1]] {
					out = append(out, fmt.Sprintf("%s: the usage names -%s, which is no flag of it", dir, m[1]))
				}
			}
			if names := ix.commandNames[dir]; names != nil {
				for _, m := range usageCommand.FindAllStringSubmatch(u, -1) {
					if !names[m[1]] {
						out = append(out, fmt.Sprintf("%s: the usage lists command %s, which it does not dispatch on", dir, m[1]))
					}
				}
			}
		}
	}
	return out
}

// TestDocsCheckerFindsStaleReferences checks the checker on a small
// module of its own: each stale reference is reported, and the live ones
// and the exceptions are not.
func TestDocsCheckerFindsStaleReferences(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pkg/shop/shop.go": `package shop

import "example.com/other"

// Base is embedded below.
type Base struct{ ID string }

func (Base) Describe() string { return "" }

type Limits struct{ MaxItems int }

type Order struct {
	Base
	Limits Limits
	Items  []string ` + "`msgpack:\"items,omitempty\"`" + `
}

func (o *Order) Total() int { return 0 }

type Wrapped struct{ other.Thing }

type Alias = Order

type Shape interface{ Area() float64 }

var Default Order

const DefaultCount, DefaultName = 3, "x"

const HeaderAttempt = "Ptc-Attempt"

var ordersMetric = "ptc_orders_total"

var subjects = []string{"mission.result." + "x", "mission.stored"}

func Open() *Order { return nil }
`,
		"pkg/shop/shop_test.go": `package shop_test

import "testing"

func TestOpen(t *testing.T) {}
func BenchmarkOpen(b *testing.B) {}
func Example_open() {}
`,
		"internal/cli/cli.go": `package cli

import "flag"

const URLFlag = "nats-url"

func Register(fs *flag.FlagSet) { fs.String(URLFlag, "", "") }
`,
		"cmd/tool/main.go": `package main

import (
	"flag"

	"example.com/m/internal/cli"
)

func main() {
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	var n int
	fs.IntVar(&n, "slots", 1, "")
	set(fs)
	cli.Register(fs)
}

func set(f *flag.FlagSet) { f.Bool("ui", false, "") }

const usage = ` + "`" + `usage: tool <command> [flags]
  run     run it; -slots N, -ui
  start   not a command; -bogus
` + "`" + `

func dispatch(cmd string) {
	switch cmd {
	case "run", "stop", "-h":
	}
}
`,
		"pkg/agent/llm/llmconfig/llmconfig.go": "package llmconfig\n\nconst EnvPrefix = \"PTC_MODEL_\"\n",
		"pkg/shop/env_test.go":                 "package shop\n\nconst profiles = \"set PTC_TEST_PROFILES=1\"\n",
		"docs/a.md":                            "",
		"pkg/shop/internal/x/doc.go":           "package x\n",
		"pkg/shop/custom.go":                   "//go:build ptc_custom\n\npackage shop\n",
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix := indexModule(t, root)
	if want := map[string]bool{"h": true, "help": true, "nats-url": true, "slots": true, "ui": true, "version": true}; !maps.Equal(ix.flags["cmd/tool"], want) {
		t.Fatalf("flags of cmd/tool: %v, want %v", ix.flags["cmd/tool"], want)
	}
	for _, tt := range []struct {
		span string
		want []string // problems, in order; none for a live reference
	}{
		{"docs/a.md", nil},
		{"docs/a.md#section", nil},
		{"docs/b.md#section", []string{"no such file or directory in the repository"}},
		{"docs/b.md", []string{"no such file or directory in the repository"}},
		{"pkg/shop/shop.go:12", nil},
		{"pkg/<name>/shop_test.go", nil},
		{"pkg/shop/", nil},
		{"./pkg/shop/...", nil},
		{"cmd/...", nil},
		{"./pkg/store/...", []string{"no such file or directory in the repository"}},
		{"internal/x", nil},
		{"internal/y", []string{"no such file or directory in the repository"}},
		{"internal/cli.URLFlag", nil},
		{"internal/cli.Missing", []string{"package cli (internal/cli) has no Missing"}},
		{"TestOpen", nil},
		{"go test -run 'TestOpen|TestClose' ./pkg/shop", []string{"no function or type TestClose in the module"}},
		{"shop.BenchmarkOpen", nil},
		{"shop.BenchmarkClose", []string{"package shop (pkg/shop) has no BenchmarkClose"}},
		{"Example_open", nil},
		{"TestCase", []string{"no function or type TestCase in the module"}},
		{"testing.BenchmarkResult", nil},
		{"shop.Open(ctx)", nil},
		{"shop.Close", []string{"package shop (pkg/shop) has no Close"}},
		{"shop.Order.Total", nil},
		{"shop.Order.Items", nil},
		{"shop.Order.ID", nil},
		{"shop.Order.Describe", nil},
		{"shop.Order.Limits.MaxItems", nil},
		{"shop.Order.Limits.MinItems", []string{"shop.Order.Limits has no field or method MinItems"}},
		{"shop.Order.Sum", []string{"shop.Order has no field or method Sum"}},
		{"shop.Alias.Total", nil},
		{"shop.Alias.Sum", []string{"shop.Alias has no field or method Sum"}},
		{"shop.Shape.Area", nil},
		{"shop.Shape.Volume", []string{"shop.Shape has no field or method Volume"}},
		{"shop.Wrapped.Anything", nil},
		{"shop.Default.Items", nil},
		{"shop.Default.Count", []string{"shop.Default has no field or method Count"}},
		{"shop.Default*", nil},
		{"shop.Missing*", []string{"package shop (pkg/shop) has no name starting with Missing"}},
		{"other.Anything", nil},
		{"go test -race ./pkg/nope/...", []string{"no such file or directory ./pkg/nope/... in the repository"}},
		{"go test -run XXX -bench 'Op.n$' -benchtime 20x ./pkg/shop", nil},
		{"go test -run=^$ -bench=Close/small ./pkg/...", []string{"-bench Close/small matches no function of pkg/agent/llm/llmconfig, pkg/shop, pkg/shop/internal/x"}},
		{"go test -run 'Open|Close' ./pkg/shop", nil},
		{"go test -run Close ./pkg/shop ./cmd/tool", []string{"-run Close matches no function of cmd/tool, pkg/shop"}},
		{"go test -bench Open", nil},
		{"./pkg/nope", []string{"no such file or directory in the repository"}},
		{"shop.Order.items", nil},
		{"Order.Total", nil},
		{"Order.items", nil},
		{"Order.Sum", []string{"shop.Order has no field or method Sum"}},
		{"the `Order.Limits.MinItems` field", []string{"shop.Order.Limits has no field or method MinItems"}},
		{"KeyValue.Get", nil},
		{"PTC_SLOTS=4 PTC_NATS_URL=nats://x", nil},
		{"PTC_TEST_PROFILES", nil},
		{"PTC_MODEL_FAST", nil},
		{"PTC_MODEL_<NAME>", nil},
		{"PTC_NATS_*", nil},
		{"PTC_SLOT", []string{"no binary reads PTC_SLOT"}},
		{"PTC_MODEL", []string{"no binary reads PTC_MODEL"}},
		{"PTC_TLS_*", []string{"no binary reads PTC_TLS_"}},
		{"pkg/shop.Close", []string{"package shop (pkg/shop) has no Close"}},
		{"cmd/shop.Close", []string{"no package directory cmd/shop in the repository"}},
		{"-slots", nil},
		{"--ui", nil},
		{"-label team=shop", []string{"no binary of cmd/ has a flag -label"}},
		{"-race", nil},
		{"tool -slots 4 -ui -bogus x", []string{"cmd/tool has no flag -bogus"}},
		{"go run ./cmd/tool -h", nil},
		{"go run ./cmd/tool -max 3 | grep -v x", []string{"cmd/tool has no flag -max"}},
		{"make && PTC_UI=1 tool -nope", []string{"cmd/tool has no flag -nope"}},
		{"kubectl exec x -- tool -nope", []string{"cmd/tool has no flag -nope"}},
		{"the tool -nope", nil},
		{"Ptc-Attempt: 2", nil},
		{"ptc_orders_total", nil},
		{"mission.result.<submitter>.<id>", nil},
		{"mission.results.<submitter>", []string{"no subject mission.results in the module's code"}},
		{"mission.stored.*.*", nil},
		{"mission.stored.ops.x", nil},
		{"mission.result.x.y.record", nil},
		{"tool.billing.*", nil},
		{"ptc.heartbeat", []string{"no subject ptc.heartbeat in the module's code"}},
		{"mission.go", nil},
		{"ptc_orders_total_bucket", nil},
		{"ptc_custom", nil},
		{"ptc_order_total", []string{`no string "ptc_order_total" in the module's code`}},
		{"Ptc-Attempts", []string{`no string "Ptc-Attempts" in the module's code`}},
		{"Ptc-Att*", nil},
		{"Ptc-Attempt-*", []string{`no string starting with "Ptc-Attempt-" in the module's code`}},
		{"tool run -slots 1", nil},
		{"tool run|stop", nil},
		{"tool start", []string{"cmd/tool has no command start"}},
		{"tool run/halt", []string{"cmd/tool has no command halt"}},
		{"tool FILE", nil},
	} {
		got := ix.checkSpan(span{text: tt.span})
		if !slices.Equal(got, tt.want) {
			t.Errorf("`%s`: problems %q, want %q", tt.span, got, tt.want)
		}
	}
	if got, want := ix.checkMarkdownNames("docs/b.md", "see docs/a.md, a.md, ../docs/a.md and STYLE.md\n```\nGONE.md\n```\nand docs/gone.md\n"+
		"pkg/shop, pkg/shop.Order, pkg/gone/x.go and `pkg/gone` (a span: checked as one)\n"), []string{
		"docs/b.md:1: STYLE.md: no file of that name in the repository",
		"docs/b.md:5: docs/gone.md: no such file in the repository",
		"docs/b.md:6: pkg/gone/x.go: no such file or directory in the repository",
	}; !slices.Equal(got, want) {
		t.Errorf("markdown names: problems %q, want %q", got, want)
	}
	// A block that declares a name of a package (the range variable)
	// is not checked for that package.
	goDoc := "text\n```go\no := shop.Open()\nx := shop.Order{Items: nil, Sum: 1}\nshop.Close(o, ...)\n" +
		"var l shop.Limits = shop.Limits{MaxItems: 1}\n```\n```go\nfor _, shop := range shops { shop.Anything() }\n```\n" +
		"```go\ntype T struct{ A shop.Base }\nfunc (T) M() { _ = shop.Gone }\n```\n```go\nfunc {\n```\n"
	if got, want := ix.checkGoBlocks("docs/b.md", goDoc), []string{
		"docs/b.md:4: shop.Order{Sum: ...}: shop.Order has no field or method Sum",
		"docs/b.md:5: shop.Close: package shop (pkg/shop) has no Close",
		"docs/b.md:13: shop.Gone: package shop (pkg/shop) has no Gone",
		"docs/b.md:15: the Go block parses neither as a file, nor as declarations, nor as statements",
	}; !slices.Equal(got, want) {
		t.Errorf("Go blocks: problems\n%q\nwant\n%q", got, want)
	}
	if got, want := ix.checkUsages(), []string{
		"cmd/tool: the usage names -bogus, which is no flag of it",
		"cmd/tool: the usage lists command start, which it does not dispatch on",
	}; !slices.Equal(got, want) {
		t.Errorf("usage problems %q, want %q", got, want)
	}
	for _, tt := range []struct {
		line string
		want []string
	}{
		{"go test -run 'TestOpen|TestGone' ./pkg/shop/...", []string{"no test function TestGone in the module"}},
		{"go test -race ./pkg/gone", []string{"no such file or directory ./pkg/gone in the repository"}},
		{"func TestGone(t *testing.T) {", nil},
		{"ls ./pkg/gone", []string{"no such file or directory ./pkg/gone in the repository"}},
		{"ls ./pkg/shop", nil},
		{"PTC_NOPE=1 go run ./cmd/tool -ui", []string{"no binary reads PTC_NOPE"}},
	} {
		if got := ix.checkSpan(span{text: tt.line, fenced: true}); !slices.Equal(got, tt.want) {
			t.Errorf("code block line %q: problems %q, want %q", tt.line, got, tt.want)
		}
	}
	if got := ix.checkSpan(span{text: "$ tool -nats-url x -nope", fenced: true}); !slices.Equal(got, []string{"cmd/tool has no flag -nope"}) {
		t.Errorf("fenced command line: problems %q", got)
	}
}

// TestDocLinks: a link to a missing file or to no heading of its target
// is reported; headings give GitHub's anchors.
func TestDocLinks(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"README.md":    "see [a](docs/a.md), [b](docs/b.md), [x](docs/a.md#adding-a-tool-pkgfleet), [l](docs/a.md#limits-1), [y](docs/a.md#gone), [z](https://example.com/x) [top](#start)\n",
		"docs/a.md":    "# Start\n\n## Adding a tool (`pkg/fleet`)\n\n```\n# not a heading\n```\n## Limits\n## Limits\n",
		"docs/img.png": "",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := checkLinks(root, "README.md", string(raw))
	want := []string{
		"README.md:1: link docs/b.md: no file docs/b.md",
		"README.md:1: link docs/a.md#gone: docs/a.md has no heading #gone",
		"README.md:1: link #start: README.md has no heading #start",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems\n%q\nwant\n%q", got, want)
	}
	a, err := os.ReadFile(filepath.Join(root, "docs", "a.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := headingAnchors(string(a)), []string{"start", "adding-a-tool-pkgfleet", "limits", "limits-1"}; !slices.Equal(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
}

// TestDocSpans: inline code spans with the line they start on, closed by
// a run of as many backquotes, within a paragraph; fenced blocks line by
// line.
func TestDocSpans(t *testing.T) {
	doc := "# Title `a`\n\ntext `b` and ``c ` d`` and `e\nf` end `unclosed\n\n`g`\n```sh\nrun `x`\n```\n"
	got := docSpans(doc)
	want := []span{
		{line: 1, text: "a"}, {line: 3, text: "b"}, {line: 3, text: "c ` d"}, {line: 3, text: "e f"},
		{line: 6, text: "g"}, {line: 8, text: "run `x`", fenced: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans\n%+v\nwant\n%+v", got, want)
	}
}
