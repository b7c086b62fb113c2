package agent

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// firewalled sources: expressions whose value is a firewalled value (or a
// collection holding one under a "_" key).
var fuzzSources = []string{
	`(:_s r)`, `(get r "_s")`, `(get-in r ["_nested" 0 "deep"])`, `(first (keys (:_by r)))`,
	`(keyword (:_kw r))`, `(:_n r)`, `(:_e r)`, `r`, `(:_by r)`, `(vals r)`, `(:_nested r)`, `ctx/_in`,
	`(select-keys r ["_s" "id"])`, `(:_s (tool/get {}))`, `(:v (tool/echo {:v (:_s r)}))`, `(tool/echo {:v (:_kw r)})`,
}

// combinators that pass their argument(s) on unchanged.
var fuzzWrap = []string{
	`[%s %s]`, `{:a %s :b %s}`, `(if true %s %s)`, `(or nil %s %s)`, `(do %s %s)`, `(let [v %s] [v %s])`,
	`(into [] [%s %s])`, `(vec (pmap identity [%s %s]))`, `(merge {:a %s} {:b %s})`, `{%s 1 :x %s}`,
	`(list %s %s)`, `(first [%s %s])`, `(identity [%s %s])`, `(set [%s %s])`,
}

// sinks: every way a value reaches text for the model.
var fuzzSinks = []string{
	`(println %s)`, `(prn %s)`, `(print %s "and" %s)`, `%s`, `(subs %s 0)`, `(name %s)`,
	`(def kept %s)`, `{:_k %s :pub %s}`, `(tool/echo {:v %s})`, `(return {:count %s})`,
	`(println (pr-str %s))`, `(conj %s)`, `(nth %s 0)`,
	`(println (pr-str (pr-str %s)))`, `(+ 1 (pr-str [%s]))`, `(+ 1 (pr-str (pr-str {:a %s})))`,
	`(return {:count 1 :_out [%s (str %s)]})`, `(tool/typed {:_key [%s] :n 1})`,
}

func fuzzExpr(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(3) == 0 {
		return fuzzSources[r.IntN(len(fuzzSources))]
	}
	w := fuzzWrap[r.IntN(len(fuzzWrap))]
	return fillHoles(w, func() string { return fuzzExpr(r, depth-1) })
}

func fillHoles(tmpl string, next func() string) string {
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "%s")
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		b.WriteString(next())
		tmpl = tmpl[i+2:]
	}
}

// fuzzProgram builds a program of a few sinks over firewalled data.
func fuzzProgram(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("(def r (tool/get {}))\n")
	for n := 1 + r.IntN(4); n > 0; n-- {
		s := fuzzSinks[r.IntN(len(fuzzSinks))]
		b.WriteString(fillHoles(s, func() string { return fuzzExpr(r, 3) }))
		b.WriteByte('\n')
	}
	return b.String()
}

// FuzzFirewall generates programs over firewalled data (every canary type,
// random lengths) and runs them as turns of a mission: no request may hold
// a canary, raw or under any number of levels of escaping, whatever the
// program does with the values short of deriving new ones
// (docs/firewall.md).
func FuzzFirewall(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s, uint64(7))
	}
	f.Fuzz(func(t *testing.T, seed, seed2 uint64) {
		r := rand.New(rand.NewPCG(seed, seed2))
		c := canaries{str: randCanary(r, 3000), kw: randCanary(r, 100), key: "@" + randCanary(r, 3000), esc: randEscCanary(r, 3000)}
		c.num = 100_000 + r.Int64N(1<<40)
		echo := Func(func(_ context.Context, args map[string]any) (any, error) { return args, nil })
		a := mustNew(t, Spec{Prompt: "Audit {{user}}", Signature: "(user :string, _in :string) -> {count :int, _out :int?}", Limits: Limits{MaxTurns: 4},
			Tools: map[string]Tool{"get": constTool(c.record()), "echo": echo, "typed": FuncSig("(_key :string, n :int) -> :any", func(_ context.Context, args map[string]any) (any, error) { return args, nil })}})
		progs := []string{fuzzProgram(r), fuzzProgram(r), fuzzProgram(r)}
		m := llmtest.New(llmtest.Code(progs[0]), llmtest.Code(progs[1]), llmtest.Code(progs[2]), llmtest.Code(`(return {:count 1})`))
		_, _ = a.Run(bg, RunOptions{Model: m, Context: map[string]any{"user": "ann", "_in": c.str}})
		for i, text := range transcripts(m.Requests()) {
			for _, s := range c.all() {
				if leakedEscaped(text, s) {
					t.Fatalf("request %d leaks canary %.60q (len %d); programs:\n%s\n---\n%s", i+1, s, len(s), strings.Join(progs, "\n---\n"), text)
				}
			}
		}
	})
}
