package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

type localConfig struct {
	file         string
	workers      int
	slots        int
	defaultModel string
	timeout      time.Duration
	// nats is the server to use; an empty URL starts an embedded one.
	nats cli.NATSOptions
	// exampleTools serves the example shop tools on a given server (the
	// embedded server always gets them).
	exampleTools bool
	// ui, when not nil, is where the mission viewer serves while the
	// fleet runs, and after the mission until ctx ends.
	ui net.Listener
}

// runLocal runs one mission file on a fleet inside this process:
// cfg.workers workers and, on an embedded NATS server with JetStream in a
// temporary directory, the example shop tool service. Given a NATS URL it
// uses that server instead and starts only the workers (and the example
// tools when asked), so a tool author runs a mission, scripted or not,
// against their own services. A scripted mission carries its replies
// (messages.Mission.Script), so any worker on the server runs it.
func runLocal(ctx context.Context, cfg localConfig, e env, log zerolog.Logger, out io.Writer) error {
	if cfg.workers < 1 || cfg.slots < 1 {
		return errors.New("workers and slots must be at least 1")
	}
	f, err := missionfile.Read(cfg.file)
	if err != nil {
		return err
	}
	m, err := f.Build()
	if err != nil {
		return err
	}
	models, name, err := missionModels(m, e, cfg.defaultModel)
	if err != nil {
		return err
	}
	if m.Kind == messages.KindCompiled {
		fmt.Fprintf(out, "model: none (a compiled program applied to %d inputs)\n", len(m.Compiled.Inputs))
	} else if _, ok := models[name]; ok {
		fmt.Fprintf(out, "model: %s (configured by %s%s)\n", name, llmconfig.EnvPrefix, strings.ToUpper(name))
	} else {
		if !f.Scripted() {
			return fmt.Errorf("no model %q is configured (set %s%s=provider:model) and %s has no script", name, llmconfig.EnvPrefix, strings.ToUpper(name), cfg.file)
		}
		// The replies travel with the mission: whichever worker takes it
		// runs on them.
		m.Model, m.Script, m.ScriptByPrompt = messages.ModelScripted, f.Script, f.ScriptByPrompt
		n := len(f.Script)
		for _, e := range f.ScriptByPrompt {
			n += len(e.Replies)
		}
		fmt.Fprintf(out, "model: SCRIPTED — replaying %s from %s\n       (no model %q configured; set %s%s=openai:gpt-4.1-mini and OPENAI_API_KEY for a real one)\n",
			plural(n, "reply", "replies"), cfg.file, name, llmconfig.EnvPrefix, strings.ToUpper(name))
	}

	lf, err := openLocalFleet(cfg, log)
	if err != nil {
		return err
	}
	defer lf.close()
	connect, where, nc := lf.connect, lf.where, lf.nc
	tools := "the server's tool services"
	if cfg.servesExampleTools() {
		tools = "example shop (" + strings.Join(shop.ToolNames(), ", ") + ")"
		if cfg.nats.URL != "" {
			tools += " and the server's tool services"
		}
	}
	fmt.Fprintf(out, "fleet: %s, %d workers × %d slots, tools: %s\n", where, cfg.workers, cfg.slots, tools)

	stopWorkers, err := startLocalWorkers(ctx, cfg, connect, models, log)
	defer stopWorkers()
	if err != nil {
		return err
	}

	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		return err
	}
	uiAddr := ""
	if cfg.ui != nil {
		uiAddr = cfg.ui.Addr().String()
		uiDone := make(chan error, 1)
		uctx, stopUI := context.WithCancel(ctx)
		defer func() { stopUI(); <-uiDone }()
		go func() { uiDone <- serveUI(uctx, client, cfg.ui, log, defaultDecider(e), 0) }()
	}
	mctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := fleet.CheckTools(mctx, nc, m.Tools, toolCheckWait); err != nil {
		return fmt.Errorf("%s: %w", cfg.file, err)
	}
	sub, err := client.Submit(mctx, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "mission %s submitted\n", sub.ID)
	if uiAddr != "" {
		fmt.Fprintf(out, "mission viewer: http://%s/missions/%s\n", uiAddr, sub.ID)
	}
	p := progress{w: out}
	if lf.embeddedURL != "" {
		// the approve and deny commands the progress prints then run
		// as printed in another terminal
		p.natsFlag = "-nats-url " + lf.embeddedURL + " "
	}
	err = follow(mctx, client, sub.ID, p)
	if cfg.ui != nil {
		fmt.Fprintf(out, "the mission viewer keeps serving; stop with Ctrl-C\n")
		<-ctx.Done()
	}
	return err
}

// startLocalWorkers starts cfg.workers workers of cfg.slots slots on
// connections of their own, running missions on models. stop drains them
// and closes their connections; it is valid also when err is not nil.
func startLocalWorkers(ctx context.Context, cfg localConfig, connect func() (*nats.Conn, error), models llm.Registry, log zerolog.Logger) (stop func(), err error) {
	runner := agentrun.New(agentrun.Config{Models: models, DefaultModel: cfg.defaultModel})
	var (
		workers []*fleet.Worker
		conns   []*nats.Conn
	)
	stop = func() {
		// Drain the workers before their connections close.
		for _, w := range workers {
			_ = w.Stop()
		}
		for _, c := range conns {
			c.Close()
		}
	}
	for i := range cfg.workers {
		wnc, err := connect()
		if err != nil {
			return stop, err
		}
		conns = append(conns, wnc)
		w, err := fleet.NewWorker(wnc, fleet.WorkerConfig{
			ID: fmt.Sprintf("local-%d", i+1), Runner: runner, Slots: cfg.slots, Logger: &log,
		})
		if err != nil {
			return stop, err
		}
		if err := w.Start(ctx); err != nil {
			return stop, err
		}
		workers = append(workers, w)
	}
	return stop, nil
}

// localNATS returns how to connect to the fleet's NATS server, a line
// naming it, the URL another terminal reaches it by when this process
// started it (empty for a server the user named: they know how to reach
// it), and how to close it: an embedded server when cfg names none.
func localNATS(cfg localConfig, log zerolog.Logger) (connect func() (*nats.Conn, error), where, embeddedURL string, closeServer func(), err error) {
	if cfg.nats.URL == "" {
		srv, err := embedded.Start(embedded.Options{})
		if err != nil {
			return nil, "", "", nil, fmt.Errorf("embedded nats: %w", err)
		}
		connect := func() (*nats.Conn, error) { return srv.Conn() }
		return connect, "embedded NATS " + srv.ClientURL(), srv.ClientURL(), srv.Close, nil
	}
	nopts := cfg.nats
	nopts.Name = "ptc-dispatcher-local"
	opts, err := nopts.Options(log)
	if err != nil {
		return nil, "", "", nil, err
	}
	connect = func() (*nats.Conn, error) {
		nc, err := nats.Connect(nopts.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("connect to nats %s: %w", cli.RedactURL(nopts.URL), err)
		}
		return nc, nil
	}
	return connect, "NATS " + cli.RedactURL(nopts.URL), "", func() {}, nil
}

// servesExampleTools reports whether a local command serves the example
// shop's tools itself: on its embedded server, or when asked to on a
// server of the user's.
func (cfg localConfig) servesExampleTools() bool { return cfg.nats.URL == "" || cfg.exampleTools }

// localFleet is the NATS server a local command runs on (embedded, or
// the one its config names) with one connection open on it and, when the
// config asks for them, the example shop's tools served there.
type localFleet struct {
	connect func() (*nats.Conn, error) // opens a further connection
	where   string                     // the server, for the user
	// embeddedURL is the URL of the embedded server this process runs
	// (empty when it uses the user's), for commands in another terminal
	embeddedURL string
	nc          *nats.Conn
	close       func() // stops the tools, closes nc, stops an embedded server
}

func openLocalFleet(cfg localConfig, log zerolog.Logger) (*localFleet, error) {
	connect, where, embeddedURL, closeServer, err := localNATS(cfg, log)
	if err != nil {
		return nil, err
	}
	nc, err := connect()
	if err != nil {
		closeServer()
		return nil, err
	}
	stop := func() {}
	if cfg.servesExampleTools() {
		if stop, err = serveExampleTools(nc, log); err != nil {
			nc.Close()
			closeServer()
			return nil, err
		}
	}
	return &localFleet{connect: connect, where: where, embeddedURL: embeddedURL, nc: nc, close: func() { stop(); nc.Close(); closeServer() }}, nil
}

// missionModels returns the models configured in the environment
// (PTC_MODEL_<NAME>) and the name of the one mission m runs on: its own,
// its agent's, or def.
func missionModels(m *messages.Mission, e env, def string) (llm.Registry, string, error) {
	models, err := llmconfig.RegistryFromEnv(e.environ, llmconfig.Options{Getenv: e.lookup.Getenv})
	if err != nil {
		return nil, "", fmt.Errorf("models: %w", err)
	}
	name := m.Model
	if name == "" && m.Agent != nil {
		name = m.Agent.LLM
	}
	if name == "" {
		name = def
	}
	return models, name, nil
}

// plural is "1 reply", "2 replies".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
