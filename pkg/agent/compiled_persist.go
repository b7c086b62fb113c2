package agent

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// LoadOptions configure Load and LoadCompiled.
type LoadOptions struct {
	// Tools are the tools the program may call, by name. Only pure tools
	// are accepted (not sub-agents). A document's listed tools must all be
	// given.
	Tools map[string]Tool
	// Validation is the signature validation mode of executions (default
	// Enabled); a document's own mode is used when this is zero.
	Validation signature.Mode
	// Limits bound each execution: ProgramTimeout, MaxSteps,
	// ProgramMemory and MaxToolCalls apply to it (0: the default,
	// negative: unlimited), the other limits do not.
	Limits
	// Name and Description label the program (a document's own are used
	// when these are empty).
	Name, Description string
}

// Load rebuilds a compiled program from its source and signature: the
// signature must parse (empty means
// "() -> :any"), the source must define
// a function of exactly one argument (checked without calling any tool),
// and every tool must be pure. Errors match ErrInvalidCompiled (or
// ErrNotCompilable) and name the field. Metadata is zero.
func Load(source, sig string, opts LoadOptions) (*Compiled, error) {
	s := &signature.Signature{Output: signature.Any}
	if strings.TrimSpace(sig) != "" {
		var err error
		if s, err = signature.Parse(sig); err != nil {
			return nil, &Error{Kind: KindSpec, Field: "signature", Reason: ReasonInvalidCompiled, Msg: err.Error(), Err: err}
		}
	}
	tools, err := bindCompiledTools(opts.Tools, nil)
	if err != nil {
		return nil, err
	}
	c, err := newCompiled(source, s, opts.Validation, tools, compiledLispTools(tools, opts.Validation))
	if err != nil {
		return nil, err
	}
	c.Name, c.Description = opts.Name, opts.Description
	if c.Name == "" {
		c.Name = "compiled"
	}
	c.lim = opts.Limits
	return c, nil
}

// bindCompiledTools binds the tools a compiled program may call: valid
// names, signatures that parse, pure tools only. A signature found in
// parsed is not parsed again.
func bindCompiledTools(given map[string]Tool, parsed map[string]*signature.Signature) (map[string]*boundTool, error) {
	tools := make(map[string]*boundTool, len(given))
	for name, t := range given {
		field := "tools[" + name + "]"
		if name == "" || strings.ContainsAny(name, " \t\n()[]{}\"/") || slices.Contains(reservedTools, name) {
			return nil, invalidCompiled(field, "invalid tool name %q", name)
		}
		if t.initErr != nil {
			return nil, invalidCompiled(field+".signature", "%s", t.initErr.Error())
		}
		if s, ok := parsed[t.Signature]; ok && t.Signature != "" {
			tools[name] = boundWith(name, t, s)
			continue
		}
		bt, err := bindTool(name, t)
		if err != nil {
			return nil, invalidCompiled(field+".signature", "%s", err.Error())
		}
		tools[name] = bt
	}
	if err := checkCompilable(tools); err != nil {
		return nil, err
	}
	return tools, nil
}

// Rebind returns a Compiled that runs c's program with tools in place of
// those c was loaded with, and with lim bounding each execution (as
// LoadOptions.Limits). tools must name exactly the tools c was loaded
// with (c.Tools()); each is bound and checked as Load does. The definition,
// already read, evaluated and checked, is shared rather than read again,
// so a program loaded once serves many callers whose tools differ (such
// as one per mission, each with its own connection and context). c is
// unchanged. Errors match ErrInvalidCompiled (or ErrNotCompilable) and
// name the field.
func (c *Compiled) Rebind(tools map[string]Tool, lim Limits) (*Compiled, error) {
	for _, name := range c.toolNames {
		if _, ok := tools[name]; !ok {
			return nil, invalidCompiled("tools["+name+"]", "the program uses tool %q, which is not given", name)
		}
	}
	if len(tools) != len(c.toolNames) {
		for _, name := range sortedKeys(tools) {
			if !slices.Contains(c.toolNames, name) {
				return nil, invalidCompiled("tools["+name+"]", "tool %q is not one the program was loaded with (%s)", name, strings.Join(c.toolNames, ", "))
			}
		}
	}
	bound, err := bindCompiledTools(tools, c.toolSigs)
	if err != nil {
		return nil, err
	}
	nc := *c
	nc.tools, nc.ltools, nc.lim = bound, compiledLispTools(bound, c.mode), lim
	return &nc, nil
}

// WithLimits returns c with lim bounding each execution (as
// LoadOptions.Limits): c itself when its limits are lim already, else a
// copy sharing c's definition and tools. c is unchanged.
func (c *Compiled) WithLimits(lim Limits) *Compiled {
	if c.lim == lim {
		return c
	}
	nc := *c
	nc.lim = lim
	return &nc
}

// compiledDoc is the persisted form of a Compiled.
type compiledDoc struct {
	Format      string          `json:"format"`
	Version     int             `json:"version"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Signature   string          `json:"signature"`
	Source      string          `json:"source"`
	Tools       []string        `json:"tools,omitempty"`
	Validation  string          `json:"validation,omitempty"`
	Metadata    CompileMetadata `json:"metadata"`
}

// MarshalJSON writes the program as a small versioned JSON document:
// format "ptc-compiled", version, name, description, signature, source,
// the tool names, the validation mode and the metadata. LoadCompiled
// reads it back.
func (c *Compiled) MarshalJSON() ([]byte, error) {
	d := compiledDoc{Format: CompiledFormat, Version: CompiledVersion, Name: c.Name, Description: c.Description,
		Signature: c.Signature, Source: c.Source, Tools: c.toolNames, Metadata: c.Metadata}
	if c.mode != signature.Enabled {
		d.Validation = c.mode.String()
	}
	return json.MarshalIndent(d, "", "  ")
}

// LoadCompiled reads a document written by MarshalJSON and checks it again
// as Load does: format and version, signature, validation mode, a
// one-argument function, and every listed tool given in opts.Tools (the
// error names a missing one). Errors match ErrInvalidCompiled and name the
// field.
func LoadCompiled(data []byte, opts LoadOptions) (*Compiled, error) {
	var d compiledDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, &Error{Kind: KindSpec, Field: "document", Reason: ReasonInvalidCompiled, Msg: err.Error(), Err: err}
	}
	if d.Format != CompiledFormat {
		return nil, invalidCompiled("format", "%q is not %q", d.Format, CompiledFormat)
	}
	if d.Version < 1 || d.Version > CompiledVersion {
		return nil, invalidCompiled("version", "version %d not supported (want 1 to %d)", d.Version, CompiledVersion)
	}
	for _, name := range d.Tools {
		if _, ok := opts.Tools[name]; !ok {
			return nil, invalidCompiled("tools["+name+"]", "the program uses tool %q, which is not given", name)
		}
	}
	if opts.Validation == signature.Enabled && d.Validation != "" {
		m, err := signature.ParseMode(d.Validation)
		if err != nil {
			return nil, invalidCompiled("validation", "%s", err.Error())
		}
		opts.Validation = m
	}
	if opts.Name == "" {
		opts.Name = d.Name
	}
	if opts.Description == "" {
		opts.Description = d.Description
	}
	c, err := Load(d.Source, d.Signature, opts)
	if err != nil {
		return nil, err
	}
	c.Metadata = d.Metadata
	return c, nil
}
