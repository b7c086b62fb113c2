package signature

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// validSignatures maps source to the canonical form it must print as. Like
// go/parser's short_test.go, every syntax form has an entry.
var validSignatures = []struct{ src, want string }{
	// Primitives and the output-only shorthand.
	{":string", "() -> :string"},
	{":int", "() -> :int"},
	{":float", "() -> :float"},
	{":bool", "() -> :bool"},
	{":keyword", "() -> :keyword"},
	{":any", "() -> :any"},
	{":map", "() -> :map"},
	{"() -> :int", "() -> :int"},
	{"()->:int", "() -> :int"},
	// Lists.
	{"[:int]", "() -> [:int]"},
	{"[:map]", "() -> [:map]"},
	{"[[:string]]", "() -> [[:string]]"},
	{"[{:id :int :name :string}]", "() -> [{id :int, name :string}]"},
	// Maps, both field spellings, commas optional.
	{"{id :int, name :string}", "() -> {id :int, name :string}"},
	{"{:id :int :name :string}", "() -> {id :int, name :string}"},
	{"{id :int name :string}", "() -> {id :int, name :string}"},
	{"{id :int, :name :string,}", "() -> {id :int, name :string}"},
	{"{}", "() -> {}"},
	{"{:customer {:id :int :name :string}}", "() -> {customer {id :int, name :string}}"},
	{"{:user {:id :int :profile {:bio :string}}}", "() -> {user {id :int, profile {bio :string}}}"},
	{"{name :string, price :float, in_stock :bool}", "() -> {name :string, price :float, in_stock :bool}"},
	{"{user-id :int}", "() -> {user_id :int}"}, // names are host keys: - becomes _
	{"(row-count :int) -> {max-row :int}", "(row_count :int) -> {max_row :int}"},
	{"{näme :string}", "() -> {näme :string}"},
	// Optional on any type.
	{"{:id :int :email :string?}", "() -> {id :int, email :string?}"},
	{":int?", "() -> :int?"},
	{"[:int]?", "() -> [:int]?"},
	{"[:int?]", "() -> [:int?]"},
	{"{a :int}?", "() -> {a :int}?"},
	{"{a {b :int}?}", "() -> {a {b :int}?}"},
	{"{a :int ?}", "() -> {a :int?}"},
	// Firewalled fields.
	{"{summary :string, count :int, _email_ids [:int]}", "() -> {summary :string, count :int, _email_ids [:int]}"},
	// Inputs.
	{"(query :string) -> [{id :int}]", "(query :string) -> [{id :int}]"},
	{"(query :string, limit :int) -> [:map]", "(query :string, limit :int) -> [:map]"},
	{"(query :string limit :int?) -> [:map]", "(query :string, limit :int?) -> [:map]"},
	{"(:query :string) -> :any", "(query :string) -> :any"},
	{"(user {name :string, email :string}, topic :string) -> {id :int}", "(user {name :string, email :string}, topic :string) -> {id :int}"},
	{"(user {:id :int}, limit :int) -> :any", "(user {id :int}, limit :int) -> :any"},
	{"(item :map, threshold :float) -> {score :float}", "(item :map, threshold :float) -> {score :float}"},
	{"(_secret :string) -> :bool", "(_secret :string) -> :bool"},
	// Whitespace, newlines, comments anywhere.
	{"\n(query :string,\n options {limit :int?, sort :string?}) ->\n{results [{id :int, score :float, metadata :map}], total :int}\n",
		"(query :string, options {limit :int?, sort :string?}) -> {results [{id :int, score :float, metadata :map}], total :int}"},
	{"  {\tid\t:int\r\n}  ", "() -> {id :int}"},
	{"[:int] ; list of integers", "() -> [:int]"},
	{"{id :int ; the id\n name :string}", "() -> {id :int, name :string}"},
	// Enums: literals joined by "|".
	{`{status "low" | "medium" | "high"}`, `() -> {status "low" | "medium" | "high"}`},
	{`(level 1|2|3) -> :int`, `(level 1 | 2 | 3) -> :int`},
	{`{ratio 0.5 | 1.0 | -2.5e3}`, `() -> {ratio 0.5 | 1.0 | -2500.0}`},
	{`{flag true | false}`, `() -> {flag true | false}`},
	{`"only"`, `() -> "only"`},
	{`{q "a \"quoted\" \u00e9"}`, `() -> {q "a \"quoted\" é"}`},
	{`{status "low" | "high"?}`, `() -> {status "low" | "high"?}`},
	{`{status "low"? | "high"}`, `() -> {status "low" | "high"?}`},
	// Unions: types joined by "|"; a "?" on any alternative makes the union optional.
	{`{id :int | :string}`, `() -> {id :int | :string}`},
	{`[:int | {id :int} | [:string]]`, `() -> [:int | {id :int} | [:string]]`},
	{`(limit :int | "all") -> :any`, `(limit :int | "all") -> :any`},
	{`{x :int | "a" | :string | "b"}`, `() -> {x :int | "a" | "b" | :string}`},
	{`{x :int? | :string}`, `() -> {x :int | :string?}`},
	{`:int | :string?`, `() -> :int | :string?`},
	// Refinements.
	{`{score :int(min 0, max 100)}`, `() -> {score :int(min 0, max 100)}`},
	{`{score :int(max 100 min 0)}`, `() -> {score :int(min 0, max 100)}`},
	{`{p :float(min 0, max 0.5)?}`, `() -> {p :float(min 0, max 0.5)?}`},
	{`{p :float(min -1.5e-3)}`, `() -> {p :float(min -0.0015)}`},
	{`{code :string(min 2, max 3, pattern "^[A-Z]+$")}`, `() -> {code :string(min 2, max 3, pattern "^[A-Z]+$")}`},
	{`{k :keyword(pattern "^x")}`, `() -> {k :keyword(pattern "^x")}`},
	{`(ids [:int](min 1, max 10)) -> [:int(min 0)](max 3)`, `(ids [:int](min 1, max 10)) -> [:int(min 0)](max 3)`},
	{`{n :int(min 1.0)}`, `() -> {n :int(min 1)}`},
	{`{n :int(min 0) | "none"}`, `() -> {n :int(min 0) | "none"}`},
}

func TestParseValid(t *testing.T) {
	for _, tc := range validSignatures {
		sig, err := Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if got := sig.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.src, got, tc.want)
		}
		again, err := Parse(sig.String())
		if err != nil {
			t.Errorf("reparse of %q: %v", sig.String(), err)
			continue
		}
		if again.String() != sig.String() {
			t.Errorf("round trip of %q: %q", sig.String(), again.String())
		}
	}
}

func TestParseShorthandEqualsEmptyInputs(t *testing.T) {
	a := MustParse("{name :string, price :float}")
	b := MustParse("() -> {name :string, price :float}")
	if a.String() != b.String() || len(a.Inputs) != 0 || len(b.Inputs) != 0 {
		t.Fatalf("shorthand %q differs from %q", a, b)
	}
}

func TestParseStructure(t *testing.T) {
	sig := MustParse("(user {name :string, _token :string}, limit :int?) -> [{id :int}]?")
	if len(sig.Inputs) != 2 || sig.Inputs[0].Name != "user" || sig.Inputs[1].Name != "limit" {
		t.Fatalf("inputs = %+v", sig.Inputs)
	}
	user, ok := sig.Inputs[0].Type.(Map)
	if !ok || len(user.Fields) != 2 || user.Fields[1].Name != "_token" || user.Fields[1].Type != String {
		t.Fatalf("user type = %#v", sig.Inputs[0].Type)
	}
	if lim, ok := sig.Inputs[1].Type.(Optional); !ok || lim.Elem != Int {
		t.Fatalf("limit type = %#v", sig.Inputs[1].Type)
	}
	out, ok := sig.Output.(Optional)
	if !ok {
		t.Fatalf("output = %#v, want Optional", sig.Output)
	}
	list, ok := out.Elem.(List)
	if !ok {
		t.Fatalf("output elem = %#v, want List", out.Elem)
	}
	if m, ok := list.Elem.(Map); !ok || m.Fields[0] != (Field{Name: "id", Type: Int}) {
		t.Fatalf("list elem = %#v", list.Elem)
	}
	if p, ok := sig.Input("limit"); !ok || p.Name != "limit" {
		t.Fatalf("Input(limit) = %v, %v", p, ok)
	}
	if _, ok := sig.Input("nope"); ok {
		t.Fatal("Input(nope) found")
	}
}

// invalidSignatures lists sources that must not parse, with the exact first
// line of the error (position and message).
var invalidSignatures = []struct{ src, want string }{
	{"", `1:1: expected type or "(" to start the inputs, got end of input`},
	{"   ", `1:4: expected type or "(" to start the inputs, got end of input`},
	{"{id :int, x}", `1:12: expected type after field "x", got "}"`},
	{"{id}", `1:4: expected type after field "id", got "}"`},
	{"{id :int", `1:9: expected field name or "}", got end of input`},
	{"{[:int] :int}", `1:2: expected field name or "}", got "["`},
	{"{id :integer}", `1:5: unknown type :integer (want :string, :int, :float, :bool, :keyword, :any or :map)`},
	{"{id int}", `1:5: expected type after field "id", got "int" (did you mean :int?)`},
	{"{id foo}", `1:5: expected type after field "id", got "foo"`},
	{"{email? :string}", `1:7: expected type after field "email", got "?" (the "?" goes after the type, as in :string?)`},
	{"{id :int, id :string}", `1:11: duplicate field "id"`},
	{"{id :int??}", `1:10: duplicate "?"`},
	{"[]", `1:2: expected list element type, got "]"`},
	{"[:int", `1:6: expected "]" to close the list, got end of input`},
	{"[:int :string]", `1:7: expected "]" to close the list, got ":string"`},
	{":int :int", `1:6: expected end of signature, got ":int"`},
	{"-> :int", `1:1: expected type or "(" to start the inputs, got "->"`},
	{"(query :string)", `1:16: expected "->" after the inputs, got end of input`},
	{"(query :string) :int", `1:17: expected "->" after the inputs, got ":int"`},
	{"(query :string) ->", `1:19: expected output type after "->", got end of input`},
	{"(query) -> :int", `1:7: expected type after input "query", got ")"`},
	{"(q :int, q :int) -> :int", `1:10: duplicate input "q"`},
	{"([:int]) -> :int", `1:2: expected input name, "..." or ")", got "["`},
	{"(query :string -> :int", `1:16: expected input name, "..." or ")", got "->"`},
	{"{id :int} trailing", `1:11: expected end of signature, got "trailing"`},
	{"{id: :int}", `1:4: expected a name after ":"`},
	{"{id :int @}", `1:10: unexpected character '@'`},
	{"{id :int - }", `1:10: unexpected character '-'`},
	{"{a :int}\n{b\n  :int x}", `2:1: expected end of signature, got "{"`},
	{"(a :int,\n b) -> :int", `2:3: expected type after input "b", got ")"`},
	{"{id \xff}", `1:5: invalid utf-8 encoding`},
	{"?", `1:1: expected type or "(" to start the inputs, got "?" (the "?" goes after the type, as in :string?)`},
	{strings.Repeat("[", 101) + ":int" + strings.Repeat("]", 101), `1:101: nesting too deep (more than 100 levels)`},
	// Enums, unions and refinements.
	{`{s "a" | "b" | "a"}`, `1:4: value "a" listed twice`},
	{`{s "a" |}`, `1:9: expected type after "|", got "}"`},
	{`{s | :int}`, `1:4: expected type after field "s", got "|"`},
	{`{s "open}`, `1:4: string literal not closed`},
	{"{s \"a\n\"}", `1:4: string literal not closed before the end of the line`},
	{`{s nil}`, `1:4: expected type after field "s", got "nil" (a "?" after a type lets it be nil, as in :string?)`},
	{`{n 99999999999999999999}`, `1:4: integer 99999999999999999999 does not fit in 64 bits`},
	{`{n 1e999}`, `1:4: number 1e999 is not a finite float`},
	{`{n :int(min 0.5)}`, `1:8: min of :int must be an integer, got 0.5`},
	{`{n :int(min 5, max 1)}`, `1:8: min 5 of :int is greater than max 1`},
	{`{n :int(min 9007199254740992)}`, `1:8: min of :int must lie within ±2^53`},
	{`{n :int(pattern "x")}`, `1:8: pattern applies to :string and :keyword, not :int`},
	{`{n :int()}`, `1:8: a refinement of :int needs min, max or pattern`},
	{`{n :int(min 1, min 2)}`, `1:16: duplicate refinement "min"`},
	{`{n :int(low 1)}`, `1:9: unknown refinement "low" (want min, max or pattern)`},
	{`{n :int(min "1")}`, `1:13: expected a number after "min", got "\"1\""`},
	{`{n :int(min 1}`, `1:14: expected refinement name (min, max or pattern) or ")", got "}"`},
	{`{n :string(min -1)}`, `1:11: min of :string is a length and cannot be negative`},
	{`{n :string(pattern "(")}`, "1:11: invalid pattern: error parsing regexp: missing closing ): `(`"},
	{`{n :bool(min 1)}`, `1:9: :bool takes no refinements (only :int, :float, :string, :keyword and lists do)`},
	{`{n {a :int}(min 1)}`, `1:12: {a :int} takes no refinements (only :int, :float, :string, :keyword and lists do)`},
	{`{n :int?(min 1)}`, `1:9: expected field name or "}", got "("`},
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range invalidSignatures {
		sig, err := Parse(tc.src)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error %q", tc.src, sig, tc.want)
			continue
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		if first != tc.want {
			t.Errorf("Parse(%q) error:\n got %s\nwant %s", tc.src, first, tc.want)
		}
		var perr *Error
		if !errors.As(err, &perr) || perr.Kind != KindSyntax || !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error %T is not a KindSyntax *Error", tc.src, err)
		}
		if errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Parse(%q) error matches the wrong sentinel", tc.src)
		}
	}
}

func TestParseErrorSnippet(t *testing.T) {
	_, err := Parse("(a :int,\n\tb {x}) -> :int")
	want := "2:6: expected type after field \"x\", got \"}\"\n" +
		" | \tb {x}) -> :int\n" +
		" | \t    ^"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatal("not an *Error")
	}
	if perr.Pos != (Pos{Offset: 14, Line: 2, Col: 6}) {
		t.Errorf("Pos = %+v", perr.Pos)
	}
	if perr.Msg != `expected type after field "x", got "}"` {
		t.Errorf("Msg = %q", perr.Msg)
	}
	// Columns count runes, not bytes.
	_, err = Parse("{näme :int, ü}")
	if !errors.As(err, &perr) || perr.Pos.Col != 14 || !strings.HasSuffix(perr.Snippet, " | "+strings.Repeat(" ", 13)+"^") {
		t.Errorf("unicode column: %v", err)
	}
}

func TestParseType(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{":int", ":int"},
		{" [{id :int, tags [:string]?}] ", "[{id :int, tags [:string]?}]"},
		{"{:a :int?}?", "{a :int?}?"},
	} {
		got, err := ParseType(tc.src)
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseType(%q) = %v, %v; want %q", tc.src, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"(a :int) -> :int", `1:1: expected type, got "("`},
		{":int :int", `1:6: expected end of type, got ":int"`},
	} {
		_, err := ParseType(tc.src)
		if first, _, _ := strings.Cut(errString(err), "\n"); first != tc.want {
			t.Errorf("ParseType(%q) error %q, want %q", tc.src, first, tc.want)
		}
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), `expected type after field "id"`) {
			t.Fatalf("recover() = %v", r)
		}
	}()
	MustParse("{id}")
}

func TestTypeStringsAndEqual(t *testing.T) {
	if got := (Optional{Elem: Optional{Elem: Int}}).String(); got != ":int?" {
		t.Errorf("nested optional prints %q", got)
	}
	if got := (List{}).String(); got != "[:any]" {
		t.Errorf("nil list elem prints %q", got)
	}
	if got := Prim(0).String(); got != ":invalid" {
		t.Errorf("Prim(0) prints %q", got)
	}
	if got := (&Signature{}).String(); got != "() -> :any" {
		t.Errorf("zero Signature prints %q", got)
	}
	if !Equal(Optional{Elem: Optional{Elem: Int}}, Optional{Elem: Int}) || !Equal(nil, Any) || Equal(Int, Float) {
		t.Error("Equal")
	}
	if !IsOptional(Any) || !IsOptional(Optional{Elem: Int}) || IsOptional(Int) {
		t.Error("IsOptional")
	}
	for _, tc := range []struct {
		s  string
		ok bool
	}{{"a", true}, {"_a-1", true}, {"1a", false}, {"", false}, {"a b", false}, {"a?", false}, {"-a", false}} {
		if IsName(tc.s) != tc.ok {
			t.Errorf("IsName(%q) = %v", tc.s, !tc.ok)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		k        Kind
		name     string
		sentinel error
	}{
		{KindSyntax, "syntax", ErrSyntax},
		{KindUnsupported, "unsupported_type", ErrUnsupportedType},
		{KindPlaceholder, "placeholder", ErrPlaceholder},
		{KindMode, "unknown_mode", ErrUnknownMode},
		{Kind(0), "kind(0)", nil},
	} {
		if tc.k.String() != tc.name {
			t.Errorf("Kind(%d).String() = %q", tc.k, tc.k.String())
		}
		e := &Error{Kind: tc.k, Msg: "m"}
		if tc.sentinel != nil && !errors.Is(e, tc.sentinel) {
			t.Errorf("%v does not match its sentinel", tc.k)
		}
		if errors.Is(e, ErrInvalid) {
			t.Errorf("%v matches ErrInvalid", tc.k)
		}
	}
	cause := errors.New("cause")
	if e := (&Error{Kind: KindSyntax, Msg: "m", Err: cause}); !errors.Is(e, cause) || e.Error() != "m" {
		t.Errorf("Unwrap/Error: %v", e)
	}
	if (Pos{}).IsValid() || (Pos{Line: 1, Col: 1}).String() != "1:1" {
		t.Error("Pos")
	}
}

func TestSignatureText(t *testing.T) {
	var doc struct {
		Sig *Signature `json:"sig"`
	}
	if err := json.Unmarshal([]byte(`{"sig":"(q :string) -> {n :int}"}`), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Sig.String() != "(q :string) -> {n :int}" {
		t.Fatalf("decoded %v", doc.Sig)
	}
	b, err := json.Marshal(doc)
	if err != nil || string(b) != `{"sig":"(q :string) -\u003e {n :int}"}` {
		t.Fatalf("encoded %s %v", b, err)
	}
	err = json.Unmarshal([]byte(`{"sig":"{id}"}`), &doc)
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("bad signature error = %v", err)
	}
}
