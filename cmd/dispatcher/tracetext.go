package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// maskedPreview is preview (progress.go) of v with every firewalled value
// shown as <Firewalled>.
func maskedPreview(v any, n int) string { return preview(messages.MaskFirewalled(v), n) }

// printTrace writes a mission's trace as text: a header with its state,
// attempts, worker and times; then each turn with its program, tool calls
// (arguments, duration, result or error; sub-agents nested), the
// program's result or error and the feedback the model received next; then
// the result and the usage. A mission without a result yet is shown from
// its progress events.
func printTrace(w io.Writer, v *missionView) error {
	p := &textPrinter{w: w}
	p.header(v)
	switch {
	case v.Step != nil:
		p.step(v.Step, "")
	case v.Status != nil && messages.TerminalState(v.Status.State):
		p.printf("", "the result is no longer stored (results are kept 72 h by default)")
	default:
		p.events(v.Events)
	}
	return p.err
}

type textPrinter struct {
	w   io.Writer
	err error
}

func (p *textPrinter) printf(indent, format string, args ...any) {
	if p.err != nil {
		return
	}
	s := fmt.Sprintf(format, args...)
	for _, l := range strings.Split(s, "\n") {
		if _, p.err = io.WriteString(p.w, indent+l+"\n"); p.err != nil {
			return
		}
	}
}

func (p *textPrinter) header(v *missionView) {
	line := fmt.Sprintf("mission %s  %s", v.ID, strings.ToUpper(v.state()))
	if st := v.Status; st != nil {
		if st.Attempt > 0 {
			line += fmt.Sprintf("  attempt %d", st.Attempt)
		}
		if st.Worker != "" {
			line += "  worker " + st.Worker
		}
		if st.Reason != "" {
			line += "  reason " + st.Reason
		}
	}
	p.printf("", "%s", line)
	if st := v.Status; st != nil && st.Summary != nil {
		what := summaryAgent(st.Summary)
		if l := summaryLine(st.Summary, ""); l != "" {
			what += " · " + l
		}
		p.printf("", "%s", what)
	}
	if !v.Submitted.IsZero() {
		times := "submitted " + v.Submitted.Format(time.RFC3339)
		if v.Status != nil && messages.TerminalState(v.Status.State) && !v.Status.UpdatedAt.IsZero() {
			times += "  finished " + v.Status.UpdatedAt.UTC().Format(time.RFC3339) +
				"  took " + fmtDuration(fleet.MissionDuration(*v.Status, time.Now())) + " (queued and run; the list's duration)"
		}
		p.printf("", "%s", times)
	}
}

func (p *textPrinter) step(st *messages.Step, indent string) {
	for _, t := range st.Trace {
		p.printf(indent, "── turn %d  %s  %d in / %d out tokens", t.Number, fmtDuration(t.Duration), t.Usage.InputTokens, t.Usage.OutputTokens)
		in := indent + "   "
		switch {
		case t.Program != "":
			p.printf(in, "program:")
			p.printf(in+"  ", "%s", t.Program)
		case t.Raw != "":
			p.printf(in, "response: %s", oneLine(t.Raw, 300))
		}
		for _, c := range t.ToolCalls {
			p.printf(in, "tool %s %s  %s", c.Name, maskedPreview(c.Args, 300), fmtDuration(c.Duration))
			if c.Error != "" {
				p.printf(in+"  ", "✗ %s", oneLine(c.Error, 300))
			} else {
				p.printf(in+"  ", "← %s", maskedPreview(c.Result, 300))
			}
			if c.Approval != nil {
				p.printf(in+"  ", "approval %s", decisionLine(c.Approval))
			}
			if c.Child != nil {
				p.printf(in+"  ", "sub-agent %s:", c.Name)
				p.step(c.Child, in+"    ")
			}
		}
		for _, l := range t.Prints {
			p.printf(in, "printed: %s", l)
		}
		if t.Error != "" {
			p.printf(in, "error: %s", oneLine(t.Error, 500))
		} else if t.Program != "" {
			p.printf(in, "result: %s", maskedPreview(t.Result, 500))
		}
		if t.Feedback != "" {
			p.printf(in, "feedback to the model:")
			p.printf(in+"  ", "%s", t.Feedback)
		}
	}
	if len(st.Plan) > 0 {
		p.printf(indent, "%s", planHeadline(&messages.Event{Plan: st.Plan}))
		p.printf(indent+"  ", "%s", planLines(st.Plan))
	}
	if st.Fail != nil {
		p.printf(indent, "FAILED %s: %s", st.Fail.Reason, oneLine(st.Fail.Message, 500))
	} else {
		p.printf(indent, "RETURN %s", maskedPreview(st.Return, 2000))
	}
	u := st.Usage
	p.printf(indent, "usage: %d turns, %d model requests, %d tool calls, %d in / %d out tokens%s, run %s",
		u.Turns, u.Requests, u.ToolCalls, u.InputTokens, u.OutputTokens, cacheAndCost(u), fmtDuration(u.Duration))
}

// events prints a running mission from its progress events.
func (p *textPrinter) events(evs []*messages.Event) {
	if len(evs) == 0 {
		p.printf("", "no result yet and no progress events stored (they are kept for an hour)")
		return
	}
	p.printf("", "no result yet; progress so far:")
	for _, ev := range evs {
		ev = ev.Masked()
		switch ev.Kind {
		case messages.EventStarted:
			p.printf("", "  started on %s (attempt %d)", ev.Worker, ev.Attempt)
		case messages.EventTurnStarted:
			p.printf("", "── turn %d", ev.Turn)
		case messages.EventProgram:
			p.printf("   ", "program:")
			p.printf("     ", "%s", ev.Program)
		case messages.EventToolCall:
			p.printf("   ", "tool %s %s", ev.Tool, eventValue(ev, "args", ev.Args, 300))
		case messages.EventToolResult:
			if ev.Error != "" {
				p.printf("     ", "✗ %s  %s", oneLine(ev.Error, 300), fmtDuration(ev.Duration))
			} else {
				p.printf("     ", "← %s  %s", eventValue(ev, "result", ev.Result, 300), fmtDuration(ev.Duration))
			}
		case messages.EventTurnFinished:
			if fb, ok := ev.Data["feedback"].(string); ok && fb != "" {
				p.printf("   ", "feedback to the model:")
				p.printf("     ", "%s", fb)
			}
		case messages.EventEmit:
			p.printf("   ", "emit %s", eventValue(ev, "result", ev.Result, 300))
		case messages.EventPlan:
			p.printf("   ", "%s", planHeadline(ev))
			p.printf("     ", "%s", planLines(ev.Plan))
		}
	}
}

// printList writes missions as a table, newest first.
func printList(w io.Writer, ms []fleet.MissionInfo) error {
	if len(ms) == 0 {
		_, err := fmt.Fprintln(w, "no missions")
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s  %-9s  %7s  %9s  %-20s  %-18s  %s\n", "MISSION", "STATE", "ATTEMPT", "DURATION", "WORKER", "AGENT", "PROMPT · LABELS · REASON")
	for _, m := range ms {
		fmt.Fprintf(&b, "%-26s  %-9s  %7d  %9s  %-20s  %-18s  %s\n", m.MissionID, m.State, m.Attempt, fmtDuration(m.Duration), m.Worker,
			oneLine(summaryAgent(m.Summary), 18), summaryLine(m.Summary, m.Reason))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryAgent names a mission's agent for a list: its name, "compiled"
// for a compiled mission, "-" when unknown.
func summaryAgent(sm *messages.MissionSummary) string {
	switch {
	case sm == nil:
		return "-"
	case sm.Kind == messages.KindCompiled:
		return "(compiled)"
	case sm.Agent == "":
		return "(unnamed)"
	}
	return sm.Agent
}

// summaryLine is a list row's last column: the prompt's first line, the
// labels, "scripted" and the failure reason, each when there is one.
func summaryLine(sm *messages.MissionSummary, reason string) string {
	var parts []string
	if sm != nil {
		if sm.Prompt != "" {
			parts = append(parts, oneLine(sm.Prompt, 60))
		}
		if len(sm.Labels) > 0 {
			parts = append(parts, labelText(sm.Labels))
		}
		if sm.Scripted {
			parts = append(parts, "SCRIPTED")
		}
	}
	if reason != "" {
		parts = append(parts, "reason "+reason)
	}
	return strings.Join(parts, " · ")
}

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ⏎ ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
