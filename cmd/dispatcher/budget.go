package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// runBudget runs "budget show" and "budget set" (docs/fleet.md, "Budgets").
func runBudget(ctx context.Context, nc *nats.Conn, args []string, l fleet.BudgetLimit, asJSON bool, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "show" && args[0] != "set") {
		return errors.New("budget takes show or set")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if args[0] == "set" {
		if name, ok := strings.CutPrefix(l.Scope, "submitter:"); ok {
			l.Scope = fleet.BudgetSubmitterScope(name)
		}
		if err := fleet.SetBudget(ctx, js, l); err != nil {
			return err
		}
		if l.MaxCostUSD == 0 && l.MaxTokens == 0 {
			fmt.Fprintf(stdout, "%s removed\n", l.Name())
			return nil
		}
		fmt.Fprintf(stdout, "%s set: %s\n", l.Name(), bounds(l))
		return nil
	}
	list, err := fleet.ListBudgets(ctx, js, time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []fleet.BudgetStatus{}
		}
		return writeJSONTo(stdout, list, "  ")
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no budgets (dispatcher budget set -scope ... -window ... -max-cost-usd ...)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tWINDOW\tPERIOD\tBOUND\tSPENT\tIN FLIGHT\tUSED")
	for _, st := range list {
		s := st.Spend
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t$%.4f / %d tok\t$%.4f / %d tok\t%s\n", st.Limit.Scope, st.Limit.Window, s.Period, bounds(st.Limit),
			s.CostUSD, s.Tokens, s.ReservedCostUSD, s.ReservedTokens, used(st))
	}
	return tw.Flush()
}

// bounds prints a budget's bounds: "$100.00, 1000000 tokens".
func bounds(l fleet.BudgetLimit) string {
	var parts []string
	if l.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", l.MaxCostUSD))
	}
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", l.MaxTokens))
	}
	return strings.Join(parts, ", ")
}

// used prints the larger share of a budget spent: "82%".
func used(st fleet.BudgetStatus) string {
	p := 0.0
	if st.Limit.MaxCostUSD > 0 {
		p = max(p, 100*st.Spend.CostUSD/st.Limit.MaxCostUSD)
	}
	if st.Limit.MaxTokens > 0 {
		p = max(p, 100*float64(st.Spend.Tokens)/float64(st.Limit.MaxTokens))
	}
	return fmt.Sprintf("%.0f%%", p)
}
