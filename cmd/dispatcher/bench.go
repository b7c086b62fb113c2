package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ptcfleet/ptc/internal/ctxbench"
)

// maxBenchScale bounds -scales (100× is 500,000 orders).
const maxBenchScale = 100

// runBenchContext runs the context-efficiency benchmark: each mission in
// PTC-Lisp and text mode at each scale, and prints prompt tokens
// (o200k_base), requests and the largest request.
func runBenchContext(ctx context.Context, scales string, out io.Writer) error {
	var ss []int
	for f := range strings.SplitSeq(scales, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxBenchScale {
			return fmt.Errorf("-scales: %q is not a scale from 1 to %d", f, maxBenchScale)
		}
		ss = append(ss, n)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mission\tscale\trecords\tmode\trequests\tprompt tokens\tlargest request\tprompt bytes\tPTC saves\t")
	for _, m := range ctxbench.Missions() {
		for _, s := range ss {
			p, err := ctxbench.Run(ctx, m, ctxbench.PTC, s)
			if err != nil {
				return err
			}
			t, err := ctxbench.Run(ctx, m, ctxbench.Text, s)
			if err != nil {
				return err
			}
			for _, r := range []ctxbench.Result{p, t} {
				saves := ""
				if r.Mode == ctxbench.PTC {
					saves = fmt.Sprintf("%.2f%%", 100*ctxbench.Saving(p, t))
				}
				fmt.Fprintf(tw, "%s\t%d×\t%d\t%s\t%d\t%d\t%d\t%d\t%s\t\n", m.Name, s, r.Records, r.Mode, r.Requests, r.PromptTokens, r.LargestTokens, r.PromptBytes, saves)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "tokens: o200k_base (OpenAI's current encoding) over each request's system prompt, messages, tool calls and results, tool definitions; per-message framing not counted")
	return nil
}
