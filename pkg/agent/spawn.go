package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptcfleet/ptc/internal/ctxval"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// SpawnToolName is the name of the tool SpawnTool builds from a wire
// spec's spawn_agent (messages.AgentSpec.SpawnAgent), and under which
// ToWire writes one back.
const SpawnToolName = messages.SpawnToolName

// ErrNoRun is returned by Spawn given a context that is not a tool
// call's of a running agent.
var ErrNoRun = errors.New("agent: Spawn needs the context of a tool call of a running agent")

// spawnKey is the context key of a tool call's *spawnCall.
type spawnKey struct{}

// withSpawnCall returns ctx carrying a new spawnCall of tool for Spawn,
// and that spawnCall.
func withSpawnCall(ctx context.Context, tr *toolRunner, tt *turnTools, tool string) (context.Context, *spawnCall) {
	c := &ctxval.Ctx[spawnKey, spawnCall]{Context: ctx, V: spawnCall{tr: tr, tt: tt, tool: tool}}
	return c, &c.V
}

// spawnCall is what a tool call lends to Spawn: the run it belongs to and
// the record of the children it starts.
type spawnCall struct {
	tr   *toolRunner
	tt   *turnTools
	tool string

	mu    sync.Mutex
	first *messages.Step      // the tool call's Child
	extra []messages.ToolCall // each further child, a record of its own
}

// Spawn runs child as a sub-agent of the agent whose tool call ctx
// belongs to (the ctx a ToolFunc receives), with input as its context,
// and returns its Step. The child is accounted and traced like a declared
// sub-agent (AsTool): it inherits the caller's model (unless its Spec
// names one), model registry, turn budget, mission deadline, money and
// token budget and firewall registry; it runs one level deeper and fails
// with max_depth_exceeded past the tree's max_depth; its Step is the
// tool call's Child in the caller's trace (a further child started by
// the same call is recorded as a call of its own, named after the tool,
// with the child's input as its Args) and its usage is added to the
// caller's. The program calling the tool may run until the mission ends,
// as with sub-agent tools, when the tool is marked SpawnsAgents (SpawnTool
// tools are).
//
// On failure the error is an *Error of KindRun carrying the child's
// Step, whose message is redacted of the tree's firewalled values. Spawn
// called with a context of no tool call returns ErrNoRun. It is safe to
// call from several goroutines of one tool call.
func Spawn(ctx context.Context, child *Agent, input map[string]any) (*messages.Step, error) {
	sc, _ := ctx.Value(spawnKey{}).(*spawnCall)
	if sc == nil {
		return nil, ErrNoRun
	}
	if child == nil {
		return nil, errors.New("agent: Spawn given a nil agent")
	}
	start := time.Now()
	st, err := sc.tr.runLinked(ctx, sc.tool, child, nil, "", input)
	sc.tt.mu.Lock()
	sc.tt.usage.AddTokens(st.Usage)
	sc.tt.usage.Requests += st.Usage.Requests
	sc.tt.mu.Unlock()
	var ferr error
	if err != nil {
		f := *st.Fail
		f.Message = sc.tr.run.tree.secrets.redact(f.Message, false)
		ferr = &Error{Kind: KindRun, Reason: f.Reason, Msg: "spawned agent " + child.Name() + " failed: " + f.Message, Step: st}
	}
	sc.mu.Lock()
	if sc.first == nil {
		sc.first = st
	} else {
		rec := messages.ToolCall{Name: sc.tool, Args: input, StartedAt: start, Duration: time.Since(start), Child: st}
		if ferr != nil {
			rec.Error = ferr.Error()
		} else {
			rec.Result = st.Return
		}
		sc.extra = append(sc.extra, rec)
	}
	sc.mu.Unlock()
	return st, ferr
}

// SpawnsAgents returns t marked as a tool that calls Spawn: the program
// calling it may run until the mission ends (a child makes model calls),
// as with sub-agent tools, and Compile refuses it.
func (t Tool) SpawnsAgents() Tool { t.spawns = true; return t }

// SpawnOptions configure SpawnTool.
type SpawnOptions struct {
	// Limits bound each spawned agent (zero fields take the defaults);
	// the tree's turn budget, deadline and max_depth bound them all.
	Limits messages.Limits
	// Description overrides the tool's description.
	Description string
}

// spawnTool is what a SpawnTool carries for ToWire.
type spawnTool struct {
	sets map[string][]string
	opts SpawnOptions
}

// SpawnTool returns the spawn_agent tool of the seeds' dynamic sub-agent
// pattern: the model starts a child agent with a prompt and the tool sets
// it chooses from sets (a catalogue: set name → tools), and gets the
// child's return:
//
//	(prompt :string, tools ["email" | "calendar"], context :map?, signature :string?) -> :any
//
// The child runs with the prompt as its mission, the tools of the named
// sets (a set not in the catalogue is an error naming the known ones), the
// context as its ctx/ data and, when given, the signature as its contract
// (an invalid one is an error the model reads); it is spawned as Spawn
// does, so it inherits the caller's model, budgets and firewall and is
// traced as the call's Child. The caller cannot reach a tool of the
// catalogue except through a child. A failed child is the call's error.
//
// SpawnTool validates the catalogue when New binds the tool: set and tool
// names as Spec.Tools keys take them, at least one set.
func SpawnTool(sets map[string]map[string]Tool, opts SpawnOptions) Tool {
	names := slices.Sorted(maps.Keys(sets))
	wire := make(map[string][]string, len(sets))
	for name, tools := range sets {
		wire[name] = slices.Sorted(maps.Keys(tools))
	}
	t := Tool{spawns: true, llm: true, spawn: &spawnTool{sets: wire, opts: opts}}
	t.initErr = checkToolSets(wire)
	if t.initErr != nil {
		return t
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	t.Signature = "(prompt :string, tools [" + strings.Join(quoted, " | ") + "](min 1), context :map?, signature :string?) -> :any"
	t.Description = opts.Description
	if t.Description == "" {
		t.Description = "Start a child agent for a sub-task: it gets the prompt as its mission, the tools of the named sets, the context as its ctx/ data and, when given, the signature as its contract; returns what the child returns. Tool sets: " + describeSets(wire) + "."
	}
	t.fn = func(ctx context.Context, args map[string]any) (any, error) {
		prompt, _ := args["prompt"].(string)
		spec := Spec{Name: SpawnToolName, Prompt: prompt, Limits: opts.Limits, Tools: map[string]Tool{}}
		if s, ok := args["signature"].(string); ok {
			spec.Signature = s
		}
		chosen, _ := args["tools"].([]any)
		for _, c := range chosen {
			set, _ := c.(string)
			tools, ok := sets[set]
			if !ok {
				return nil, fmt.Errorf("unknown tool set %q (the sets are %s)", set, strings.Join(names, ", "))
			}
			maps.Copy(spec.Tools, tools)
		}
		child, err := New(spec)
		if err != nil {
			return nil, fmt.Errorf("cannot spawn the agent: %w", err)
		}
		input, _ := args["context"].(map[string]any)
		st, err := Spawn(ctx, child, input)
		if err != nil {
			return nil, err
		}
		return st.Return, nil
	}
	return t
}

// spawnFromWire builds the spawn_agent tool of a wire spec, resolving
// the catalogue's tools by name.
func spawnFromWire(sp *messages.SpawnSpec, resolve func(name string) (Tool, bool)) (Tool, error) {
	sets := make(map[string]map[string]Tool, len(sp.ToolSets))
	for _, set := range slices.Sorted(maps.Keys(sp.ToolSets)) {
		sets[set] = map[string]Tool{}
		for _, name := range sp.ToolSets[set] {
			if resolve == nil {
				return Tool{}, specErr("spawn_agent.tool_sets["+set+"]", "no tool resolver given", nil)
			}
			t, ok := resolve(name)
			if !ok {
				return Tool{}, specErr("spawn_agent.tool_sets["+set+"]", fmt.Sprintf("unknown tool %q", name), nil)
			}
			sets[set][name] = t
		}
	}
	return SpawnTool(sets, SpawnOptions{Limits: sp.Limits, Description: sp.Description}), nil
}

// describeSets writes the catalogue as "email (list_emails, read_email);
// calendar (...)", in name order.
func describeSets(sets map[string][]string) string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(sets)) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(name + " (" + strings.Join(sets[name], ", ") + ")")
	}
	return b.String()
}

// checkToolSets checks a catalogue of tool sets: at least one set, each
// named as a signature literal can quote it and holding at least one tool
// with a valid tool name.
func checkToolSets(sets map[string][]string) error {
	if len(sets) == 0 {
		return errors.New("spawn_agent needs at least one tool set")
	}
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		if name == "" || strings.ContainsAny(name, "\n\"\\") {
			return fmt.Errorf("invalid tool set name %q", name)
		}
		if len(sets[name]) == 0 {
			return fmt.Errorf("tool set %q is empty", name)
		}
		for _, tool := range sets[name] {
			if err := checkToolName(tool); err != nil {
				return fmt.Errorf("tool set %q: %w", name, err)
			}
		}
	}
	return nil
}
