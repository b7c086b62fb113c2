package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// canaryText is a distinctive string of n bytes.
func canaryText(tag string, n int) string {
	s := "CANARY-" + tag + "-"
	for len(s) < n {
		s += "QXZJ"
	}
	return s[:n]
}

// leaked reports whether text holds canary c or a piece of it long enough
// to be recognised (12 bytes; a shorter canary must appear quoted, as a
// keyword or alone between non-letters).
func leaked(text, c string) bool {
	if len(c) >= 12 {
		for i := 0; i+12 <= len(c); i += 4 {
			if strings.Contains(text, c[i:i+12]) {
				return true
			}
		}
		return strings.Contains(text, c[len(c)-12:])
	}
	if strings.Contains(text, `"`+c+`"`) || strings.Contains(text, ":"+c) {
		return true
	}
	for i := 0; ; {
		j := strings.Index(text[i:], c)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(text[j-1])
		after := j+len(c) >= len(text) || !isWordByte(text[j+len(c)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// noLeak fails when any request the model received holds a canary.
func noLeak(t *testing.T, reqs []llm.Request, canaries ...string) {
	t.Helper()
	for i, req := range reqs {
		text := llmtest.Transcript(req)
		for _, c := range canaries {
			if leaked(text, c) {
				t.Fatalf("request %d leaks canary %.40q:\n%s", i+1, c, text)
			}
		}
	}
}

func constTool(v any) Tool {
	return Func(func(context.Context, map[string]any) (any, error) { return v, nil })
}

// A long firewalled string printed whole: the line is hidden, not cut and
// then missed by the scrubber.
func TestFirewallPrintLongSecret(t *testing.T) {
	body := canaryText("print", 3000)
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": constTool(map[string]any{"id": int64(1), "_body": body})}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def e (tool/get {})) (println (:_body e)) (println "len" (count (:_body e)))`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Output:\n<Firewalled>\nlen 3000\n")),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), body)
}

// Field-name keys under a "_" key may be data (user names) or structure
// (a record's fields): printed as values they are hidden, printed as keys
// they are not, so public fields of the same name stay readable.
func TestFirewallFieldNameKeys(t *testing.T) {
	rec := map[string]any{"id": int64(1), "name": "Bob", "_raw": map[string]any{"id": int64(1), "name": "Robert-private", "e-mail": "x"}}
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": constTool(rec)}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def r (tool/get {})) (println (sort (keys (:_raw r)))) r`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains(`Output:
[<Firewalled> <Firewalled> <Firewalled>]`, `Result: {"_raw" <Firewalled> "id" 1 "name" "Bob"}`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), "Robert-private")
}

// A long firewalled string as a turn's value: the preview hides it before
// cutting it.
func TestFirewallPreviewLongSecret(t *testing.T) {
	body := canaryText("preview", 3000)
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": constTool(map[string]any{"_body": body})}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(:_body (tool/get {}))`),
		llmtest.Code(`[(:_body (tool/get {})) (subs (:_body (tool/get {})) 0 100)]`).Expect(llmtest.LastUserContains("Result: <Firewalled>\n")),
		llmtest.Code(`(return 1)`),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), body)
}

// A sub-agent failing with a message built from its own firewalled data:
// the secrets are shared by the tree, so the caller's model never sees it.
func TestFirewallSubAgentFailure(t *testing.T) {
	token := canaryText("token", 40)
	vault := mustNew(t, Spec{Name: "vault", Prompt: "Check the token", Tools: map[string]Tool{
		"lookup": constTool(map[string]any{"_token": token}),
	}})
	m := llmtest.NewT(t)
	parent := mustNew(t, Spec{Name: "main", Prompt: "Use the vault", Tools: map[string]Tool{"vault": vault.AsTool(ToolOptions{Model: m})}})
	m.Add(
		llmtest.Code(`(tool/vault {})`),
		llmtest.Code(`(let [t (:_token (tool/lookup {}))] (fail (str "revoked: token " t " is revoked")))`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("sub-agent vault failed: failed: revoked: token <Firewalled> is revoked")),
	)
	if _, err := parent.Run(bg, RunOptions{Model: m}); err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), token)
}

// Map keys under a "_" key are firewalled too, whatever their length.
func TestFirewallMapKeys(t *testing.T) {
	long, short := "alice.secret@example.com", "bo@x"
	dir := map[string]any{"_by_email": map[string]any{long: int64(17), short: int64(4)}, "n": int64(2)}
	a := mustNew(t, Spec{Prompt: "List", Tools: map[string]Tool{"dir": constTool(dir)}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def d (tool/dir {})) (println (keys (:_by_email d))) (sort (keys (:_by_email d)))`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Output:\n[<Firewalled> <Firewalled>]", "Result: [<Firewalled> <Firewalled>]")),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), long, short)
}

// Compile scrubs what its candidates' tool calls returned, not only the
// samples.
func TestFirewallCompileToolResults(t *testing.T) {
	secret := canaryText("compile", 200)
	a := mustNew(t, Spec{Name: "f", Prompt: "Add one to the score", Signature: "(x :int) -> :int",
		Tools: map[string]Tool{"get": FuncSig("() -> {_secret :string}", func(context.Context, map[string]any) (any, error) {
			return map[string]any{"_secret": secret}, nil
		})}})
	m := llmtest.NewT(t,
		llmtest.Code(`(fn [args] (+ 1 (:_secret (tool/get {}))))`),
		llmtest.Code(`(fn [args] (+ 1 (:x args)))`).Expect(llmtest.LastUserContains("expected number, got")),
	)
	if _, err := Compile(bg, a, CompileOptions{Model: m, Samples: []map[string]any{{"x": int64(1)}}}); err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), secret)
}

// The agent is told its whole output contract: names and types of its "_"
// fields (only their values are hidden), in the prompt and when a return
// misses one.
func TestFirewallOwnOutputContract(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "Find", Signature: "{count :int, _ids [:int]}"})
	st, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(return {:count 2})`).Expect(llmtest.LastUserContains("Return a value of type {count :int, _ids [:int]}", "Fields starting with _ are firewalled")),
		llmtest.Code(`(return {:count 2 :_ids [1 2]})`).Expect(llmtest.LastUserContains("_ids: required field missing", "Expected: {count :int, _ids [:int]}")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ids := st.Return.(map[string]any)["_ids"].([]any); len(ids) != 2 {
		t.Fatalf("return %v", st.Return)
	}
	// the caller's view of the agent as a tool omits them
	p := mustNew(t, Spec{Prompt: "x", Tools: map[string]Tool{"finder": a.AsTool(ToolOptions{})}})
	pv, err := PreviewPrompt(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, pv.User, "finder() -> {count :int}")
	notContains(t, pv.User, "_ids")
}

// A secret a program passes to a child under a public input name stays
// hidden from the child's model; the child's program gets the value.
func TestFirewallSecretToChildUnderPublicName(t *testing.T) {
	token := canaryText("child", 30)
	m := llmtest.NewT(t)
	child := mustNew(t, Spec{Name: "child", Prompt: "Check {{token}}", Signature: "(token :string) -> :int"})
	parent := mustNew(t, Spec{Name: "main", Prompt: "Go", Tools: map[string]Tool{
		"get":   constTool(map[string]any{"_token": token}),
		"child": child.AsTool(ToolOptions{Model: m}),
	}})
	m.Add(
		llmtest.Code(`(return (tool/child {:token (:_token (tool/get {}))}))`),
		llmtest.Code(`(return (count ctx/token))`).Expect(llmtest.LastUserContains("- ctx/token :string = <Firewalled>", "Check <Firewalled>")),
	)
	st, err := parent.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != int64(30) {
		t.Fatalf("return %v", st.Return)
	}
	noLeak(t, m.Requests(), token)
	for _, r := range m.Requests() {
		if strings.Contains(r.Prompt, token) {
			t.Fatalf("Request.Prompt holds the secret: %q", r.Prompt)
		}
	}
}

// A secret passed as an LLM tool's argument is replaced in that tool's
// prompt: no model of the tree reads firewalled data.
func TestFirewallSecretAsLLMToolArgument(t *testing.T) {
	body := canaryText("llmtool", 50)
	m := llmtest.NewT(t)
	a := mustNew(t, Spec{Prompt: "Triage", Tools: map[string]Tool{
		"get": constTool(map[string]any{"_body": body}),
		"classify": LLMTool(LLMToolSpec{Name: "classify", Prompt: "Is this urgent? {{text}}",
			Signature: "(text :string) -> {urgent :bool}", Model: m}),
	}})
	m.Add(
		llmtest.Code(`(return (:urgent (tool/classify {:text (:_body (tool/get {}))})))`),
		llmtest.Text(`{"urgent": true}`).Expect(llmtest.LastUserContains("Is this urgent? <Firewalled>")),
	)
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if st.Return != true {
		t.Fatalf("return %v", st.Return)
	}
	noLeak(t, m.Requests(), body)
}

// Short strings and numbers taken out of a "_" field and printed: strings
// of any length are hidden where they stand alone; integers of 6 or more
// digits are hidden; shorter numbers and booleans are shown, and so is a
// short secret a program builds into other text (docs/firewall.md).
func TestFirewallShortValuesPrinted(t *testing.T) {
	rec := map[string]any{"_pin": "1234", "_kind": "vip", "_n": int64(42), "_acct": int64(12345678), "_ok": true}
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": constTool(rec)}})
	_, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(def r (tool/get {}))
(println (:_pin r) (keyword (:_kind r)) (:_n r) (:_acct r) (:_ok r))
(println (str "pin " (:_pin r) ", acct " (:_acct r)))
[(:_pin r) (:_acct r) (:_n r)]`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains(
			"Output:\n<Firewalled> <Firewalled> 42 <Firewalled> true\npin 1234, acct <Firewalled>\n",
			"Result: [<Firewalled> <Firewalled> 42]")),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// A typed tool returning a struct with a firewalled field: the value is
// recorded from its plain form.
func TestFirewallTypedToolResult(t *testing.T) {
	type doc struct {
		ID   int      `json:"id"`
		Body string   `json:"_body"`
		Tags []string `json:"_tags"`
	}
	body, tag := canaryText("typed", 200), "vip-tag-secret"
	get := Func(func(context.Context, map[string]any) (any, error) {
		return doc{ID: 1, Body: body, Tags: []string{tag}}, nil
	})
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": get}})
	_, err, m := run(t, a, RunOptions{},
		llmtest.Code(`(def d (tool/get {})) (println (:_body d) (first (:_tags d))) (+ 1 (:_body d))`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Output:\n<Firewalled> <Firewalled>\n")),
	)
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, m.Requests(), body, tag)
}

// Host data kept under a firewalled memory name is firewalled as a whole,
// although it was public when it arrived.
func TestFirewallHostDataUnderFirewalledName(t *testing.T) {
	note := canaryText("kept", 40)
	a := mustNew(t, Spec{Prompt: "Read", Limits: Limits{MaxTurns: 3}})
	_, err, m := run(t, a, RunOptions{Context: map[string]any{"rows": []any{map[string]any{"id": int64(1), "note": note}}}},
		llmtest.Code(`(def _kept ctx/rows) 1`),
		llmtest.Code(`(println (:note (first _kept))) 2`),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Output:\n<Firewalled>")),
	)
	if err != nil {
		t.Fatal(err)
	}
	// the mission's inputs showed the note when it was public; the output
	// of the turn that printed it from _kept does not
	if fb := lastUser(m.Requests()[2]); strings.Contains(fb, note) {
		t.Fatalf("feedback leaks the note: %s", fb)
	}
}

// Secrets equal to the feedback's labels hide the data, not the layout.
func TestFirewallLabelsKept(t *testing.T) {
	rec := map[string]any{"_kind": "Result", "_next": "Memory", "_warn": "Warnings"}
	a := mustNew(t, Spec{Prompt: "Read", Tools: map[string]Tool{"get": constTool(rec)}})
	_, err, _ := run(t, a, RunOptions{},
		llmtest.Code(`(def r (tool/get {})) (println (:_kind r) (:_next r)) {:m (:_warn r)}`),
		llmtest.Code(`(+ 1 (:_kind r))`).Expect(llmtest.LastUserContains("Output:\n<Firewalled> <Firewalled>\nResult: {:m <Firewalled>}\nMemory: m, r\nTurn 2 of 5")),
		llmtest.Code(`(return 1)`).Expect(llmtest.LastUserContains("Error: 1:1: +: expected number, got string <Firewalled>")),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// The indexes a firewall makes for its first secret hold maps only once
// something is indexed in them: a plain secret fills the index of strings
// and leaves those of numbers and escaped forms without any.
func TestFirewallEmptyIndexesHoldNoMaps(t *testing.T) {
	var s secrets
	s.add("tok_live_1234567890")
	if s.ints.exact != nil || s.ints.groups != nil || s.escaped.exact != nil || s.escaped.groups != nil {
		t.Fatal("an empty index made its maps")
	}
	if len(s.strs.exact) != 1 || len(s.strs.groups) != 1 {
		t.Fatalf("the index of strings holds %d strings in %d groups, want 1 in 1", len(s.strs.exact), len(s.strs.groups))
	}
	if got := s.scrub("key tok_live_1234567890 sent"); strings.Contains(got, "tok_live_1234567890") {
		t.Fatalf("scrubbed %q", got)
	}
}
