// Command shoptools serves the example shop tools (list_customers,
// list_orders, search_emails, get_customer over a generated dataset) as a
// NATS micro service: the example of a tool-owning service in the fleet.
// Start more instances to scale it; they share a queue group.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

func main() {
	cli.Main("shoptools", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.LookupEnv, os.Stderr, nil) }, nil)
}

type config struct {
	nats          cli.NATSOptions
	log           cli.LogOptions
	healthAddr    string
	maxConcurrent int
	customers     int
	orders        int
	emails        int
}

func flagSet(c *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("shoptools", flag.ContinueOnError)
	fs.SetOutput(out)
	c.nats.Register(fs)
	c.log.Register(fs)
	fs.StringVar(&c.healthAddr, "health-addr", ":8082", "address of the /healthz, /readyz and /metrics endpoints (empty: off; the default, when busy, gives way to a free port)")
	fs.IntVar(&c.maxConcurrent, "max-concurrent", 64, "tool calls handled at once")
	fs.IntVar(&c.customers, "customers", 2000, "customers in the generated dataset")
	fs.IntVar(&c.orders, "orders", 10000, "orders in the generated dataset")
	fs.IntVar(&c.emails, "emails", 5000, "emails in the generated dataset")
	cli.Usage(fs, "shoptools [flags]")
	return fs
}

func run(ctx context.Context, args []string, lookup cli.Lookup, logOut io.Writer, ready chan<- string) error {
	var c config
	fs := flagSet(&c, logOut)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.ApplyEnv(fs, lookup); err != nil {
		return err
	}
	if err := c.nats.Validate(); err != nil {
		return err
	}
	if c.nats.URL == "" {
		return errors.New("no NATS server: set -nats-url or PTC_NATS_URL")
	}
	if c.customers < 1 || c.orders < 0 || c.emails < 0 {
		return errors.New("customers must be at least 1; orders and emails at least 0")
	}
	log, err := c.log.Logger(logOut, "shoptools")
	if err != nil {
		return err
	}
	// The endpoint's address is taken before anything starts: a busy
	// address the user chose stops the service here.
	hl, err := cli.ListenFlag(fs, "health-addr")
	if err != nil {
		return err
	}
	defer hl.Close()
	hl.WarnBusy(&log, "health")
	nc, err := c.nats.Dial(ctx, c.nats.URL, "ptc-shoptools", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	metrics, metricsHandler, err := cli.Metrics()
	if err != nil {
		return err
	}
	tp, shutdownTracing, err := cli.Tracing(ctx, lookup.Getenv, "ptc-shoptools")
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background())
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: shop.ServiceName, Description: "example shop data", MaxConcurrent: c.maxConcurrent, Logger: &log,
		Metrics: metrics, TracerProvider: tp})
	if err != nil {
		return err
	}
	if err := shop.Generate(c.customers, c.orders, c.emails).Register(svc); err != nil {
		return err
	}
	hctx, stopHealth := context.WithCancel(context.Background())
	defer stopHealth()
	health := cli.Health{Metrics: metricsHandler, Ready: func() error {
		if !nc.IsConnected() {
			return errors.New("nats disconnected")
		}
		return nil
	}}
	addr := hl.Addr()
	if hl.Listener != nil {
		go func() {
			if err := health.ServeOn(hctx, hl.Listener); err != nil {
				log.Error().Err(err).Msg("health endpoint stopped")
			}
		}()
	}
	log.Info().Strs("tools", shop.ToolNames()).Str("health", addr).Msg("serving")
	if ready != nil {
		ready <- addr
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Stop(sctx)
}
