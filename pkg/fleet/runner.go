package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Runner executes one mission. pkg/agent provides the real one; tests use
// fakes. Run returns the mission's Step (a failed Step is a normal outcome,
// with or without an error). It returns (nil, err) only when no Step could
// be produced; wrap ErrRetryable in err to have the mission handed back and
// retried after WorkerConfig.NakDelay instead of failed. Run must return
// soon after ctx is done; context.Cause(ctx) says why (ErrCancelled,
// ErrWorkerShutdown, ErrFenced, or a deadline). A successful Step is kept
// even when ctx ended meanwhile (except ErrFenced: another worker owns the
// mission); otherwise ErrCancelled turns the outcome into a "cancelled"
// Step and ErrWorkerShutdown hands the mission back. Run may be called
// concurrently for different missions.
type Runner interface {
	Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)
}

// AsyncRunner is a Runner that need not hold the worker's goroutine while
// its mission waits (on a model): the worker runs its missions with Start
// instead of Run. Start runs m as Run does and calls done exactly once
// with what Run would return, on the goroutine that called Start or on
// another, before or after Start returns; ctx, its cause and the results
// mean what they mean for Run. The worker settles the mission, frees its
// slot and counts it finished (WorkerConfig.DrainGrace, Stop) only once
// done is called. A panic in Start before done is called fails the
// mission as a panic in Run does; a panic on another goroutine is the
// runner's to recover (pkg/fleet/agentrun's Runner recovers its agents').
type AsyncRunner interface {
	Runner
	Start(ctx context.Context, m *messages.Mission, env RunEnv, done func(*messages.Step, error))
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
	return f(ctx, m, env)
}

// RunEnv is what a worker gives a Runner for one mission.
type RunEnv struct {
	// Tools are the remote tools the mission names (Mission.Tools); every
	// other name is refused before any request. Tool calls made through it
	// emit tool_call and tool_result events.
	Tools *Toolbox
	// Journal is the mission's turn journal (nil when the worker runs with
	// NoJournal). Tools already journal their results through it; a
	// runner journals its model replies (pkg/fleet/agentrun does): Replay
	// before asking the model, Record the reply as it comes, and Flush
	// before any other request leaves the runner (the Toolbox flushes
	// before each tool request, the worker before the result).
	Journal *Journal
	// Events publishes progress events of this mission (turns, programs,
	// LLM requests). The emitter fills MissionID, Time, Worker and Attempt
	// and masks firewalled values. Never nil.
	Events Emitter
	// Logger is the worker's logger with mission_id and attempt fields; it
	// is also attached to the run's ctx (zerolog.Ctx).
	Logger zerolog.Logger
	// Attempt counts deliveries of the mission, from 1.
	Attempt int
	// WorkerID names the worker.
	WorkerID string
	// Header holds the mission message's headers (trace context); read
	// only.
	Header nats.Header
	// Metrics records model calls and program runs; nil when the worker
	// has no metrics (its methods then do nothing).
	Metrics *Metrics
	// Tracer starts the run's spans (turns, model calls, programs) under
	// the attempt span the run's ctx carries; nil when tracing is off.
	Tracer trace.Tracer
	// Memory is what the mission may hold from its tools (decoded
	// results, the record of every call), reserved for it in the worker's
	// memory budget (WorkerConfig.MemoryBudget): a runner charges what its
	// programs hold against it (pkg/fleet/agentrun hands its programs a
	// lisp.Meter of this limit). 0: no limit.
	Memory int64
	// MemoryRaise tells the reader of a memory_limit error how to allow
	// more (the end of the error's message).
	MemoryRaise string
	// Budget charges the mission's model calls to the fleet-wide budgets
	// of its account and submitter (docs/fleet.md, "Budgets"): a runner
	// reserves before each call that reaches a model (not one a journal
	// replays) and settles after (pkg/fleet/agentrun does). Nil: no
	// budgets, nothing recorded.
	Budget *MissionBudget
	// owned is Owned's check (nil: none)
	owned func(context.Context) error
}

// Owned returns nil when the run may send a request that costs or acts:
// a model call (pkg/fleet/agentrun asks before each one that reaches a
// model) or a tool call (the Toolbox asks). It costs nothing while the
// worker's heartbeats confirm the mission is this run's; once they have
// not for a while (NATS unreachable), it confirms it first, waiting while
// the status cannot be read, and returns ErrFenced when another worker has
// taken the mission (the run is then cancelled) or ctx's cause when ctx
// ends. Outside a worker it returns nil.
func (e RunEnv) Owned(ctx context.Context) error {
	if e.owned == nil {
		return nil
	}
	return e.owned(ctx)
}

// OwnedFunc returns Owned as a function a runner may keep for the whole
// run: it holds only the worker's check, where the method value e.Owned
// holds a copy of the whole RunEnv.
func (e *RunEnv) OwnedFunc() func(context.Context) error {
	if e.owned == nil {
		return ownedOutsideWorker
	}
	return e.owned
}

// ownedOutsideWorker is Owned outside a worker: every request may go.
func ownedOutsideWorker(context.Context) error { return nil }

// Emitter publishes progress events; Emit does not block on the network,
// is safe for concurrent use and keeps no reference to ev after it returns
// (what ev's fields refer to it may keep): a caller may reuse the Event.
type Emitter interface {
	Emit(ev *messages.Event)
}

// emitter publishes a mission's events on core NATS, numbered from the
// last one stored (every attempt's events are one sequence); the EVENTS
// stream stores them. With a delay, an event waits up to that long for
// the events after it, and those waiting go out as one message
// (messages.EventBatchSubject); the final event publishes at once.
type emitter struct {
	nc        *nats.Conn
	sub       string
	missionID string
	worker    string
	attempt   int
	// delay is how long an event may wait for later ones; 0: none
	delay time.Duration
	// mu orders numbering and publishing: events reach the stream in
	// number order (one connection keeps its publishes' order), so a
	// reader finding a number missing below the last stored one knows it
	// was lost, not late.
	mu sync.Mutex
	n  uint64 // the number of the last event published or waiting
	// buf holds the events not published yet, numbered n-count+1 to n,
	// each encoded once, one after another, after room for a batch's
	// header (messages.MaxEventBatchHeader bytes): a batch is published
	// from buf as it is. kind is the last one's kind; timer publishes them.
	// buf is nil while no event waits.
	buf   *bytes.Buffer
	count int
	kind  string
	timer *flushTimer
}

// maskedEvents holds the Events Emit masks an event into: each is
// encoded, then cleared and put back.
var maskedEvents = sync.Pool{New: func() any { return new(messages.Event) }}

// eventBuffers holds the buffers emitters encode waiting events into.
var eventBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEventBuffer bounds the buffers kept for reuse: a full batch
// and the event that did not fit in it.
const maxPooledEventBuffer = messages.MaxEventBatchHeader + MaxEventBatchBytes + MaxEventBytes

// newEventBuffer returns an empty event buffer with room for a batch's
// header.
func newEventBuffer() *bytes.Buffer {
	b := eventBuffers.Get().(*bytes.Buffer)
	b.Reset()
	var room [messages.MaxEventBatchHeader]byte
	b.Write(room[:])
	return b
}

// MaxEventBatchBytes bounds one message on EVENTS carrying several events:
// an event that would take the waiting ones past it publishes them first.
const MaxEventBatchBytes = 64 << 10

// DefaultEventDelay is WorkerConfig.EventDelay's default: shorter than a
// person notices, longer than a mission that needs no model takes.
const DefaultEventDelay = 100 * time.Millisecond

// newEmitter returns the emitter of mission k's events, numbered after the
// last one stored. known says the caller knows that number, last, and
// none is read: 0 when it has just written the mission's first status
// (whatever publishes a mission's events writes its status first), or
// the number a decision's wake gives (wokenEventNumber).
func (w *Worker) newEmitter(ctx context.Context, k missionKey, attempt int, last uint64, known bool) *emitter {
	em := &emitter{nc: w.nc, sub: k.sub, missionID: k.id, worker: w.cfg.ID, attempt: attempt, delay: max(w.cfg.EventDelay, 0), n: last}
	if !known && w.st != nil && w.st.Events != nil {
		if n, err := lastEventNumber(ctx, w.st.nc, w.st.Events, k); err == nil {
			em.n = n
		} else {
			w.log.Warn().Err(err).Str("mission_id", k.id).Msg("last event not read; numbering this attempt's events from 1")
		}
	}
	return em
}

func (e *emitter) Emit(ev *messages.Event) { e.emit(ev) }

// wokenEventNumber returns the number of the last event of a mission
// taken from awaiting_approval, on its first delivery, at suspension
// suspension (its status's Suspensions), when the message is a decision's
// wake that gives it (messages.HeaderWokenEvent): no run took the mission
// since it parked, and the decision that woke it was the suspension's
// last, so no event came after its own.
func wokenEventNumber(hdr nats.Header, suspension int) (uint64, bool) {
	if hdr.Get(messages.HeaderWokenSuspension) != strconv.Itoa(suspension) {
		return 0, false
	}
	n, err := strconv.ParseUint(hdr.Get(messages.HeaderWokenEvent), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// emit is Emit, returning the number ev was given (0 when it was not
// published: invalid, or undecodable).
func (e *emitter) emit(ev *messages.Event) uint64 {
	if ev == nil || !messages.ValidEventKind(ev.Kind) {
		return 0
	}
	out := maskedEvents.Get().(*messages.Event)
	defer func() {
		*out = messages.Event{}
		maskedEvents.Put(out)
	}()
	ev.MaskTo(out)
	out.Version = messages.EventVersion
	out.MissionID = e.missionID
	if out.Time.IsZero() {
		out.Time = time.Now().UTC()
	}
	out.Worker, out.Attempt = e.worker, e.attempt
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.buf == nil {
		e.buf = newEventBuffer()
	}
	start := e.buf.Len()
	if encodeEvent(e.buf, out) != nil {
		if e.count == 0 {
			e.releaseLocked()
		}
		return 0
	}
	if e.delay <= 0 {
		e.n++
		_ = e.nc.Publish(messages.EventSubject(e.sub, e.missionID, e.n, out.Kind), e.buf.Bytes()[start:])
		e.releaseLocked()
		return e.n
	}
	if e.count > 0 && (e.buf.Len()-messages.MaxEventBatchHeader > MaxEventBatchBytes || e.count == messages.MaxEventBatch) {
		// The events before this one go out first; it starts the next
		// batch.
		next := newEventBuffer()
		next.Write(e.buf.Bytes()[start:])
		e.buf.Truncate(start)
		e.publishLocked()
		e.buf = next
	}
	e.n++
	e.count++
	e.kind = out.Kind
	switch {
	case out.Kind == messages.EventFinal:
		e.publishLocked()
	case e.timer == nil:
		e.timer = startFlushTimer(e, e.delay)
	}
	return e.n
}

// encodeEvent appends out's encoding to buf: without its values when one
// has no plain form, cut (cutEvent) when over MaxEventBytes. On an error
// buf is as it was.
func encodeEvent(buf *bytes.Buffer, out *messages.Event) error {
	start := buf.Len()
	if messages.MarshalTo(buf, out) != nil {
		// A value with no plain form: send the event without it.
		out.Args, out.Result, out.Data = nil, nil, nil
		if err := messages.MarshalTo(buf, out); err != nil {
			return err
		}
	}
	if buf.Len()-start <= MaxEventBytes {
		return nil
	}
	buf.Truncate(start)
	data, err := cutEvent(out)
	if err != nil {
		return err
	}
	buf.Write(data)
	return nil
}

// Flush publishes the events waiting, at once. The mission's message must
// not leave the worker (acked, handed back, retried, suspended) before
// its events are flushed: the next attempt numbers its own after the last
// one stored.
func (e *emitter) Flush() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.publishLocked()
}

// drop forgets the events waiting: the mission belongs to another worker
// now, which numbers its events after those stored.
func (e *emitter) drop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopLocked()
	e.n -= uint64(e.count)
	e.releaseLocked()
}

func (e *emitter) stopLocked() {
	if e.timer != nil {
		e.timer.release()
		e.timer = nil
	}
}

func (e *emitter) timerFired() { e.Flush() }

// releaseLocked forgets the events waiting and hands their buffer back.
func (e *emitter) releaseLocked() {
	if e.buf != nil && e.buf.Cap() <= maxPooledEventBuffer {
		eventBuffers.Put(e.buf)
	}
	e.buf, e.count = nil, 0
}

// publishLocked publishes the events waiting: one alone on its own
// subject, several as one batch (messages.EncodeEventBatch's payload,
// its header written into the room before the first event).
func (e *emitter) publishLocked() {
	e.stopLocked()
	if e.buf == nil {
		return
	}
	b := e.buf.Bytes()
	switch e.count {
	case 0:
	case 1:
		_ = e.nc.Publish(messages.EventSubject(e.sub, e.missionID, e.n, e.kind), b[messages.MaxEventBatchHeader:])
	default:
		var h [messages.MaxEventBatchHeader]byte
		head := messages.AppendEventBatchHeader(h[:0], e.count)
		at := messages.MaxEventBatchHeader - len(head)
		copy(b[at:], head)
		first := e.n - uint64(e.count) + 1
		_ = e.nc.Publish(messages.EventBatchSubject(e.sub, e.missionID, first, e.count), b[at:])
	}
	e.releaseLocked()
}

// MaxEventBytes bounds one progress event as published and stored in
// EVENTS. Events are for watching a mission as it runs; the whole of it
// (every program, tool call and result) is in the stored result's trace.
// An event above it has each value larger than eventPreviewBytes cut: a
// tool call's arguments, a tool result, the extra data and a final Step's
// return are replaced by a preview of their JSON form in
// Data["cut"][<field>] ({"bytes": <encoded size>, "preview": <text>}),
// and a program or error text is cut to a preview in place (its size in
// Data["cut"]).
const MaxEventBytes = 8 << 10

// eventPreviewBytes is how much of a value cut from an event is kept.
const eventPreviewBytes = 1 << 10

// cutEvent cuts the values of out larger than eventPreviewBytes (see
// MaxEventBytes) and encodes it; if it is still too large, the values
// go without a preview.
func cutEvent(out *messages.Event) ([]byte, error) {
	cut := map[string]any{}
	value := func(name string, v any) bool {
		c, ok := CutValue(v)
		if ok {
			cut[name] = c
		}
		return ok
	}
	text := func(name string, s *string) {
		if len(*s) > eventPreviewBytes {
			cut[name] = map[string]any{"bytes": int64(len(*s))}
			*s = previewText(*s, eventPreviewBytes)
		}
	}
	if out.Args != nil && value("args", out.Args) {
		out.Args = nil
	}
	if out.Result != nil && value("result", out.Result) {
		out.Result = nil
	}
	if out.Data != nil && value("data", out.Data) {
		out.Data = nil
	}
	if out.Step != nil && out.Step.Return != nil {
		st := *out.Step
		if value("return", st.Return) {
			st.Return = nil
		}
		out.Step = &st
	}
	text("program", &out.Program)
	text("error", &out.Error)
	if len(cut) > 0 {
		data := maps.Clone(out.Data) // the caller's map stays as it is
		if data == nil {
			data = map[string]any{}
		}
		data["cut"] = cut
		out.Data = data
	}
	data, err := messages.Marshal(out)
	if err == nil && len(data) > MaxEventBytes {
		for _, c := range cut {
			if m, ok := c.(map[string]any); ok {
				delete(m, "preview")
			}
		}
		data, err = messages.Marshal(out)
	}
	return data, err
}

// CutValue is the preview of a value too large to show whole: when v's
// msgpack encoding is over 1 KiB (the size events cut values to), it
// returns {"bytes": <encoded size>, "preview": <its JSON form cut to
// 1 KiB>} and true; otherwise nil and false. The preview is read by
// people (progress, the viewer), so "<", ">" and "&" stay as they are
// instead of JSON's HTML escapes: a masked value reads "<Firewalled>".
func CutValue(v any) (map[string]any, bool) {
	b, err := messages.Marshal(v)
	if err == nil && len(b) <= eventPreviewBytes {
		return nil, false
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(messages.JSONFloats(v))
	return map[string]any{"bytes": int64(len(b)), "preview": previewText(strings.TrimSuffix(js.String(), "\n"), eventPreviewBytes)}, true
}

// previewText is s cut to at most n bytes on a character boundary, with
// "…" when cut.
func previewText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
