// Package missionfile reads mission files: a mission written by a person in
// YAML 1.2 or JSON (examples/missions/*.yaml), decoded straight into the
// wire type messages.Mission by its field names, so that the file and the
// wire cannot drift apart (docs/missions.md lists every field, checked by a
// test). Unknown fields are errors naming the line and the field path with
// the closest known name, numbers keep their kind (42 is an int, 4.2 a
// float), and durations are strings such as "30s".
//
// A file may carry a script: the replies of a scripted model, which the
// dispatcher's local mode sends with the mission when no real model is
// configured (messages.Mission.Script), so that the examples run anywhere
// and on any worker; its script_by_prompt scripts the agents the mission
// starts while it runs (sub-agents, spawned agents, llm-query) by their
// mission text. Scripted runs are labelled as such in the output.
package missionfile

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// MaxFileBytes bounds a mission file. Contexts larger than
// messages.MaxMissionBytes travel through the context object store, so a
// file may be larger than a wire message, but not without bound.
const MaxFileBytes = 32 << 20

// File is a mission file: the wire mission as written (no id means a new
// one per submission; kind follows from agent or compiled; tools default
// to the remote tools the agent tree names), and the scripted replies.
type File struct {
	// Mission holds every field, the script (scripted model replies)
	// included.
	messages.Mission
}

// Read reads and parses the mission file at path.
func Read(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: mission file larger than %d MiB", path, MaxFileBytes>>20)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses a mission file (YAML 1.2 or JSON) strictly. Errors are
// *FieldError where a line and a field are known.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("mission file larger than %d MiB", MaxFileBytes>>20)
	}
	// go.yaml.in/yaml/v3 follows YAML 1.2: only true/false are booleans,
	// so a context key "n" or a value "no" stay strings.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("mission file: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("mission file: empty")
	}
	var f File
	d := &decoder{lines: map[string]int{}}
	if err := d.decode(doc.Content[0], reflect.ValueOf(&f).Elem(), ""); err != nil {
		return nil, err
	}
	errs := d.errs
	switch {
	case f.Agent == nil && f.Compiled == nil:
		errs = append(errs, &FieldError{Line: d.lines[""], Msg: "agent or compiled is required"})
	case f.Agent != nil && f.Compiled != nil:
		errs = append(errs, &FieldError{Line: d.lines["compiled"], Path: "compiled", Msg: "agent and compiled exclude each other"})
	case f.Compiled != nil:
		if strings.TrimSpace(f.Compiled.Program) == "" {
			errs = append(errs, &FieldError{Line: d.lines["compiled"], Path: "compiled.program", Msg: "required"})
		}
		for i, in := range f.Compiled.Inputs {
			if in == nil {
				errs = append(errs, &FieldError{Line: d.lines["compiled"], Path: fmt.Sprintf("compiled.inputs[%d]", i), Msg: "empty"})
			}
		}
	default:
		errs = append(errs, checkAgent(f.Agent, "agent", d.lines)...)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return &f, nil
}

// Errors are every problem found in a mission file, in file order, so
// that one run reports them all. errors.As finds each *FieldError.
type Errors []error

func (e Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e))
	for _, err := range e {
		b.WriteString("\n  " + err.Error())
	}
	return b.String()
}

// Unwrap returns the problems.
func (e Errors) Unwrap() []error { return e }

// joinErrors returns the one error of errs, or all of them as Errors
// sorted by line.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	line := func(err error) int {
		var fe *FieldError
		if errors.As(err, &fe) {
			return fe.Line
		}
		return 0
	}
	slices.SortStableFunc(errs, func(a, b error) int { return line(a) - line(b) })
	return Errors(errs)
}

// checkAgent checks what the wire validation does not: an agent is
// present and has a prompt, its signature parses, and the prompt's
// placeholders name its inputs (the checks a worker makes, made before
// any fleet starts). lines locates the objects decoded.
func checkAgent(a *messages.AgentSpec, path string, lines map[string]int) []error {
	if a == nil {
		return []error{&FieldError{Line: lines[parentPath(path)], Path: path, Msg: "empty"}}
	}
	var errs []error
	if strings.TrimSpace(a.Prompt) == "" {
		errs = append(errs, &FieldError{Line: lines[path], Path: path + ".prompt", Msg: "required"})
	}
	if a.Signature != "" {
		sig, err := signature.Parse(a.Signature)
		if err != nil {
			errs = append(errs, &FieldError{Line: lines[path], Path: path + ".signature", Msg: err.Error()})
		} else if err := sig.CheckPlaceholders(a.Prompt); err != nil {
			errs = append(errs, &FieldError{Line: lines[path], Path: path + ".prompt", Msg: err.Error()})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.SubAgents)) {
		errs = append(errs, checkAgent(a.SubAgents[name], path+".sub_agents."+name, lines)...)
	}
	return errs
}

func parentPath(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// Build returns the wire mission to submit, without the script: a copy of
// the file's with an id
// (a new ULID when the file has none), its kind, its creation time and,
// when the file lists no tools, the remote tools its agent tree names. The
// result is validated.
func (f *File) Build() (*messages.Mission, error) {
	m := f.Mission
	// The script travels only when the caller chooses to run on it
	// (dispatcher local without a configured model sets it back).
	m.Script, m.ScriptByPrompt = nil, nil
	if m.ID == "" {
		m.ID = messages.NewMissionID()
	}
	m.CreatedAt = time.Now().UTC()
	if m.Compiled != nil {
		m.Kind = messages.KindCompiled
	} else {
		m.Kind = messages.KindAgent
		if len(m.Tools) == 0 {
			m.Tools = m.Agent.RemoteTools()
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}
