package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ptcfleet/ptc/internal/ctxval"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/ptcfleet/ptc/pkg/signature"
)

// The host a run serves: its tools, their results (WireResult), the
// context inputs and the keywords a run interns. Calling a tool from a
// program is tool.go.

// Tool is a host capability callable from a program: a local Go func, an
// LLM tool, a sub-agent or a remote (NATS) tool. Call receives the run's
// context and the named arguments as plain Go data (keys by the boundary
// rule of ToGo: keyword keys with '_' for '-', string keys as written), and
// returns plain Go data (see FromGo), a *WireResult (a result decoded
// from its wire bytes; the run's ToolCall record keeps it as it is) or an
// error. Call may be invoked from several goroutines at once (pmap), and
// must not modify args: a host map a program passes on is handed over as
// it is, not copied.
type Tool interface {
	Call(ctx context.Context, args map[string]any) (any, error)
}

// ToolFunc adapts a function to Tool.
type ToolFunc func(ctx context.Context, args map[string]any) (any, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, args map[string]any) (any, error) { return f(ctx, args) }

// callPosKey carries, in the context a Tool is called with, the position
// of the call.
type callPosKey struct{}

// CallPos returns the position, in the source of the program that made
// it, of the tool call whose Tool.Call received ctx: the (tool/name ...)
// form, or the form that called a tool passed as a value. ok is false
// when ctx comes from no tool call of a program.
func CallPos(ctx context.Context) (pos Pos, ok bool) {
	if p, _ := ctx.Value(callPosKey{}).(*Pos); p != nil {
		return *p, true
	}
	return Pos{}, false
}

// withCallPos returns ctx carrying pos for CallPos.
func withCallPos(ctx context.Context, pos Pos) context.Context {
	return &ctxval.Ctx[callPosKey, Pos]{Context: ctx, V: pos}
}

// Tools maps tool names to tools. A nil Tools has no tools.
type Tools map[string]Tool

// Host is the per-run shared state: tools, ctx inputs, keyword interning,
// tool call records. It is shared with pmap branches (mu guards calls).
type Host struct {
	Tools   Tools
	HostFns HostFuncs // Options.Host
	// Ctx is the run's context (Options.Context), read in place: a ctx/
	// read converts the one value it names (ctxView).
	Ctx map[string]any
	// ctxSmall and then ctxVals cache the ctx/ collections read, so each
	// is converted once per run (ctxMu guards them: pmap)
	ctxSmall [ctxSmallN]ctxEntry
	ctxVals  map[string]Value
	ctxMu    sync.Mutex
	// ProgKeywords are the program's keywords (shared by its runs, read
	// only); keywords those the run interns beyond them
	ProgKeywords map[string]*Keyword
	Keywords     map[string]*Keyword
	kwMu         sync.Mutex
	mu           sync.Mutex
	Calls        []messages.ToolCall
	MaxCalls     int
	nCalls       int
	Scrub        func(string, bool) string // Options.Scrub
	// Meter charges what the run holds from its tools (Meter)
	Meter *Meter
	// OwnMeter, when Meter is nil, has the run make its own meter of
	// MeterLimit bytes on first need: before its first tool or host call
	// or pmap branch (Thread.DeadlineCtx), which hands it on in their
	// context. A run that calls none makes no meter.
	OwnMeter   bool
	MeterLimit int64
}

// Keyword returns the run's interned keyword name.
func (h *Host) Keyword(name string) *Keyword {
	if k, ok := h.ProgKeywords[name]; ok {
		return k
	}
	h.kwMu.Lock()
	defer h.kwMu.Unlock()
	if k, ok := h.Keywords[name]; ok {
		return k
	}
	if h.Keywords == nil {
		h.Keywords = map[string]*Keyword{}
	}
	k := NewKeyword(name)
	h.Keywords[name] = k
	return k
}

// UnknownTool is the message of a call of a tool the program was not
// given: the closest given name when one is close, and the names it may
// call (given, which does not mean a service offers them).
func (h *Host) UnknownTool(name string) string {
	keys := SortedKeys(h.Tools)
	msg := "unknown tool: " + name + signature.DidYouMean(name, keys)
	if len(keys) == 0 {
		return msg + "; this program may call no tool"
	}
	return msg + "; the tools this program may call: " + strings.Join(keys, ", ")
}

// ResolveTool finds a tool by exact name, then treating '-' and '_' alike.
func (h *Host) ResolveTool(name string) (string, bool) {
	if _, ok := h.Tools[name]; ok {
		return name, true
	}
	norm := strings.ReplaceAll(name, "-", "_")
	for _, k := range SortedKeys(h.Tools) {
		if strings.ReplaceAll(k, "-", "_") == norm {
			return k, true
		}
	}
	return "", false
}

// CtxRecords returns the host records the context holds at key as a
// []map[string]any, to be read one by one in place: the items of the
// vector view a read of ctx/key gives (ItemsOf), without making the view,
// for a loop that reads them once (a fused pipeline). ok is false for a
// key the context lacks or any other value: read those with CtxGet.
func (h *Host) CtxRecords(key string) (items ItemsOf, ok bool) {
	if rs, isRecs := h.Ctx[key].([]map[string]any); isRecs && len(rs) > 0 {
		return ItemsOf{Recs: rs}, true
	}
	return ItemsOf{}, false
}

// ctxSmallN is how many ctx/ collections a run caches without a map.
const ctxSmallN = 4

// ctxEntry is one cached ctx/ collection: its key and its view; a nil
// view marks a free entry.
type ctxEntry struct {
	key string
	v   Value
}

// toolCallBytes is the charge for the record of one tool call (its
// messages.ToolCall in the run's calls and in the caller's trace, and the
// slots that hold it), before its arguments and result.
const toolCallBytes = 512

func safeToolCall(ctx context.Context, t Tool, args map[string]any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return t.Call(ctx, args)
}

// SortedKeys returns m's keys in order.
func SortedKeys[M ~map[string]V, V any](m M) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.Sort(ks)
	return ks
}

// HostFuncs maps host builtin names (HostBuiltins) to their functions.
type HostFuncs map[string]HostFunc

// HostFunc is a builtin whose work the host does (Options.Host): the
// agent running the program asks its model (llm-query), streams a value
// to the mission's submitter (emit) or marks a step of its plan
// (step-done). It receives the run's context and the call's arguments as
// plain Go data (ToGo), and returns plain Go data (FromGo) or an error,
// which fails the call as a tool error naming the builtin. It may be
// called from several goroutines at once (pmap).
type HostFunc func(ctx context.Context, args []any) (any, error)

// WireResult is a tool result kept as the bytes it arrived in (msgpack
// from NATS; JSON from HTTP, MCP, a JSON tool service or a typed Go
// tool), decoded once, in one pass, into interpreter values by
// NewWireResult. A Tool returns it to hand a run its result with no Go
// data in between: the run (and FromGo) uses Value; a trace, journal or
// event that records the result keeps it as it is, and encoding it as
// msgpack writes the msgpack bytes unchanged. Go data is made only for a
// consumer that asks for it (Plain: JSON rendering, a text-mode model,
// masking a result that holds a firewalled key), once; signature
// validation reads the values in place (View).
type WireResult struct {
	ContentType string
	data        []byte
	Decoded     Value

	// form caches Decoded's Go form and whether it holds a firewalled key
	form goForm

	// size is what the result holds (Size); meter is the meter it was
	// charged to while it was decoded (nil: none).
	size  int64
	meter *Meter
	// ref names the object a large result was streamed from
	// (NewWireResultFrom); data is nil then.
	ref *messages.ObjectRef
}
