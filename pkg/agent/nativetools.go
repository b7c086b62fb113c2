package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// textTools executes the native tool calls of a text-mode run. It counts
// calls across turns for MaxToolCalls. Not safe for concurrent use: the
// text loop calls exec once per turn.
type textTools struct {
	a     *Agent
	tr    *toolRunner // the mode and run state shared by every call
	sec   *secrets
	count int               // tool calls executed so far in the run
	names map[string]string // provider tool name → tool name (when they differ)
}

func newTextTools(a *Agent, rs *runState, sec *secrets) *textTools {
	x := &textTools{a: a, tr: &toolRunner{a: a, run: rs, mode: a.spec.Validation}, sec: sec}
	for name, api := range a.apiToolNames() {
		if api != name {
			if x.names == nil {
				x.names = map[string]string{}
			}
			x.names[api] = name
		}
	}
	return x
}

// exec runs one turn's tool calls and returns one result per call, in the
// order of calls, plus the trace records (same order), warnings and the
// usage of sub-agents.
//
// The calls of a turn run concurrently (tools must be safe for that, as
// for pmap), each bounded by the program timeout and the mission deadline; a
// call that ignores its context and runs past them is abandoned and
// answered with an error.
// Each call goes through the PTC-Lisp loop's tool runner: input coercion
// and validation, output validation, sub-agent runs, observer events.
// An unknown tool, a validation failure, a tool error or panic, and a call
// past MaxToolCalls all become {"error": "..."} results with IsError set,
// so the model can recover.
func (x *textTools) exec(missionCtx context.Context, turn int, calls []llm.ToolUse) ([]llm.ToolResult, []messages.ToolCall, []string, messages.Usage) {
	n := len(calls)
	results := make([]llm.ToolResult, n)
	recs := make([][]messages.ToolCall, n)
	runners := make([]*toolRunner, n)
	done := make([]chan llm.ToolResult, n)
	ctx, cancel := context.WithTimeout(missionCtx, x.a.programTimeout())
	defer cancel()
	for i, c := range calls {
		results[i].ToolUseID = c.ID
		name := c.Name
		if n, ok := x.names[name]; ok {
			name = n
		}
		bt, ok := x.a.tools[name]
		if !ok {
			msg := fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, strings.Join(x.a.toolKeys, ", "))
			results[i] = errorResult(c.ID, msg)
			recs[i] = []messages.ToolCall{{Name: c.Name, Args: c.Input, Error: msg, StartedAt: time.Now()}}
			continue
		}
		if max := x.a.spec.MaxToolCalls; max > 0 && x.count >= max {
			msg := fmt.Sprintf("max_tool_calls limit of %d reached: this call was not executed; give your final answer with what you have", max)
			results[i] = errorResult(c.ID, msg)
			recs[i] = []messages.ToolCall{{Name: c.Name, Args: c.Input, Error: msg, StartedAt: time.Now()}}
			continue
		}
		x.count++
		r := &toolRunner{a: x.a, run: x.tr.run, mode: x.tr.mode}
		r.cur.Store(&turnTools{turn: turn})
		runners[i] = r
		done[i] = make(chan llm.ToolResult, 1)
		go func() {
			args := c.Input
			if args == nil {
				args = map[string]any{}
			}
			out, err := r.call(ctx, bt, args)
			if err != nil {
				done[i] <- errorResult(c.ID, err.Error())
				return
			}
			done[i] <- llm.ToolResult{ToolUseID: c.ID, Content: string(jsonBytes(firewallData(plainValue(out))))}
		}()
	}
	// Wait for each call until the turn's deadline; a call still running
	// then is abandoned (it writes only to its own runner and channel).
	abandoned := make([]bool, n)
	for i, ch := range done {
		if ch == nil {
			continue
		}
		select {
		case results[i] = <-ch:
			continue
		case <-ctx.Done():
		}
		select { // a result that is ready wins over the deadline
		case results[i] = <-ch:
		default:
			msg := fmt.Sprintf("tool call did not finish within the program_timeout of %s", x.a.programTimeout())
			if missionCtx.Err() != nil {
				msg = "tool call did not finish before the mission deadline"
			}
			results[i] = errorResult(calls[i].ID, msg)
			recs[i] = []messages.ToolCall{{Name: calls[i].Name, Args: calls[i].Input, Error: msg, StartedAt: time.Now()}}
			abandoned[i] = true
		}
	}

	var out []messages.ToolCall
	var warnings []string
	var usage messages.Usage
	for i := range calls {
		if r := runners[i]; r != nil && !abandoned[i] {
			cs, ws, u := r.cur.Load().snapshot()
			recs[i] = cs
			warnings = append(warnings, ws...)
			usage.AddTokens(u)
			usage.Requests += u.Requests
		}
		// results were recorded by the firewall as the tools returned
		out = append(out, recs[i]...)
	}
	for i := range results {
		results[i].Content = x.sec.scrub(results[i].Content)
	}
	return results, out, warnings, usage
}

func errorResult(id, msg string) llm.ToolResult {
	return llm.ToolResult{ToolUseID: id, Content: string(jsonBytes(map[string]any{"error": msg})), IsError: true}
}
