package agent

import (
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Prompt building. The system prompt is static per agent (identical across
// turns, so providers can cache it); everything that depends on the run
// (data inventory, tools, expected output, the mission) goes into the
// first user message.

const corePrompt = `Write PTC-Lisp programs to complete the mission: they run in a sandbox, and you see a short preview of each result.`

const recoveryPrompt = `## Error recovery
Errors come with a hint (also as ctx/fail): fix the cause, do not resend.`

const outputFormatMulti = `## Output format
At most a short reasoning, then one ` + "```clojure" + ` block; go on until a program calls return or fail.`

const outputFormatSingle = `## Output format
Exactly one ` + "```clojure" + ` block with the program. The value of its last expression is your answer; it must match the expected output.`

// systemPrompt assembles the system prompt for turn (only a
// LanguageSpecFunc makes it depend on the turn).
func (a *Agent) systemPrompt(pc PromptContext) string {
	return a.spec.SystemPrompt.assemble(func(parts []string) []string {
		return a.lispPromptBody(pc, parts)
	}, func() string {
		if a.singleTurn() {
			return outputFormatSingle
		}
		return outputFormatMulti
	})
}

// lispPromptBody appends to parts (the Prefix) the core instructions, the
// language reference and error recovery.
func (a *Agent) lispPromptBody(pc PromptContext, parts []string) []string {
	sp := a.spec.SystemPrompt
	parts = append(parts, corePrompt)
	if sp.LanguageSpecFunc != nil {
		parts = append(parts, sp.LanguageSpecFunc(pc))
	} else {
		parts = append(parts, a.languageSpec())
	}
	// every program of the loop may emit (a compiled function may not:
	// Compile's prompt has no such line)
	parts = append(parts, emitLine())
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], "\n")
	}
	return append(parts, recoveryPrompt)
}

// ToolSchema is how a tool is shown to the model: its name, public
// signature and description.
type ToolSchema = messages.ToolSchema

// toolSchemas lists the callable tools (sorted by name) as the model sees
// them: public signatures only.
func (a *Agent) toolSchemas() []ToolSchema {
	out := make([]ToolSchema, 0, len(a.toolKeys))
	for _, name := range a.toolKeys {
		bt := a.tools[name]
		out = append(out, ToolSchema{Name: name, Signature: bt.publicSignature(), Description: bt.tool.Description})
	}
	return out
}

// firstMessage builds the first user message: data inventory (when there
// are inputs), tools, planning-only tools, expected output and the
// mission. How to return, fail and use memory is in the system prompt.
func (a *Agent) firstMessage(in *runInput, sec *secrets) string {
	return sec.scrub(a.withTurnOne(a.missionBody(in, sec)))
}

// withTurnOne ends the first message's body with the line of turn 1
// (single-turn agents have no turn line).
func (a *Agent) withTurnOne(body string) string {
	if a.singleTurn() {
		return body
	}
	return body + "\n\n" + turnLine(1, a.maxTurns())
}

// missionBody is the first message without its turn line, not yet
// scrubbed.
func (a *Agent) missionBody(in *runInput, sec *secrets) string {
	var b strings.Builder
	// sized as the last body was, rather than grown to it by doubling
	b.Grow(int(a.bodySize.Load()))
	if len(in.data) > 0 {
		b.WriteString("## Data inventory (ctx/)\n")
		writeInventory(&b, a, in, sec)
		b.WriteString("\n")
	}
	b.WriteString("## Tools\n")
	for _, ts := range a.toolSchemas() {
		writeToolLine(&b, ts)
	}
	if len(a.toolKeys) == 0 {
		b.WriteString("(none)\n")
	}
	if len(a.catalog) > 0 {
		b.WriteString("\n## Tools for planning only (do not call)\n")
		for _, ts := range a.catalog {
			writeToolLine(&b, ts)
		}
	}
	a.writeServices(&b)
	if p := newPlan(a.spec.Plan); p != nil {
		b.WriteString("\n")
		b.WriteString(p.render(sec))
		b.WriteString("\n")
	}
	b.WriteString("\n## Expected output\n")
	out := outputType(a.sig.Output)
	if a.singleTurn() {
		b.WriteString("The value of your program, of type ")
	} else {
		b.WriteString("Return a value of type ")
	}
	b.WriteString(out)
	b.WriteString(".\n")
	writeFirewallNote(&b, a.sig.Output)
	b.WriteString("\n## Mission\n")
	b.WriteString(a.tmpl.render(in.data, sec.hook()))
	a.bodySize.Store(int64(b.Len()))
	return b.String()
}

// outputType is an agent's own output contract as it is shown to that
// agent: the whole type, firewalled fields included (only their values are
// hidden from the model; a caller's view of a sub-agent omits them).
func outputType(t signature.Type) string {
	if t == nil {
		return ":any"
	}
	return t.String()
}

// writeFirewallNote explains the "_" fields of an output type, if any.
func writeFirewallNote(b *strings.Builder, t signature.Type) {
	if signature.Equal(signature.Public(t), t) {
		return
	}
	b.WriteString("Fields starting with _ are firewalled: fill them from your data like any other field; their values are never shown to you or to the caller's model.\n")
}

func writeToolLine(b *strings.Builder, ts ToolSchema) {
	sig := ts.Signature
	if sig == "" {
		sig = "(args :map) -> :any"
	}
	b.WriteString("- ")
	b.WriteString(ts.Name)
	b.WriteString(sig)
	if ts.Description != "" {
		b.WriteString(": ")
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(ts.Description), "\n", " "))
	}
	b.WriteByte('\n')
}

// writeInventory lists each ctx/ key (there is at least one) with its type: from the context
// signature, else the agent's input signature, else the runtime value.
// Firewalled keys show their type but never a value.
func writeInventory(b *strings.Builder, a *Agent, in *runInput, sec *secrets) {
	for _, k := range sortedKeys(in.data) {
		v := in.data[k]
		var t signature.Type
		if in.ctxType != nil {
			if f, ok := in.ctxType.Field(k); ok {
				t = f.Type
			}
		}
		if t == nil {
			if p, ok := a.sig.Input(k); ok {
				t = p.Type
			}
		}
		if t == nil {
			t = inferType(v, 0)
		}
		ts := signature.PromptType(t)
		if ts == "" {
			ts = ":any"
		}
		b.WriteString("- ctx/")
		b.WriteString(k)
		b.WriteByte(' ')
		b.WriteString(ts)
		if signature.IsFirewalled(k) {
			b.WriteString(" (firewalled: usable in programs, value hidden)\n")
			continue
		}
		if l, ok := v.([]any); ok {
			fmt.Fprintf(b, " (%d items)", len(l))
			if len(l) > 0 {
				fmt.Fprintf(b, ", first: %s", sample(l[0], sec))
			}
		} else {
			fmt.Fprintf(b, " = %s", sample(v, sec))
		}
		b.WriteByte('\n')
	}
}

// sample prints a short firewalled preview of v for the inventory.
func sample(v any, sec *secrets) string {
	lv, err := lisp.FromGo(v)
	if err != nil {
		return "?"
	}
	return lisp.Sprint(lv, lisp.PrintOptions{MaxItems: 3, MaxString: 40, MaxLen: 120, Scrub: sec.hook()})
}

// inferType derives a signature type from a runtime value (lists by their
// first element, maps by their keys, three levels deep).
func inferType(v any, depth int) signature.Type {
	switch x := v.(type) {
	case nil:
		return signature.Any
	case bool:
		return signature.Bool
	case int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		return signature.Int
	case float64, float32:
		return signature.Float
	case string:
		return signature.String
	case []any:
		if len(x) == 0 || depth >= 3 {
			return signature.List{Elem: signature.Any}
		}
		return signature.List{Elem: inferType(x[0], depth+1)}
	case map[string]any:
		if depth >= 3 || len(x) > 30 {
			return signature.AnyMap
		}
		m := signature.Map{}
		for _, k := range sortedKeys(x) {
			if !signature.IsName(k) {
				return signature.AnyMap
			}
			m.Fields = append(m.Fields, signature.Field{Name: k, Type: inferType(x[k], depth+1)})
		}
		return m
	}
	return signature.Any
}

// Preview is what a run would send to the model first, without calling it.
type Preview struct {
	// System is the system prompt.
	System string
	// User is the first user message (data inventory, tools, expected
	// output, mission).
	User string
	// ToolSchemas are the callable tools as the model sees them.
	ToolSchemas []ToolSchema
}

// PreviewPrompt renders the prompts a run of a with the given context (a
// map, a *messages.Step or nil) would start with; no LLM is called. A
// failed Step is an error (a run would end in chained_failure).
func PreviewPrompt(a *Agent, context any) (*Preview, error) {
	in, fail := resolveInput(RunOptions{Context: context})
	if fail != nil {
		return nil, &Error{Kind: KindRun, Reason: fail.Reason, Msg: fail.Message}
	}
	if a.spec.Output == OutputText {
		return a.textPreview(in)
	}
	sec := &secrets{}
	sec.collect(in.data, false)
	user := a.firstMessage(in, sec)
	return &Preview{
		System:      a.systemPrompt(PromptContext{Turn: 1, Messages: []llm.Message{llm.UserText(user)}}),
		User:        user,
		ToolSchemas: a.toolSchemas(),
	}, nil
}

// languageSpec is the language reference of a prompt: the preset that
// LanguageSpec names, the text LanguageSpec holds (any text with a space
// or a newline, or an unknown name), or the compact reference.
func (a *Agent) languageSpec() string {
	spec := a.spec.SystemPrompt.LanguageSpec
	if spec == "" {
		return languageReference(a, refCompact)
	}
	if f, ok := languagePreset(spec); ok && !strings.ContainsAny(spec, " \n") {
		return f(a)
	}
	return spec
}

// assemble puts a system prompt together: Override replaces it all;
// otherwise the Prefix, what body appends to it, OutputFormat or the
// mode's own format, the Suffix, then Transform.
func (sp SystemPrompt) assemble(body func(parts []string) []string, format func() string) string {
	if sp.Override != "" {
		return sp.Override
	}
	var parts []string
	if sp.Prefix != "" {
		parts = append(parts, sp.Prefix)
	}
	parts = body(parts)
	if sp.OutputFormat != "" {
		parts = append(parts, sp.OutputFormat)
	} else {
		parts = append(parts, format())
	}
	return sp.finish(parts)
}

// finish appends the suffix to a system prompt's sections, joins them and
// applies the transform.
func (sp SystemPrompt) finish(parts []string) string {
	if sp.Suffix != "" {
		parts = append(parts, sp.Suffix)
	}
	out := strings.Join(parts, "\n\n")
	if sp.Transform != nil {
		out = sp.Transform(out)
	}
	return out
}
