package agent

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/signature"
)

type getUserArgs struct {
	ID    int64  `json:"id"`
	Notes string `json:"notes,omitempty"`
}

type user struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func TestToolKinds(t *testing.T) {
	typed := Typed(func(_ context.Context, a getUserArgs) (user, error) {
		if a.ID == 0 {
			return user{}, errors.New("no such user")
		}
		return user{ID: a.ID, Name: "Ann"}, nil
	}).WithDescription("Get a user by id")
	if typed.Signature != "(id :int, notes :string?) -> {id :int, name :string}" {
		t.Fatalf("derived signature %q", typed.Signature)
	}
	badOut := FuncSig("(id :int) -> {name :string}", func(context.Context, map[string]any) (any, error) {
		return map[string]any{"name": 42}, nil
	})
	skip := Skip(func(_ context.Context, a map[string]any) (any, error) { return a["id"], nil }).WithSignature("(id :int) -> :int")
	plain := Func(func(_ context.Context, a map[string]any) (any, error) { return a, nil })
	panicky := Func(func(context.Context, map[string]any) (any, error) { panic("kaboom") })
	erring := Func(func(context.Context, map[string]any) (any, error) { return nil, errors.New("rate limited") })
	open := FuncSig("(id :int, ...) -> :int", func(_ context.Context, a map[string]any) (any, error) { return a["id"], nil })
	tools := map[string]Tool{"get_user": typed, "open": open, "bad_out": badOut, "skip": skip, "plain": plain, "panicky": panicky, "erring": erring}

	tests := []struct {
		name    string
		src     string
		want    any    // return value (when ok)
		errText string // expected substring of the turn error
		warn    string // expected warning
	}{
		{"typed", `(return (:name (tool/get_user {:id 7})))`, "Ann", "", ""},
		{"typed coercion warning", `(return (:id (tool/get-user {:id "7"})))`, int64(7), "", `get_user: id: coerced string "7" to integer`},
		{"typed validation error", `(tool/get_user {:id "abc"})`, nil, "tool 'get_user' failed: tool validation errors:\n- id: expected integer, got string \"abc\"", ""},
		{"typed misspelled argument", `(tool/get_user {:id 7 :note "x"})`, nil, "tool validation errors:\n- note: unknown argument (did you mean notes?)", ""},
		{"extra arguments opted into", `(return (tool/open {:id 7 :trace true}))`, int64(7), "", ""},
		{"typed missing input", `(tool/get_user {})`, nil, "id: required input missing", ""},
		{"typed returned error", `(tool/get_user {:id 0})`, nil, "tool 'get_user' failed: no such user", ""},
		{"output validation", `(tool/bad_out {:id 1})`, nil, "tool output validation errors:\n- name: expected string, got integer 42", ""},
		{"skip does not validate", `(return (tool/skip {:id "x"}))`, "x", "", ""},
		{"plain passes args", `(return (get (tool/plain {:user-id 3}) "user_id"))`, int64(3), "", ""},
		{"panic", `(tool/panicky {})`, nil, "tool 'panicky' failed: panic: kaboom", ""},
		{"error", `(call "erring" {})`, nil, "tool 'erring' failed: rate limited", ""},
		{"unknown tool", `(tool/nope {})`, nil, "unknown tool: nope", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 2}, Tools: tools})
			replies := []llmtest.Reply{llmtest.Code(tc.src)}
			if tc.errText != "" {
				replies = append(replies, llmtest.Code(`(return :recovered)`))
			}
			st, err, m := run(t, a, RunOptions{}, replies...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.errText != "" {
				fb := lastUser(m.Requests()[1])
				contains(t, fb, "Error: ", tc.errText)
				contains(t, st.Trace[0].Error, tc.errText)
				return
			}
			if st.Return != tc.want {
				t.Fatalf("return %#v, want %#v", st.Return, tc.want)
			}
			if tc.warn != "" && (len(st.Warnings) == 0 || st.Warnings[0] != tc.warn) {
				t.Fatalf("warnings %q", st.Warnings)
			}
		})
	}
}

func TestToolWarningsFedBack(t *testing.T) {
	tool := FuncSig("(limit :int) -> :int", func(_ context.Context, a map[string]any) (any, error) { return a["limit"], nil })
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"t": tool}, Validation: signature.WarnOnly})
	st, err, m := run(t, a, RunOptions{}, llmtest.Code(`(tool/t {:limit "x"})`), llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, lastUser(m.Requests()[1]), "Warnings:\n- t: limit: expected integer, got string \"x\"")
	if len(st.Warnings) != 2 || st.Warnings[1] != `t output: expected integer, got string "x"` {
		t.Fatalf("%q", st.Warnings)
	}
}

func TestToolCallsRecordedWithPmap(t *testing.T) {
	tool := FuncSig("(n :int) -> :int", func(_ context.Context, a map[string]any) (any, error) { return a["n"].(int64) * 2, nil })
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"double": tool}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(return (reduce + 0 (pmap #(tool/double {:n %}) [1 2 3 4])))`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != int64(20) || len(st.Trace[0].ToolCalls) != 4 || st.Usage.ToolCalls != 4 {
		t.Fatalf("return %v calls %d", st.Return, len(st.Trace[0].ToolCalls))
	}
}

func TestToolCatalogShownNotCallable(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "plan", Limits: Limits{MaxTurns: 2}, ToolCatalog: []ToolSchema{{Name: "email_finder", Signature: "() -> {count :int, _ids [:int]}", Description: "finds emails"}}})
	_, err, m := run(t, a, RunOptions{}, llmtest.Code(`(tool/email_finder {})`), llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	u := lastUser(m.Requests()[0])
	contains(t, u, "## Tools for planning only (do not call)\n- email_finder() -> {count :int}: finds emails")
	notContains(t, u, "_ids")
	contains(t, lastUser(m.Requests()[1]), "unknown tool: email_finder")
}

func TestToolSchemasPublic(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{
		"search": FuncSig("(query :string, _token :string) -> [{id :int, _body :string}]", noop).WithDescription("Search\nemails"),
		"free":   Func(noop),
	}})
	p, err := PreviewPrompt(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ToolSchemas) != 2 || p.ToolSchemas[1].Signature != "(query :string) -> [{id :int}]" || p.ToolSchemas[0].Signature != "(args :map) -> :any" {
		t.Fatalf("schemas %+v", p.ToolSchemas)
	}
	contains(t, p.User, "- search(query :string) -> [{id :int}]: Search emails\n", "- free(args :map) -> :any\n")
	if strings.Contains(p.User, "_body") || strings.Contains(p.User, "_token") {
		t.Fatal("firewalled field in tool schema")
	}
}

func TestMaxToolCallsPerProgram(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxToolCalls: 2}, Tools: map[string]Tool{"t": Func(noop)}})
	st, err, m := run(t, a, RunOptions{}, llmtest.Code(`(do (tool/t {}) (tool/t {}) (tool/t {}))`), llmtest.Code(`(return 1)`))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, lastUser(m.Requests()[1]), "tool call limit exceeded (2 calls)")
	if len(st.Trace[0].ToolCalls) != 2 {
		t.Fatalf("calls %d", len(st.Trace[0].ToolCalls))
	}
}

// A sub-agent tool's default description is its prompt's first line with
// placeholders shown by name, never raw template tags.
func TestSubAgentDefaultDescription(t *testing.T) {
	for _, tc := range []struct{ prompt, want string }{
		{"Find urgent emails for {{user.name}} since {{{since}}}\nMore detail", "Find urgent emails for user.name since since"},
		{"Summarise {{#items}}{{title}}, {{/items}}{{^items}}nothing{{/items}} {{! note}}", "Summarise title, nothing"},
		{"Plain prompt", "Plain prompt"},
	} {
		child := mustNew(t, Spec{Name: "c", Prompt: tc.prompt})
		if got := child.AsTool(ToolOptions{}).Description; got != tc.want {
			t.Errorf("description of %q = %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

type wireOrder struct {
	ID    int64          `json:"order_id"`
	Big   int64          `json:"big"`
	Price float64        `json:"price"`
	Lines map[string]any `json:"lines"`
	Tags  []string       `json:"tags"`
}

// A typed tool's result crosses into the program once (JSON, decoded
// straight into interpreter values) and comes back unchanged: keys with
// '-', big integers, nested maps, numbers of the kind their JSON gives
// them (encoding/json writes 1.0 as 1, an integer, as messages.FromJSON
// reads it); the trace records the same data.
// With validation disabled a typed tool still refuses an argument its Args
// struct has no field for, instead of dropping it.
func TestTypedToolUnknownFieldUnvalidated(t *testing.T) {
	typed := Typed(func(_ context.Context, a getUserArgs) (user, error) { return user{ID: a.ID}, nil })
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 2}, Validation: signature.Disabled, Tools: map[string]Tool{"get_user": typed}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(tool/get_user {:id 7 :note "x"})`), llmtest.Code(`(return :recovered)`))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, st.Trace[0].Error, `decode arguments: json: unknown field "note"`)
}

func TestTypedToolResultUnchanged(t *testing.T) {
	typed := Typed(func(context.Context, struct{}) ([]wireOrder, error) {
		return []wireOrder{{ID: 7, Big: math.MaxInt64, Price: 2.5, Lines: map[string]any{"SKU-1": 1.0, "2024-01-31": map[string]any{"n": int64(-3)}}, Tags: []string{"a-b"}}}, nil
	})
	want := []any{map[string]any{"order_id": int64(7), "big": int64(math.MaxInt64), "price": 2.5,
		"lines": map[string]any{"SKU-1": int64(1), "2024-01-31": map[string]any{"n": int64(-3)}}, "tags": []any{"a-b"}}}
	a := mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}, Tools: map[string]Tool{"orders": typed}})
	st, err, _ := run(t, a, RunOptions{}, llmtest.Code(`(return (identity (tool/orders {})))`))
	if err != nil {
		t.Fatalf("%v: %+v", err, st.Trace)
	}
	if !reflect.DeepEqual(st.Return, want) {
		t.Fatalf("return %#v\nwant %#v\n%+v", st.Return, want, st.Trace)
	}
	calls := st.Trace[0].ToolCalls
	if len(calls) != 1 {
		t.Fatalf("%d traced calls", len(calls))
	}
	w, ok := calls[0].Result.(*lisp.WireResult)
	if !ok || !reflect.DeepEqual(w.Plain(), want) {
		t.Fatalf("traced result %#v", calls[0].Result)
	}
}
