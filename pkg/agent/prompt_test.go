package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func TestPreviewPrompt(t *testing.T) {
	a := mustNew(t, Spec{
		Prompt:    "Find emails for {{user}} from {{sender}}",
		Signature: "(user :string, sender :string) -> {count :int, _ids [:int]}",
		Tools:     map[string]Tool{"list_emails": FuncSig("(user :string) -> [{id :int}]", noop).WithDescription("List a user's emails")},
	})
	p, err := PreviewPrompt(a, map[string]any{"user": "alice", "sender": "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	want := `## Data inventory (ctx/)
- ctx/sender :string = "bob@example.com"
- ctx/user :string = "alice"

## Tools
- list_emails(user :string) -> [{id :int}]: List a user's emails

## Expected output
Return a value of type {count :int, _ids [:int]}.
Fields starting with _ are firewalled: fill them from your data like any other field; their values are never shown to you or to the caller's model.

## Mission
Find emails for alice from bob@example.com

Turn 1 of 5 (4 remaining)`
	if p.User != want {
		t.Fatalf("user message:\n%s\n--- want:\n%s", p.User, want)
	}
	contains(t, p.System, "## PTC-Lisp", "## Error recovery", "## Output format", "(tool/name {:arg v})", "(return v)", "(fail {:reason")
	// the preview is exactly what a run sends first
	m := llmtest.NewT(t, llmtest.Code(`(return {:count 1 :_ids [1]})`))
	if _, err := a.Run(bg, RunOptions{Model: m, Context: map[string]any{"user": "alice", "sender": "bob@example.com"}}); err != nil {
		t.Fatal(err)
	}
	r := m.Requests()[0]
	if r.System != p.System || r.Messages[0].Text() != p.User {
		t.Fatal("PreviewPrompt differs from the first request")
	}
	if _, err := PreviewPrompt(a, &messages.Step{Fail: &messages.Fail{Reason: "x"}}); err == nil {
		t.Fatal("failed step previewed")
	}
}

func TestDataInventoryTypes(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Signature: "(orders [{id :int, total :float}]) -> :int"})
	orders := []any{map[string]any{"id": int64(1), "total": 2.5, "note": "n"}}
	ctx := map[string]any{
		"orders": orders,
		"meta":   map[string]any{"source": "crm", "count": int64(1), "_key": "k"},
		"flag":   true,
		"_tok":   "tok-value-xyz",
		"extra":  []any{},
	}
	p, err := PreviewPrompt(a, ctx)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, p.User,
		"- ctx/_tok :string (firewalled: usable in programs, value hidden)\n",
		"- ctx/extra [:any] (0 items)\n",
		"- ctx/flag :bool = true\n",
		`- ctx/meta {count :int, source :string} = {"_key" <Firewalled> "count" 1 "source" "crm"}`,
		`- ctx/orders [{id :int, total :float}] (1 items), first: {"id" 1 "note" "n" "total" 2.5}`)
	notContains(t, p.User, "tok-value-xyz")
	// context_signature wins over the agent signature and the value
	st := &messages.Step{Return: ctx, Signature: "{orders [:map], meta :map, flag :bool, _tok :string, extra [:string]}"}
	p, err = PreviewPrompt(a, st)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, p.User, "- ctx/orders [:map] (1 items)", "- ctx/meta :map =", "- ctx/extra [:string] (0 items)")
	_, _, m := run(t, a, RunOptions{Context: ctx, ContextSignature: "{orders [:any]}"}, llmtest.Code(`(return 1)`))
	contains(t, lastUser(m.Requests()[0]), "- ctx/orders [:any] (1 items)")
	// without inputs there is no inventory
	p, _ = PreviewPrompt(mustNew(t, Spec{Prompt: "x"}), nil)
	if !strings.HasPrefix(p.User, "## Tools\n") {
		t.Errorf("user message without inputs:\n%s", p.User)
	}
}

func TestSystemPromptCustomization(t *testing.T) {
	base := mustNew(t, Spec{Prompt: "x"})
	def := base.systemPrompt(PromptContext{Turn: 1})
	tests := []struct {
		name  string
		sp    SystemPrompt
		check func(t *testing.T, s string)
	}{
		{"prefix and suffix wrap", SystemPrompt{Prefix: "PREFIX-TEXT", Suffix: "SUFFIX-TEXT"}, func(t *testing.T, s string) {
			if !strings.HasPrefix(s, "PREFIX-TEXT\n\n") || !strings.HasSuffix(s, "\n\nSUFFIX-TEXT") || !strings.Contains(s, corePrompt) {
				t.Fatal(s)
			}
		}},
		{"order", SystemPrompt{Prefix: "P1", Suffix: "S1", LanguageSpec: "LANG REF", OutputFormat: "OUT FMT"}, func(t *testing.T, s string) {
			idx := []int{strings.Index(s, "P1"), strings.Index(s, corePrompt), strings.Index(s, "LANG REF"), strings.Index(s, "## Error recovery"), strings.Index(s, "OUT FMT"), strings.Index(s, "S1")}
			for i := 1; i < len(idx); i++ {
				if idx[i-1] < 0 || idx[i] <= idx[i-1] {
					t.Fatalf("order %v:\n%s", idx, s)
				}
			}
			notContains(t, s, "## PTC-Lisp", "## Output format")
		}},
		{"full preset", SystemPrompt{LanguageSpec: "full"}, func(t *testing.T, s string) {
			contains(t, s, "### Examples", "- Sequences: ", "memory/put")
		}},
		{"minimal preset", SystemPrompt{LanguageSpec: "minimal"}, func(t *testing.T, s string) {
			contains(t, s, "Available: ")
			notContains(t, s, "### Examples")
			full := mustNew(t, Spec{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpec: "full"}}).systemPrompt(PromptContext{Turn: 1})
			if len(s) >= len(full) {
				t.Fatal("minimal is not smaller than full")
			}
			notContains(t, def, "Available: ")
		}},
		{"transform", SystemPrompt{Transform: func(s string) string { return strings.ReplaceAll(s, "PTC-Lisp", "MyDSL") + "\nEXTRA" }}, func(t *testing.T, s string) {
			notContains(t, s, "PTC-Lisp")
			contains(t, s, "MyDSL", "\nEXTRA")
		}},
		{"override", SystemPrompt{Override: "You are custom.", Prefix: "ignored"}, func(t *testing.T, s string) {
			if s != "You are custom." {
				t.Fatal(s)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustNew(t, Spec{Prompt: "x", SystemPrompt: tc.sp}).systemPrompt(PromptContext{Turn: 1}))
		})
	}
}

func TestLanguageSpecFuncPerTurn(t *testing.T) {
	var turns []int
	a := mustNew(t, Spec{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpecFunc: func(pc PromptContext) string {
		turns = append(turns, pc.Turn)
		if pc.Turn > 1 {
			return "MULTI-TURN SPEC memory=" + strings.Join(pc.Memory, ",")
		}
		return "FIRST SPEC"
	}}})
	_, err, m := run(t, a, RunOptions{}, llmtest.Code(`(def k 1)`), llmtest.Code(`(return k)`))
	if err != nil {
		t.Fatal(err)
	}
	r := m.Requests()
	contains(t, r[0].System, "FIRST SPEC")
	contains(t, r[1].System, "MULTI-TURN SPEC memory=k")
}

// Every example in the full language reference runs and gives the value
// shown, and every name listed resolves in pkg/lisp.
func TestLanguageReferenceIsTrue(t *testing.T) {
	for _, ex := range refExamples {
		got, err := runExample(ex)
		if err != nil || got != ex.want {
			t.Errorf("example %s = %q, %v; want %q", ex.src, got, err, ex.want)
		}
	}
	lines := lisp.Reference()
	if len(lines) < 5 {
		t.Fatalf("reference has %d lines", len(lines))
	}
	ref := languageReference(mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"t": Func(noop)}}), refFull)
	for _, l := range lines {
		contains(t, ref, "- "+l.Title+": "+strings.Join(l.Names, " ")+"\n")
		for _, n := range l.Names {
			if !resolves(n) {
				t.Errorf("listed name %s does not resolve", n)
			}
		}
	}
	contains(t, ref, "ctx/fail", "memory/put", "(return value)", "<Firewalled>", "30 s", "15 min", "1 MiB", "str/join", "Math/sqrt")
	if resolves("no-such-fn") || resolves("str/definitely-not") {
		t.Fatal("resolves accepts unknown names")
	}
	minimal := languageReference(mustNew(t, Spec{Prompt: "x"}), refMinimal)
	contains(t, minimal, "Available: ", " str/join ")
}

// The default reference tells a model that knows Clojure what PTC-Lisp
// adds (every extension's usage, whose name resolves) and a mission's
// conventions, and leaves the rest to Clojure: it lists no Clojure name
// beyond those conventions and is a fraction of the full reference.
func TestCompactReference(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"t": Func(noop)}})
	ref := languageReference(a, refCompact)
	ext := lisp.Extensions()
	if len(ext) == 0 {
		t.Fatal("no extensions")
	}
	for _, l := range ext {
		for _, u := range l.Names {
			contains(t, ref, u)
			name := strings.Fields(strings.TrimPrefix(u, "("))[0]
			if lisp.InClojure(name) || !resolves(name) {
				t.Errorf("extension %s: in Clojure, or does not resolve", u)
			}
		}
	}
	contains(t, ref, "Clojure 1.11", "ctx/", "(tool/name {:arg v})", "(def x v)", ":return", "(return v)", "(fail {:reason",
		"<Firewalled>", "30 s", "15 min", "1 MiB")
	for _, clj := range []string{"group-by", "str/join", "filter"} {
		notContains(t, ref, clj)
	}
	if full := languageReference(a, refFull); 3*len(ref) > len(full) {
		t.Errorf("default reference %d bytes, full %d: not under a third", len(ref), len(full))
	}
	if def := a.systemPrompt(PromptContext{Turn: 1}); !strings.Contains(def, ref) {
		t.Error("the default system prompt does not use the compact reference")
	}
	// without tools the reference does not teach tool calls; a single-turn
	// agent's has no memory or return
	contains(t, languageReference(mustNew(t, Spec{Prompt: "x"}), refCompact), "(return v)")
	single := languageReference(mustNew(t, Spec{Prompt: "x", Limits: Limits{MaxTurns: 1}}), refCompact)
	notContains(t, single, "tool/name", "(def x v)", "(return v)")
}

// resolves reports whether the interpreter knows name as a builtin or a
// special form.
func resolves(name string) bool {
	res, err := lisp.Exec(context.Background(), name, lisp.Options{})
	if err == nil {
		_, isBuiltin := res.Value.(*lisp.Builtin)
		return isBuiltin
	}
	var le *lisp.Error
	return errors.As(err, &le) && strings.Contains(le.Msg, "special form")
}

// The host forms the reference teaches work as written.
func TestReferenceHostForms(t *testing.T) {
	tools := lisp.Tools{"name": lisp.ToolFunc(func(_ context.Context, a map[string]any) (any, error) { return a["arg"], nil })}
	tests := []struct{ src, want string }{
		{`(do (def total 1) total)`, "1"},
		{`(do (memory/put :total 2) [memory/total mem/total (memory/get :total)])`, "[2 2 2]"},
		{`(tool/name {:arg 3})`, "3"},
		{`(call "name" {:arg 4})`, "4"},
		{`ctx/fail`, "nil"},
		{`(let [m {:id 5}] [(:id m) (m :id) (#{1 2} 2) (#(+ % %2) 1 2)])`, "[5 5 2 3]"},
		{`(->> [1 2 3] (map inc))`, "[2 3 4]"},
		{`(let [x {"id" 6}] (:id x))`, "6"},
		{`((where :total > 2) {:total 3})`, "true"},
		{`(sum-by :total [{:total 1} {:total 2}])`, "3"},
	}
	for _, tc := range tests {
		res, err := lisp.Exec(bg, tc.src, lisp.Options{Tools: tools})
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if got := lisp.PrStr(res.Value); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.src, got, tc.want)
		}
	}
	for _, src := range []string{`(return 1)`, `(fail {:reason :some_reason :message "why"})`, `(println "x" 1)`} {
		res, _ := lisp.Exec(bg, src, lisp.Options{})
		if src[1] == 'p' && res.Prints[0] != "x 1" || src[1] == 'r' && res.Signal != lisp.SignalReturn || src[1] == 'f' && res.Err.Reason() != "some_reason" {
			t.Errorf("%s: %+v", src, res)
		}
	}
}

// The run and the compile prompts carry the same language reference: the
// preset LanguageSpec names, the text it holds, or the compact default.
func TestRunAndCompilePromptsShareTheLanguageReference(t *testing.T) {
	refs := map[string]string{}
	for _, spec := range []string{"", ":minimal", "full", "Use only (+ a b)."} {
		a := mustNew(t, Spec{Prompt: "x", SystemPrompt: SystemPrompt{LanguageSpec: spec}})
		ref := strings.TrimRight(a.languageSpec(), "\n")
		refs[spec] = ref
		for name, p := range map[string]string{"run": a.systemPrompt(PromptContext{Turn: 1}), "compile": a.compileSystemPrompt()} {
			if !strings.Contains(p, ref) {
				t.Errorf("%s prompt with LanguageSpec %q lacks its reference", name, spec)
			}
		}
	}
	if refs["Use only (+ a b)."] != "Use only (+ a b)." || refs[""] == refs[":minimal"] || refs[":minimal"] == refs["full"] || refs[""] == refs["full"] {
		t.Error("the presets, the default and a spec's own text do not give four different references")
	}
}

// Both references name the differences from Clojure a model trips over,
// and each holds in the interpreter.
func TestReferenceNamesDifferencesFromClojure(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"t": Func(noop)}})
	contains(t, languageReference(a, refCompact), unlikeClojure)
	contains(t, languageReference(a, refFull), unlikeClojure)
	for src, want := range map[string]string{
		`(first "ab")`:              `"a"`,
		`(map inc [1 2])`:           `[2 3]`,
		`(keys {:b 1 :a 2})`:        `[:a :b]`,
		`(= 1 1.0)`:                 `true`,
		`(:k {"k" 1})`:              `1`,
		`(nth [1] 5)`:               `nil`,
		`(float? (/ 1 3))`:          `true`,
		`(sorted-map-by < 2 1 1 2)`: `{1 2 2 1}`,
		`(sorted-map-by > 1 2 3 4)`: `{3 4 1 2}`,
		`(get (sorted-set-by #(compare (count %1) (count %2)) "bb") "dd")`: `nil`,
	} {
		res, err := lisp.Exec(context.Background(), src, lisp.Options{})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := lisp.PrStr(res.Value); got != want {
			t.Errorf("%s = %s, the reference says %s", src, got, want)
		}
	}
	for _, src := range []string{`(inc 9223372036854775807)`} {
		if _, err := lisp.Exec(context.Background(), src, lisp.Options{}); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}

// BenchmarkCompactReference measures building the default language
// reference, which every mission's system prompt includes.
func BenchmarkCompactReference(b *testing.B) {
	a, err := New(Spec{Prompt: "x", Tools: map[string]Tool{"t": Func(noop)}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = languageReference(a, refCompact)
	}
}
