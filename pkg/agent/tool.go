package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// ToolFunc is the Go shape of a tool: named arguments in (plain Go data,
// string keys with '-' already turned into '_'), plain Go data or an error
// out. It may be called from several goroutines at once (pmap).
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// Tool is a capability an agent's programs may call, as (tool/name {...})
// or (call "name" {...}); its name is its key in Spec.Tools. It is a value:
// build it with Func, FuncSig, Typed, Skip or Agent.AsTool and refine it
// with WithDescription / WithSignature.
//
// A tool with a signature has its input coerced and validated (warnings and
// errors are fed back to the model) and its output validated; a tool
// without one (Func) or built with Skip is called as is. Strict validation
// mode requires every tool to have a signature. A returned error or a panic
// becomes a tool error the model sees and can recover from.
//
// The zero Tool is not callable; New rejects it.
type Tool struct {
	// Signature is the tool's contract in signature syntax, "" for none.
	Signature string
	// Description is shown to the model next to the signature.
	Description string

	fn      ToolFunc
	skip    bool
	sub     *subTool
	llm     bool       // set by LLM-backed tool constructors (LLMTool)
	spawns  bool       // the tool calls Spawn (SpawnsAgents, SpawnTool)
	spawn   *spawnTool // set by SpawnTool, for ToWire
	initErr error      // a derivation error, reported by New
}

// NeedsLLM reports whether calling the tool needs a language model at run
// time (a sub-agent or an LLM tool); Compile refuses such tools.
func (t Tool) NeedsLLM() bool { return t.sub != nil || t.llm || t.spawns }

// Func returns a tool without a signature: its arguments and result are
// not validated, and the model sees it as name(args :map) -> :any.
func Func(fn ToolFunc) Tool { return Tool{fn: fn} }

// FuncSig returns a tool with an explicit signature, such as
// "(query :string, limit :int?) -> [{id :int}]".
func FuncSig(sig string, fn ToolFunc) Tool { return Tool{Signature: sig, fn: fn} }

// Skip returns a tool whose calls are never validated, even when it is
// given a signature for the prompt. Strict mode
// still rejects it unless it has a signature.
func Skip(fn ToolFunc) Tool { return Tool{fn: fn, skip: true} }

// Typed returns a tool calling a typed Go function. Its signature is
// derived from the Args struct (the inputs, named by their json tags) and
// the Result type (the output). Arguments are decoded into Args through
// encoding/json; the result is encoded as JSON and decoded once, straight
// into interpreter values (a *lisp.WireResult: numbers keep their kind, as
// with messages.FromJSON). A type that cannot be expressed as a signature
// makes New fail naming the tool.
func Typed[Args, Result any](fn func(ctx context.Context, args Args) (Result, error)) Tool {
	sig, err := signature.ForFunc[Args, Result]()
	t := Tool{initErr: err}
	if sig != nil {
		t.Signature = sig.String()
	}
	t.fn = func(ctx context.Context, in map[string]any) (any, error) {
		var a Args
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		// An argument Args has no field for is an error even when
		// validation is off: dropping it would change the call silently.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("decode arguments: %w", err)
		}
		r, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		// the result crosses as JSON once, decoded straight into
		// interpreter values (numbers keep their kind as in FromJSON)
		out, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		w, err := lisp.DecodeWireResult(ctx, messages.ContentTypeJSON, out)
		if err != nil {
			return nil, fmt.Errorf("decode result: %w", err)
		}
		return w, nil
	}
	return t
}

// WithDescription returns t with its description set.
func (t Tool) WithDescription(d string) Tool { t.Description = d; return t }

// WithSignature returns t with its signature set (validated by New).
func (t Tool) WithSignature(sig string) Tool { t.Signature = sig; return t }

// ToolOptions configure Agent.AsTool.
type ToolOptions struct {
	// LLM binds the child to a registry model name (resolution order:
	// the child Spec's own model, then this, then the caller's model).
	LLM string
	// Model binds the child to a model directly (takes precedence over LLM).
	Model llm.Model
	// Description overrides the description shown to the parent model
	// (default: the child Spec's Description, else its prompt's first line with
	// placeholders shown by name).
	Description string
}

type subTool struct {
	agent      *Agent
	boundName  string
	boundModel llm.Model
}

// mustacheTag matches a template tag: {{x}}, {{{x}}}, {{&x}}, {{#x}},
// {{^x}}, {{/x}}, {{! comment}}.
var mustacheTag = regexp.MustCompile(`\{\{(\{?)([&#^/!]?)\s*([^}]*?)\s*\}?\}\}`)

// promptSummary is a sub-agent tool's default description: the first line
// of its prompt with each placeholder shown as its name and section tags
// removed.
func promptSummary(prompt string) string {
	line := firstLine(prompt)
	out := mustacheTag.ReplaceAllStringFunc(line, func(tag string) string {
		m := mustacheTag.FindStringSubmatch(tag)
		if m[2] != "" && m[2] != "&" {
			return ""
		}
		return m[3]
	})
	return strings.Join(strings.Fields(out), " ")
}

// AsTool wraps the agent as a tool another agent can call. The call's
// arguments become the child's context (validated against the child's
// signature inputs); the child inherits the caller's LLM registry, resolves
// its model as child spec > bound (opts) > caller, shares the caller's turn
// budget and mission deadline, and runs one nesting level deeper. The
// parent model sees only the child's public signature (no "_" fields); the
// parent program gets the child's full Return; the child's Step is kept in
// the parent's trace (ToolCall.Child). A failed child is a tool error.
func (a *Agent) AsTool(opts ToolOptions) Tool {
	desc := opts.Description
	if desc == "" {
		desc = a.spec.Description
	}
	if desc == "" {
		desc = promptSummary(a.spec.Prompt)
	}
	return Tool{
		Signature:   a.sigText,
		Description: desc,
		sub:         &subTool{agent: a, boundName: opts.LLM, boundModel: opts.Model},
	}
}
