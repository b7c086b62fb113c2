package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// missionExport is a recorded mission in one file (dispatcher mission
// export): its record and its Step, whose trace holds every model reply
// and tool result. It is msgpack encoded, so numbers keep their kind.
type missionExport struct {
	Version int                     `msgpack:"v"`
	Record  *messages.MissionRecord `msgpack:"record"`
	Step    *messages.Step          `msgpack:"step"`
}

// exportVersion is the version of the missionExport layout.
const exportVersion = 1

// maxExportBytes bounds an export file as it is read.
const maxExportBytes = messages.DefaultMaxData + 1<<20

// readExport reads and checks an export file.
func readExport(path string) (*missionExport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxExportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxExportBytes {
		return nil, fmt.Errorf("%s: more than the %d bytes an export may hold", path, maxExportBytes)
	}
	if err := messages.CheckBounds(data); err != nil {
		return nil, fmt.Errorf("%s: not a mission export: %w", path, err)
	}
	var x missionExport
	if err := messages.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("%s: not a mission export: %w", path, err)
	}
	switch {
	case x.Version < 1 || x.Version > exportVersion:
		return nil, fmt.Errorf("%s: export version %d not supported (want 1 to %d)", path, x.Version, exportVersion)
	case x.Step == nil:
		return nil, fmt.Errorf("%s: the export holds no step", path)
	}
	if err := x.Record.Validate(); err != nil {
		return nil, fmt.Errorf("%s: record: %w", path, err)
	}
	if err := x.Step.Validate(); err != nil {
		return nil, fmt.Errorf("%s: step: %w", path, err)
	}
	return &x, nil
}

// fetchExport reads mission id's record and Step from the fleet.
func fetchExport(ctx context.Context, client *fleet.Client, id string) (*missionExport, error) {
	step, err := client.Result(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("mission %s: %w", id, err)
	}
	rec, err := client.Record(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("mission %s: %w", id, err)
	}
	return &missionExport{Version: exportVersion, Record: rec, Step: step}, nil
}

// writeExport writes x to path (0600: it holds tool results).
func writeExport(path string, x *missionExport) error {
	data, err := messages.Marshal(x)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// replayConfig is what "dispatcher replay" was asked.
type replayConfig struct {
	model, prompt, languageSpec string
	liveTools, asJSON           bool
}

// changed reports whether the replay runs with a change (so a difference
// from the recording is the point, not a failure).
func (c replayConfig) changed() bool { return c.model != "" || c.prompt != "" || c.languageSpec != "" }

// errReplayDiverged: a plain replay did not reproduce the recording.
var errReplayDiverged = errors.New("the replay diverged from the recording")

// loadRecording reads the recording arg names: an export file, or a
// mission id read from the fleet (connect gives the connection).
func loadRecording(ctx context.Context, arg string, connect func() (*nats.Conn, *fleet.Client, error)) (*missionExport, error) {
	if !messages.ValidMissionID(arg) {
		if _, err := os.Stat(arg); err != nil {
			return nil, fmt.Errorf("%q is neither a mission id (a ULID) nor an export file: %w", arg, err)
		}
		return readExport(arg)
	}
	_, client, err := connect()
	if err != nil {
		return nil, err
	}
	return fetchExport(ctx, client, arg)
}

// runReplay replays x and prints the outcome.
func runReplay(ctx context.Context, x *missionExport, cfg replayConfig, e env, nc *nats.Conn, stdout io.Writer) error {
	opts := agentrun.ReplayOptions{Model: cfg.model, Prompt: cfg.prompt, LanguageSpec: cfg.languageSpec}
	if cfg.model != "" {
		models, err := llmconfig.RegistryFromEnv(e.environ, llmconfig.Options{Getenv: e.lookup.Getenv})
		if err != nil {
			return fmt.Errorf("models: %w", err)
		}
		opts.Models = models
	}
	if cfg.liveTools {
		if nc == nil {
			return errors.New("-live-tools needs the fleet's NATS server (-nats-url)")
		}
		box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: x.Record.Mission.Tools})
		if err != nil {
			return err
		}
		opts.Live = box
	}
	r, err := agentrun.Replay(ctx, x.Record, x.Step, opts)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		b, err := replayJSON(x, r)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	} else if err := printReplay(stdout, x, r, cfg); err != nil {
		return err
	}
	if len(r.Divergences) > 0 && !cfg.changed() {
		return fmt.Errorf("mission %s: %w at %s", x.Record.Mission.ID, errReplayDiverged, r.Divergences[0])
	}
	return nil
}

// replayJSON is the replay as JSON: {"mission_id", "reproduced",
// "divergences", "served", "live", "missed", "recorded", "step"}, Steps in
// the wire's JSON form with firewalled values masked.
func replayJSON(x *missionExport, r *agentrun.Replayed) ([]byte, error) {
	rec, err := messages.EncodeJSON(maskStep(x.Step))
	if err != nil {
		return nil, err
	}
	got, err := messages.EncodeJSON(maskStep(r.Step))
	if err != nil {
		return nil, err
	}
	divs := make([]map[string]any, 0, len(r.Divergences))
	for _, d := range r.Divergences {
		divs = append(divs, map[string]any{"agent": d.Agent, "turn": d.Turn, "path": d.Path,
			"recorded": messages.JSONFloats(messages.MaskFirewalled(d.Recorded)),
			"replayed": messages.JSONFloats(messages.MaskFirewalled(d.Replayed)), "text": d.String()})
	}
	return marshalJSON(map[string]any{
		"mission_id": x.Record.Mission.ID, "reproduced": len(r.Divergences) == 0, "divergences": divs,
		"served": r.Served, "live": r.Live, "missed": r.Missed,
		"recorded": json.RawMessage(rec), "step": json.RawMessage(got),
	}, "  ")
}

// printReplay prints the replayed run as trace prints a mission, then how
// it compares with the recording.
func printReplay(w io.Writer, x *missionExport, r *agentrun.Replayed, cfg replayConfig) error {
	p := &textPrinter{w: w}
	what := "replay of mission " + x.Record.Mission.ID
	var changes []string
	if cfg.model != "" {
		changes = append(changes, "model "+cfg.model)
	}
	if cfg.prompt != "" {
		changes = append(changes, "another prompt")
	}
	if cfg.languageSpec != "" {
		changes = append(changes, "language reference "+oneLine(cfg.languageSpec, 40))
	}
	if len(changes) > 0 {
		what += " with " + strings.Join(changes, ", ")
	}
	p.printf("", "%s", what)
	p.step(r.Step, "")
	p.printf("", "tool calls: %d from the recording, %d live, %d not recorded", r.Served, r.Live, r.Missed)
	if len(r.Divergences) == 0 {
		p.printf("", "REPRODUCED: the replayed Step equals the recorded one")
		return p.err
	}
	p.printf("", "DIVERGED from the recording:")
	for _, d := range r.Divergences {
		p.printf("  ", "%s", d.String())
	}
	if cfg.changed() {
		// the recording's trace against the replay's: replies earlier
		// attempts paid for and the recorded run did not use apart
		rs, ns := x.Step, r.Step
		ru, nu := rs.TraceUsage(), ns.Usage
		p.printf("", "recorded: %s  %d turns, %d in / %d out tokens", stepOutcome(rs), ru.Turns, ru.InputTokens, ru.OutputTokens)
		if rs.Replayed != nil && rs.Replayed.Unused != nil {
			u := rs.Replayed.Unused
			p.printf("  ", "and %d in / %d out tokens of replies earlier attempts paid for and the run did not use", u.InputTokens, u.OutputTokens)
		}
		p.printf("", "replayed: %s  %d turns, %d in / %d out tokens", stepOutcome(ns), nu.Turns, nu.InputTokens, nu.OutputTokens)
	}
	return p.err
}

// stepOutcome is a Step's return or failure on one line.
func stepOutcome(s *messages.Step) string {
	if s.Fail != nil {
		return "FAILED " + s.Fail.Reason
	}
	return "RETURN " + maskedPreview(s.Return, 200)
}

// dialFleet returns a function that connects to the fleet's NATS server
// once, on first use, and a function that closes what it opened.
func dialFleet(ctx context.Context, c *common, log zerolog.Logger) (connect func() (*nats.Conn, *fleet.Client, error), closeAll func()) {
	var (
		nc     *nats.Conn
		client *fleet.Client
	)
	connect = func() (*nats.Conn, *fleet.Client, error) {
		if nc != nil {
			return nc, client, nil
		}
		if c.nats.URL == "" {
			return nil, nil, errors.New("no NATS server: set -nats-url or PTC_NATS_URL")
		}
		c.nats.Name = "ptc-dispatcher"
		opts, err := c.nats.Options(log)
		if err != nil {
			return nil, nil, err
		}
		conn, err := nats.Connect(c.nats.URL, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("connect to nats: %w", err)
		}
		cl, err := fleet.NewClient(ctx, conn, fleet.ClientConfig{})
		if err != nil {
			conn.Close()
			return nil, nil, err
		}
		nc, client = conn, cl
		return nc, client, nil
	}
	return connect, func() {
		if nc != nil {
			nc.Close()
		}
	}
}

// exportMission writes mission id's record and Step to path (default
// <id>.ptcmission).
func exportMission(ctx context.Context, id, path string, connect func() (*nats.Conn, *fleet.Client, error), stdout io.Writer) error {
	if !messages.ValidMissionID(id) {
		return fmt.Errorf("%q is not a mission id (a ULID)", id)
	}
	_, client, err := connect()
	if err != nil {
		return err
	}
	x, err := fetchExport(ctx, client, id)
	if err != nil {
		return err
	}
	if path == "" {
		path = id + ".ptcmission"
	}
	if err := writeExport(path, x); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s written: the mission, its Step and %d turns\n", path, len(x.Step.Trace))
	return err
}
