package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// Endpoint metadata keys under which a tool service publishes a tool's
// schema; workers read them through $SRV.INFO.
const (
	MetaTool        = "ptc.tool"
	MetaSignature   = "ptc.signature"
	MetaDescription = "ptc.description"
	// MetaContentType, when messages.ContentTypeJSON, asks callers to
	// send the tool's requests as JSON; empty means msgpack.
	MetaContentType = "ptc.content_type"
)

// Tool is a callable tool: the shape pkg/agent's Tool has, so a remote tool
// can be handed to the agent loop as it is.
type Tool interface {
	Name() string
	Signature() string
	Description() string
	Call(ctx context.Context, args map[string]any) (any, error)
}

// ToolInfo is a tool's schema as discovered from a tool service.
type ToolInfo struct {
	Name        string
	Service     string
	Subject     string
	Signature   string
	Description string
	// ContentType is the encoding the tool wants its requests in
	// (MetaContentType): "" (msgpack) or messages.ContentTypeJSON.
	ContentType string
	// Heartbeat says the service sends progress messages while it works
	// on a call (MetaHeartbeat).
	Heartbeat bool
	// Approval is the service's rule for calls that wait for a person's
	// approval (MetaApproval); nil: the service asks for none.
	Approval *messages.ApprovalRule
	// Invalid says why the tool cannot be called ("" when it can): its
	// service advertises a signature that does not parse. A call fails
	// with a ToolError naming the service, and Signature is "" to the
	// Toolbox's tools, so a mission naming the tool still runs.
	Invalid string
}

// Discovery is what one discovery round found.
type Discovery struct {
	// Tools are the usable tools, sorted by name.
	Tools []ToolInfo
	// Conflicts are tool names claimed by more than one service and not
	// resolved by a pin; they are left out of Tools, so calling them
	// reports "unavailable" with the conflict.
	Conflicts []ToolConflict
	// Rejected are tool endpoints that were refused: a subject other than
	// tool.<service>.<endpoint> of the service that answered, an invalid
	// service or endpoint name, a tool name other than the endpoint's, or
	// a service other than the tool's pin.
	Rejected []RejectedEndpoint
}

// ToolConflict is a tool name claimed by several services.
type ToolConflict struct {
	Tool     string
	Services []string // sorted
}

// RejectedEndpoint is a tool endpoint Discover refused, and why.
type RejectedEndpoint struct {
	Service, Endpoint, Tool, Subject string
	Reason                           string
}

// DiscoverOptions tune DiscoverTools.
type DiscoverOptions struct {
	// Wait bounds the round: answers are gathered until Wait has passed
	// since the request, or 20ms passed without a new answer after the
	// first one. Default 250ms.
	Wait time.Duration
	// Pins maps a tool name to the one service allowed to serve it. A
	// pinned tool is taken only from its service (other services claiming
	// it are rejected); an unpinned tool claimed by two services is a
	// conflict.
	Pins map[string]string
	// Want, when set, keeps the round open until a service offering the
	// tool Want answered (then the usual 20ms of quiet end it) or Wait
	// passed: a loaded service answering late is still heard.
	Want string
}

// DiscoverTools asks every micro service for its info ($SRV.INFO) and
// returns the tools found (endpoints with MetaTool metadata). An endpoint is
// taken only when its subject is tool.<service>.<endpoint> of the service
// that answered and its MetaTool names the endpoint, so a service cannot
// make callers publish tool requests to another subject (a mission's result
// or status) or take over another service's tool. A tool name claimed by
// two services is reported in Conflicts and left out, unless Pins names the
// service to use.
func DiscoverTools(ctx context.Context, nc *nats.Conn, opts DiscoverOptions) (*Discovery, error) {
	d, _, err := discoverTools(ctx, nc, opts)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// discoverTools is DiscoverTools, also telling whether NATS answered the
// round at all: a service's info, or the server's no-responders status
// (no service listens for $SRV.INFO). A round that heard nothing (the
// connection reconnecting, its request lost or late) says nothing about
// which tools are offered. heard is set even when err is (ctx ended the
// round after an answer); err wraps nats.ErrNoResponders, with d empty,
// when the server answered that no service listens.
func discoverTools(ctx context.Context, nc *nats.Conn, opts DiscoverOptions) (d *Discovery, heard bool, err error) {
	wait := opts.Wait
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, false, fmt.Errorf("fleet: discover: %w", err)
	}
	defer sub.Unsubscribe()
	subj := micro.APIPrefix + "." + micro.InfoVerb.String()
	if err := nc.PublishRequest(subj, inbox, nil); err != nil {
		return nil, false, fmt.Errorf("fleet: discover: %w", err)
	}
	deadline := time.Now().Add(wait)
	claims := map[string]map[string]ToolInfo{} // tool → service → info
	d = &Discovery{}
	rejected := map[RejectedEndpoint]bool{}
	reject := func(r RejectedEndpoint) {
		if !rejected[r] {
			rejected[r] = true
			d.Rejected = append(d.Rejected, r)
		}
	}
	got := false
	for {
		left := time.Until(deadline)
		if got && (opts.Want == "" || len(claims[opts.Want]) > 0) {
			left = min(left, 20*time.Millisecond)
		}
		if left <= 0 {
			break
		}
		wctx, cancel := context.WithTimeout(ctx, left)
		msg, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, got, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
				break
			}
			if errors.Is(err, nats.ErrNoResponders) {
				// the server's answer that no service listens: none
				// offers a tool (d is empty)
				return d, true, fmt.Errorf("fleet: discover: %w", err)
			}
			return nil, got, fmt.Errorf("fleet: discover: %w", err)
		}
		got = true
		var info micro.Info
		if json.Unmarshal(msg.Data, &info) != nil {
			continue
		}
		for _, ep := range info.Endpoints {
			name := ep.Metadata[MetaTool]
			if name == "" {
				continue
			}
			r := RejectedEndpoint{Service: info.Name, Endpoint: ep.Name, Tool: name, Subject: ep.Subject}
			switch {
			case !messages.ValidName(info.Name) || !messages.ValidName(ep.Name):
				r.Reason = "service or endpoint name is not a valid name"
			case name != ep.Name:
				r.Reason = fmt.Sprintf("tool name %q differs from the endpoint name %q", name, ep.Name)
			case ep.Subject != messages.ToolSubject(info.Name, ep.Name):
				r.Reason = fmt.Sprintf("subject %q is not %q", ep.Subject, messages.ToolSubject(info.Name, ep.Name))
			case opts.Pins[name] != "" && opts.Pins[name] != info.Name:
				r.Reason = fmt.Sprintf("tool %q is pinned to service %q", name, opts.Pins[name])
			}
			if r.Reason != "" {
				reject(r)
				continue
			}
			if claims[name] == nil {
				claims[name] = map[string]ToolInfo{}
			}
			ti := ToolInfo{Name: name, Service: info.Name, Subject: ep.Subject,
				Signature: ep.Metadata[MetaSignature], Description: ep.Metadata[MetaDescription],
				ContentType: ep.Metadata[MetaContentType], Heartbeat: ep.Metadata[MetaHeartbeat] == "1",
				Approval: parseApprovalMeta(ep.Metadata[MetaApproval], name, info.Name)}
			if ti.Signature != "" {
				if _, err := signature.Parse(ti.Signature); err != nil {
					ti.Invalid = fmt.Sprintf("its signature %q does not parse: %v", ti.Signature, err)
				}
			}
			claims[name][info.Name] = ti
		}
	}
	for name, bySvc := range claims {
		if len(bySvc) == 1 {
			for _, t := range bySvc {
				d.Tools = append(d.Tools, t)
			}
			continue
		}
		c := ToolConflict{Tool: name}
		for svc := range bySvc {
			c.Services = append(c.Services, svc)
		}
		sort.Strings(c.Services)
		d.Conflicts = append(d.Conflicts, c)
	}
	sort.Slice(d.Tools, func(i, j int) bool { return d.Tools[i].Name < d.Tools[j].Name })
	sort.Slice(d.Conflicts, func(i, j int) bool { return d.Conflicts[i].Tool < d.Conflicts[j].Tool })
	return d, got, nil
}

// Discover is DiscoverTools with no pins, returning only the usable tools.
func Discover(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]ToolInfo, error) {
	d, err := DiscoverTools(ctx, nc, DiscoverOptions{Wait: wait})
	if err != nil {
		return nil, err
	}
	return d.Tools, nil
}

// toolRegistry caches discovered tool schemas, shared by a worker's
// missions. A lookup refreshes the cache when it is older than ttl, or when
// the tool is missing and the last refresh is older than minRefresh (so a
// tool whose service is down does not trigger a discovery per call).
type toolRegistry struct {
	nc         *nats.Conn
	ttl        time.Duration
	minRefresh time.Duration
	wait       time.Duration
	// missWait bounds the longer discovery a lookup of a tool still
	// missing after a refresh waits for (toolMissWait unless set).
	missWait time.Duration
	pins     map[string]string
	// report, when set, is told of every discovery with conflicts or
	// rejected endpoints (the worker logs them).
	report func(*Discovery)

	refreshMu  sync.Mutex // one discovery at a time
	background atomic.Bool
	mu         sync.RWMutex
	tools      map[string]ToolInfo
	conflicts  map[string][]string // tool → services claiming it
	fetched    time.Time
	missed     map[string]time.Time     // tool → when a long wait last found it absent
	waiting    map[string]chan struct{} // tool → closed when its long wait ends
	// unheard is why the latest discovery round heard no answer from
	// NATS (nil: it heard one): a tool it did not find may still be
	// offered.
	unheard error
}

// errDiscoveryUnheard is why a discovery round that ended with no answer
// at all (no service's info, nor the server's no-responders status) did
// not find a tool.
var errDiscoveryUnheard = errors.New("tool discovery got no answer from NATS")

// heard records whether a discovery round heard NATS answer, and why not
// (err, or errDiscoveryUnheard).
func (r *toolRegistry) heard(heard bool, err error) {
	if heard {
		err = nil
	} else if err == nil {
		err = errDiscoveryUnheard
	}
	r.mu.Lock()
	r.unheard = err
	r.mu.Unlock()
}

// toolMissWait is the default bound of the wait for a tool missing after a
// refresh.
const toolMissWait = 2 * time.Second

func (r *toolRegistry) snapshot() (map[string]ToolInfo, time.Time) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools, r.fetched
}

func (r *toolRegistry) refresh(ctx context.Context, ifOlder time.Duration) {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	if _, at := r.snapshot(); time.Since(at) < ifOlder {
		return // someone refreshed while we waited
	}
	d, heard, err := discoverTools(ctx, r.nc, DiscoverOptions{Wait: r.wait, Pins: r.pins})
	r.heard(heard, err)
	if !heard && err == nil {
		// a round that heard nothing says nothing of what is offered:
		// the cache is kept, and counts as refreshed (a lookup missing a
		// tool waits for it in await, which tells whether NATS answered)
		r.mu.Lock()
		r.fetched = time.Now()
		r.mu.Unlock()
		return
	}
	if err != nil && (d == nil || !errors.Is(err, nats.ErrNoResponders)) {
		return // keep the old cache (no responders: no service offers any tool)
	}
	if r.report != nil && (len(d.Conflicts) > 0 || len(d.Rejected) > 0) {
		r.report(d)
	}
	m := make(map[string]ToolInfo, len(d.Tools))
	for _, t := range d.Tools {
		m[t.Name] = t
	}
	var conflicts map[string][]string
	if len(d.Conflicts) > 0 {
		conflicts = make(map[string][]string, len(d.Conflicts))
		for _, c := range d.Conflicts {
			conflicts[c.Tool] = c.Services
		}
	}
	r.mu.Lock()
	r.tools, r.conflicts, r.fetched = m, conflicts, time.Now()
	r.mu.Unlock()
}

// conflict returns the services claiming name when the last discovery
// found it claimed by several.
func (r *toolRegistry) conflict(name string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.conflicts[name]
}

// expire marks the cache stale so the next lookup refreshes it.
func (r *toolRegistry) expire() {
	r.mu.Lock()
	r.fetched = time.Time{}
	r.mu.Unlock()
}

// lookup returns the schema of name, refreshing the cache as documented on
// toolRegistry. A stale cache that has the tool answers at once and is
// refreshed in the background.
func (r *toolRegistry) lookup(ctx context.Context, name string) (ToolInfo, bool) {
	t, ok, _ := r.lookupHeard(ctx, name)
	return t, ok
}

// lookupHeard is lookup, also saying, when the tool is not found, whether
// that is NATS's answer (nil: the latest discovery heard services answer,
// or the server say none listens, and none offers the tool) or no answer
// at all (the error: the connection reconnecting, the round's request or
// its answers lost or late), after which the tool may still be offered.
func (r *toolRegistry) lookupHeard(ctx context.Context, name string) (ToolInfo, bool, error) {
	if t, ok := r.cached(name); ok {
		return t, true, nil
	}
	tools, at := r.snapshot()
	if time.Since(at) > r.ttl {
		r.refresh(ctx, r.ttl)
		tools, at = r.snapshot()
	}
	if t, ok := tools[name]; ok {
		return t, true, nil
	}
	if time.Since(at) > r.minRefresh {
		r.refresh(ctx, r.minRefresh)
		tools, _ = r.snapshot()
	}
	if t, ok := tools[name]; ok {
		return t, true, nil
	}
	return r.await(ctx, name)
}

// cached returns the tool named name as the registry holds it, without
// waiting: one past the registry's ttl is still answered, while a refresh
// runs in the background.
func (r *toolRegistry) cached(name string) (ToolInfo, bool) {
	tools, at := r.snapshot()
	t, ok := tools[name]
	if ok && time.Since(at) > r.ttl && r.background.CompareAndSwap(false, true) {
		go func() {
			defer r.background.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), r.wait+time.Second)
			defer cancel()
			r.refresh(ctx, r.ttl)
		}()
	}
	return t, ok
}

// await waits for a service offering name to answer a discovery, for up to
// missWait and never past ctx's deadline: a loaded machine's services may
// answer after the short rounds of refresh give up. A tool no service
// offers costs that wait once per minRefresh; lookups meanwhile answer at
// once, and concurrent lookups of the tool share one wait. A wait that
// heard no answer from NATS is not counted as a miss, and returns why
// (lookupHeard).
func (r *toolRegistry) await(ctx context.Context, name string) (ToolInfo, bool, error) {
	r.mu.Lock()
	if ch, ok := r.waiting[name]; ok {
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		r.mu.RLock()
		defer r.mu.RUnlock()
		if t, ok := r.tools[name]; ok {
			return t, true, nil
		}
		if _, ok := r.missed[name]; ok {
			return ToolInfo{}, false, nil
		}
		return ToolInfo{}, false, r.unheard
	}
	if at, ok := r.missed[name]; ok && time.Since(at) < r.minRefresh {
		r.mu.Unlock()
		return ToolInfo{}, false, nil
	}
	if r.waiting == nil {
		r.waiting = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	r.waiting[name] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, name)
		r.mu.Unlock()
		close(ch)
	}()
	wait := r.missWait
	if wait <= 0 {
		wait = toolMissWait
	}
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	var t ToolInfo
	found := false
	var unheard error // why the wait heard no answer (nil: it did)
	if wait > 0 {
		d, heard, err := discoverTools(ctx, r.nc, DiscoverOptions{Wait: wait, Pins: r.pins, Want: name})
		r.heard(heard, err)
		if !heard {
			unheard = cmp.Or(err, errDiscoveryUnheard)
		}
		if err == nil {
			for _, info := range d.Tools {
				if info.Name == name {
					t, found = info, true
				}
			}
		}
	} else {
		// no time left to ask: what the latest round heard
		r.mu.RLock()
		unheard = r.unheard
		r.mu.RUnlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !found && unheard != nil {
		// not known absent: the next lookup asks again, and lookups that
		// shared this wait are not answered from an older miss
		delete(r.missed, name)
		return ToolInfo{}, false, unheard
	}
	if !found {
		if r.missed == nil {
			r.missed = map[string]time.Time{}
		}
		r.missed[name] = time.Now()
		return ToolInfo{}, false, nil
	}
	delete(r.missed, name)
	tools := make(map[string]ToolInfo, len(r.tools)+1)
	for k, v := range r.tools {
		tools[k] = v
	}
	tools[name] = t
	r.tools = tools
	return t, true, nil
}

// Toolbox is the set of remote tools one mission may use. Tools that the
// mission does not name are refused before any request is sent. It is safe
// for concurrent use.
type Toolbox struct {
	// beatMs is the last heartbeat interval a live call asked for, in
	// milliseconds as its header writes it (a mission's calls mostly ask
	// for the same)
	beatMs atomic.Pointer[beatMsText]

	reg       *toolRegistry
	nc        *nats.Conn
	missionID string
	allowed   map[string]bool // the allowed names when more than maxListedTools; nil: names
	names     []string
	timeout   time.Duration
	header    nats.Header
	calls     atomic.Int64
	// resultBytes counts the bytes of the tool results the mission's calls
	// got (live, replayed, or sent out of band): what an ended run may
	// still hold from its tools (missionRun.freeForEnd)
	resultBytes atomic.Int64
	// events reports each call and its result (tool_call, tool_result);
	// nil: none are reported
	events *emitter

	// gate holds back calls that need approval (nil: none do), made for
	// the worker's mission run at the first call (approvals): a mission
	// waiting on its model before it calls a tool holds none.
	gate atomic.Pointer[approvalGate]
	// approvalsAhead, on the Toolbox of a run that took its mission from
	// awaiting_approval, are the mission's records its claim read
	// (resumeReads): the gate's first look takes them.
	approvalsAhead *pending[approvalList]
	run            *missionRun // nil: the Toolbox of no worker's mission
	// owned, when set, is asked before a request leaves (RunEnv.Owned).
	owned func(context.Context) error

	// retryWait bounds how long a call keeps retrying a tool whose
	// service has no responders.
	retryWait time.Duration
	// journal records and replays tool results (nil: off); attempt is the
	// mission's delivery attempt.
	journal   *Journal
	attempt   int
	turnMu    sync.Mutex
	turnCalls map[turnCall]int // calls made so far per turn and content (the occurrence)
	metrics   *Metrics
	tracer    trace.Tracer // nil when tracing is off

	// replies and heartbeat make calls to tools that send progress
	// messages live (sendLive); nil: every call is a plain request.
	replies   *replyMux
	heartbeat time.Duration
	// drops tells calls of their connection's drops (the worker's; nil:
	// each call listens for them itself).
	drops *connDrops

	// refs opens results sent out of band; maxData bounds their size
	// (≤ 0: no bound).
	refs    refStores
	maxData int64
}

// ToolboxConfig configures a stand-alone Toolbox (workers build their own).
type ToolboxConfig struct {
	// Tools are the names that may be called; every other is refused.
	Tools []string
	// MissionID is sent with each call (optional).
	MissionID string
	// Timeout bounds one call. Default DefaultToolTimeout.
	Timeout time.Duration
	// CacheTTL, MissRefresh, DiscoveryWait and MissWait tune discovery as
	// in WorkerConfig. Defaults 30s, 1s, 250ms, 2s.
	CacheTTL, MissRefresh, DiscoveryWait, MissWait time.Duration
	// Header is sent with each call (trace context).
	Header nats.Header
	// ToolPins maps a tool name to the one service allowed to serve it
	// (DiscoverOptions.Pins).
	ToolPins map[string]string
	// UnavailableWait bounds how long a call keeps retrying, with backoff,
	// a discovered tool whose service has no responders (a service
	// restarting, or resubscribing after a NATS reconnect), and a tool
	// whose discovery hears no answer from NATS, before the call reports
	// it unavailable. Default 3s.
	UnavailableWait time.Duration
	// MaxData bounds the encoded size of one result sent out of band
	// (docs/wire.md): a larger one is refused before it is read. Default
	// messages.DefaultMaxData; negative: no bound.
	MaxData int64
	// Metrics records the calls (ptc_tool_calls_total, ...); nil: none.
	Metrics *Metrics
	// TracerProvider records a client span per call and sends its context
	// in the request's traceparent header; nil: no spans, Header's trace
	// context is sent as it is.
	TracerProvider trace.TracerProvider
}

// NewToolbox returns a Toolbox calling remote tools over nc outside any
// worker, e.g. for an in-process agent that uses the fleet's tool services.
func NewToolbox(nc *nats.Conn, cfg ToolboxConfig) (*Toolbox, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidConfig)
	}
	if cfg.MissionID != "" && !messages.ValidMissionID(cfg.MissionID) {
		return nil, fmt.Errorf("%w: mission id %q is not a ULID", ErrInvalidConfig, cfg.MissionID)
	}
	for _, n := range cfg.Tools {
		if !messages.ValidName(n) {
			return nil, fmt.Errorf("%w: tool name %q", ErrInvalidConfig, n)
		}
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Timeout, DefaultToolTimeout)
	def(&cfg.CacheTTL, 30*time.Second)
	def(&cfg.MissRefresh, time.Second)
	def(&cfg.DiscoveryWait, 250*time.Millisecond)
	def(&cfg.MissWait, toolMissWait)
	def(&cfg.UnavailableWait, 3*time.Second)
	if err := checkPins(cfg.ToolPins); err != nil {
		return nil, err
	}
	reg := &toolRegistry{nc: nc, ttl: cfg.CacheTTL, minRefresh: cfg.MissRefresh, wait: cfg.DiscoveryWait,
		missWait: cfg.MissWait, pins: cfg.ToolPins}
	b := newToolbox(reg, nc, cfg.MissionID, cfg.Tools, cfg.Timeout, cfg.UnavailableWait, cfg.Header)
	b.metrics = cfg.Metrics
	if cfg.MaxData != 0 {
		b.maxData = cfg.MaxData
	}
	if cfg.TracerProvider != nil {
		b.tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	return b, nil
}

// checkPins validates a tool → service pin map.
func checkPins(pins map[string]string) error {
	for tool, svc := range pins {
		if !messages.ValidName(tool) || !messages.ValidName(svc) {
			return fmt.Errorf("%w: tool pin %q=%q: names must be letters, digits, '-' or '_'", ErrInvalidConfig, tool, svc)
		}
	}
	return nil
}

func newToolbox(reg *toolRegistry, nc *nats.Conn, missionID string, tools []string, timeout, retryWait time.Duration, hdr nats.Header) *Toolbox {
	b := &Toolbox{
		reg: reg, nc: nc, missionID: missionID, timeout: timeout, retryWait: retryWait,
		names: append([]string(nil), tools...),
		refs:  refStores{nc: nc}, maxData: messages.DefaultMaxData,
	}
	if len(tools) > maxListedTools {
		b.allowed = make(map[string]bool, len(tools))
		for _, n := range tools {
			b.allowed[n] = true
		}
	}
	for _, k := range []string{messages.HeaderTraceParent, messages.HeaderTraceState} {
		if v := hdr.Get(k); v != "" {
			if b.header == nil {
				b.header = nats.Header{}
			}
			b.header.Set(k, v)
		}
	}
	return b
}

// reportResult reports the result of a call (tool_result), unless the
// call was not made because it waits on an approval
// (approval_requested says why).
func (b *Toolbox) reportResult(turn int, name, callID string, result any, err error, d time.Duration, replayed bool, approval *messages.Approval) {
	if errors.Is(err, ErrSuspended) {
		return
	}
	ev := &messages.Event{Kind: messages.EventToolResult, Turn: turn, Tool: name, CallID: callID, Result: result, Duration: d}
	if err != nil {
		ev.Error = err.Error()
	}
	if replayed {
		ev.Data = map[string]any{"replayed": true}
	}
	if approval != nil {
		ev.Data = withApproval(ev.Data, approval)
	}
	b.events.Emit(ev)
}

// approvalsFor is approvals for a call of the tool info describes: nil,
// with no gate made, when no rule can mark the call (the mission, the
// worker and the tool's service set none), which the gate's check would
// let through as it is.
func (b *Toolbox) approvalsFor(info ToolInfo) *approvalGate {
	if info.Approval == nil && !b.run.hasApprovalRules() {
		return nil
	}
	return b.approvals()
}

// approvals returns the Toolbox's approval gate, made at its first use;
// nil when it has none.
func (b *Toolbox) approvals() *approvalGate {
	if g := b.gate.Load(); g != nil || b.run == nil {
		return g
	}
	g := b.run.approvalGate()
	if ahead := b.approvalsAhead; ahead != nil {
		g.readAhead = listedAhead(ahead)
	}
	b.gate.CompareAndSwap(nil, g)
	return b.gate.Load()
}

// maxListedTools is how many tools a mission may allow that its Toolbox
// finds in its list of names; more are put in a map.
const maxListedTools = 8

// mayCall reports whether the mission allows the tool name.
func (b *Toolbox) mayCall(name string) bool {
	if b.allowed != nil {
		return b.allowed[name]
	}
	return slices.Contains(b.names, name)
}

// Names returns the tool names the mission may call, in mission order.
func (b *Toolbox) Names() []string { return append([]string(nil), b.names...) }

// List returns one Tool per allowed name. A tool whose service has not been
// discovered has empty Signature and Description; calling it reports
// "unavailable".
func (b *Toolbox) List(ctx context.Context) []Tool {
	out := make([]Tool, 0, len(b.names))
	for _, n := range b.names {
		t, _ := b.Get(ctx, n)
		out = append(out, t)
	}
	return out
}

// Get returns the named tool, or a *ToolError with code forbidden when the
// mission does not name it.
func (b *Toolbox) Get(ctx context.Context, name string) (Tool, error) {
	if !b.mayCall(name) {
		return nil, forbidden(name)
	}
	info, _ := b.reg.lookup(ctx, name)
	return &remoteTool{box: b, name: name, info: info}, nil
}

// Call calls the named tool and returns its result as plain Go data.
// Errors are *ToolError (forbidden, unavailable, timeout, tool_error, ...)
// except when ctx ends first, which returns the context's error.
func (b *Toolbox) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if !b.mayCall(name) {
		return nil, forbidden(name)
	}
	return b.call(ctx, name, args, b.decodePlain)
}

// ToolResult is a tool's result as it came over the wire, undecoded: one
// value in its content type. A Toolbox hands it to a ResultDecoder
// (CallAs), so a caller that keeps results in its own representation (an
// agent mission's interpreter values) decodes them once, straight from
// the reply's bytes, and pkg/fleet need not know that representation.
type ToolResult struct {
	// ContentType is "" for msgpack or messages.ContentTypeJSON.
	ContentType string
	// Data is the encoded value: msgpack nil when the tool returned none;
	// nil when Ref is set.
	Data []byte
	// Ref names the object holding a large result, sent out of band
	// (docs/wire.md); Open reads it.
	Ref *messages.ObjectRef

	box *Toolbox
}

// Open returns a reader of the encoded value: Data, or the object Ref
// names, streamed from the object store in chunks. A referenced result
// over the mission's data limit is refused (a *DataLimitError) before a
// byte of it is read; the reader fails when the object's size or digest
// differs from the reference's.
func (r *ToolResult) Open(ctx context.Context) (io.ReadCloser, error) {
	if r.Ref == nil {
		return io.NopCloser(bytes.NewReader(r.Data)), nil
	}
	return r.box.refs.open(ctx, r.Ref, r.box.maxData)
}

// ResultDecoder turns a tool's result into the value a call returns. Its
// error is reported as the call's, a *ToolError with code internal
// ("undecodable response") unless it is one itself.
type ResultDecoder func(ctx context.Context, r *ToolResult) (any, error)

// CallAs is Call with the result handed undecoded to decode, which
// returns the call's value: the trace, the journal and the tool_result
// event keep the reply's bytes and the value decode made of them (a value
// that is a messages.Masker and msgpack.Marshaler keeps its own bytes in
// the event). An agent mission's remote tools are called this way, and
// decode reads the bytes once into interpreter values.
func (b *Toolbox) CallAs(ctx context.Context, name string, args map[string]any, decode ResultDecoder) (any, error) {
	if !b.mayCall(name) {
		return nil, forbidden(name)
	}
	return b.call(ctx, name, args, b.decodeAs(decode))
}

// decodeAs returns the body decoder of a call whose result decode turns
// into the call's value.
func (b *Toolbox) decodeAs(decode ResultDecoder) func(ctx context.Context, name string, body []byte) (any, error) {
	return func(ctx context.Context, name string, body []byte) (any, error) {
		ctype, raw, ref, err := splitToolResponse(name, body)
		if err != nil {
			return nil, err
		}
		if ref != nil {
			b.refs.note(ref)
			b.resultBytes.Add(ref.Size)
		}
		if raw == nil && ref == nil {
			ctype, raw = "", []byte{msgpcode.Nil}
		}
		v, err := decode(ctx, &ToolResult{ContentType: ctype, Data: raw, Ref: ref, box: b})
		if err != nil {
			var le *DataLimitError
			if errors.As(err, &le) {
				return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: le.Error()}
			}
			var te *ToolError
			if errors.As(err, &te) {
				return nil, err
			}
			msg := "undecodable response"
			if ref != nil { // a stream can fail for more reasons than its bytes
				msg = "unreadable result: " + err.Error()
			}
			return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: msg}
		}
		return v, nil
	}
}

// Calls returns the number of requests sent so far.
func (b *Toolbox) Calls() int64 { return b.calls.Load() }

func forbidden(name string) error {
	return &ToolError{Tool: name, Code: messages.ToolErrForbidden,
		Message: "this mission may not call it; call only the tools listed for the mission"}
}

// turnCall is a call's turn and content (its callDigest): the calls of
// one turn and content are counted together.
type turnCall struct {
	turn   int
	digest string
}

// callOccurrence returns the index of a new call in turn (from 1). Its
// count is keyed by the turn and digest as they are, no key string made.
func (b *Toolbox) callOccurrence(turn int, digest string) int {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	k := turnCall{turn, digest}
	if b.turnCalls == nil {
		b.turnCalls = map[turnCall]int{}
	}
	b.turnCalls[k]++
	return b.turnCalls[k]
}

// call calls the named tool; decode turns the response body (as
// received, or as journaled) into the result.
func (b *Toolbox) call(ctx context.Context, name string, args map[string]any, decode func(ctx context.Context, name string, body []byte) (any, error)) (result any, err error) {
	callID := strconv.FormatInt(b.calls.Add(1), 10)
	turn := TurnFrom(ctx)
	start := time.Now()
	if b.events != nil {
		b.events.Emit(&messages.Event{Kind: messages.EventToolCall, Turn: turn, Tool: name, CallID: callID, Args: args})
	}
	replayed := false
	var approval *messages.Approval
	var span trace.Span
	ctx, span = startToolSpan(ctx, b.tracer, name, callID)
	defer func() {
		d := time.Since(start)
		if replayed {
			// Answered from the journal: no request was sent.
			if span != nil {
				span.SetAttributes(AttrReplayed.Bool(true))
			}
		} else {
			b.metrics.toolCall(name, d, err)
		}
		endSpan(span, err)
		if b.events != nil {
			b.reportResult(turn, name, callID, result, err, d, replayed, approval)
		}
	}()
	plain, err := messages.Normalize(args)
	if err != nil {
		return nil, &ToolError{Tool: name, Code: messages.ToolErrBadRequest, Message: "arguments: " + err.Error()}
	}
	// A call is identified by its turn and content (tool and arguments)
	// and, among calls of the same content in the turn, its occurrence:
	// the same on every attempt whatever order concurrent calls (pmap)
	// take.
	digest := callDigest(name, plain)
	occurrence := b.callOccurrence(turn, digest)
	jkey := ""
	if b.journal != nil {
		jkey = toolKey(turn, digest)
		if data, ok := b.journal.Replay(jkey); ok {
			replayed = true
			b.resultBytes.Add(int64(len(data)))
			return decode(ctx, name, data)
		}
	}
	// a tool the registry holds needs no wait (nor a deadline for one)
	info, ok := b.reg.cached(name)
	if !ok {
		if info, ok, err = b.discover(ctx, name); err != nil {
			return nil, err
		}
	}
	if !ok {
		if svcs := b.reg.conflict(name); len(svcs) > 0 {
			return nil, &ToolError{Tool: name, Code: messages.ToolErrUnavailable,
				Message: fmt.Sprintf("services %s all offer it and none is pinned for it; do without it", strings.Join(svcs, ", "))}
		}
		return nil, &ToolError{Tool: name, Code: messages.ToolErrUnavailable,
			Message: "no tool service is running for it; try again later or do without it"}
	}
	if info.Invalid != "" {
		return nil, &ToolError{Tool: name, Code: messages.ToolErrUnavailable,
			Message: fmt.Sprintf("tool service %s offers it, but %s; do without it", info.Service, info.Invalid)}
	}
	req := messages.ToolRequest{Version: messages.ToolCallVersion, CallID: callID, MissionID: b.missionID, Tool: name}
	if m, ok := plain.(map[string]any); ok {
		req.Args = m
	}
	if gate := b.approvalsFor(info); gate != nil {
		// A call that needs approval goes only once approved (with the
		// approver's arguments), fails when denied, or suspends the run.
		if req.Args, approval, err = gate.check(ctx, info, name, req.Args, plain); err != nil {
			return nil, err
		}
	}
	var ctype string
	if messages.IsJSON(info.ContentType) {
		ctype = messages.ContentTypeJSON
	}
	var data []byte
	if ctype == "" {
		// nats.go copies the request into its connection's buffer at each
		// send, and the call sends it only until it returns: its encoding
		// is made in a pooled buffer, given back then
		buf := getPublishBuffer()
		defer putPublishBuffer(buf)
		err = messages.MarshalTo(buf, &req)
		data = buf.Bytes()
	} else {
		data, err = messages.MarshalAs(ctype, &req)
	}
	if err != nil {
		return nil, &ToolError{Tool: name, Code: messages.ToolErrBadRequest, Message: "arguments: " + err.Error()}
	}
	timeout := b.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	// the request's message, its header and the values the call sets are
	// pooled: nats.go copies the message into its connection's buffer at
	// each send and keeps nothing of it, and the call sends it only until
	// it returns
	cm := getToolCallMsg(info.Subject, data)
	defer cm.release()
	msg := &cm.msg
	for k, v := range b.header {
		msg.Header[k] = v
	}
	if span != nil {
		InjectTrace(ctx, msg.Header)
	}
	hs := headerSetter{h: msg.Header, vals: cm.vals[:0]}
	if b.missionID != "" {
		hs.set(messages.HeaderMissionID, b.missionID)
		key := b.missionID + "/" + strconv.Itoa(turn) + "/" + digest + "/" + strconv.Itoa(occurrence)
		if approval != nil {
			// the same on every run, whatever order concurrent calls take
			key = b.missionID + "/approval/" + approval.Call
		}
		hs.set(messages.HeaderIdempotencyKey, key)
	}
	if b.attempt > 0 {
		hs.set(messages.HeaderAttempt, strconv.Itoa(b.attempt))
	}
	hs.set(messages.HeaderCallID, callID)
	if ctype != "" {
		hs.set(messages.HeaderContentType, ctype)
	}
	hs.set(messages.HeaderTimeout, strconv.FormatInt(timeout.Milliseconds(), 10))
	// A run whose worker lost touch with NATS confirms it still owns the
	// mission before the call leaves.
	if b.owned != nil {
		if err := b.owned(ctx); err != nil {
			return nil, err
		}
	}
	// The request may depend on answers whose journal writes are still in
	// flight: they are acknowledged before it leaves.
	if jerr := b.journal.Flush(ctx); jerr != nil {
		zerolog.Ctx(ctx).Warn().Err(jerr).Str("tool", name).Msg("answers not journaled")
	}
	var resp *nats.Msg
	if info.Heartbeat && b.replies != nil && b.heartbeat > 0 {
		// a live call keeps its own deadline, on the timer it waits with
		resp, err = b.sendLive(ctx, time.Now().Add(timeout), msg, &hs)
	} else {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err = b.send(cctx, msg)
		cancel()
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case errors.Is(err, nats.ErrNoResponders):
			b.reg.expire() // the tool may have moved; rediscover
			return nil, &ToolError{Tool: name, Code: messages.ToolErrUnavailable, Err: err,
				Message: "no tool service is running for it (no responders); try again later or do without it"}
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, errConnLost), errors.Is(err, errSilent):
			return nil, &ToolError{Tool: name, Code: messages.ToolErrTimeout, Err: err,
				Message: fmt.Sprintf("no answer within %s", timeout.Round(time.Millisecond))}
		default:
			return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: err.Error()}
		}
	}
	// A JSON answer is kept (and journaled) as it came: decode tells it
	// from msgpack by its first byte. (A failed call is read from its error
	// headers below.)
	body := resp.Data
	if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
		// The tool ran and failed: that is its answer, journaled like a
		// result. The body carries the same error.
		desc := resp.Header.Get(micro.ErrorHeader)
		if desc == "" {
			desc = "the tool failed"
		}
		body, _ = messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: callID,
			Error: &messages.ToolError{Code: code, Message: desc}})
	}
	if jkey != "" {
		if jerr := b.journal.Record(ctx, jkey, body); jerr != nil {
			zerolog.Ctx(ctx).Warn().Err(jerr).Str("tool", name).Msg("tool result not journaled")
		}
	}
	b.resultBytes.Add(int64(len(body)))
	return decode(ctx, name, body)
}

// discover looks up a tool the registry does not hold. While discovery
// hears no answer from NATS (a node restarting, the connection
// reconnecting, a discovery round lost), it asks again, backing off from
// 25 ms to 500 ms, for up to retryWait and within the call's timeout;
// then a worker's run is ended as a retryable failure
// (toolDiscoveryError), whose mission comes back later and replays to the
// call, and the call returns the run's cause: the program is not told, as
// an error it answers with "try again later" would cost a model turn per
// try. A Toolbox of no worker's run reports the tool unavailable then (ok
// false, err nil), as it does at once when discovery heard that no
// service offers it.
func (b *Toolbox) discover(ctx context.Context, name string) (info ToolInfo, ok bool, err error) {
	lctx, lcancel := context.WithTimeout(ctx, b.timeout)
	defer lcancel()
	start := time.Now()
	pause := 25 * time.Millisecond
	for {
		info, ok, unheard := b.reg.lookupHeard(lctx, name)
		if ctx.Err() != nil {
			return ToolInfo{}, false, context.Cause(ctx)
		}
		if ok || unheard == nil {
			return info, ok, nil
		}
		if lctx.Err() != nil || time.Since(start) >= b.retryWait {
			if b.run == nil {
				return ToolInfo{}, false, nil
			}
			b.run.cancel(&toolDiscoveryError{tool: name, err: unheard})
			return ToolInfo{}, false, context.Cause(ctx)
		}
		select {
		case <-time.After(pause):
		case <-lctx.Done():
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// toolDiscoveryError is the cause of a run ended at a call whose tool
// discovery heard no answer from NATS for the worker's
// ToolUnavailableWait: a retryable failure, whose mission comes back and
// calls again.
type toolDiscoveryError struct {
	tool string
	err  error
}

func (e *toolDiscoveryError) Error() string {
	return "fleet: tool " + e.tool + " could not be discovered: " + e.err.Error()
}
func (e *toolDiscoveryError) Unwrap() []error { return []error{e.err, ErrRetryable} }

// toolCallHeaders is how many headers a tool call sets itself (besides
// the worker's and the trace's).
const toolCallHeaders = 6

// toolCallMsg is a tool call's request message with its header and the
// values of the headers the call sets (headerSetter), pooled
// (toolCallMsgs): the map keeps its table between calls.
type toolCallMsg struct {
	msg nats.Msg
	// room for a live call's heartbeat interval and a resend's count too
	vals [toolCallHeaders + 2]string
}

// toolCallMsgs holds the toolCallMsgs released.
var toolCallMsgs = sync.Pool{New: func() any { return &toolCallMsg{msg: nats.Msg{Header: nats.Header{}}} }}

// getToolCallMsg returns a pooled message of data on subject, its header
// empty.
func getToolCallMsg(subject string, data []byte) *toolCallMsg {
	m := toolCallMsgs.Get().(*toolCallMsg)
	m.msg.Subject, m.msg.Data = subject, data
	return m
}

// release clears m and gives it back to the pool: nothing may hold the
// message, its header or their values any more.
func (m *toolCallMsg) release() {
	h := m.msg.Header
	clear(h)
	m.msg = nats.Msg{Header: h}
	clear(m.vals[:])
	toolCallMsgs.Put(m)
}

// headerSetter sets headers as nats.Header.Set does, their values in one
// array (Set allocates a slice for each). Each value's slice is capped at
// its length, so an Add to one header never writes into the next.
type headerSetter struct {
	h    nats.Header
	vals []string
}

func (s *headerSetter) set(key, value string) {
	s.vals = append(s.vals, value)
	n := len(s.vals)
	s.h[key] = s.vals[n-1 : n : n]
}

// decodePlain turns a tool response body into the call's result as plain
// Go data.
func (b *Toolbox) decodePlain(ctx context.Context, name string, data []byte) (any, error) {
	ctype, raw, ref, err := splitToolResponse(name, data)
	if err != nil || (raw == nil && ref == nil) {
		return nil, err
	}
	if ref != nil {
		b.refs.note(ref)
		b.resultBytes.Add(ref.Size)
		if raw, err = b.readRef(ctx, ref); err != nil {
			var le *DataLimitError
			if errors.As(err, &le) {
				return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: le.Error()}
			}
			return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "unreadable result: " + err.Error()}
		}
		ctype = ref.ContentType
	}
	var out any
	if err := messages.UnmarshalAs(ctype, raw, &out); err != nil {
		return nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "undecodable response"}
	}
	return out, nil
}

// splitToolResponse reads a tool response body, msgpack or JSON (a JSON
// object, told from a msgpack map by its first byte), and returns the
// bytes of its result, undecoded, in their content type: nil when the
// result is null or absent. A failed call's error is returned as a
// *ToolError, and so is a body that is no valid response.
func splitToolResponse(name string, data []byte) (ctype string, result []byte, ref *messages.ObjectRef, err error) {
	var r messages.ToolResponse
	if isJSONBody(data) {
		ctype = messages.ContentTypeJSON
		result, err = splitJSONResponse(data, &r)
	} else if v, _, res, ok := messages.ReadToolResult(data); ok {
		// a tool service's result, read in place: the result's bytes
		// are data's (which no one changes), the call id is not needed
		r.Version, result = v, res
	} else {
		var w struct {
			Version int                 `msgpack:"v"`
			CallID  string              `msgpack:"call_id"`
			Result  msgpack.RawMessage  `msgpack:"result"`
			Ref     *messages.ObjectRef `msgpack:"result_ref,omitempty"`
			Error   *messages.ToolError `msgpack:"error,omitempty"`
		}
		err = messages.Unmarshal(data, &w)
		r = messages.ToolResponse{Version: w.Version, CallID: w.CallID, Error: w.Error, ResultRef: w.Ref}
		result = w.Result
	}
	if err != nil {
		return "", nil, nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "undecodable response"}
	}
	if len(result) == 0 || (ctype == "" && len(result) == 1 && result[0] == msgpcode.Nil) || (ctype != "" && string(result) == "null") {
		result = nil
	} else {
		// for Validate, which asks only whether a result is set together
		// with an error: a marker, not the bytes boxed
		r.Result = true
	}
	if err := r.Validate(); err != nil {
		return "", nil, nil, &ToolError{Tool: name, Code: messages.ToolErrInternal, Err: err, Message: "invalid response"}
	}
	if r.Error != nil {
		msg := r.Error.Message
		if msg == "" {
			msg = "the tool failed"
		}
		return "", nil, nil, &ToolError{Tool: name, Code: r.Error.Code, Message: msg}
	}
	if r.ResultRef != nil {
		return r.ResultRef.ContentType, nil, r.ResultRef, nil
	}
	return ctype, result, nil, nil
}

// isJSONBody reports whether a tool response body is JSON: it starts with
// '{' or JSON whitespace, bytes that never start a msgpack map.
func isJSONBody(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	switch data[0] {
	case '{', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// splitJSONResponse reads a JSON tool response: its result's bytes are
// returned as they are (validated, not decoded), every other member is
// decoded into r by messages.DecodeJSON.
func splitJSONResponse(data []byte, r *messages.ToolResponse) ([]byte, error) {
	if len(data) > messages.MaxJSONBytes {
		return nil, fmt.Errorf("JSON body of %d bytes is larger than %d", len(data), messages.MaxJSONBytes)
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, fmt.Errorf("JSON response is a %v, not an object", tok.Kind())
	}
	rest := []byte{'{'}
	var result []byte
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the next read voids tok
		val, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if name == "result" {
			result = bytes.Clone(val)
			continue
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		rest, _ = jsontext.AppendQuote(rest, name)
		rest = append(append(rest, ':'), val...)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON response")
	}
	return result, messages.DecodeJSON(append(rest, '}'), r)
}

// errConnLost: the connection dropped while a request waited for its
// answer, so the request or its answer may be lost.
var errConnLost = errors.New("connection lost while waiting for the answer")

// send sends a tool request and waits for the answer within ctx. A request
// whose connection drops while it waits (the answer may be lost), or that
// finds no responders (a service restarting or resubscribing after a
// reconnect; until it has had none for retryWait in a row), is sent again with the same headers
// (so the same idempotency key) and a Ptc-Retry count, after a backoff
// from 25ms doubling to 500ms.
func (b *Toolbox) send(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	var noRespSince time.Time // first of the current run of no-responders answers
	backoff := 25 * time.Millisecond
	for retry := 0; ; retry++ {
		if retry > 0 {
			msg.Header.Set(messages.HeaderRetry, strconv.Itoa(retry))
		}
		resp, err := b.request(ctx, msg)
		if err == nil || ctx.Err() != nil {
			return resp, err
		}
		lost := errors.Is(err, errConnLost)
		noResp := errors.Is(err, nats.ErrNoResponders)
		switch {
		case !noResp:
			noRespSince = time.Time{}
		case noRespSince.IsZero():
			noRespSince = time.Now()
		case time.Since(noRespSince) >= b.retryWait:
			noResp = false
		}
		if !lost && !noResp {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// request is one request/reply that gives up with errConnLost as soon as
// the connection drops.
func (b *Toolbox) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	// a drop heard through the worker's one listener, or (a Toolbox of
	// no worker) through one of the request's own
	var dropped <-chan struct{}
	var ch chan nats.Status
	if b.drops != nil {
		dropped = b.drops.since()
	} else {
		ch = b.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING)
		defer b.nc.RemoveStatusListener(ch)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case _, ok := <-ch:
			if ok {
				cancel(errConnLost)
			}
		case <-dropped:
			cancel(errConnLost)
		case <-rctx.Done():
		}
	}()
	resp, err := b.nc.RequestMsgWithContext(rctx, msg)
	if err != nil && errors.Is(context.Cause(rctx), errConnLost) {
		return nil, errConnLost
	}
	return resp, err
}

type remoteTool struct {
	box  *Toolbox
	name string
	info ToolInfo
}

func (t *remoteTool) Name() string { return t.name }
func (t *remoteTool) Signature() string {
	if t.info.Invalid != "" {
		return ""
	}
	return t.info.Signature
}
func (t *remoteTool) Description() string { return t.info.Description }
func (t *remoteTool) Call(ctx context.Context, args map[string]any) (any, error) {
	return t.box.call(ctx, t.name, args, t.box.decodePlain)
}

// String describes the tool for logs.
func (t *remoteTool) String() string {
	return "remote tool " + t.name + " (" + strings.TrimSpace(t.info.Subject) + ")"
}

// reportDiscovery logs the conflicts and rejected endpoints of a discovery:
// an operator resolves a conflict with WorkerConfig.ToolPins and a rejected
// endpoint by fixing (or removing) the service that advertises it.
func (w *Worker) reportDiscovery(d *Discovery) {
	for _, c := range d.Conflicts {
		w.log.Warn().Str("tool", c.Tool).Strs("services", c.Services).
			Msg("tool offered by several services and not pinned; refused")
	}
	for _, r := range d.Rejected {
		w.log.Warn().Str("service", r.Service).Str("endpoint", r.Endpoint).Str("tool", r.Tool).
			Str("subject", r.Subject).Str("reason", r.Reason).Msg("tool endpoint refused")
	}
}
