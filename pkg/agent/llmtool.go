package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// CallerLLM is the LLMToolSpec.LLM value that makes an LLM tool use the
// calling agent's model; it is also what an
// empty LLM means.
const CallerLLM = "caller"

// LLMToolSpec defines an LLM-powered tool: a prompt template and a
// signature, answered by a model in text mode (see docs/textmode.md).
// The zero value is not valid: Prompt and Signature are required.
type LLMToolSpec struct {
	// Name names the tool's agent in traces and observer events
	// (default "llm_tool").
	Name string
	// Prompt is a Mustache template over the signature's inputs (the tool
	// call's arguments). Every placeholder must name an input; inputs the
	// prompt does not use are allowed (they are still validated as
	// arguments), unlike a text-mode agent.
	Prompt string
	// Signature is the tool's contract: the inputs the caller passes and
	// the output the model must answer with (JSON unless :string).
	Signature string
	// Description is shown to the calling model (default: the prompt's
	// first line).
	Description string
	// LLM selects the model: "" or CallerLLM for the calling agent's model,
	// otherwise a name looked up in the run's registry.
	LLM string
	// Model, when set, is the model to use (it takes precedence over LLM).
	Model llm.Model
	// Tools, when given, make the tool a multi-turn text-mode agent with
	// native tool calling; without tools it is one JSON-mode (or text)
	// call.
	Tools map[string]Tool
	// MaxTurns bounds the model calls (default 1 without tools, 5 with).
	// More than one turn without tools lets the model correct an invalid
	// JSON answer.
	MaxTurns int
	// LLMOpts are passed to the model with every request.
	LLMOpts map[string]any
	// Validation is the signature validation mode (default Enabled).
	Validation signature.Mode
}

// NewLLMTool validates s and returns the tool. The prompt's placeholders
// are checked against the signature here ("placeholder {{user.email}} not
// found in signature; user has fields: name"), as are the section rules of
// text mode. The tool runs as a text-mode sub-agent of its caller: it
// inherits the caller's registry, turn budget and mission deadline, runs
// one nesting level deeper, and its Step is kept in the caller's trace.
// Errors are *Error of KindSpec.
func NewLLMTool(s LLMToolSpec) (Tool, error) {
	if strings.TrimSpace(s.Signature) == "" {
		return Tool{}, specErr("signature", "an LLM tool needs a signature", nil)
	}
	sig, err := signature.Parse(s.Signature)
	if err != nil {
		return Tool{}, specErr("signature", err.Error(), err)
	}
	tm, err := parseMustache(s.Prompt)
	if err != nil {
		return Tool{}, specErr("prompt", err.Error(), err)
	}
	if err := tm.check(sig, false); err != nil {
		return Tool{}, specErr("prompt", err.Error(), err)
	}
	// Text mode requires every input in the prompt; an LLM tool allows
	// unused ones (they are still validated as arguments). Each unused
	// input is referenced by an empty inverted section, which renders
	// nothing, so the agent keeps the full signature.
	prompt := s.Prompt
	used := tm.usedInputs(sig)
	for _, p := range sig.Inputs {
		if !used[p.Name] {
			prompt += "{{^" + p.Name + "}}{{/" + p.Name + "}}"
		}
	}
	name := s.Name
	if name == "" {
		name = "llm_tool"
	}
	maxTurns := s.MaxTurns
	if maxTurns == 0 {
		maxTurns = 1
		if len(s.Tools) > 0 {
			maxTurns = messages.DefaultMaxTurns
		}
	}
	a, err := New(Spec{
		Name: name, Description: s.Description, Prompt: prompt, Signature: s.Signature,
		Tools: s.Tools, Limits: Limits{MaxTurns: maxTurns}, LLMOpts: s.LLMOpts, Validation: s.Validation, Output: OutputText,
	})
	if err != nil {
		return Tool{}, err
	}
	bound := s.LLM
	if bound == CallerLLM {
		bound = ""
	}
	t := a.AsTool(ToolOptions{LLM: bound, Model: s.Model, Description: s.Description})
	t.llm = true
	return t, nil
}

// LLMTool is NewLLMTool for use in a Spec literal: an invalid spec makes
// New of the agent that uses the tool fail, naming the tool.
//
//	tools := map[string]agent.Tool{
//		"classify": agent.LLMTool(agent.LLMToolSpec{
//			Prompt:    "Is {{subject}} urgent?",
//			Signature: "(subject :string) -> {urgent :bool}",
//		}),
//	}
func LLMTool(s LLMToolSpec) Tool {
	t, err := NewLLMTool(s)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Field != "" {
			err = fmt.Errorf("llm tool %s: %s", e.Field, e.Msg)
		}
		return Tool{Signature: s.Signature, initErr: err, llm: true}
	}
	return t
}

// usedInputs returns the inputs of sig the template refers to at the top
// level (directly or as the first segment of a path or section).
func (t *mustache) usedInputs(sig *signature.Signature) map[string]bool {
	used := map[string]bool{}
	_ = checkNodes(t.nodes, inputScope(sig), used)
	return used
}
