package agent

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TraceOptions control PrintTrace and PrintChain.
type TraceOptions struct {
	// ShowFirewalled prints the values of "_" fields (off by default, so
	// traces pasted into logs or tickets do not leak them).
	ShowFirewalled bool
	// Width is the width of the box rules (default 48).
	Width int
}

// PrintTrace writes a step's trace in a box layout:
// one box per turn with the program, the tool calls (sub-agent calls
// nested below them), the result or error, duration and tokens; then a
// summary line. It returns the first write error.
func PrintTrace(w io.Writer, st *messages.Step, opts TraceOptions) error {
	p := &tracePrinter{w: w, opts: opts}
	if p.opts.Width <= 0 {
		p.opts.Width = 48
	}
	p.step(st, "")
	return p.err
}

// PrintChain prints several steps (a chain of runs) one after another,
// each under a "Step n" header.
func PrintChain(w io.Writer, steps []*messages.Step, opts TraceOptions) error {
	for i, st := range steps {
		if _, err := fmt.Fprintf(w, "═══ Step %d of %d ═══\n", i+1, len(steps)); err != nil {
			return err
		}
		if err := PrintTrace(w, st, opts); err != nil {
			return err
		}
	}
	return nil
}

type tracePrinter struct {
	w    io.Writer
	opts TraceOptions
	err  error
}

func (p *tracePrinter) line(indent, s string) {
	if p.err != nil {
		return
	}
	_, p.err = io.WriteString(p.w, indent+s+"\n")
}

func (p *tracePrinter) value(v any) string {
	lv, err := lisp.FromGo(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return lisp.Sprint(lv, lisp.PrintOptions{NoFirewall: p.opts.ShowFirewalled, MaxItems: 5, MaxString: 200, MaxLen: 400})
}

func (p *tracePrinter) step(st *messages.Step, indent string) {
	if st == nil {
		p.line(indent, "(no step)")
		return
	}
	for _, t := range st.Trace {
		head := fmt.Sprintf("┌─ Turn %d ", t.Number)
		p.line(indent, head+strings.Repeat("─", max(3, p.opts.Width-len([]rune(head)))))
		bar := indent + "│ "
		if t.Program != "" {
			p.line(bar, "Program:")
			for _, l := range strings.Split(t.Program, "\n") {
				p.line(bar, "  "+l)
			}
		} else if t.Raw != "" {
			p.line(bar, "Response: "+oneLine(t.Raw, 200))
		}
		if len(t.ToolCalls) > 0 {
			p.line(bar, "Tools:")
			for _, c := range t.ToolCalls {
				p.line(bar, fmt.Sprintf("  → %s(%s)", c.Name, p.value(c.Args)))
				if c.Error != "" {
					p.line(bar, "    ✗ "+oneLine(c.Error, 300))
				} else {
					p.line(bar, "    ← "+p.value(c.Result))
				}
				if c.Child != nil {
					p.step(c.Child, bar+"    ")
				}
			}
		}
		if len(t.Prints) > 0 {
			p.line(bar, "Output:")
			for _, l := range t.Prints {
				p.line(bar, "  "+l)
			}
		}
		if t.Error != "" {
			p.line(bar, "Error: "+oneLine(t.Error, 300))
		} else if t.Program != "" {
			p.line(bar, "Result: "+p.value(t.Result))
		}
		p.line(bar, fmt.Sprintf("Duration: %s | Tokens: %d in / %d out", fmtMs(t.Duration), t.Usage.InputTokens, t.Usage.OutputTokens))
		p.line(indent, "└"+strings.Repeat("─", p.opts.Width-1))
	}
	status := "ok"
	if st.Fail != nil {
		status = "failed: " + oneLine(st.Fail.Error(), 200)
	} else {
		status += ": " + p.value(st.Return)
	}
	u := st.Usage
	p.line(indent, fmt.Sprintf("%s (%d turns, %d requests, %d tool calls, %d in / %d out tokens, %s)",
		status, u.Turns, u.Requests, u.ToolCalls, u.InputTokens, u.OutputTokens, fmtMs(u.Duration)))
}

func fmtMs(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ⏎ ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "..."
	}
	return s
}
