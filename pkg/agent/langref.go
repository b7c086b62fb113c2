package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp"
)

// The language reference sent to the model lists the special forms and
// builtins that pkg/lisp's builtin table marks for it (lisp.Reference), so
// it names exactly what the interpreter has. Every example is run by a
// test.

type refExample struct {
	src  string
	ctx  map[string]any
	want string // pr-str of the value
	note string
}

var refExamples = []refExample{
	{src: `(->> ctx/orders (filter #(> (:total %) 100)) (map :id))`, ctx: exampleOrders, want: `[2 3]`, note: "ids of large orders"},
	{src: `(let [by (group-by :status ctx/orders)] (count (get by "open")))`, ctx: exampleOrders, want: `2`, note: "group and count"},
	{src: `(reduce + 0 (map :total ctx/orders))`, ctx: exampleOrders, want: `400`, note: "sum a field"},
	{src: `(for [o ctx/orders :when (= (:status o) "open")] {:id (:id o) :big (> (:total o) 100)})`, ctx: exampleOrders, want: `[{:big false :id 1} {:big true :id 3}]`, note: "shape records"},
	{src: `(do (def seen (count ctx/orders)) {:seen seen})`, ctx: exampleOrders, want: `{:seen 3}`, note: "remember a value for later turns"},
	{src: `(if-let [o (first (filter #(= (:id %) 2) ctx/orders))] (:total o) 0)`, ctx: exampleOrders, want: `150`, note: "find one record"},
}

var exampleOrders = map[string]any{"orders": []any{
	map[string]any{"id": int64(1), "status": "open", "total": int64(50)},
	map[string]any{"id": int64(2), "status": "closed", "total": int64(150)},
	map[string]any{"id": int64(3), "status": "open", "total": int64(200)},
}}

// runExample runs a reference example and prints its value.
func runExample(ex refExample) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := lisp.Exec(ctx, ex.src, lisp.Options{Context: ex.ctx})
	if err != nil {
		return "", err
	}
	return lisp.PrStr(res.Value), nil
}

// LanguagePresets returns the names of the built-in language references
// usable as SystemPrompt.LanguageSpec: "default" states what PTC-Lisp adds
// to Clojure 1.11 and its conventions (models know Clojure), "full" also
// lists every form and builtin with examples, "minimal" lists every name
// on one line.
func LanguagePresets() []string { return []string{"default", "full", "minimal"} }

// refKind is a language reference preset.
type refKind int

const (
	refCompact refKind = iota
	refFull
	refMinimal
)

func languagePreset(name string) (func(a *Agent) string, bool) {
	var k refKind
	switch strings.TrimPrefix(name, ":") {
	case "default":
		k = refCompact
	case "full":
		k = refFull
	case "minimal":
		k = refMinimal
	default:
		return nil, false
	}
	return func(a *Agent) string { return languageReference(a, k) }, true
}

// memoryContractNote states the memory result contract with an example.
const memoryContractNote = "- A map a program ends with (without `return`) is merged into memory: ending with `(first ctx/accounts)`, a map {:id 1 :name \"a\"}, stores `id` and `name`. " +
	"To look at a map without storing it, end with `{:return (first ctx/accounts)}`: only the `:return` value is shown to you and the other keys are stored (none here). To keep data, end with `{:accounts xs}` or use def.\n"

// compactMemoryNote states memory and the memory result contract in short.
const compactMemoryNote = "- (def x v) keeps x for later turns (you see names, not values); so does each key of a map a program ends with, except :return, whose value is shown to you.\n"

// languageReference renders the PTC-Lisp reference for the model.
func languageReference(a *Agent, kind refKind) string {
	if kind == refCompact {
		return compactReference(a)
	}
	lines := lisp.Reference()
	var b strings.Builder
	b.WriteString("## PTC-Lisp\n")
	b.WriteString("PTC-Lisp is a small, safe subset of Clojure: immutable data, no I/O. ")
	b.WriteString("Use it to call tools and to filter, join and aggregate data so that only small results come back to you.\n\n")
	b.WriteString("### Data and host forms\n")
	b.WriteString("- `ctx/name` reads an input (read-only; a missing input is nil). `ctx/fail` holds the previous turn's error as {:reason :message :op :details}, nil after a successful turn.\n")
	b.WriteString("- Memory persists across turns: `(def total value)` or `(memory/put :total value)`; read it as `total`, `memory/total`, `mem/total` or `(memory/get :total)`. Do not reuse builtin names. You see memory names, never their values.\n")
	if !a.singleTurn() {
		b.WriteString(memoryContractNote)
	}
	if len(a.tools) > 0 {
		b.WriteString("- Tools: `(tool/name {:arg value})` or `(call \"name\" {:arg value})`. Arguments are named (a map). Tool results are plain data: maps with string keys, read them with keywords (`(:id x)`).\n")
	}
	b.WriteString("- Finish: `(return value)` ends the mission with value; `(fail {:reason :some_reason :message \"why\"})` ends it with an error.\n")
	b.WriteString("- `(println x ...)` output is shown to you after the turn.\n")
	b.WriteString("- Map keys `_name` are firewalled: usable in programs, shown to you as <Firewalled>.\n\n")
	if kind == refFull {
		b.WriteString("### Available forms and functions\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s: %s\n", l.Title, strings.Join(l.Names, " "))
		}
		b.WriteString("- Keywords, maps and sets are callable: `(:id m)`, `(m :id)`, `(#{1 2} x)`. `#(...)` is a short fn with `%`, `%1`, `%2`.\n")
		b.WriteString("- Not available: " + leftOut + ".\n")
		b.WriteString(unlikeClojure + "\n")
		b.WriteString("### Examples (ctx/orders = [{:id 1 :status \"open\" :total 50} ...])\n")
		for _, ex := range refExamples {
			fmt.Fprintf(&b, "- %s: `%s` => `%s`\n", ex.note, ex.src, ex.want)
		}
		b.WriteString("\n")
	} else {
		var all []string
		for _, l := range lines {
			all = append(all, l.Names...)
		}
		slices.Sort(all)
		fmt.Fprintf(&b, "Available: %s\n\n", strings.Join(all, " "))
	}
	b.WriteString("### Limits\n")
	fmt.Fprintf(&b, "- Each program run (with its tool calls) has %s; the whole mission has %s.\n", fmtDuration(a.programTimeout()), fmtDuration(a.missionTimeout()))
	if a.spec.MemoryLimit >= 0 {
		fmt.Fprintf(&b, "- Memory is limited to %s; keep only what later turns need.\n", fmtBytes(a.memoryLimit()))
	}
	return b.String()
}

// leftOut names the Clojure features PTC-Lisp leaves out (a program that
// uses one fails with a hint naming what to use instead).
const leftOut = "I/O, try/catch, atoms, transducers, macros or Java beyond Math/"

// unlikeClojure names the differences from Clojure a model trips over
// (the full table with reasons is in docs/lisp-builtins.md).
const unlikeClojure = "- Unlike Clojure: a character is a one-character string; sequence results are vectors; maps and sets are kept in key order " +
	"(sorted-map-by, sorted-set-by: in the comparator's order, but get and contains? match keys by =); (= 1 1.0) is true; (:k m) also finds the key \"k\"; nth out of range is nil; " +
	"integers are 64-bit (overflow is an error, (/ 1 3) is a float).\n"

// compactReference is the default reference: a model that knows Clojure
// 1.11 is told what PTC-Lisp leaves out, the names it adds (from the
// builtin table: lisp.Extensions) and the conventions of a mission (ctx/,
// tools, memory, return and fail, firewalled keys, limits). A Clojure name
// it lacks fails with a hint that lists the names of its category.
func compactReference(a *Agent) string {
	var b strings.Builder
	b.WriteString("## PTC-Lisp\n")
	b.WriteString("Clojure 1.11 on plain data, with str/ and set/; no " + leftOut + ".\n")
	b.WriteString("- ctx/name is an input.")
	if len(a.tools) > 0 {
		b.WriteString(" (tool/name {:arg v}) calls a tool; results have string keys, read with keywords: (:id x).")
	}
	b.WriteString("\n")
	if a.singleTurn() {
		b.WriteString("- println output is shown.")
	} else {
		b.WriteString(compactMemoryNote)
		b.WriteString("- (return v) ends the mission with v, (fail {:reason :kw :message s}) with an error. println output is shown.")
	}
	b.WriteString(" _keys are firewalled: usable, shown as <Firewalled>.\n")
	b.WriteString(unlikeClojure)
	b.WriteString(addedLine())
	fmt.Fprintf(&b, "- Limits: %s a program, %s the mission", fmtDuration(a.programTimeout()), fmtDuration(a.missionTimeout()))
	if a.spec.MemoryLimit >= 0 {
		fmt.Fprintf(&b, ", %s memory", fmtBytes(a.memoryLimit()))
	}
	b.WriteString(".\n")
	return b.String()
}

// addedLine is the compact reference's line of the names PTC-Lisp adds to
// Clojure (lisp.Extensions). It is the same for every agent, so it is built
// once per process.
var addedLine = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("- Added:")
	for _, l := range lisp.Extensions() {
		b.WriteString(" ")
		b.WriteString(strings.Join(l.Names, " "))
	}
	b.WriteString("\n")
	return b.String()
})

func fmtDuration(d time.Duration) string {
	if d >= unlimitedTimeout {
		return "no time limit"
	}
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

func fmtBytes(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
