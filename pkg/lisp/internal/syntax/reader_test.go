package syntax

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// genForm is a form the test writes out and expects to read back: its
// kind, position and text (atoms) or items.
type genForm struct {
	kind  formKind
	pos   core.Pos
	text  string
	items []*genForm
}

// writer renders generated forms, tracking positions as the reader counts
// them (line, column in runes, byte offset).
type writer struct {
	b         strings.Builder
	line, col int
}

func (w *writer) put(s string) {
	for _, r := range s {
		if r == '\n' {
			w.line, w.col = w.line+1, 1
		} else {
			w.col++
		}
	}
	w.b.WriteString(s)
}

func (w *writer) pos() core.Pos { return core.Pos{Line: w.line, Col: w.col, Offset: w.b.Len()} }

var atoms = []string{"x", "ctx/rs", "12", ":k", "-3.5", "nil", "true", "\"a b\"", "é", "+", "%"}

// gen writes a random form of at most depth levels with up to width items
// a level.
func (w *writer) gen(rng *rand.Rand, depth, width int) *genForm {
	f := &genForm{pos: w.pos()}
	if depth == 0 || rng.IntN(3) == 0 {
		f.text = atoms[rng.IntN(len(atoms))]
		f.kind = FSym
		switch f.text[0] {
		case '1', '-', 'n', 't', '"', ':':
			f.kind = FLit
		}
		w.put(f.text)
		return f
	}
	open, kind := []string{"(", "[", "#{"}[rng.IntN(3)], FList
	switch open {
	case "[":
		kind = FVec
	case "#{":
		kind = FSet
	}
	f.kind = kind
	w.put(open)
	n := rng.IntN(width + 1)
	for i := range n {
		if i > 0 {
			w.put([]string{" ", "\n  ", ", ", " ; note\n"}[rng.IntN(4)])
		}
		f.items = append(f.items, w.gen(rng, depth-1, width))
	}
	w.put(map[formKind]string{FList: ")", FVec: "]", FSet: "}"}[kind])
	return f
}

// same compares a read form with the generated one, and checks that its
// items slice has no room beyond its length (an append copies).
func same(got *Form, want *genForm, src string) error {
	if got.Kind != want.kind || got.Pos != want.pos {
		return fmt.Errorf("form %q at %v: kind %d at %v, want kind %d", want.text, want.pos, got.Kind, got.Pos, want.kind)
	}
	if want.items == nil && want.text != "" {
		if txt := src[got.Pos.Offset : got.Pos.Offset+len(want.text)]; txt != want.text {
			return fmt.Errorf("at %v: text %q, want %q", want.pos, txt, want.text)
		}
		if got.Kind == FSym && got.SymText() != want.text {
			return fmt.Errorf("at %v: symbol %q, want %q", want.pos, got.SymText(), want.text)
		}
		return nil
	}
	if len(got.Items) != len(want.items) || cap(got.Items) != len(got.Items) {
		return fmt.Errorf("form at %v: %d items (cap %d), want %d", want.pos, len(got.Items), cap(got.Items), len(want.items))
	}
	for i, it := range got.Items {
		if err := same(it, want.items[i], src); err != nil {
			return err
		}
	}
	return nil
}

// TestReadShapes reads random programs back, small and large: lists
// longer than the reader's inline item buffer, and longer than a slab,
// nesting whose items straddle the buffer, and enough forms for several
// slabs. Every form has its kind, position and text, and every items
// slice its exact length and capacity.
func TestReadShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		depth, width, top := 1+rng.IntN(4), 1+rng.IntN(6), 1+rng.IntN(4)
		switch i % 10 {
		case 0:
			depth, width = 2, 40 // past the 32 items kept inline
		case 1:
			depth, width, top = 1, 300, 1 // past half a slab
		case 2:
			depth, width, top = 6, 5, 30 // thousands of forms
		}
		w := &writer{line: 1, col: 1}
		var want []*genForm
		for j := range top {
			if j > 0 {
				w.put("\n")
			}
			want = append(want, w.gen(rng, depth, width))
		}
		src := w.b.String()
		got, err := Read(src, map[string]*core.Keyword{})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(got) != len(want) || cap(got) != len(got) {
			t.Fatalf("%d top-level forms (cap %d), want %d", len(got), cap(got), len(want))
		}
		for j := range got {
			if err := same(got[j], want[j], src); err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
		}
	}
}

// TestReadItemsKeepApart: appending to one form's items never writes into
// another's (the items of all forms are cut from shared slabs).
func TestReadItemsKeepApart(t *testing.T) {
	forms, err := Read("(a b) (c d) [e] #{f g}", map[string]*core.Keyword{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forms {
		f.Items = append(f.Items, &Form{Kind: FSym, Name: "z"})
	}
	var got []string
	for _, f := range forms {
		var names []string
		for _, it := range f.Items {
			names = append(names, it.Name)
		}
		got = append(got, strings.Join(names, " "))
	}
	if s := strings.Join(got, "|"); s != "a b z|c d z|e z|f g z" {
		t.Fatalf("items after appends: %s", s)
	}
}

// TestReadUnclosed: an unclosed bracket is reported at the outermost one
// still open, with the count of those open.
func TestReadUnclosed(t *testing.T) {
	for src, want := range map[string]string{
		"(a [b {c":            "1:1: unbalanced parentheses: 3 unclosed '('",
		"x (a (b) (c":         "1:3: unbalanced parentheses: 2 unclosed '('",
		"(a)\n #{1 (2":        "2:2: unbalanced parentheses: 2 unclosed '{'",
		"[(a) (b (c) [d]) \n": "1:1: unbalanced parentheses: 1 unclosed '['",
		"(a))":                "1:4: unbalanced parentheses: unexpected ')'",
		"(a]":                 "1:3: mismatched ']': expected ')' to close '(' at 1:1",
	} {
		_, err := Read(src, map[string]*core.Keyword{})
		var e *core.Error
		if !errors.As(err, &e) || e.Kind != core.KindParse {
			t.Fatalf("%q: %v", src, err)
		}
		if got := fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg); got != want {
			t.Errorf("%q: %s, want %s", src, got, want)
		}
	}
}

// TestReadFitsFirstSlab: a program of up to 16 forms and 24 item slots
// (a model's one tool call and its return, a short pipeline) is read
// into the first slab alone: no allocation besides it.
func TestReadFitsFirstSlab(t *testing.T) {
	kw := map[string]*core.Keyword{}
	for _, src := range []string{
		`(return {:n (count (tool/get_customer {:id 1}))})`,
		`(+ 1 2 3 4 5 6 7 8 9 10 11 12 13)`,
		`(let [c (tool/get_customer {:id 1})] (return (:name c)))`,
	} {
		var first Slab
		if _, err := ReadIn(src, kw, &first); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if n := testing.AllocsPerRun(50, func() {
			first = Slab{}
			if _, err := ReadIn(src, kw, &first); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %.0f allocations besides the first slab, want 0", src, n)
		}
	}
}
