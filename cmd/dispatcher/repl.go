package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/missionfile"
	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmconfig"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// exitProgramFailed is the exit status of a non-interactive repl whose
// program failed: an error, (fail ...), or a return that does not match
// the mission's signature.
const exitProgramFailed = 4

// errProgramFailed marks a failed program of a non-interactive repl.
var errProgramFailed = errors.New("program failed")

// maxEntryBytes bounds one REPL entry (and a script read from stdin) to
// the interpreter's own limit on program size.
const maxEntryBytes = lisp.DefaultMaxSourceBytes

// maxContextFileBytes bounds a -context file.
const maxContextFileBytes = messages.MaxJSONBytes

type replConfig struct {
	expr        string
	missionFile string
	contextFile string
	// compression sets compression: true on the mission's agent
	compression bool
	// toolTimeout bounds one remote tool call
	toolTimeout time.Duration
	local       localConfig
	// stdin is the REPL's input; a terminal makes the REPL interactive.
	stdin io.Reader
}

const replHelp = `PTC-Lisp REPL. Enter a program (multi-line until the brackets close); the
result prints as the model would see it. *1 *2 *3 hold the last values;
def and memory/put persist between entries.
meta commands:
  :tools           the tools with their signatures and descriptions
  :ref             the system prompt (language reference) the model gets, and the memory rule
  :prompt          the first prompt a mission would send (system and user)
  :check TYPE      check the last value (*1) against a signature type, e.g. :check [{id :int}]
  :full            the last value in full (not firewalled, not truncated)
  :mem             the names in memory and the ctx/ inputs
  :history         the history a model would be sent next, compressed (with -compression or compression: true)
  :help            this text
  :quit            leave (Ctrl-D too)`

// runREPL connects to the fleet (or starts an embedded one with the
// example tools), builds the mission's agent with its tools bound to the
// fleet's services, and evaluates programs: -e, a script on stdin, or
// interactively on a terminal. Sub-agent and LLM tools call the models
// configured in the environment (PTC_MODEL_<NAME>), as in dispatcher local.
func runREPL(ctx context.Context, cfg replConfig, e env, log zerolog.Logger, stdout, stderr io.Writer) error {
	m, err := replMission(cfg)
	if err != nil {
		return err
	}
	if cfg.compression {
		m.Agent.Compression = true
	}
	models, model, err := missionModels(m, e, cfg.local.defaultModel)
	if err != nil {
		return err
	}
	if _, ok := models[model]; !ok && m.Agent != nil && len(m.Agent.SubAgents) > 0 {
		fmt.Fprintf(stderr, "note: no model %q is configured (set %s%s=provider:model): the sub-agent tools %s fail when called\n",
			model, llmconfig.EnvPrefix, strings.ToUpper(model), strings.Join(slices.Sorted(maps.Keys(m.Agent.SubAgents)), ", "))
	}
	lf, err := openLocalFleet(cfg.local, log)
	if err != nil {
		return err
	}
	defer lf.close()
	nc, where := lf.nc, lf.where
	if len(m.Tools) == 0 && (m.Agent == nil || len(m.Agent.Tools) == 0) {
		names, err := fleetToolNames(ctx, nc)
		if err != nil {
			return err
		}
		m.Tools, m.Agent.Tools = names, names
	}
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: m.Tools, Timeout: cfg.toolTimeout})
	if err != nil {
		return err
	}
	a, err := agentrun.BuildAgent(ctx, m, box)
	if err != nil {
		return fmt.Errorf("mission: %w", err)
	}
	sess, err := a.NewSession(agent.RunOptions{LLM: model, Registry: models, Context: m.Context, ContextSignature: m.ContextSignature,
		Observer: replServices(stdout)})
	if err != nil {
		return err
	}
	r := &repl{a: a, sess: sess, ctxData: m.Context}
	switch {
	case cfg.expr != "":
		return r.script(ctx, strings.NewReader(cfg.expr), stdout, stderr)
	case isTerminal(cfg.stdin):
		fmt.Fprintf(stdout, "fleet: %s; tools: %s\n:help lists the meta commands; Ctrl-C cancels a running program, Ctrl-D leaves.\n",
			where, strings.Join(m.Tools, ", "))
		return r.interactive(ctx, cfg.stdin.(*os.File), stdout)
	default:
		return r.script(ctx, cfg.stdin, stdout, stderr)
	}
}

// replMission is the mission the REPL stands in for: the -mission file's
// (its tools, signature, limits and context) or a bare agent allowed every
// tool the fleet serves; -context replaces the context.
func replMission(cfg replConfig) (*messages.Mission, error) {
	var m *messages.Mission
	if cfg.missionFile != "" {
		f, err := missionfile.Read(cfg.missionFile)
		if err != nil {
			return nil, err
		}
		if m, err = f.Build(); err != nil {
			return nil, err
		}
		if m.Kind != messages.KindAgent {
			return nil, fmt.Errorf("%s: a %s mission has no agent to stand in for", cfg.missionFile, m.Kind)
		}
	} else {
		m = &messages.Mission{Kind: messages.KindAgent, Agent: &messages.AgentSpec{Name: "repl", Prompt: "(programs typed at the REPL)"}}
	}
	if cfg.contextFile != "" {
		data, err := readBounded(cfg.contextFile, maxContextFileBytes)
		if err != nil {
			return nil, err
		}
		var c map[string]any
		if err := messages.DecodeJSON(data, &c); err != nil {
			return nil, fmt.Errorf("%s: the context must be a JSON object: %w", cfg.contextFile, err)
		}
		m.Context = c
	}
	return m, nil
}

func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// replDiscoveryWait bounds the REPL's wait for the tool services' answers
// to its discovery. Discovery ends 20 ms after the first answer (the
// server's no-responders reply included, when nothing listens), so the bound is waited out only when services
// are slow to answer, as on a loaded machine; the REPL binds the tools it
// finds for its whole session.
const replDiscoveryWait = 2 * time.Second

// fleetToolNames lists the tools the fleet's services offer (none when no
// tool service answers).
func fleetToolNames(ctx context.Context, nc *nats.Conn) ([]string, error) {
	infos, err := fleet.Discover(ctx, nc, replDiscoveryWait)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, nil // no tool service runs: a REPL without tools
	}
	if err != nil {
		return nil, fmt.Errorf("discover tools: %w", err)
	}
	var names []string
	for _, t := range infos {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// serveExampleTools serves the example shop tools on nc until stop.
func serveExampleTools(nc *nats.Conn, log zerolog.Logger) (stop func(), err error) {
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: shop.ServiceName, Description: "example shop data", Logger: &log})
	if err != nil {
		return nil, err
	}
	if err := shop.Default().Register(svc); err != nil {
		_ = svc.Stop(context.Background())
		return nil, err
	}
	return func() { _ = svc.Stop(context.Background()) }, nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// repl is one REPL session.
type repl struct {
	a       *agent.Agent
	sess    *agent.Session
	ctxData map[string]any
	last    *agent.Evaluation
}

// eval runs one entry (a program or a meta command) and writes what it
// shows to out. It reports whether the entry failed, and whether it asks
// to leave.
func (r *repl) eval(ctx context.Context, entry string, out io.Writer) (failed, quit bool) {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return false, false
	}
	if strings.HasPrefix(entry, ":") {
		return r.meta(entry, out)
	}
	ev := r.sess.Eval(ctx, entry)
	fmt.Fprintln(out, ev.Shown)
	if ev.Validation != "" {
		fmt.Fprintln(out, ev.Validation)
	}
	if ev.Err == nil {
		r.last = ev
	}
	return ev.Err != nil || ev.Validation != "" || ev.Signal == lisp.SignalFail, false
}

func (r *repl) meta(entry string, out io.Writer) (failed, quit bool) {
	cmd, arg, _ := strings.Cut(entry, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case ":quit", ":q", ":exit":
		return false, true
	case ":help", ":h":
		fmt.Fprintln(out, replHelp)
	case ":tools":
		schemas := r.a.ToolSchemas()
		if len(schemas) == 0 {
			fmt.Fprintln(out, "no tools")
		}
		for _, t := range schemas {
			fmt.Fprintf(out, "tool/%s %s\n", t.Name, t.Signature)
			if t.Description != "" {
				fmt.Fprintf(out, "    %s\n", t.Description)
			}
		}
	case ":ref", ":prompt":
		p, err := agent.PreviewPrompt(r.a, r.ctxData)
		if err != nil {
			fmt.Fprintln(out, "Error:", err)
			return true, false
		}
		if cmd == ":ref" {
			fmt.Fprintln(out, p.System)
			fmt.Fprintf(out, "\nMemory rule: %s (docs/ptc-lisp-guide.md)\n", agent.MemoryRule)
			break
		}
		fmt.Fprintf(out, "=== system ===\n%s\n=== user ===\n%s\n", p.System, p.User)
	case ":check":
		if arg == "" {
			fmt.Fprintln(out, "usage: :check TYPE (checks *1), e.g. :check {count :int}")
			return true, false
		}
		t, err := signature.ParseType(arg)
		if err != nil {
			fmt.Fprintln(out, "Error: signature:", err)
			return true, false
		}
		if r.last == nil {
			fmt.Fprintln(out, "Error: no value yet")
			return true, false
		}
		if err := signature.Validate(t, r.last.Value, signature.Enabled); err != nil {
			fmt.Fprintf(out, "does not match %s:\n%s\n", arg, strings.TrimSpace(err.Error()))
			return true, false
		}
		fmt.Fprintf(out, "matches %s\n", arg)
	case ":full":
		if r.last == nil {
			fmt.Fprintln(out, "Error: no value yet")
			return true, false
		}
		v, err := lisp.FromGo(r.last.Value)
		if err != nil {
			fmt.Fprintln(out, "Error:", err)
			return true, false
		}
		fmt.Fprintln(out, lisp.Sprint(v, lisp.PrintOptions{NoFirewall: true}))
	case ":mem":
		fmt.Fprintf(out, "memory: %s\nctx/: %s\n", strings.Join(r.sess.Memory(), ", "), strings.Join(r.sess.Inputs(), ", "))
	case ":history":
		msgs := r.sess.History()
		if msgs == nil {
			fmt.Fprintln(out, "compression is off: a run resends every program and its feedback (start with -compression, or set compression: true in the mission)")
			break
		}
		for _, m := range msgs {
			fmt.Fprintf(out, "=== %s ===\n%s\n", m.Role, m.Text())
		}
	default:
		fmt.Fprintf(out, "Error: unknown meta command %s (:help lists them)\n", cmd)
		return true, false
	}
	return false, false
}

// script evaluates the entries read from in, in order, and stops at the
// first that fails (exit status exitProgramFailed).
func (r *repl) script(ctx context.Context, in io.Reader, stdout, stderr io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxEntryBytes)
	var entry strings.Builder
	line := 0
	run := func() error {
		text := entry.String()
		entry.Reset()
		var shown strings.Builder
		failed, quit := r.eval(ctx, text, &shown)
		if failed {
			fmt.Fprint(stderr, shown.String())
			return fmt.Errorf("%w (entry ending on line %d)", errProgramFailed, line)
		}
		fmt.Fprint(stdout, shown.String())
		if quit {
			return io.EOF
		}
		return ctx.Err()
	}
	for sc.Scan() {
		line++
		if entry.Len()+len(sc.Text()) > maxEntryBytes {
			return fmt.Errorf("line %d: entry larger than %d bytes", line, maxEntryBytes)
		}
		entry.WriteString(sc.Text())
		entry.WriteByte('\n')
		if incomplete(entry.String()) {
			continue
		}
		if blank(entry.String()) {
			entry.Reset()
			continue
		}
		if err := run(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	if strings.TrimSpace(entry.String()) != "" {
		// an unclosed entry: the reader's error names what is open
		return run()
	}
	return nil
}

// interactive runs the REPL on a terminal: line editing and history,
// multi-line entries, Ctrl-C cancels a running program (or clears the
// entry being typed), Ctrl-D on an empty line leaves.
func (r *repl) interactive(ctx context.Context, tty *os.File, stdout io.Writer) error {
	state, err := term.MakeRaw(int(tty.Fd()))
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	defer func() { _ = term.Restore(int(tty.Fd()), state) }()
	keys := newKeyReader(tty)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, tty}, "ptc> ")
	if w, h, err := term.GetSize(int(tty.Fd())); err == nil {
		_ = t.SetSize(w, h)
	}
	var entry strings.Builder
	for {
		if ctx.Err() != nil {
			return nil
		}
		line, err := t.ReadLine()
		if keys.takeInterrupt() {
			entry.Reset()
			t.SetPrompt("ptc> ")
			fmt.Fprintln(t, "^C")
			continue
		}
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(t)
			return nil
		}
		if err != nil && !errors.Is(err, term.ErrPasteIndicator) {
			return fmt.Errorf("terminal: %w", err)
		}
		if entry.Len()+len(line) > maxEntryBytes {
			fmt.Fprintf(t, "Error: entry larger than %d bytes\n", maxEntryBytes)
			entry.Reset()
			t.SetPrompt("ptc> ")
			continue
		}
		entry.WriteString(line)
		entry.WriteByte('\n')
		if incomplete(entry.String()) {
			t.SetPrompt("...   ")
			continue
		}
		if blank(entry.String()) {
			entry.Reset()
			continue
		}
		text := entry.String()
		entry.Reset()
		t.SetPrompt("ptc> ")
		ectx, cancel := context.WithCancel(ctx)
		keys.setCancel(cancel)
		var shown strings.Builder
		_, quit := r.eval(ectx, text, &shown)
		keys.setCancel(nil)
		cancel()
		fmt.Fprint(t, shown.String())
		if quit {
			return nil
		}
	}
}

// keyReader is the only reader of the terminal: it hands the bytes on to
// the line editor, except Ctrl-C, which cancels the running program or,
// at the prompt, clears the line being typed (the editor then returns an
// empty line and takeInterrupt reports it).
type keyReader struct {
	mu        sync.Mutex
	cond      *sync.Cond
	buf       []byte
	err       error
	cancel    context.CancelFunc
	interrupt bool
}

const (
	keyCtrlC = 3
	keyCtrlU = 21
)

func newKeyReader(src io.Reader) *keyReader {
	k := &keyReader{}
	k.cond = sync.NewCond(&k.mu)
	go k.pump(src)
	return k
}

func (k *keyReader) pump(src io.Reader) {
	b := make([]byte, 256)
	for {
		n, err := src.Read(b)
		k.mu.Lock()
		for _, c := range b[:n] {
			if c != keyCtrlC {
				k.buf = append(k.buf, c)
				continue
			}
			if k.cancel != nil {
				k.cancel()
				continue
			}
			k.interrupt = true
			k.buf = append(k.buf, keyCtrlU, '\r')
		}
		if err != nil {
			k.err = err
		}
		k.cond.Broadcast()
		k.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (k *keyReader) Read(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.buf) == 0 && k.err == nil {
		k.cond.Wait()
	}
	if len(k.buf) == 0 {
		return 0, k.err
	}
	n := copy(p, k.buf)
	k.buf = k.buf[n:]
	return n, nil
}

func (k *keyReader) setCancel(c context.CancelFunc) {
	k.mu.Lock()
	k.cancel = c
	k.mu.Unlock()
}

func (k *keyReader) takeInterrupt() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	i := k.interrupt
	k.interrupt = false
	return i
}

// incomplete reports whether src has brackets still open (outside strings,
// character literals and comments) or an unterminated string: the REPL
// then reads another line. Too many closing brackets count as complete, so
// that the reader reports them.
func incomplete(src string) bool {
	depth := 0
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inStr:
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '\\':
			i++ // a character literal such as \( or \"
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		}
	}
	return inStr || depth > 0
}

// blank reports whether src holds only white space and comments.
func blank(src string) bool {
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, ";") {
			return false
		}
	}
	return true
}

// replServices prints what the REPL's programs emit and the plan's state
// after each step they mark done, as they happen (pmap branches too, one
// line at a time).
func replServices(w io.Writer) agent.Observer {
	var mu sync.Mutex
	return agent.ObserverFunc(func(_ context.Context, e agent.Event) {
		var text string
		switch e.Kind {
		case agent.EventEmit:
			text = "emit " + preview(e.Result, 500)
		case agent.EventPlan:
			ev := &messages.Event{Tool: e.Tool, Plan: e.Plan}
			text = planHeadline(ev) + "\n" + indent(planLines(e.Plan), "    ")
		default:
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, text)
	})
}
