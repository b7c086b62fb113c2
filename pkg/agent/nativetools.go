package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	count int // tool calls executed so far in the run
}

// exec runs one turn's tool calls and returns one result per call, in the
// order of calls, plus the trace records (same order), warnings and the
// usage of sub-agents.
//
// The calls of a turn run concurrently (tools must be safe for that, as
// for pmap), each bounded by the turn timeout and the mission deadline.
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
	ctx, cancel := context.WithTimeout(missionCtx, x.a.turnTimeout())
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range calls {
		results[i].ToolUseID = c.ID
		bt, ok := x.a.tools[c.Name]
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := c.Input
			if args == nil {
				args = map[string]any{}
			}
			out, err := r.call(ctx, bt, args)
			if err != nil {
				results[i] = errorResult(c.ID, err.Error())
				return
			}
			results[i] = llm.ToolResult{ToolUseID: c.ID, Content: string(jsonBytes(firewallData(plainValue(out))))}
		}()
	}
	wg.Wait()

	var out []messages.ToolCall
	var warnings []string
	var usage messages.Usage
	for i := range calls {
		if r := runners[i]; r != nil {
			cs, ws, u := r.cur.Load().snapshot()
			recs[i] = cs
			warnings = append(warnings, ws...)
			addTokens(&usage, u)
			usage.Requests += u.Requests
		}
		for _, c := range recs[i] {
			x.sec.collect(c.Result, false)
		}
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
