// Command worker runs missions from NATS JetStream: it pulls missions,
// runs the agent loop with the models named in its configuration, calls the
// tools missions name over NATS request/reply, and publishes each mission's
// Step on its result subject. Workers are stateless; scale them on queue lag.
//
// Configuration comes from flags, each with an environment twin
// (-nats-url → PTC_NATS_URL), and models from PTC_MODEL_<NAME>=<spec>
// variables (docs/operations.md). With no NATS URL the worker starts an
// embedded NATS server with JetStream in a temporary directory.
//
// On SIGTERM the worker drains: readiness fails, it stops fetching, lets
// running missions finish for -drain-grace, then hands the rest back.
//
// `worker setup` is the administrator's step instead: it creates or
// updates the streams, consumers and buckets (-replicas, -ack-wait,
// -max-deliver) and exits; workers run with -verify-layout need no
// permission to create them (docs/security.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// defaultMaxProgramMemory is the default ceiling of program_memory
// (-max-program-memory, PTC_MAX_PROGRAM_MEMORY): 256 MiB.
const defaultMaxProgramMemory = 256 << 20

func main() {
	cli.Main("worker", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], os.LookupEnv, os.Environ(), os.Stderr, nil)
	}, nil)
}

// config is the worker's configuration.
type config struct {
	nats         cli.NATSOptions
	log          cli.LogOptions
	id           string
	slots        int
	replicas     int
	healthAddr   string
	drainGrace   time.Duration
	toolTimeout  time.Duration
	ackWait      time.Duration
	maxDeliver   int
	maxAckPend   int
	defaultModel string
	exampleTools bool
	verifyLayout bool
	ceilings     fleet.Ceilings
	tenant       string
	memBudget    int64
	softMemLimit int64
	llmOpts      string
	toolPins     string
	toolServices string
	approvalJSON string
	approvals    []messages.ApprovalRule
	approvalWait time.Duration
	stalledAfter time.Duration
}

func (c *config) register(fs *flag.FlagSet) {
	c.nats.Register(fs)
	c.log.Register(fs)
	fs.StringVar(&c.id, "id", "", "worker id in status and logs (default <hostname>-<pid>-<random>)")
	fs.IntVar(&c.slots, "slots", 4, "missions run at once")
	fs.IntVar(&c.replicas, "replicas", 1, "replicas of the streams and buckets the worker creates (3 in production)")
	fs.StringVar(&c.healthAddr, "health-addr", ":8081", "address of the /healthz, /readyz and /metrics endpoints (empty: off; the default, when busy, gives way to a free port)")
	fs.DurationVar(&c.drainGrace, "drain-grace", 25*time.Second, "on SIGTERM, how long running missions may finish before they are handed back")
	fs.DurationVar(&c.toolTimeout, "tool-timeout", fleet.DefaultToolTimeout, "bound of one remote tool call")
	fs.DurationVar(&c.ackWait, "ack-wait", fleet.DefaultAckWait, "JetStream AckWait of the mission consumers (heartbeats every third of it): a killed worker's missions are taken over after at most this long")
	fs.BoolVar(&c.verifyLayout, "verify-layout", false, "only wait for the streams and buckets to exist (created by an administrator) instead of creating or updating them")
	fs.StringVar(&c.toolServices, "tool-services", "", "setup only: comma-separated tool services whose large-results buckets setup creates")
	fs.IntVar(&c.maxDeliver, "max-deliver", 5, "deliveries of a mission before it is dead-lettered")
	fs.IntVar(&c.maxAckPend, "max-ack-pending", fleet.DefaultMaxAckPending, "setup only: MaxAckPending of each mission consumer, the missions of a priority the whole fleet holds at once (at least the sum of the workers' slots); a worker that sets the layout up itself raises it to its -slots")
	fs.StringVar(&c.defaultModel, cli.FallbackModelFlag, "default", "name of the model a mission runs on when it names none (PTC_MODEL_<NAME> configures models)")
	fs.BoolVar(&c.exampleTools, "example-tools", false, "also serve the example shop tools from this process")
	fs.DurationVar(&c.ceilings.MissionTimeout, "max-mission-timeout", time.Hour, "ceiling of a mission's timeout (limits and agent specs); longer missions are refused (0: none)")
	fs.IntVar(&c.ceilings.MaxTurns, "max-turns", 50, "ceiling of max_turns of a mission and its agents (0: none)")
	fs.IntVar(&c.ceilings.TurnBudget, "max-turn-budget", 200, "ceiling of turn_budget of a mission and its agents (0: none)")
	fs.Int64Var(&c.ceilings.MemoryLimit, "max-memory-limit", 64<<20, "ceiling of memory_limit of a mission and its agents, in bytes (0: none)")
	fs.Int64Var(&c.ceilings.ProgramMemory, "max-program-memory", defaultMaxProgramMemory, "ceiling of program_memory of a mission and its agents, in bytes (0: none)")
	fs.Int64Var(&c.ceilings.MaxData, "max-data", 1<<30, "ceiling of max_data of a mission and its agents, in bytes: the largest tool result a mission may read (0: none)")
	fs.Int64Var(&c.ceilings.MaxEmitBytes, "max-emit-bytes", 64<<10, "ceiling of max_emit_bytes of a mission and its agents: the largest value, as JSON, a program may emit (0: none)")
	fs.IntVar(&c.ceilings.EmitRate, "max-emit-rate", 100, "ceiling of emit_rate of a mission and its agents: the values a mission's programs may emit a second (0: none)")
	fs.Int64Var(&c.memBudget, "memory-budget", 0, "bytes the missions run at once may hold from their tools; each reserves its program_memory and waits when it does not fit (0: three quarters of the soft memory limit, GOMEMLIMIT or -soft-memory-limit, or 1 GiB without one; negative: none)")
	fs.Int64Var(&c.softMemLimit, "soft-memory-limit", 0, "the Go runtime's soft memory limit, in bytes, as GOMEMLIMIT sets it: the heap the collector lets grow before it works harder (0: GOMEMLIMIT when set, else 90% of the container's cgroup memory limit when it has one; negative: none)")
	fs.StringVar(&c.tenant, "tenant", "", "name of the account (tenant) this worker serves: the tenant label of the spend metrics")
	fs.Float64Var(&c.ceilings.MaxCostUSD, "max-cost-usd", 0, "ceiling of max_cost_usd of a mission and its agents, in US dollars, and the budget of a mission that sets none (0: none)")
	fs.Int64Var(&c.ceilings.MaxTokens, "max-tokens", 0, "ceiling of max_tokens of a mission and its agents, and the budget of a mission that sets none (0: none)")
	fs.IntVar(&c.ceilings.LLMRetryAttempts, "max-llm-attempts", 10, "ceiling of llm_retry.max_attempts (0: none)")
	fs.DurationVar(&c.ceilings.LLMRetryMaxDelay, "max-llm-retry-delay", 2*time.Minute, "ceiling of llm_retry base_delay and max_delay (0: none)")
	fs.StringVar(&c.llmOpts, "llm-opts", strings.Join(fleet.DefaultLLMOpts(), ","), "comma-separated llm_opts keys missions may set (none: no key)")
	fs.StringVar(&c.toolPins, "tool-pins", "", "comma-separated tool=service pairs: the one service that may serve a tool offered by several")
	fs.StringVar(&c.approvalJSON, "approval-rules", "", `JSON list of approval rules: tool calls that wait for a person's approval on this worker, whatever the mission says, e.g. [{"tool":"refund","when":{"arg":"amount","op":">","value":100}},{"service":"payments"}] (docs/approvals.md)`)
	fs.DurationVar(&c.approvalWait, "approval-timeout", messages.DefaultApprovalTimeout, "how long a tool call waits for a decision when its mission sets no approval.timeout; then it is denied (approval_timeout)")
	fs.DurationVar(&c.stalledAfter, "stalled-after", fleet.DefaultStalledAfter, "how often the fleet looks for missions whose decision was recorded but whose wake was lost (its decider stopped), and how old such a decision must be; one worker queues each again (at least 1s; the fleet's period is the last one a worker started with set)")
}

// parseApprovalRules reads -approval-rules.
func (c *config) parseApprovalRules() error {
	if strings.TrimSpace(c.approvalJSON) == "" {
		return nil
	}
	d := json.NewDecoder(strings.NewReader(c.approvalJSON))
	d.DisallowUnknownFields()
	if err := d.Decode(&c.approvals); err != nil {
		return fmt.Errorf("approval-rules: %w", err)
	}
	for i, r := range c.approvals {
		if err := r.Validate(fmt.Sprintf("approval-rules[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// parseLists turns -llm-opts and -tool-pins into the ceilings' allow-list
// and the worker's tool pins.
func (c *config) parseLists() (map[string]string, error) {
	c.ceilings.LLMOpts = []string{}
	if v := strings.TrimSpace(c.llmOpts); v != "none" {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				c.ceilings.LLMOpts = append(c.ceilings.LLMOpts, k)
			}
		}
	}
	var pins map[string]string
	for _, p := range strings.Split(c.toolPins, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		tool, svc, ok := strings.Cut(p, "=")
		if !ok || tool == "" || svc == "" {
			return nil, fmt.Errorf("tool-pins: %q is not tool=service", p)
		}
		if pins == nil {
			pins = map[string]string{}
		}
		pins[strings.TrimSpace(tool)] = strings.TrimSpace(svc)
	}
	return pins, nil
}

func (c *config) validate() error {
	var errs []error
	if c.slots < 1 {
		errs = append(errs, fmt.Errorf("slots must be at least 1, got %d", c.slots))
	}
	if c.replicas < 1 || c.replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas must be 1 to 5, got %d", c.replicas))
	}
	if c.drainGrace < 0 || c.toolTimeout <= 0 || c.ackWait < 3*time.Second {
		errs = append(errs, errors.New("drain-grace must be ≥ 0, tool-timeout > 0 and ack-wait ≥ 3s"))
	}
	if c.toolTimeout > fleet.MaxToolTimeout {
		errs = append(errs, fmt.Errorf("tool-timeout %s: at most %s (a tool service's NATS user may answer a request for no longer)", c.toolTimeout, fleet.MaxToolTimeout))
	}
	if c.stalledAfter < fleet.MinStalledAfter {
		errs = append(errs, fmt.Errorf("stalled-after must be at least %s, got %s", fleet.MinStalledAfter, c.stalledAfter))
	}
	if c.maxDeliver < 1 {
		errs = append(errs, fmt.Errorf("max-deliver must be at least 1, got %d", c.maxDeliver))
	}
	if c.maxAckPend < 1 {
		errs = append(errs, fmt.Errorf("max-ack-pending must be at least 1, got %d", c.maxAckPend))
	}
	if c.ceilings.MissionTimeout < 0 || c.ceilings.MaxTurns < 0 || c.ceilings.TurnBudget < 0 || c.ceilings.MemoryLimit < 0 ||
		c.ceilings.ProgramMemory < 0 || c.ceilings.MaxData < 0 || c.ceilings.MaxCostUSD < 0 || c.ceilings.MaxTokens < 0 ||
		c.ceilings.LLMRetryAttempts < 0 || c.ceilings.LLMRetryMaxDelay < 0 || c.ceilings.MaxEmitBytes < 0 || c.ceilings.EmitRate < 0 {
		errs = append(errs, errors.New("the max-* ceilings must be ≥ 0 (0: no ceiling)"))
	}
	errs = append(errs, c.nats.Validate())
	return errors.Join(errs...)
}

// flagSet builds the worker's flags; tests read the env names from it.
func flagSet(c *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(out)
	c.register(fs)
	cli.Usage(fs, "worker [setup] [flags]")
	return fs
}

// runSetup is `worker setup`: the administrator's step that creates or
// updates the fleet's streams, consumers and buckets (fleet.EnsureStores
// with -replicas, -ack-wait, -max-deliver and -max-ack-pending) and exits. Workers started
// with -verify-layout then only wait for that layout, so they need no
// permission to create or change it.
func runSetup(ctx context.Context, c *config, fs *flag.FlagSet, lookup cli.Lookup, logOut io.Writer) error {
	if err := cli.ApplyEnv(fs, lookup); err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	if c.nats.URL == "" {
		return errors.New("setup needs a NATS URL (-nats-url)")
	}
	log, err := c.log.Logger(logOut, "worker-setup")
	if err != nil {
		return err
	}
	nc, err := c.nats.Dial(ctx, c.nats.URL, "ptc-worker-setup", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	store := fleet.StoreConfig{Replicas: c.replicas, AckWait: c.ackWait, MaxDeliver: c.maxDeliver, MaxAckPending: c.maxAckPend,
		ToolServices: splitList(c.toolServices),
		OnRetry: func(what string, err error, wait time.Duration) {
			log.Warn().Err(err).Str("store", what).Dur("retry_in", wait).Msg("layout not set up yet; retrying")
		}}
	if _, err := fleet.EnsureStores(ctx, js, store); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	log.Info().Int("replicas", c.replicas).Dur("ack_wait", c.ackWait).Int("max_deliver", c.maxDeliver).
		Int("max_ack_pending", c.maxAckPend).Msg("layout ready")
	return nil
}

// run is the whole worker; ready (if not nil) receives the health address
// once the worker is running, for tests.
func run(ctx context.Context, args []string, lookup cli.Lookup, environ []string, logOut io.Writer, ready chan<- string) error {
	var c config
	fs := flagSet(&c, logOut)
	setup := len(args) > 0 && args[0] == "setup"
	if setup {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if setup {
		return runSetup(ctx, &c, fs, lookup, logOut)
	}
	lookup, formerModelVar := cli.WithFormerName(lookup, cli.EnvName(cli.FallbackModelFlag), cli.FallbackModelFormerEnv)
	if err := cli.ApplyEnv(fs, lookup); err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	getenv := lookup.Getenv
	pins, err := c.parseLists()
	if err != nil {
		return err
	}
	if err := c.parseApprovalRules(); err != nil {
		return err
	}
	log, err := c.log.Logger(logOut, "worker")
	if err != nil {
		return err
	}
	if formerModelVar() {
		log.Warn().Msg(cli.FormerFallbackModelWarning)
	}
	// before anything reads it (the memory budget's default does)
	if limit, from := softMemoryLimit(c.softMemLimit, getenv, memlimit.FromCgroup); limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info().Int64("soft_memory_limit", limit).Str("from", from).Msg("Go runtime memory limit set")
	}
	models, err := llmconfig.RegistryFromEnv(environ, llmconfig.Options{Getenv: getenv})
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	log.Info().Interface("nats", c.nats.Redacted()).Int("slots", c.slots).Int("replicas", c.replicas).
		Strs("models", models.Names()).Str("fallback_model_name", c.defaultModel).Dur("drain_grace", c.drainGrace).Interface("ceilings", c.ceilings).
		Msg("config")
	if len(models) == 0 {
		log.Warn().Msg("no models configured (PTC_MODEL_<NAME>=provider:model): missions will fail with llm_not_found")
	}

	// The endpoint's address is taken before anything starts: a busy
	// address the user chose stops the worker here.
	hl, err := cli.ListenFlag(fs, "health-addr")
	if err != nil {
		return err
	}
	defer hl.Close()
	hl.WarnBusy(&log, "health")

	metrics, metricsHandler, err := cli.Metrics()
	if err != nil {
		return err
	}
	tp, shutdownTracing, err := cli.Tracing(ctx, getenv, "ptc-worker")
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background())
	log.Info().Bool("tracing", tp != nil).Msg("telemetry")

	url := c.nats.URL
	if url == "" {
		srv, err := embedded.Start(embedded.Options{})
		if err != nil {
			return fmt.Errorf("embedded nats: %w", err)
		}
		defer srv.Close()
		url = srv.ClientURL()
		log.Info().Str("url", url).Str("dir", srv.Dir()).Msg("no NATS URL configured: started an embedded server")
		// plainly, for the person who starts tools and dispatchers next
		fmt.Fprintf(logOut, "worker: embedded NATS server at %s (give tools and dispatchers PTC_NATS_URL=%s)\n", url, url)
	}
	nc, err := c.nats.Dial(ctx, url, "ptc-worker", log)
	if err != nil {
		return err
	}
	defer nc.Close()

	if c.exampleTools {
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: shop.ServiceName, Logger: &log, Metrics: metrics, TracerProvider: tp})
		if err != nil {
			return err
		}
		defer svc.Stop(context.Background())
		if err := shop.Default().Register(svc); err != nil {
			return err
		}
	}

	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		ID:              c.id,
		Runner:          agentrun.New(agentrun.Config{Models: models, DefaultModel: c.defaultModel}),
		Slots:           c.slots,
		Store:           fleet.StoreConfig{Replicas: c.replicas, AckWait: c.ackWait, MaxDeliver: c.maxDeliver, VerifyOnly: c.verifyLayout},
		DrainGrace:      c.drainGrace,
		ToolTimeout:     c.toolTimeout,
		Ceilings:        c.ceilings,
		Tenant:          c.tenant,
		MemoryBudget:    c.memBudget,
		ToolPins:        pins,
		ApprovalRules:   c.approvals,
		ApprovalTimeout: c.approvalWait,
		StalledAfter:    c.stalledAfter,
		Logger:          &log,
		Metrics:         metrics,
		TracerProvider:  tp,
	})
	if err != nil {
		return err
	}

	hctx, stopHealth := context.WithCancel(context.Background())
	defer stopHealth()
	health := cli.Health{
		Metrics: metricsHandler,
		Live: func() error {
			if nc.IsClosed() {
				return errors.New("nats connection closed")
			}
			return nil
		},
		Ready: func() error {
			if !w.Ready() {
				return errors.New("not accepting missions (starting or draining)")
			}
			if !nc.IsConnected() {
				return errors.New("nats disconnected")
			}
			return nil
		},
	}
	addr := hl.Addr()
	if hl.Listener != nil {
		go func() {
			if err := health.ServeOn(hctx, hl.Listener); err != nil {
				log.Error().Err(err).Msg("health endpoint stopped")
			}
		}()
	}

	if err := w.Start(ctx); err != nil {
		return err
	}
	if addr != "" {
		log.Info().Str("worker", w.ID()).Str("addr", addr).Msg("health endpoints listening")
	}
	if ready != nil {
		ready <- addr
	}
	<-ctx.Done()
	log.Info().Dur("grace", c.drainGrace).Int("running", w.Running()).Msg("draining")
	start := time.Now()
	err = w.Stop()
	log.Info().Dur("took", time.Since(start)).Err(err).Msg("stopped")
	return err
}

// splitList splits a comma-separated flag value into its non-empty,
// trimmed items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
