package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/version"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Backoff bounds of reconnecting to an MCP server that failed or exited.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 30 * time.Second
	// stableAfter is how long a session must last for the backoff to
	// start again from minBackoff.
	stableAfter = 30 * time.Second
)

// codeRejected is the JSON-RPC error code the SDK gives a request its
// transport could not deliver (the server is gone): a transport failure,
// not an answer of the tool.
const codeRejected = -32005

// Options tune a Bridge; the zero value is the production setting.
type Options struct {
	// Logger receives connection changes, schema notes and skipped tools;
	// default zerolog.Nop().
	Logger *zerolog.Logger
	// MinBackoff and MaxBackoff bound the wait between reconnects.
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient is used for Streamable HTTP servers; default a client
	// without timeout (calls are bounded by their contexts).
	HTTPClient *http.Client
}

// Bridge serves the tools of MCP servers as fleet tool services: one
// service per configured server, one micro endpoint per exposed tool, so
// workers discover and call them like any other fleet tool.
type Bridge struct {
	nc      *nats.Conn
	opts    Options
	log     zerolog.Logger
	servers []*server
}

// NewBridge prepares a bridge for cfg on nc; Run connects it.
func NewBridge(nc *nats.Conn, cfg *Config, opts Options) (*Bridge, error) {
	if nc == nil {
		return nil, errors.New("mcpbridge: nil NATS connection")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = minBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(maxBackoff, opts.MinBackoff)
	}
	b := &Bridge{nc: nc, opts: opts, log: zerolog.Nop()}
	if opts.Logger != nil {
		b.log = *opts.Logger
	}
	for _, sc := range cfg.Servers {
		if sc.CallTimeout <= 0 {
			sc.CallTimeout = 30 * time.Second
		}
		if sc.MaxConcurrent <= 0 {
			sc.MaxConcurrent = 16
		}
		b.servers = append(b.servers, &server{
			b: b, cfg: sc, log: b.log.With().Str("mcp_server", sc.Name).Logger(),
			listChanged: make(chan struct{}, 1),
		})
	}
	return b, nil
}

// Run keeps every server connected and served until ctx ends, then stops
// the services and closes the sessions (stdio servers are asked to exit).
func (b *Bridge) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range b.servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	wg.Wait()
	return nil
}

// ServerState is what Status reports about one server.
type ServerState struct {
	Name      string
	Connected bool
	// Tools are the exposed fleet tool names, sorted.
	Tools []string
	// LastError is the last connection or listing error ("" when none).
	LastError string
	// Restarts counts the sessions started after the first.
	Restarts int
	// Notes say where a tool's schema could not be expressed as a
	// signature ("tool add: input.properties.x: $ref is not supported;
	// typed :any"), and which listed tools were skipped.
	Notes []string
}

// Status reports each server's state.
func (b *Bridge) Status() []ServerState {
	out := make([]ServerState, 0, len(b.servers))
	for _, s := range b.servers {
		s.mu.Lock()
		st := ServerState{Name: s.cfg.Name, Connected: s.session != nil, LastError: s.lastErr, Restarts: max(s.sessions-1, 0),
			Notes: append([]string(nil), s.notes...)}
		for n := range s.tools {
			st.Tools = append(st.Tools, n)
		}
		s.mu.Unlock()
		sort.Strings(st.Tools)
		out = append(out, st)
	}
	return out
}

// server bridges one MCP server.
type server struct {
	b           *Bridge
	cfg         ServerConfig
	log         zerolog.Logger
	listChanged chan struct{}

	mu       sync.Mutex
	session  *mcp.ClientSession // nil while disconnected
	svc      *fleet.ToolService // nil until the first listing
	tools    map[string]*bridgedTool
	lastErr  string
	sessions int
	notes    []string // of the last listing
}

// bridgedTool is one exposed tool.
type bridgedTool struct {
	mcpName     string
	signature   string // "" when the arguments cannot be typed
	description string
}

func (s *server) current() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

func (s *server) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// run connects, lists and serves, and reconnects with backoff whenever the
// session ends, until ctx ends. While disconnected the last tool list
// stays served and every call answers "unavailable".
func (s *server) run(ctx context.Context) {
	backoff := s.b.opts.MinBackoff
	defer s.stopService()
	for ctx.Err() == nil {
		started := time.Now()
		err := s.session1(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.setErr(err)
			s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("MCP server unavailable")
		}
		if time.Since(started) > stableAfter {
			backoff = s.b.opts.MinBackoff
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, s.b.opts.MaxBackoff)
	}
}

// session1 runs one session: connect, list, serve, and follow list
// changes until the session ends (the error says why) or ctx ends.
func (s *server) session1(ctx context.Context) error {
	transport, err := s.transport()
	if err != nil {
		return err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ptc-mcpbridge", Version: version.String()}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.listChanged <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := client.Connect(cctx, transport, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if err := s.relist(ctx, cs); err != nil {
		return err
	}
	s.mu.Lock()
	s.session = cs
	s.sessions++
	s.lastErr = ""
	s.mu.Unlock()
	s.log.Info().Msg("MCP server connected")
	defer func() {
		s.mu.Lock()
		if s.session == cs {
			s.session = nil
		}
		s.mu.Unlock()
	}()
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if err == nil {
				err = errors.New("the session ended")
			}
			return fmt.Errorf("session: %w", err)
		case <-s.listChanged:
			if err := s.relist(ctx, cs); err != nil {
				return err
			}
		}
	}
}

func (s *server) transport() (mcp.Transport, error) {
	if s.cfg.URL != "" {
		hc := s.b.opts.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		if len(s.cfg.Headers) > 0 {
			cp := *hc
			base := cp.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			cp.Transport = headerTransport{base: base, headers: s.cfg.Headers}
			hc = &cp
		}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Dir = s.cfg.Dir
	// The child gets PATH and HOME, not the bridge's secrets; everything
	// else it needs is configured in env.
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(s.cfg.Env) {
		cmd.Env = append(cmd.Env, k+"="+s.cfg.Env[k])
	}
	cmd.Stderr = logWriter{log: s.log}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// logWriter logs a stdio server's stderr, one record per write.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info().Str("stderr", strings.TrimRight(string(p), "\n")).Msg("MCP server says")
	return len(p), nil
}

// relist lists the server's tools and, when the exposed set changed,
// serves the new set: a new tool service is started before the old one
// stops (they share the queue group), so callers never see a gap.
func (s *server) relist(ctx context.Context, cs *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var listed []*mcp.Tool
	for t, err := range cs.Tools(lctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		listed = append(listed, t)
		if len(listed) > 10000 {
			return errors.New("list tools: more than 10000 tools")
		}
	}
	tools, notes := s.expose(listed)
	s.mu.Lock()
	s.notes = notes
	same := s.svc != nil && sameTools(s.tools, tools)
	s.mu.Unlock()
	if same {
		return nil
	}
	svc, err := fleet.NewToolService(s.b.nc, fleet.ToolServiceConfig{
		Name: s.cfg.Name, Version: "1.0.0", Description: s.description(cs),
		MaxConcurrent: s.cfg.MaxConcurrent, DefaultTimeout: s.cfg.CallTimeout, Logger: &s.log,
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := tools[n]
		err := svc.Register(n, fleet.ToolSpec{Signature: t.signature, Description: t.description},
			func(ctx context.Context, args map[string]any) (any, error) { return s.call(ctx, t, args) })
		if err != nil {
			_ = svc.Stop(context.Background())
			return err
		}
	}
	s.mu.Lock()
	old := s.svc
	s.svc, s.tools = svc, tools
	s.mu.Unlock()
	if old != nil {
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
		_ = old.Stop(sctx)
		cancel()
	}
	s.log.Info().Strs("tools", names).Msg("serving MCP tools")
	return nil
}

func (s *server) description(cs *mcp.ClientSession) string {
	if s.cfg.Description != "" {
		return s.cfg.Description
	}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		return "MCP server " + ir.ServerInfo.Name + " " + ir.ServerInfo.Version
	}
	return "MCP server"
}

func sameTools(a, b map[string]*bridgedTool) bool {
	if len(a) != len(b) {
		return false
	}
	for n, t := range a {
		u, ok := b[n]
		if !ok || *t != *u {
			return false
		}
	}
	return true
}

// expose applies the allow-list and renames, and converts each tool's
// schemas to a signature.
func (s *server) expose(listed []*mcp.Tool) (map[string]*bridgedTool, []string) {
	var notes []string
	byName := make(map[string]*mcp.Tool, len(listed))
	for _, t := range listed {
		byName[t.Name] = t
	}
	rules := s.cfg.Tools
	if len(rules) == 0 {
		for _, t := range listed {
			if !messages.ValidName(t.Name) || t.Name == "return" || t.Name == "fail" {
				s.log.Warn().Str("tool", t.Name).Msg("tool skipped: its name is not a valid fleet tool name; allow it under another name (tools: [{name, as}])")
				notes = append(notes, fmt.Sprintf("tool %s: skipped: not a valid fleet tool name; allow it under another name", t.Name))
				continue
			}
			rules = append(rules, ToolRule{Name: t.Name})
		}
	}
	out := make(map[string]*bridgedTool, len(rules))
	for _, r := range rules {
		t, ok := byName[r.Name]
		if !ok {
			s.log.Warn().Str("tool", r.Name).Msg("allowed tool is not listed by the server")
			notes = append(notes, fmt.Sprintf("tool %s: allowed but not listed by the server", r.Name))
			continue
		}
		sig, untyped, schemaNotes := signature.FromJSONSchema(t.InputSchema, t.OutputSchema)
		for _, n := range schemaNotes {
			s.log.Warn().Str("tool", t.Name).Str("note", n).Msg("schema feature not expressible as a signature")
			notes = append(notes, fmt.Sprintf("tool %s: %s", t.Name, n))
		}
		bt := &bridgedTool{mcpName: t.Name, description: t.Description}
		if !untyped {
			bt.signature = sig.String()
		}
		if bt.description == "" {
			bt.description = t.Title
		}
		out[r.exposed()] = bt
	}
	return out, notes
}

// call forwards one fleet tool call to the MCP server.
func (s *server) call(ctx context.Context, t *bridgedTool, args map[string]any) (any, error) {
	cs := s.current()
	if cs == nil {
		return nil, &messages.ToolError{Code: messages.ToolErrUnavailable,
			Message: fmt.Sprintf("the MCP server %s is not connected (it is being restarted); try again later or do without it", s.cfg.Name)}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.mcpName, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) && rpc.Code != codeRejected &&
			!errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, mcp.ErrSessionMissing) {
			return nil, &messages.ToolError{Code: messages.ToolErrFailed, Message: rpc.Message}
		}
		// The transport failed: the session is gone. Closing it wakes the
		// supervisor, which reconnects with backoff.
		_ = cs.Close()
		return nil, &messages.ToolError{Code: messages.ToolErrUnavailable,
			Message: fmt.Sprintf("the MCP server %s went away during the call (%v); try again later or do without it", s.cfg.Name, err)}
	}
	return convertResult(res)
}

func (s *server) stopService() {
	s.mu.Lock()
	svc := s.svc
	s.svc = nil
	s.mu.Unlock()
	if svc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	}
}
