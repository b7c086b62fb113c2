package agent

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// canaries are the firewalled values of one canary run: a string, an
// integer (printed alone it is hidden from 6 digits on), a keyword name and
// a map key shaped as data, not as a field name (it starts with "@"), each
// of a random length.
type canaries struct {
	str, kw, key string
	num          int64
	// esc holds characters printers and encoders escape (CJK, quotes,
	// backslashes, newlines, tabs): it must stay hidden under any
	// number of levels of escaping.
	esc string
}

const canaryAlphabet = "QXZJKVW"

// randCanary returns a canary of 1 to maxLen bytes, lengths spread
// log-uniformly so that short ones are as common as long ones.
func randCanary(r *rand.Rand, maxLen int) string {
	n := min(maxLen, int(math.Pow(float64(maxLen), r.Float64())))
	b := make([]byte, n)
	for i := range b {
		b[i] = canaryAlphabet[r.IntN(len(canaryAlphabet))]
	}
	return string(b)
}

// escAlphabet is the alphabet of escaping canaries: letters no message
// holds, CJK, and every character a printer escapes.
var escAlphabet = []rune("QXZJ秘密\"\\\n\t")

// randEscCanary returns a canary of 12 to maxLen bytes drawn from
// escAlphabet, lengths spread log-uniformly.
func randEscCanary(r *rand.Rand, maxLen int) string {
	n := max(12, min(maxLen, int(math.Pow(float64(maxLen), r.Float64()))))
	var b strings.Builder
	for b.Len() < n {
		b.WriteRune(escAlphabet[r.IntN(len(escAlphabet))])
	}
	return b.String()
}

func newCanaries(r *rand.Rand) canaries {
	c := canaries{str: randCanary(r, 10_000), kw: randCanary(r, 200), key: "@" + randCanary(r, 9_999), esc: randEscCanary(r, 3000)}
	digits := 6 + r.IntN(13)
	c.num = 1 + r.Int64N(9)
	for range digits - 1 {
		c.num = c.num*10 + r.Int64N(10)
	}
	return c
}

func (c canaries) all() []string {
	out := []string{c.str, c.kw, c.key, strconv.FormatInt(c.num, 10)}
	if c.esc != "" {
		out = append(out, c.esc)
	}
	return out
}

// record is a tool result holding every canary under "_" keys next to
// public fields.
func (c canaries) record() map[string]any {
	return map[string]any{"id": int64(7), "name": "public", "_s": c.str, "_n": c.num, "_kw": c.kw,
		"_by": map[string]any{c.key: int64(1)}, "_nested": []any{map[string]any{"deep": c.str}}, "_e": c.esc}
}

// transcripts returns everything each request sent to a model.
func transcripts(reqs []llm.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = llmtest.Transcript(r)
	}
	return out
}

func assertNoCanary(t *testing.T, where string, texts []string, c canaries) {
	t.Helper()
	for i, text := range texts {
		for _, s := range c.all() {
			if leakedEscaped(text, s) {
				t.Fatalf("%s: request %d leaks canary %.60q (len %d):\n%s", where, i+1, s, len(s), text)
			}
		}
	}
}

// TestFirewallCanariesRandom: one mission per seed drives firewalled values of random
// length and type down every path to a model (print, preview, errors,
// feedback, memory, pmap, sub-agents that succeed and fail, an LLM tool,
// validation, text mode, Compile); no request may hold any of them.
func TestFirewallCanariesRandom(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 15))
		c := newCanaries(r)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			canaryLoop(t, c)
			canaryTextMode(t, c)
			canaryCompile(t, c)
		})
	}
}

func canaryLoop(t *testing.T, c canaries) {
	m := llmtest.New()
	child := mustNew(t, Spec{Name: "child", Prompt: "Echo {{token}}", Signature: "(token :string) -> {echo :string, _raw :string}"})
	fchild := mustNew(t, Spec{Name: "fchild", Prompt: "Check {{token}}", Signature: "(token :string) -> :int"})
	a := mustNew(t, Spec{Name: "main", Prompt: "Audit the record", Signature: "{count :int}", Limits: Limits{MaxTurns: 20}, Tools: map[string]Tool{
		"get":    constTool(c.record()),
		"child":  child.AsTool(ToolOptions{Model: m}),
		"fchild": fchild.AsTool(ToolOptions{Model: m}),
		"classify": LLMTool(LLMToolSpec{Name: "classify", Prompt: "Is this urgent? {{text}}",
			Signature: "(text :string) -> {urgent :bool}", Model: m}),
	}})
	m.Add(
		llmtest.Code(`(def r (tool/get {}))
(println (:_s r))
(println (keyword (:_kw r)) (first (keys (:_by r))) (:_n r))
(prn (:_s r) (keyword (:_kw r)) (first (keys (:_by r))))
(println r (:_nested r) (get-in r ["_nested" 0 "deep"]))
[(:_s r) (:_n r) (keyword (:_kw r)) (first (keys (:_by r))) r (vals r) (:_by r)]`),
		llmtest.Code(`(+ 1 (:_s r))`),
		llmtest.Code(`(println (pr-str [(:_e r)]) (pr-str (pr-str (:_e r))) (pr-str (pr-str [(:_e r) (:_s r)])))
(+ 1 (pr-str (pr-str [(:_e r)])))`),
		llmtest.Code(`(+ 1 [(pr-str (pr-str (pr-str (:_e r))))])`),
		llmtest.Code(`(+ 1 {:bad (pr-str [(:_e r)])})`),
		llmtest.Code(`(+ 1 (first (keys (:_by r))))`),
		llmtest.Code(`(+ 1 (keyword (:_kw r)))`),
		llmtest.Code(`(conj (:_n r) 1)`),
		llmtest.Code(`(pmap (fn [x] (:_s x)) [r r])`),
		llmtest.Code(`{:_keep (:_s r) :v (:_s r) :k (keyword (:_kw r))}`),
		llmtest.Code(`[v k (get-in ctx/_keep [0]) (:_keep ctx)]`),
		llmtest.Code(`(def c (tool/child {:token (:_s r)})) (println (:echo c)) c`),
		llmtest.Code(`(return {:echo ctx/token :_raw ctx/token})`), // child
		llmtest.Code(`(tool/fchild {:token (:_s r)})`),
		llmtest.Code(`(fail {:reason :revoked :message ctx/token})`), // fchild
		llmtest.Code(`(tool/classify {:text (:_s r)})`),
		llmtest.Text(`{"urgent": true}`), // classify
		llmtest.Code(`(return {:count (:_s r)})`),
		llmtest.Code(`(return {:count 1})`),
	)
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if st.Return.(map[string]any)["count"] != int64(1) || m.Remaining() != 0 {
		t.Fatalf("return %v, %d replies left", st.Return, m.Remaining())
	}
	assertNoCanary(t, "loop", transcripts(m.Requests()), c)
}

func canaryTextMode(t *testing.T, c canaries) {
	echo := Func(func(context.Context, map[string]any) (any, error) {
		rec := c.record()
		rec["echo"] = c.str
		rec["kw"] = c.kw
		return rec, nil
	})
	a := mustNew(t, Spec{Name: "text", Prompt: "Summarise {{_doc}} for {{user}}", Signature: "(user :string, _doc :string) -> {ok :bool}",
		Output: OutputText, Tools: map[string]Tool{"get": echo}})
	m := llmtest.New(llmtest.ToolCall("get", map[string]any{}), llmtest.Text(`{"ok": 1}`), llmtest.Text(`{"ok": true}`))
	if _, err := a.Run(bg, RunOptions{Model: m, Context: map[string]any{"user": "ann", "_doc": c.str}}); err != nil {
		t.Fatalf("text mode: %v", err)
	}
	assertNoCanary(t, "text mode", transcripts(m.Requests()), c)
}

func canaryCompile(t *testing.T, c canaries) {
	a := mustNew(t, Spec{Name: "f", Prompt: "Add one", Signature: "(x :int) -> :int",
		Tools: map[string]Tool{"get": FuncSig("() -> {_s :string, _n :int, _kw :string}", func(context.Context, map[string]any) (any, error) {
			return map[string]any{"_s": c.str, "_n": c.num, "_kw": c.kw}, nil
		})}})
	m := llmtest.New(
		llmtest.Code(`(fn [args] (println (:_s (tool/get {}))) (+ 1 (:_s (tool/get {}))))`),
		llmtest.Code(`(fn [args] (+ 1 (keyword (:_kw (tool/get {})))))`),
		llmtest.Code(`(fn [args] (conj (:_n (tool/get {})) 1))`),
		llmtest.Code(`(fn [args] (+ 1 (:x args)))`),
	)
	if _, err := Compile(bg, a, CompileOptions{Model: m, MaxTurns: 4, Samples: []map[string]any{{"x": int64(1)}}}); err != nil {
		t.Fatalf("compile: %v", err)
	}
	assertNoCanary(t, "compile", transcripts(m.Requests()), c)
}

// The detector finds what it must: a canary's piece, quoted, as a keyword
// or alone, but not inside a longer word.
func TestCanaryDetector(t *testing.T) {
	long := strings.Repeat("QXZJ", 10)
	for _, tc := range []struct {
		text, c string
		want    bool
	}{
		{"x " + long[4:20] + " y", long, true},
		{`got "QX"`, "QX", true},
		{"got :QX", "QX", true},
		{"got QX.", "QX", true},
		{"QUIXQX7", "QX", false},
		{"id 1234567", "123456", false},
		{"id 123456", "123456", true},
	} {
		if got := leaked(tc.text, tc.c); got != tc.want {
			t.Errorf("leaked(%q, %q) = %v", tc.text, tc.c, got)
		}
	}
}
