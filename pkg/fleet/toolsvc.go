package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// ToolFunc is a map-based tool: it receives the call's arguments as plain Go
// data and returns plain Go data (or anything messages.Normalize accepts).
// Return a *messages.ToolError to choose the error code the caller sees.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// CallInfo describes the tool call being served; tool funcs read it with
// CallInfoFrom(ctx), e.g. to log the mission id or continue a trace.
type CallInfo struct {
	Tool      string
	CallID    string
	MissionID string
	// Header holds the request's headers (traceparent, tracestate, ...).
	Header nats.Header
	// IdempotencyKey is the call's Idempotency-Key header, "<mission
	// id>/<turn>/<digest>/<occurrence>": the same on every attempt and every
	// worker that makes this call; empty for calls made outside a mission.
	IdempotencyKey string
	// Attempt is the delivery attempt of the mission making the call (1 on
	// the first worker; 0 when unknown).
	Attempt int
	// Retry counts how many times the calling worker resent this request
	// after a lost connection or no responders (0 on the first send).
	Retry int
	// span is the server span of the call (nil when tracing is off).
	span trace.Span
}

type callInfoKey struct{}

// callContext is the context a tool func runs under: its parent (the
// service's context) with the call's deadline, and the call's CallInfo
// (its Value for callInfoKey). It is one allocation, where
// context.WithTimeout and context.WithValue made a timer, a context with
// its cancellation and a CallInfo boxed: the deadline is compared with
// the clock until someone asks for Done, which is when a context with the
// deadline, and its timer, are made (most tool funcs never wait on their
// context). Err, Done and Cause say what that context would say: the
// parent's error, context.DeadlineExceeded once the deadline passed, and
// context.Canceled once the call ended (end).
type callContext struct {
	parent   context.Context
	deadline time.Time
	ci       CallInfo

	mu     sync.Mutex
	timed  context.Context    // made by Done
	cancel context.CancelFunc // timed's
	ended  bool
	endErr error // Err once ended with no timed
}

// newCallContext returns the context of a call under parent that ends at
// deadline, or at parent's deadline when that comes first.
func newCallContext(parent context.Context, deadline time.Time, ci CallInfo) *callContext {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &callContext{parent: parent, deadline: deadline, ci: ci}
}

// closedDone is the Done of a call that ended before anyone asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *callContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *callContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		if c.ended {
			return closedDone
		}
		c.timed, c.cancel = context.WithDeadline(c.parent, c.deadline)
	}
	return c.timed.Done()
}

func (c *callContext) Err() error {
	c.mu.Lock()
	timed, ended, endErr := c.timed, c.ended, c.endErr
	c.mu.Unlock()
	switch {
	case timed != nil:
		return timed.Err()
	case ended:
		return endErr
	}
	return c.errNow()
}

// errNow is Err while no timed context was made and the call runs.
func (c *callContext) errNow() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *callContext) Value(key any) any {
	if _, ok := key.(callInfoKey); ok {
		return &c.ci
	}
	c.mu.Lock()
	timed := c.timed
	c.mu.Unlock()
	if timed != nil {
		// what context.Cause and context.WithCancel look up: the
		// cancellation of timed, whose Done this context's is
		return timed.Value(key)
	}
	return c.parent.Value(key)
}

// end ends the call: its context is canceled, as context.WithTimeout's
// cancel does, and the timer Done made, if any, is stopped.
func (c *callContext) end() {
	err := c.errNow() // what ended it first, as a cancel finds it
	if err == nil {
		err = context.Canceled
	}
	c.mu.Lock()
	c.ended, c.endErr = true, err
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// CallInfoFrom returns the CallInfo of a tool func's ctx.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	ci, ok := ctx.Value(callInfoKey{}).(*CallInfo)
	if !ok {
		return CallInfo{}, false
	}
	return *ci, true
}

// ToolSpec describes a tool for discovery.
type ToolSpec struct {
	// Signature in signature syntax, e.g. "(query :string) -> [{id :int}]".
	// RegisterTyped derives it from the Go types when empty.
	Signature string
	// Description tells the model what the tool does.
	Description string
	// Approval, when set, makes calls of the tool wait for a person's
	// approval before any worker sends them (MetaApproval;
	// docs/approvals.md): the owner of a tool that acts decides.
	Approval *ToolApproval
}

// ToolServiceConfig configures a ToolService.
type ToolServiceConfig struct {
	// Name of the micro service; also the <service> subject token. Required.
	Name string
	// Version is a semantic version; default "0.1.0".
	Version string
	// Description of the service.
	Description string
	// MaxConcurrent bounds the tool calls handled at once by this service
	// instance; further requests wait in the subscription (back-pressure).
	// Default 64.
	MaxConcurrent int
	// DefaultTimeout bounds a call when the request carries no timeout.
	// Default 30s.
	DefaultTimeout time.Duration
	// Logger receives handler errors and panics; default zerolog.Nop().
	Logger *zerolog.Logger
	// Dedup, when set, makes the service run each call at most once per
	// idempotency key (see DedupConfig); nil runs every request.
	Dedup *DedupConfig
	// Metrics records the requests served (ptc_tool_requests_total,
	// ptc_tool_request_duration_seconds); nil: none. Serve the registry
	// it was created with on /metrics.
	Metrics *Metrics
	// TracerProvider records a server span per request, a child of the
	// caller's span found in the request's traceparent header; the tool
	// func's ctx carries it. Nil: no spans.
	TracerProvider trace.TracerProvider
	// LargeResultBytes is the encoded size above which a result travels
	// out of band: it is put in the service's results bucket
	// (messages.ToolResultBucket, a JetStream object store created on
	// first use) and the reply carries its reference. Default
	// messages.LargeResultBytes; negative: every result travels inline
	// and one over the connection's payload limit fails.
	LargeResultBytes int
	// ResultTTL is how long the results bucket keeps a result. Default
	// DefaultToolResultTTL.
	ResultTTL time.Duration
}

// ToolService serves Go funcs as tools over NATS: one micro endpoint per
// tool on tool.<service>.<tool>, with the schema in endpoint metadata. Calls
// run concurrently (micro calls an endpoint's handler one request at a time;
// the service hands each request to a goroutine behind a semaphore). Errors
// travel as Nats-Service-Error / -Code headers; panics are recovered into
// errors with code messages.ToolErrPanic. Start more instances of a service
// to scale: they share a queue group. It is safe for concurrent use.
type ToolService struct {
	nc      *nats.Conn
	svc     micro.Service
	cfg     ToolServiceConfig
	log     zerolog.Logger
	sem     chan struct{}
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	// calls hands a call to a caller goroutine waiting for one (handle);
	// idleCallers counts those waiting, which stopping (closed by Stop)
	// ends
	calls       chan toolCall
	idleCallers atomic.Int32
	stopping    chan struct{}
	callerGrace time.Duration // callerGrace; tests pin it
	ctx         context.Context
	cancel      context.CancelFunc
	dedup       *dedupStore
	tracer      trace.Tracer // nil when tracing is off
	results     *resultStore
	beats       sync.Pool // *toolBeat whose timer is stopped (heartbeat)
}

// NewToolService starts a micro service with no tools on nc.
func NewToolService(nc *nats.Conn, cfg ToolServiceConfig) (*ToolService, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidConfig)
	}
	if !messages.ValidName(cfg.Name) {
		return nil, fmt.Errorf("%w: tool service name %q (want letters, digits, '-', '_')", ErrInvalidConfig, cfg.Name)
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 64
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.LargeResultBytes == 0 {
		cfg.LargeResultBytes = messages.LargeResultBytes
	}
	if cfg.ResultTTL <= 0 {
		cfg.ResultTTL = DefaultToolResultTTL
	}
	s := &ToolService{nc: nc, cfg: cfg, sem: make(chan struct{}, cfg.MaxConcurrent), log: zerolog.Nop(),
		calls: make(chan toolCall), stopping: make(chan struct{}), callerGrace: callerGrace,
		results: &resultStore{nc: nc, service: cfg.Name, ttl: cfg.ResultTTL}}
	if cfg.Logger != nil {
		s.log = cfg.Logger.With().Str("tool_service", cfg.Name).Logger()
	}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Dedup != nil {
		d, err := openDedup(nc, cfg.Name, *cfg.Dedup)
		if err != nil {
			return nil, err
		}
		s.dedup = d
	}
	svc, err := micro.AddService(nc, micro.Config{Name: cfg.Name, Version: cfg.Version, Description: cfg.Description})
	if err != nil {
		return nil, fmt.Errorf("fleet: tool service %s: %w", cfg.Name, err)
	}
	s.svc = svc
	return s, nil
}

// Register serves fn as the tool name. The signature, when given, must
// parse. While the connection is up, Register returns once the server
// holds the tool's endpoint, so a call from any connection made after it
// returns reaches the tool.
func (s *ToolService) Register(name string, spec ToolSpec, fn ToolFunc) error {
	if fn == nil {
		return fmt.Errorf("%w: tool %s: nil func", ErrInvalidConfig, name)
	}
	if !messages.ValidName(name) || name == "return" || name == "fail" {
		return fmt.Errorf("%w: tool name %q (want letters, digits, '-', '_'; not return or fail)", ErrInvalidConfig, name)
	}
	if spec.Signature != "" {
		if _, err := signature.Parse(spec.Signature); err != nil {
			return fmt.Errorf("%w: tool %s: signature: %w", ErrInvalidConfig, name, err)
		}
	}
	md := map[string]string{MetaTool: name, MetaSignature: spec.Signature, MetaDescription: spec.Description, MetaHeartbeat: "1"}
	if spec.Approval != nil {
		v, err := spec.Approval.metadata()
		if err != nil {
			return fmt.Errorf("%w: tool %s: %w", ErrInvalidConfig, name, err)
		}
		md[MetaApproval] = v
	}
	err := s.svc.AddEndpoint(name, micro.HandlerFunc(func(r micro.Request) { s.handle(name, fn, r) }),
		micro.WithEndpointSubject(messages.ToolSubject(s.cfg.Name, name)),
		micro.WithEndpointMetadata(md))
	if err != nil {
		return fmt.Errorf("fleet: tool %s: %w", name, err)
	}
	// The tool is reachable once Register returns: a caller told so (a
	// process that reports ready, a test that calls at once) may call it
	// from another connection, and the server would answer that call with
	// no responders while the endpoint's subscription still sat in this
	// connection's buffer. The flush's round trip makes the server hold
	// it. A connection that is down sends it when it reconnects, so its
	// flush failing leaves nothing undone.
	if s.nc.IsConnected() {
		_ = s.nc.FlushTimeout(registerFlushWait)
	}
	return nil
}

// registerFlushWait bounds Register's wait for the server to hold a new
// endpoint's subscription.
const registerFlushWait = 5 * time.Second

// RegisterTyped serves a typed func as the tool name. Arguments are decoded
// into In and the result encoded from Out through encoding/json, so json
// tags name the fields. An empty spec.Signature is derived from In and Out
// (signature.ForFunc).
func RegisterTyped[In, Out any](s *ToolService, name string, spec ToolSpec, fn func(context.Context, In) (Out, error)) error {
	if fn == nil {
		return fmt.Errorf("%w: tool %s: nil func", ErrInvalidConfig, name)
	}
	if spec.Signature == "" {
		sig, err := signature.ForFunc[In, Out]()
		if err != nil {
			return fmt.Errorf("%w: tool %s: derive signature: %w", ErrInvalidConfig, name, err)
		}
		spec.Signature = sig.String()
	}
	return s.Register(name, spec, typedFunc(fn))
}

// typedFunc is fn as a ToolFunc: its arguments decoded into In through
// JSON (typedArgs), its result read into plain data as messages.FromJSON
// reads it; when Out has a plan (newPlainPlan), the result is kept typed
// for the service to encode by the plan (planResult).
func typedFunc[In, Out any](fn func(context.Context, In) (Out, error)) ToolFunc {
	plan := newPlainPlan(reflect.TypeFor[Out]()) // nil: through JSON
	return func(ctx context.Context, args map[string]any) (any, error) {
		in, err := typedArgs[In](args)
		if err != nil {
			return nil, &messages.ToolError{Code: messages.ToolErrBadRequest, Message: "arguments: " + err.Error()}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		if plan != nil {
			// written to msgpack by the plan when the service encodes it
			// (planResult), with no plain data made between
			return &planResult[Out]{plan: plan, out: out}, nil
		}
		return messages.FromJSON(out)
	}
}

// resultEncoder is a tool's result that writes its own msgpack encoding:
// a typed tool's result that has a plan (planResult).
type resultEncoder interface {
	// encodeResult appends to buf what messages.MarshalTo appends for
	// the result's plain data, and reports whether it did; buf is as it
	// was when it did not.
	encodeResult(buf *bytes.Buffer) (bool, error)
	// plainResult returns the result's plain data.
	plainResult() (any, error)
}

// planResult is a typed tool's result whose type has a plan: the service
// encodes it field by field (ToolService.execute), as messages.MarshalTo
// encodes the plain data the plan reads (plainPlan.plain).
type planResult[Out any] struct {
	plan *plainPlan
	out  Out
}

func (r *planResult[Out]) encodeResult(buf *bytes.Buffer) (bool, error) {
	return r.plan.encode(buf, reflect.ValueOf(&r.out).Elem())
}

func (r *planResult[Out]) plainResult() (any, error) {
	if v, ok := r.plan.plain(reflect.ValueOf(&r.out).Elem()); ok {
		return v, nil
	}
	return messages.FromJSON(r.out)
}

// typedArgs decodes a typed tool's arguments into an In through their
// JSON encoding: an argument In has no field for is refused, not
// dropped, as a misspelled one would silently change the answer.
func typedArgs[In any](args map[string]any) (In, error) {
	var in In
	bp := argsBuffers.Get().(*[]byte)
	raw, ok := appendArgsJSON((*bp)[:0], args)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			argsBuffers.Put(bp)
			return in, err
		}
	}
	err := messages.DecodeJSONValue(raw, &in, messages.JSONDisallowUnknownFields)
	if ok && cap(raw) <= maxPooledArgs {
		*bp = raw
	}
	argsBuffers.Put(bp)
	return in, err
}

// handle runs in micro's subscription goroutine: it copies what it needs
// and hands the call to a goroutine once a slot is free. The response is
// published directly on the reply subject (micro's Request is not safe to
// use after Handle returns).
func (s *ToolService) handle(name string, fn ToolFunc, r micro.Request) {
	reply := r.Reply()
	data := r.Data()
	hdr := r.Headers()
	// Progress messages from now on, also while the call waits for a slot.
	beat := s.heartbeat(reply, hdr)
	s.sem <- struct{}{}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		<-s.sem
		beat.stop()
		s.respondError(reply, replyType(hdr), "", messages.ToolErrUnavailable, "tool service is stopping")
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	c := toolCall{name: name, fn: fn, reply: reply, data: data, hdr: hdr, beat: beat}
	select {
	case s.calls <- c:
	default:
		go s.caller(c)
	}
}

// toolCall is one request handle hands to a caller goroutine.
type toolCall struct {
	name  string
	fn    ToolFunc
	reply string
	data  []byte
	hdr   micro.Headers
	beat  *toolBeat
}

// A call runs on a goroutine that ran an earlier one when one waits
// (handle), as a worker's missions do (Worker.start): a new goroutine's
// stack starts small and is copied to a larger one as the call's decode,
// function and encode outgrow it. Up to MaxConcurrent goroutines (as many
// as run calls at once) wait callerGrace for the next call, about what
// the next call of a busy service takes to come, and none once the
// service stops: a busy service runs its calls on goroutines that ran
// calls, and an idle one keeps none.
const callerGrace = 5 * time.Millisecond

// caller runs c, then the calls handle hands it, until none comes for
// callerGrace, the service stops, or MaxConcurrent others wait.
func (s *ToolService) caller(c toolCall) {
	var idle *time.Timer
	for {
		s.call(c)
		c = toolCall{} // holds no request while it waits
		if s.idleCallers.Add(1) > int32(cap(s.sem)) {
			s.idleCallers.Add(-1)
			return
		}
		if idle == nil {
			// pooled: a caller of a service whose calls come one by one
			// ends after each, and would make a timer for each
			idle = getTimer()
			defer putTimer(idle)
		}
		idle.Reset(s.callerGrace)
		select {
		case c = <-s.calls:
			s.idleCallers.Add(-1)
		case <-idle.C:
			s.idleCallers.Add(-1)
			return
		case <-s.stopping:
			s.idleCallers.Add(-1)
			return
		}
	}
}

// call serves c and releases its slot.
func (s *ToolService) call(c toolCall) {
	defer s.wg.Done()
	defer func() { <-s.sem }()
	defer c.beat.stop()
	start := time.Now()
	var span trace.Span
	if s.tracer != nil {
		_, span = s.tracer.Start(ExtractTrace(context.Background(), nats.Header(c.hdr)), "tool "+c.name,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(AttrTool.String(c.name), attribute.String("ptc.tool.service", s.cfg.Name)))
	}
	code := s.serve(span, c.name, c.fn, c.reply, c.data, c.hdr)
	s.cfg.Metrics.toolServed(s.cfg.Name, c.name, code, time.Since(start))
	if span != nil {
		if code != "ok" {
			span.SetAttributes(AttrToolCode.String(code))
			span.SetStatus(codes.Error, code)
		}
		span.End()
	}
}

// serve answers one request and returns its outcome: "ok" or the error
// code sent.
func (s *ToolService) serve(span trace.Span, name string, fn ToolFunc, reply string, data []byte, hdr micro.Headers) string {
	if reply == "" {
		return "no_reply" // nobody waits for an answer
	}
	ctype := replyType(hdr)
	var req messages.ToolRequest
	if err := messages.UnmarshalAs(hdr.Get(messages.HeaderContentType), data, &req); err != nil {
		s.respondError(reply, ctype, "", messages.ToolErrBadRequest, "undecodable request: "+err.Error())
		return messages.ToolErrBadRequest
	}
	if err := req.Validate(); err != nil {
		s.respondError(reply, ctype, req.CallID, messages.ToolErrBadRequest, err.Error())
		return messages.ToolErrBadRequest
	}
	if span != nil {
		span.SetAttributes(AttrMissionID.String(req.MissionID), AttrCallID.String(req.CallID))
	}
	timeout := s.cfg.DefaultTimeout
	if ms, err := strconv.ParseInt(hdr.Get(messages.HeaderTimeout), 10, 64); err == nil && ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	ci := CallInfo{Tool: name, CallID: req.CallID, MissionID: req.MissionID, Header: nats.Header(hdr),
		IdempotencyKey: hdr.Get(messages.HeaderIdempotencyKey)}
	ci.Attempt, _ = strconv.Atoi(hdr.Get(messages.HeaderAttempt))
	ci.Retry, _ = strconv.Atoi(hdr.Get(messages.HeaderRetry))
	ci.span = span
	log := logWith(s.log, func(c zerolog.Context) zerolog.Context {
		return c.Str("tool", name).Str("mission_id", req.MissionID).Str("call_id", req.CallID)
	})
	var out toolOutcome
	if s.dedup != nil && validDedupKey(ci.IdempotencyKey) {
		out = s.once(name, fn, &req, ci, timeout, &log)
	} else {
		out = s.execute(name, fn, &req, ci, timeout, &log)
	}
	s.send(reply, ctype, out, &log)
	if out.Code != "" {
		return out.Code
	}
	return "ok"
}

// toolOutcome is the answer to one call: a response body, and an error
// code and description when the call failed (sent in the micro error
// headers too).
type toolOutcome struct {
	Body []byte `msgpack:"body"`
	Code string `msgpack:"code,omitempty"`
	Desc string `msgpack:"desc,omitempty"`
}

func errorOutcome(callID, code, msg string) toolOutcome {
	body, _ := messages.Marshal(&messages.ToolResponse{Version: messages.ToolCallVersion, CallID: callID,
		Error: &messages.ToolError{Code: code, Message: msg}})
	return toolOutcome{Body: body, Code: code, Desc: msg}
}

// execute runs the tool func for one call and encodes its outcome.
func (s *ToolService) execute(name string, fn ToolFunc, req *messages.ToolRequest, ci CallInfo, timeout time.Duration, log *zerolog.Logger) toolOutcome {
	base := s.ctx
	if ci.span != nil {
		base = trace.ContextWithSpan(base, ci.span)
	}
	cc := newCallContext(base, time.Now().Add(timeout), ci)
	defer cc.end()
	ctx := context.Context(cc)
	result, err := s.invoke(ctx, fn, req.Args, log)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The caller stops waiting now too; say so in its words.
		err = &messages.ToolError{Code: messages.ToolErrTimeout, Message: fmt.Sprintf("no answer within %s", timeout.Round(time.Millisecond))}
	}
	// the result's encoding lives until the response's is made, in a
	// pooled buffer: the response's encoding copies it
	encBuf := getPublishBuffer()
	defer putPublishBuffer(encBuf)
	encoded := false
	if re, ok := result.(resultEncoder); ok && err == nil {
		// a typed result writes itself, or gives its plain data when it
		// cannot (a string encoding/json would change)
		if encoded, err = re.encodeResult(encBuf); err == nil && !encoded {
			result, err = re.plainResult()
		}
		if err != nil {
			err = &messages.ToolError{Code: messages.ToolErrFailed, Message: "result: " + err.Error()}
		}
	}
	if err == nil && !encoded {
		result, err = messages.Normalize(result)
		if err != nil {
			err = &messages.ToolError{Code: messages.ToolErrFailed, Message: "result: " + err.Error()}
		}
	}
	if err != nil {
		var te *messages.ToolError
		if !errors.As(err, &te) {
			te = &messages.ToolError{Code: messages.ToolErrFailed, Message: err.Error()}
		}
		if te.Message == "" {
			te.Message = te.Code
		}
		return errorOutcome(req.CallID, te.Code, te.Message)
	}
	if !encoded {
		if err := messages.MarshalTo(encBuf, result); err != nil {
			return errorOutcome(req.CallID, messages.ToolErrFailed, "result: "+err.Error())
		}
	}
	enc := encBuf.Bytes()
	resp := messages.ToolResponse{Version: messages.ToolCallVersion, CallID: req.CallID, Result: msgpack.RawMessage(enc)}
	if s.cfg.LargeResultBytes > 0 && len(enc) > s.cfg.LargeResultBytes {
		// Out of band: the reply names the object.
		ref, err := s.results.put(ctx, ci, enc)
		switch {
		case err == nil:
			resp.Result, resp.ResultRef = nil, ref
		case s.fitsOneMessage(len(enc)):
			// The bucket cannot be used (e.g. this service's NATS user
			// has no rights on it): a result one message can carry goes
			// inline, as it would with out-of-band results turned off.
			log.Warn().Err(err).Int("bytes", len(enc)).Msg("large result sent inline: its results bucket cannot be used")
		default:
			log.Error().Err(err).Int("bytes", len(enc)).Msg("large result not stored")
			return errorOutcome(req.CallID, messages.ToolErrFailed, fmt.Sprintf("the result (%d bytes) could not be stored: %v", len(enc), err))
		}
	}
	body, err := messages.Marshal(&resp)
	if err != nil {
		return errorOutcome(req.CallID, messages.ToolErrFailed, "result: "+err.Error())
	}
	if limit := s.nc.MaxPayload(); limit > 0 && int64(len(body)) > limit-1024 {
		// Publishing would fail and the caller would only see a timeout.
		return errorOutcome(req.CallID, messages.ToolErrFailed, fmt.Sprintf(
			"the result is %d bytes encoded, more than the %d a tool response may carry; ask for less (filter, page or limit the call)",
			len(body), limit-1024))
	}
	return toolOutcome{Body: body}
}

// fitsOneMessage reports whether a result of n encoded bytes fits in one
// tool response on this connection.
func (s *ToolService) fitsOneMessage(n int) bool {
	limit := s.nc.MaxPayload()
	return limit <= 0 || int64(n) <= limit-1024-256 // the response's own fields
}

// send publishes an outcome on the reply subject, in JSON when ctype says
// so (outcomes are kept as msgpack, the form the dedup cache stores).
func (s *ToolService) send(reply, ctype string, out toolOutcome, log *zerolog.Logger) {
	m := &nats.Msg{Subject: reply, Data: out.Body, Header: nats.Header{}}
	if ctype != "" {
		var r messages.ToolResponse
		js, err := []byte(nil), messages.Unmarshal(out.Body, &r)
		if err == nil {
			js, err = messages.EncodeJSON(&r)
		}
		if err != nil {
			log.Warn().Err(err).Msg("tool response not sent")
			return
		}
		m.Data = js
		m.Header.Set(messages.HeaderContentType, ctype)
	}
	if out.Code != "" {
		m.Header.Set(micro.ErrorHeader, out.Desc)
		m.Header.Set(micro.ErrorCodeHeader, out.Code)
	}
	if err := s.nc.PublishMsg(m); err != nil {
		log.Warn().Err(err).Msg("tool response not sent")
	}
}

func (s *ToolService) invoke(ctx context.Context, fn ToolFunc, args map[string]any, log *zerolog.Logger) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("tool panicked")
			res, err = nil, &messages.ToolError{Code: messages.ToolErrPanic, Message: fmt.Sprintf("the tool crashed: %v", p)}
		}
	}()
	if args == nil {
		args = map[string]any{}
	}
	return fn(ctx, args)
}

// replyType is the content type of the answer to a request: JSON when the
// request was JSON, else msgpack ("").
func replyType(hdr micro.Headers) string {
	if messages.IsJSON(hdr.Get(messages.HeaderContentType)) {
		return messages.ContentTypeJSON
	}
	return ""
}

func (s *ToolService) respondError(reply, ctype, callID, code, msg string) {
	if reply == "" {
		return
	}
	body, _ := messages.MarshalAs(ctype, &messages.ToolResponse{Version: messages.ToolCallVersion, CallID: callID,
		Error: &messages.ToolError{Code: code, Message: msg}})
	m := &nats.Msg{Subject: reply, Data: body, Header: nats.Header{}}
	if ctype != "" {
		m.Header.Set(messages.HeaderContentType, ctype)
	}
	m.Header.Set(micro.ErrorHeader, msg)
	m.Header.Set(micro.ErrorCodeHeader, code)
	if err := s.nc.PublishMsg(m); err != nil {
		s.log.Warn().Err(err).Msg("tool error response not sent")
	}
}

// Stop stops serving: the endpoints are drained, calls in progress finish
// (their contexts are cancelled once ctx ends), then Stop returns. It is
// idempotent.
func (s *ToolService) Stop(ctx context.Context) error {
	s.mu.Lock()
	already := s.stopped
	s.stopped = true
	s.mu.Unlock()
	var err error
	if !already {
		close(s.stopping)
		err = s.svc.Stop()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
	return err
}

// Info returns the micro service info (what discovery sees).
func (s *ToolService) Info() micro.Info { return s.svc.Info() }
