package lisp

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

func addChunkSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.lisp")
	t := &testing.T{}
	for _, file := range files {
		for _, c := range readChunks(t, file) {
			f.Add(c.src)
		}
	}
	for _, s := range []string{"", "(", ")", "#(", "#\"", "\\", ":", "##", "'", "#_", "[1 2", "{:a}", "\"\\u12"} {
		f.Add(s)
	}
}

func formsText(forms []*syntax.Form) string {
	parts := make([]string, len(forms))
	for i, fm := range forms {
		parts[i] = compile.FormText(fm)
	}
	return strings.Join(parts, " ")
}

// FuzzRead: the reader never panics, and printed forms re-read to the same
// printed forms.
func FuzzRead(f *testing.F) {
	addChunkSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		forms, err := syntax.Read(src, map[string]*core.Keyword{})
		if err != nil {
			var e *core.Error
			if !errors.As(err, &e) || e.Kind != core.KindParse {
				t.Fatalf("read error is not a parse *Error: %v", err)
			}
			return
		}
		text := formsText(forms)
		forms2, err := syntax.Read(text, map[string]*core.Keyword{})
		if err != nil {
			t.Fatalf("printed forms do not re-read: %q -> %q: %v", src, text, err)
		}
		if text2 := formsText(forms2); text2 != text {
			t.Fatalf("round trip differs:\n%q\n%q", text, text2)
		}
	})
}

// FuzzEval: every program ends as a value, a *Error (never an internal
// one) or a ctx error; and compiled with the resolver's check
// (TestResolverAgreesWithCompiler), every symbol the compiler compiles
// was resolved, to what the compiler's scopes say.
func FuzzEval(f *testing.F) {
	addChunkSeeds(f)
	tools := testTools()
	delete(tools, "hang")
	delete(tools, "slow")
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := Compile(src, Options{Tools: tools, checkResolve: true}); err != nil {
			if e, ok := err.(*Error); ok && e.Kind == core.KindInternal && strings.HasPrefix(e.Msg, "resolver:") {
				t.Fatalf("%q: %v", src, e)
			}
		}
		_, err := Exec(context.Background(), src, Options{Tools: tools, Timeout: 100 * time.Millisecond, MaxMemory: 1 << 20})
		if err == nil {
			return
		}
		var e *core.Error
		if !errors.As(err, &e) {
			t.Fatalf("error is not a *Error: %T %v", err, err)
		}
		if e.Kind == core.KindInternal {
			t.Fatalf("internal error for %q: %v\n%v", src, e, e.Err)
		}
	})
}
