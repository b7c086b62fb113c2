package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// progress prints mission events for a person watching a terminal.
type progress struct {
	w io.Writer
	// natsFlag, when not empty, goes into the decide command printed for
	// a call waiting for approval (with its trailing space): the flag
	// that reaches the server from another terminal.
	natsFlag string
}

func (p progress) event(ev *messages.Event) {
	prefix := ev.Time.Format("15:04:05.000")
	if ev.Turn > 0 {
		prefix += fmt.Sprintf(" turn %d", ev.Turn)
	}
	switch ev.Kind {
	case messages.EventStarted:
		fmt.Fprintf(p.w, "%s started on worker %s (attempt %d)\n", ev.Time.Format("15:04:05.000"), ev.Worker, max(ev.Attempt, 1))
	case messages.EventLLMRequest:
		fmt.Fprintf(p.w, "%s: asking the model\n", prefix)
	case messages.EventProgram:
		fmt.Fprintf(p.w, "%s: program\n%s\n", prefix, indent(ev.Program, "    "))
	case messages.EventToolCall:
		var args any = ev.Args
		if ev.Args == nil { // (tool/cities {}): no arguments travel
			args = map[string]any{}
		}
		fmt.Fprintf(p.w, "%s: → %s %s\n", prefix, ev.Tool, eventValue(ev, "args", args, 200))
	case messages.EventToolResult:
		if ev.Error != "" {
			fmt.Fprintf(p.w, "%s: ← %s failed: %s (%s)\n", prefix, ev.Tool, ev.Error, ev.Duration.Round(time.Microsecond))
		} else {
			fmt.Fprintf(p.w, "%s: ← %s %s (%s)\n", prefix, ev.Tool, eventValue(ev, "result", ev.Result, 200), ev.Duration.Round(time.Microsecond))
		}
	case messages.EventTurnFinished:
		if fb, ok := ev.Data["feedback"].(string); ok {
			fmt.Fprintf(p.w, "%s: feedback to the model\n%s\n", prefix, indent(fb, "    │ "))
		} else if ev.Error != "" {
			fmt.Fprintf(p.w, "%s: error\n%s\n", prefix, indent(ev.Error, "    │ "))
		}
	case messages.EventPlan:
		fmt.Fprintf(p.w, "%s: %s\n%s\n", prefix, planHeadline(ev), indent(planLines(ev.Plan), "    "))
	case messages.EventEmit:
		fmt.Fprintf(p.w, "%s: emit %s\n", prefix, eventValue(ev, "result", ev.Result, 500))
	case messages.EventApprovalRequested:
		deadline, _ := ev.Data["deadline"].(string)
		fmt.Fprintf(p.w, "%s: waiting for approval of %s %s (call %s, until %s): %s\n",
			prefix, ev.Tool, eventValue(ev, "args", ev.Args, 200), ev.CallID, deadline, decideCommand(p.natsFlag, ev.MissionID, ev.CallID))
		if pos, _ := ev.Data["position"].(string); pos != "" {
			fmt.Fprintf(p.w, "    at %s of the program%s\n", pos, strings.ReplaceAll(callSnippet(ev.Program, pos), "\n", "\n    "))
		}
	case messages.EventApprovalDecided:
		state, _ := ev.Data["state"].(string)
		by, _ := ev.Data["decided_by"].(string)
		reason, _ := ev.Data["reason"].(string)
		fmt.Fprintf(p.w, "%s: %s %s by %s %s\n", prefix, ev.Tool, state, by, reason)
	case messages.EventQuotaWait:
		quota, _ := ev.Data["quota"].(string)
		maxRunning, _ := ev.Data["max_running"].(int64)
		running, _ := ev.Data["running"].(int64)
		retry := ""
		if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev.Data["retry_at"])); err == nil {
			retry = ", queued again at " + at.Local().Format("15:04:05") + " or when one of them ends"
		}
		fmt.Fprintf(p.w, "%s: waiting for its quota: %s allows %d running, %d run%s\n", prefix, quota, maxRunning, running, retry)
	case messages.EventFinal:
		// printed by the caller with the full Step
	case messages.EventTurnStarted:
	default:
		fmt.Fprintf(p.w, "%s: %s\n", prefix, ev.Kind)
	}
}

// planHeadline says what a plan event reports: the plan when the run
// starts, or the step a program marked done, with how many steps are done.
func planHeadline(ev *messages.Event) string {
	done := 0
	for _, s := range ev.Plan {
		if s.Done {
			done++
		}
	}
	if ev.Tool == "" {
		return fmt.Sprintf("plan, %d/%d steps done", done, len(ev.Plan))
	}
	return fmt.Sprintf("plan: step %s done, %d/%d steps done", ev.Tool, done, len(ev.Plan))
}

// planLines renders a plan's steps, one a line: "[x] 1. Fetch the orders —
// fetched 3 orders".
func planLines(plan []messages.PlanStep) string {
	var b strings.Builder
	for i, s := range plan {
		mark := " "
		if s.Done {
			mark = "x"
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s] %s. %s", mark, s.ID, s.Description)
		if s.Summary != "" {
			b.WriteString(" — " + s.Summary)
		}
	}
	return b.String()
}

func indent(s, pad string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n")
}

// preview renders v as compact JSON cut to n bytes; lists say how long they are.
// eventValue previews an event's value v named field, or, when the event
// was too large to carry it (fleet.MaxEventBytes), the preview of it the
// event carries instead, with its size.
func eventValue(ev *messages.Event, field string, v any, n int) string {
	cut, _ := ev.Data["cut"].(map[string]any)
	if c, ok := cut[field].(map[string]any); ok {
		if text, ok := c["preview"].(string); ok {
			return fmt.Sprintf("%s (%v bytes)", oneLine(text, n), c["bytes"])
		}
		return fmt.Sprintf("(%v bytes, not shown)", c["bytes"])
	}
	return preview(v, n)
}

func preview(v any, n int) string {
	if r, ok := messages.RefOf(v); ok {
		// A large tool result the trace keeps by reference: what and
		// where, not the reference's JSON.
		return cut(fmt.Sprintf("(%d bytes, kept in object store %s as %s)", r.Size, r.Bucket, r.Name), n)
	}
	if l, ok := v.([]any); ok && len(l) > 3 {
		head, _ := marshalJSON(l[:2], "")
		head = bytes.TrimSuffix(head, []byte("\n"))
		return cut(fmt.Sprintf("[%d items] %s…", len(l), strings.TrimSuffix(string(head), "]")), n)
	}
	b, err := marshalJSON(v, "")
	if err != nil {
		return fmt.Sprint(v)
	}
	return cut(strings.TrimSuffix(string(b), "\n"), n)
}

// cut shortens s to at most n bytes, on a character boundary, marking the
// cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// printStep prints the outcome of a mission: the answer as JSON, or the
// failure, and a usage line.
func printStep(w io.Writer, s *messages.Step) {
	u := s.Usage
	if s.Fail != nil {
		for _, t := range s.Trace {
			if t.Error != "" {
				fmt.Fprintf(w, "\nturn %d error:\n%s\n", t.Number, indent(t.Error, "  "))
			}
		}
		fmt.Fprintf(w, "\nFAILED: %s\n%s\n", s.Fail.Reason, indent(s.Fail.Message, "  "))
	} else {
		if len(s.Plan) > 0 {
			fmt.Fprintf(w, "\n%s\n%s\n", planHeadline(&messages.Event{Plan: s.Plan}), indent(planLines(s.Plan), "  "))
		}
		fmt.Fprintf(w, "\nRESULT (%s):\n%s\n", orDash(s.Signature), pretty(s.Return, ""))
	}
	fmt.Fprintf(w, "\nturns %d · llm requests %d · tokens %d in / %d out%s · tool calls %d · %s\n",
		u.Turns, u.Requests, u.InputTokens, u.OutputTokens, cacheAndCost(u), u.ToolCalls, u.Duration.Round(time.Millisecond))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// pretty renders v as indented JSON, keeping lists of scalars on one line
// so that a list of 500 ids does not take 500 lines.
func pretty(v any, pad string) string {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		keys := slices.Sorted(maps.Keys(x))
		var b strings.Builder
		b.WriteString("{\n")
		for i, k := range keys {
			kj, _ := json.Marshal(k)
			fmt.Fprintf(&b, "%s  %s: %s", pad, kj, pretty(x[k], pad+"  "))
			if i < len(keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(pad + "}")
		return b.String()
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if scalars || len(x) == 0 {
			break
		}
		var b strings.Builder
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(pad + "  " + pretty(e, pad+"  "))
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(pad + "]")
		return b.String()
	}
	out, err := json.Marshal(messages.JSONFloats(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(out)
}

// cacheAndCost renders the prompt-cache counts and the estimated cost of a
// usage line, each only when known.
func cacheAndCost(u messages.Usage) string {
	var b strings.Builder
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		fmt.Fprintf(&b, " (cache %d read / %d written)", u.CacheReadTokens, u.CacheWriteTokens)
	}
	if u.CostUSD > 0 {
		fmt.Fprintf(&b, " · est. cost $%.4f", u.CostUSD)
	}
	return b.String()
}
