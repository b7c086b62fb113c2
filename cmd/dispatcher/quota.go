package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// runQuota runs "quota show" and "quota set" (docs/fleet.md, "Quotas").
func runQuota(ctx context.Context, nc *nats.Conn, args []string, q fleet.QuotaLimit, asJSON bool, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "show" && args[0] != "set") {
		return errors.New("quota takes show or set")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if args[0] == "set" {
		if name, ok := strings.CutPrefix(q.Scope, "submitter:"); ok {
			q.Scope = fleet.QuotaSubmitterScope(name)
		}
		if err := fleet.SetQuota(ctx, js, q); err != nil {
			return err
		}
		if b := quotaBounds(q); b != "" {
			fmt.Fprintf(stdout, "%s set: %s\n", q.Name(), b)
		} else {
			fmt.Fprintf(stdout, "%s removed\n", q.Name())
		}
		return nil
	}
	list, err := fleet.ListQuotas(ctx, js, time.Now())
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []fleet.QuotaStatus{}
		}
		b, err := marshalJSON(list, "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no quotas (dispatcher quota set -scope ... -max-running N -max-queued N -weight W)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tBOUNDS\tRUNNING")
	for _, st := range list {
		running := strconv.Itoa(st.Running)
		if st.Limit.Scope == fleet.QuotaDefault {
			running = "-" // each submitter's leases are its own
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Limit.Scope, quotaBounds(st.Limit), running)
	}
	return tw.Flush()
}

// quotaBounds prints a quota's bounds: "max_running 2, max_queued 100"; "" when it bounds
// nothing.
func quotaBounds(q fleet.QuotaLimit) string {
	var parts []string
	if q.MaxRunning > 0 {
		parts = append(parts, fmt.Sprintf("max_running %d", q.MaxRunning))
	}
	if q.MaxQueued > 0 {
		parts = append(parts, fmt.Sprintf("max_queued %d", q.MaxQueued))
	}
	if q.Weight > 0 {
		parts = append(parts, fmt.Sprintf("weight %d", q.Weight))
	}
	return strings.Join(parts, ", ")
}
