// Command dispatcher submits missions to the fleet and follows them: submit a
// mission file, wait for it with live progress, read its status, cancel or
// watch it, list recent missions, print a mission's trace, or serve the
// mission viewer (a web page: "dispatcher ui"). "dispatcher local" runs a whole fleet in one process (an
// embedded NATS server with JetStream, workers and the example shop tools)
// so that an example mission runs end to end on a fresh machine:
//
//	go run ./cmd/dispatcher local examples/missions/top-customers.yaml
//
// Every flag has an environment twin (-nats-url → PTC_NATS_URL); see
// docs/operations.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func main() {
	cli.Main("dispatcher", func(ctx context.Context) error {
		return run(ctx, os.Args[1:], env{lookup: os.LookupEnv, environ: os.Environ(), stdin: os.Stdin}, os.Stdout, os.Stderr)
	}, exitCode)
}

// env is the process environment, injected so tests control it.
type env struct {
	lookup  cli.Lookup
	environ []string
	// stdin is the input of "repl" (nil: none).
	stdin io.Reader
}

const usage = `usage: dispatcher <command> [flags] [args]

commands:
  local FILE        run FILE on an in-process fleet (embedded NATS, workers, example tools)
  repl              a PTC-Lisp REPL on the fleet's tools (embedded fleet with the example tools
                    when no NATS URL is set); -e PROGRAM, a script on stdin, or a terminal
  submit FILE...    submit missions; -wait follows them to the end
  wait ID           wait for a mission's result, with live progress
  status ID         print a mission's status
  cancel ID         cancel a queued, waiting or running mission
  approvals [ID]    list a mission's tool calls that need approval, pending and decided; without
                    ID, the calls waiting for a decision across the fleet, longest waiting first
                    (-tool, -service, -submitter, -when JSON select among them; -limit; -watch
                    keeps listing them as they come and go); -json
  approve ID [CALL] approve a call that waits for approval (CALL: its id or a unique prefix,
                    needed when several wait); -args JSON replaces its arguments; -reason, -by
  approve -pending  approve every waiting call that -tool, -service, -submitter, -when JSON
                    and -max select, the longest waiting first; -dry-run lists them; -json
  deny ID [CALL]    deny a call that waits for approval; -reason (shown to the model), -by
  deny -pending     deny every waiting call selected, as approve -pending
  watch ID          print a mission's progress events as they happen
  list              list recent missions (state, duration, worker, agent, prompt, labels); -state, -label, -limit, -json
  trace ID          print a mission's trace: turns, programs, feedback, tool calls, sub-agents, usage; -json
  replay ID|FILE    re-run a finished mission from its record with no model or tool call and compare
                    the Step with the recorded one; -model, -prompt, -language-spec, -live-tools, -json
  mission export ID -out FILE
                    write a finished mission's record and Step (every reply and tool result) to a file
  eval SUITE        run a suite's tasks against models, several times each, and report success,
                    turns, tokens, cost and latency per model and mode; -models, -runs, -json, -junit
  budget show       the fleet-wide budgets and what each spent in its current period; -json
  budget set        set a fleet-wide budget: -scope account|submitter:NAME -window day|month
                    -max-cost-usd USD -max-tokens N (both 0: remove it)
  quota show        the per-submitter quotas and the missions running under each; -json
  quota set         set a per-submitter quota: -scope default|submitter:NAME -max-running N
                    -max-queued N (0: no bound) -weight W (0: 1); one setting nothing is removed
  ui                serve the mission viewer (a web page) on -ui-addr
  mcp               serve the fleet as an MCP server (stdio; -mcp-http ADDR for Streamable HTTP)
  bench context     how many prompt tokens three data-heavy missions take in PTC-Lisp and in
                    text mode, at -scales (scripted models, no fleet needed)

Run "dispatcher <command> -h" for the flags of a command.

exit status: 0 success; 1 an error (including a mission that failed, for
submit -wait and wait, and a replay that diverged); 3 no such mission (status, trace); 4 a repl
program failed (an error, fail, or a return not matching the signature).`

// exitNotFound is the exit status when the mission asked for does not exist.
const exitNotFound = 3

// exitCode maps run's error to the process's exit status.
func exitCode(err error) int {
	if errors.Is(err, errMissionNotFound) || errors.Is(err, fleet.ErrNotFound) {
		return exitNotFound
	}
	if errors.Is(err, errProgramFailed) {
		return exitProgramFailed
	}
	return 1
}

// common are the flags every command takes.
type common struct {
	nats    cli.NATSOptions
	log     cli.LogOptions
	timeout time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	c.nats.Register(fs)
	c.log.Register(fs)
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "how long to wait for results")
}

func run(ctx context.Context, args []string, e env, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("no command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("dispatcher "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var (
		wait    bool
		reason  string
		workers int
		slots   int
		model   string
		mcpHTTP string
		asJSON  bool
		states  string
		labels  string
		limit   int
		uiAddr  string
		withUI  bool
		allSubs bool

		exampleTools bool
		expr         string
		missionFile  string
		contextFile  string
		scales       string
		replay       replayConfig
		outFile      string
		compression  bool
		eval         evalConfig
		budget       fleet.BudgetLimit
		quota        fleet.QuotaLimit
		by           string
		editArgs     string
		toolTimeout  time.Duration
		watch        bool
		every        time.Duration
		stalledAfter time.Duration
		sel          pendingSelection
	)
	switch cmd {
	case "submit":
		fs.BoolVar(&wait, "wait", false, "wait for each mission's result, with live progress")
	case "cancel":
		fs.StringVar(&reason, "reason", "cancelled by operator", "why the mission is cancelled")
	case "local":
		// A person at a terminal: readable warnings only, unless asked.
		setDefault(fs, "log-level", "warn")
		setDefault(fs, "log-format", "console")
		fs.IntVar(&workers, "workers", 2, "workers to start")
		fs.IntVar(&slots, "slots", 4, "mission slots per worker")
		fs.StringVar(&model, cli.FallbackModelFlag, "default", "name of the model a mission runs on when it names none (PTC_MODEL_<NAME> configures models)")
		fs.BoolVar(&exampleTools, "example-tools", false, "with -nats-url, also serve the example shop tools (the embedded server always has them)")
		fs.BoolVar(&withUI, "ui", false, "serve the mission viewer while the fleet runs, and keep serving after the mission until interrupted")
		fs.StringVar(&uiAddr, "ui-addr", "127.0.0.1:8090", "address of the mission viewer (with -ui); the default, when busy, gives way to a free port")
	case "repl":
		setDefault(fs, "log-level", "warn")
		setDefault(fs, "log-format", "console")
		fs.StringVar(&expr, "e", "", "evaluate this program (then exit) instead of reading stdin or a terminal")
		fs.StringVar(&missionFile, "mission", "", "mission file whose tools, signature, limits and context the REPL takes")
		fs.StringVar(&contextFile, "context", "", "JSON file with the ctx/ inputs (replaces the mission's context)")
		fs.BoolVar(&exampleTools, "example-tools", false, "with -nats-url, also serve the example shop tools (the embedded server always has them)")
		fs.StringVar(&model, cli.FallbackModelFlag, "default", "name of the model of the mission's sub-agents and LLM tools when the mission names none (PTC_MODEL_<NAME> configures models)")
		fs.BoolVar(&compression, "compression", false, "give the mission's agent compression: true (:history shows the compressed history a model would be sent next)")
		fs.DurationVar(&toolTimeout, "tool-timeout", fleet.DefaultToolTimeout, fmt.Sprintf("bound of one remote tool call; at most %s", fleet.MaxToolTimeout))
	case "bench":
		fs.StringVar(&scales, "scales", "1,10", "record scales to run, comma separated (1: 1,000 emails, 5,000 orders, 500 customers)")
	case "approve", "deny":
		fs.StringVar(&reason, "reason", "", "why (a denial's reason reaches the program as its tool error)")
		fs.StringVar(&by, "by", defaultDecider(e), "who decides, recorded in the audit")
		if cmd == "approve" {
			fs.StringVar(&editArgs, "args", "", "a JSON object replacing the call's arguments (\"<Firewalled>\" keeps a firewalled value)")
		}
		sel.register(fs, cmd)
	case "approvals":
		sel.registerFilter(fs, "without a mission id")
		fs.BoolVar(&asJSON, "json", false, "print JSON instead of text")
		fs.IntVar(&limit, "limit", 50, "without a mission id: how many waiting calls, the longest waiting first (at most 1000)")
		fs.BoolVar(&watch, "watch", false, "without a mission id: keep listing, printing each call as it starts and stops waiting, until interrupted")
		fs.DurationVar(&every, "every", 2*time.Second, "with -watch: how often to look")
		fs.DurationVar(&stalledAfter, "stalled-after", defaultStalledAfter, "without a mission id: list, after the waiting calls, the calls decided this long ago whose mission still waits with no call pending (its wake lost)")
	case "wait", "status", "watch":
	case "list":
		fs.StringVar(&states, "state", "", "only missions in these states, comma separated: "+strings.Join(viewerStates, ", "))
		fs.IntVar(&limit, "limit", 50, "how many missions, newest first (at most 1000)")
		fs.StringVar(&labels, "label", "", "only missions with these labels, comma separated key=value pairs: -label team=shop,env=dev")
		fs.BoolVar(&asJSON, "json", false, "print JSON (one array) instead of a table")
	case "trace":
		fs.BoolVar(&asJSON, "json", false, "print the mission's view as JSON (status, step with firewalled values masked, events)")
	case "replay":
		setDefault(fs, "log-level", "warn")
		fs.BoolVar(&replay.asJSON, "json", false, "print the replay as JSON (docs/replay.md)")
		fs.StringVar(&replay.model, "model", "", "re-run with this model (PTC_MODEL_<NAME>) instead of the recorded replies")
		fs.StringVar(&replay.prompt, "prompt", "", "re-run with this prompt template instead of the agent's (@FILE reads it from a file)")
		fs.StringVar(&replay.languageSpec, "language-spec", "", "re-run with this language reference (a preset name such as minimal, or text)")
		fs.BoolVar(&replay.liveTools, "live-tools", false, "call the live tool for a call the recording does not hold (default: such a call fails)")
	case "eval":
		setDefault(fs, "log-level", "warn")
		setDefault(fs, "log-format", "console")
		fs.StringVar(&eval.models, "models", "", "models to evaluate, comma separated (PTC_MODEL_<NAME>; scripted: the tasks' scripts); default the suite's")
		fs.IntVar(&eval.runs, "runs", 0, "runs of each task per model and mode (default the suite's)")
		fs.IntVar(&eval.concurrent, "concurrency", 0, "runs in flight at most (default the suite's)")
		fs.BoolVar(&eval.asJSON, "json", false, "print the report as JSON (docs/replay.md)")
		fs.StringVar(&eval.junit, "junit", "", "also write the report as JUnit XML to this file")
		fs.IntVar(&workers, "workers", 2, "workers of the local fleet that runs new missions")
		fs.BoolVar(&exampleTools, "example-tools", false, "with -nats-url, also serve the example shop tools (the embedded server always has them)")
	case "mission":
		fs.StringVar(&outFile, "out", "", "the file to write (default <id>.ptcmission)")
	case "budget":
		fs.BoolVar(&asJSON, "json", false, "budget show: print JSON (one array)")
		fs.StringVar(&budget.Scope, "scope", fleet.BudgetAccount, "budget set: whose budget: account (every mission of the account) or submitter:NAME")
		fs.StringVar(&budget.Window, "window", fleet.BudgetDay, "budget set: the period it holds for: day or month (UTC)")
		fs.Float64Var(&budget.MaxCostUSD, "max-cost-usd", 0, "budget set: US dollars the scope's missions may spend on models in a period (0: no bound)")
		fs.Int64Var(&budget.MaxTokens, "max-tokens", 0, "budget set: tokens the scope's missions may spend in a period (0: no bound)")
	case "quota":
		fs.BoolVar(&asJSON, "json", false, "quota show: print JSON (one array)")
		fs.StringVar(&quota.Scope, "scope", fleet.QuotaDefault, "quota set: whose quota: default (every submitter without one of its own) or submitter:NAME")
		fs.IntVar(&quota.MaxRunning, "max-running", 0, "quota set: missions of the submitter running at once across the fleet (0: no bound)")
		fs.IntVar(&quota.MaxQueued, "max-queued", 0, "quota set: missions of the submitter in the queue, waiting or running (0: no bound)")
		fs.IntVar(&quota.Weight, "weight", 0, "quota set: the submitter's weight in the workers' round robin over the lanes (0: 1; at most 100)")
	case "ui":
		fs.StringVar(&uiAddr, "ui-addr", "127.0.0.1:8090", "address the mission viewer listens on; the default, when busy, gives way to a free port")
		fs.DurationVar(&stalledAfter, "stalled-after", defaultStalledAfter, "offer Queue again on a mission whose last decision is this old and which still waits with no call pending (its wake lost); set it as the workers' -stalled-after")
	case "mcp":
		fs.StringVar(&mcpHTTP, "mcp-http", "", "serve MCP over Streamable HTTP on this address (path /mcp) instead of stdin/stdout")
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	switch cmd {
	case "submit", "wait", "status", "watch", "cancel", "list", "trace", "ui", "mcp":
		fs.BoolVar(&allSubs, "all-submitters", false,
			"read, list and cancel every submitter's missions, not only those of this NATS user (a user granted that; docs/security.md)")
	}
	cli.Usage(fs, "dispatcher "+cmd+" [flags] [args]")
	// Flags may also follow the arguments: "trace ID -json".
	rest, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	lookup, formerModelVar := cli.WithFormerName(e.lookup, cli.EnvName(cli.FallbackModelFlag), cli.FallbackModelFormerEnv)
	if err := cli.ApplyEnv(fs, lookup); err != nil {
		return err
	}
	if fs.Lookup("stalled-after") != nil {
		if err := checkStalledAfter("-stalled-after", stalledAfter); err != nil {
			return err
		}
	}
	if err := c.nats.Validate(); err != nil {
		return err
	}
	log, err := c.log.Logger(stderr, "dispatcher")
	if err != nil {
		return err
	}
	if formerModelVar() {
		log.Warn().Msg(cli.FormerFallbackModelWarning)
	}
	if cmd == "bench" {
		if len(rest) != 1 || rest[0] != "context" {
			return errors.New("bench takes one benchmark name: context")
		}
		return runBenchContext(ctx, scales, stdout)
	}
	if cmd == "repl" {
		if len(rest) != 0 {
			return errors.New("repl takes no arguments (-e PROGRAM, or a script on stdin)")
		}
		stdin := e.stdin
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		if toolTimeout <= 0 || toolTimeout > fleet.MaxToolTimeout {
			return fmt.Errorf("tool-timeout %s: want more than 0 and at most %s", toolTimeout, fleet.MaxToolTimeout)
		}
		return runREPL(ctx, replConfig{expr: expr, missionFile: missionFile, contextFile: contextFile, stdin: stdin, compression: compression, toolTimeout: toolTimeout,
			local: localConfig{nats: c.nats, exampleTools: exampleTools, defaultModel: model}}, e, log, stdout, stderr)
	}
	if cmd == "local" {
		if len(rest) != 1 {
			return errors.New("local takes one mission file")
		}
		cfg := localConfig{file: rest[0], workers: workers, slots: slots, defaultModel: model,
			timeout: c.timeout, nats: c.nats, exampleTools: exampleTools}
		if withUI {
			if cfg.ui, err = listenUI(fs, log); err != nil {
				return err
			}
			defer cfg.ui.Close()
		}
		return runLocal(ctx, cfg, e, log, stdout)
	}

	if cmd == "eval" {
		if len(rest) != 1 {
			return errors.New("eval takes one suite file")
		}
		eval.local = localConfig{workers: workers, slots: 1, timeout: c.timeout, nats: c.nats, exampleTools: exampleTools, defaultModel: "default"}
		return runEvalCommand(ctx, rest[0], eval, e, log, stdout)
	}
	if cmd == "replay" || cmd == "mission" {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		connect, closeAll := dialFleet(ctx, &c, log)
		defer closeAll()
		if cmd == "mission" {
			if len(rest) != 2 || rest[0] != "export" {
				return errors.New("mission takes: export ID [-out FILE]")
			}
			return exportMission(ctx, rest[1], outFile, connect, stdout)
		}
		if len(rest) != 1 {
			return errors.New("replay takes one mission id or export file")
		}
		if strings.HasPrefix(replay.prompt, "@") {
			b, err := os.ReadFile(replay.prompt[1:])
			if err != nil {
				return fmt.Errorf("-prompt: %w", err)
			}
			replay.prompt = string(b)
		}
		x, err := loadRecording(ctx, rest[0], connect)
		if err != nil {
			return err
		}
		var nc *nats.Conn
		if replay.liveTools {
			if nc, _, err = connect(); err != nil {
				return err
			}
		}
		return runReplay(ctx, x, replay, e, nc, stdout)
	}

	// the calls waiting across the fleet are an approver's: every
	// submitter's
	pending := cmd == "approvals" && len(rest) == 0
	if cmd == "approve" || cmd == "deny" {
		if err := sel.check(fs, rest, editArgs); err != nil {
			return err
		}
	}
	var listed fleet.PendingFilter
	if cmd == "approvals" {
		if err := sel.checkListing(fs, rest); err != nil {
			return err
		}
		if listed, err = sel.filter(); err != nil {
			return err
		}
	}
	if watch && !pending {
		return errors.New("-watch follows the calls waiting across the fleet: give no mission id")
	}
	if watch && every <= 0 {
		return fmt.Errorf("-every %s: want a positive duration", every)
	}
	if c.nats.URL == "" {
		return errors.New("no NATS server: set -nats-url or PTC_NATS_URL (or run everything in one process with 'dispatcher local FILE')")
	}
	c.nats.Name = "ptc-dispatcher"
	opts, err := c.nats.Options(log)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(c.nats.URL, opts...)
	if err != nil {
		return fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Close()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{AllSubmitters: allSubs || pending || sel.on})
	if err != nil {
		return err
	}
	switch cmd {
	case "budget":
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return runBudget(ctx, nc, rest, budget, asJSON, stdout)
	case "quota":
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		return runQuota(ctx, nc, rest, quota, asJSON, stdout)
	case "mcp":
		return serveMCP(ctx, client, nc, mcpHTTP, log, nil)
	case "ui":
		ln, err := listenUI(fs, log)
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Fprintf(stdout, "mission viewer: http://%s/\n", ln.Addr())
		return serveUI(ctx, client, ln, log, defaultDecider(e), stalledAfter)
	}
	if watch {
		return watchPending(ctx, func(ctx context.Context) ([]*messages.Approval, int, error) {
			ctx, cancel := context.WithTimeout(ctx, c.timeout)
			defer cancel()
			as, n, err := client.ListPending(ctx, listed, limit)
			return as, n, refusedRead(nc, err)
		}, every, stdout)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	switch cmd {
	case "list":
		if len(rest) > 0 {
			return errors.New("list takes no arguments")
		}
		opts := fleet.ListOptions{Limit: limit}
		if states != "" {
			opts.States = strings.Split(states, ",")
		}
		if labels != "" {
			if opts.Labels, err = parseLabels(labels); err != nil {
				return err
			}
		}
		ms, err := client.List(ctx, opts)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSONTo(stdout, listItems(ms), "  ")
		}
		return printList(stdout, ms)
	case "submit":
		if len(rest) == 0 {
			return errors.New("submit takes one or more mission files")
		}
		for _, path := range rest {
			m, err := readMission(path)
			if err != nil {
				return err
			}
			if err := fleet.CheckTools(ctx, nc, m.Tools, toolCheckWait); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			sub, err := client.Submit(ctx, m)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			dup := ""
			if sub.Duplicate {
				dup = " (duplicate: already submitted)"
			}
			fmt.Fprintf(stdout, "%s %s%s\n", sub.ID, path, dup)
			if wait {
				if err := follow(ctx, client, sub.ID, progress{w: stdout}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if pending {
		out, as, stalled, err := listPending(ctx, client, listed, limit, stalledAfter)
		if err != nil {
			return refusedRead(nc, err)
		}
		if asJSON {
			return writeJSONTo(stdout, out, "  ")
		}
		if out.Waiting == 0 && sel.selects() {
			fmt.Fprintln(stdout, "no waiting call is selected")
		} else {
			printPending(stdout, as, out.Waiting)
		}
		printStalled(stdout, stalled)
		return nil
	}
	if sel.on {
		err := decidePending(ctx, client, sel, cmd == "approve", reason, by, stdout)
		if last := nc.LastError(); err != nil && errors.Is(last, nats.ErrPermissionViolation) {
			return fmt.Errorf("%w (NATS refused this user: %v; decide as the approver user)", err, last)
		}
		return err
	}
	if (cmd == "approve" || cmd == "deny") && len(rest) == 2 {
		if !messages.ValidMissionID(rest[0]) {
			return fmt.Errorf("%q is not a mission id (a ULID)", rest[0])
		}
		return decide(ctx, client, rest[0], rest[1], cmd == "approve", editArgs, reason, by, stdout)
	}
	if len(rest) != 1 {
		return fmt.Errorf("%s takes one mission id", cmd)
	}
	id := rest[0]
	if !messages.ValidMissionID(id) {
		return fmt.Errorf("%q is not a mission id (a ULID)", id)
	}
	switch cmd {
	case "trace":
		v, err := loadView(ctx, client, id)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSONTo(stdout, v, "")
		}
		return printTrace(stdout, v)
	case "wait":
		return follow(ctx, client, id, progress{w: stdout})
	case "watch":
		return client.Watch(ctx, id, func(ev *messages.Event) error { progress{w: stdout}.event(ev); return nil })
	case "status":
		st, err := client.Status(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s submitter=%s attempt=%d worker=%s updated=%s", st.MissionID, st.State, st.Submitter, st.Attempt, st.Worker, st.UpdatedAt.Format(time.RFC3339))
		if st.Reason != "" {
			fmt.Fprintf(stdout, " reason=%s", st.Reason)
		}
		if st.CancelRequested {
			fmt.Fprintf(stdout, " cancel_requested=%q", st.CancelReason)
		}
		fmt.Fprintln(stdout)
		return nil
	case "approve", "deny":
		return decide(ctx, client, id, "", cmd == "approve", editArgs, reason, by, stdout)
	case "approvals":
		as, err := client.Approvals(ctx, id)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSONTo(stdout, approvalItems(as), "  ")
		}
		printApprovals(stdout, as)
		return nil
	case "cancel":
		if err := client.Cancel(ctx, id, reason); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s cancel requested\n", id)
		return nil
	}
	return nil
}

// toolCheckWait bounds the discovery a submitter makes to check a
// mission's tool list (fleet.CheckTools).
const toolCheckWait = time.Second

func readMission(path string) (*messages.Mission, error) {
	f, err := missionfile.Read(path)
	if err != nil {
		return nil, err
	}
	return f.Build()
}

// follow prints a mission's progress until its result arrives, then the
// result. A failed mission is an error (exit status 1).
func follow(ctx context.Context, client *fleet.Client, id string, p progress) error {
	w := p.w
	finish := watching(ctx, client, id, func(ev *messages.Event) error { p.event(ev); return nil })
	step, err := client.Await(ctx, id)
	finish()
	if err != nil {
		return err
	}
	printStep(w, step)
	if step.Fail != nil {
		return fmt.Errorf("mission %s failed: %s", id, step.Fail.Reason)
	}
	return nil
}

// lastEventsGrace is how long a watcher may take, once the result is in,
// to deliver a mission's last progress events: they travel on a stream of
// their own and can arrive after the result.
const lastEventsGrace = 2 * time.Second

// watching runs fn over mission id's progress events in the background.
// finish waits for the watch to reach the mission's final event, for
// lastEventsGrace at most, then stops it: events that arrive after the
// result still reach fn before the caller goes on.
func watching(ctx context.Context, client *fleet.Client, id string, fn func(*messages.Event) error) (finish func()) {
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = client.Watch(wctx, id, fn)
	}()
	return func() {
		select {
		case <-watched:
		case <-time.After(lastEventsGrace):
		}
		stopWatch()
		<-watched
	}
}

// setDefault changes a registered flag's default value.
func setDefault(fs *flag.FlagSet, name, value string) {
	f := fs.Lookup(name)
	_ = f.Value.Set(value)
	f.DefValue = value
}
