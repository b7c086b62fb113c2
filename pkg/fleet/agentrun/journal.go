package agentrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The agent loop meets the mission's turn journal (fleet.Journal) at its
// two sources of outside answers, both bound here and not in pkg/agent:
//
//   - models: every model of the run's registry is wrapped so that a
//     request whose reply an earlier attempt recorded gets that reply
//     without a model call, a new reply is recorded and published
//     (asynchronously, fleet.Journal.Push) as the loop gets it, and every
//     recorded answer is acknowledged (fleet.Journal.Flush) before the
//     next request goes to the model;
//   - remote tools: the worker's Toolbox journals their results itself;
//     the runner only tells it the turn (fleet.WithTurn), which it tracks
//     from the loop's turn_start events of the top-level agent.

// turnTracker holds the current turn of the top-level agent and the
// program written last (at any depth), which a call waiting for approval
// shows to the approver.
type turnTracker struct {
	n    atomic.Int64
	prog atomic.Pointer[string]
}

// withTurn returns ctx carrying the turn and the call site of a tool call
// the program makes with ctx (lisp.CallPos).
func (t *turnTracker) withTurn(ctx context.Context) context.Context {
	if t == nil {
		return ctx
	}
	var site fleet.CallSite
	if p := t.prog.Load(); p != nil {
		site.Program = *p
	}
	if pos, ok := lisp.CallPos(ctx); ok {
		site.Position = pos.String()
	}
	return fleet.WithTurnAndCallSite(ctx, int(t.n.Load()), site)
}

// missionModels returns the models a mission's agents call: each model of
// reg measured and traced (env.Metrics, env.Tracer; meteredModel), charged
// to the mission's budgets (env.Budget; llm.WithBudget) and its replies
// going through the mission's journal (env.Journal; journaledModel), each
// wrapper around the one before, all in one copy of reg: the run keeps the
// registry while it waits on its model. The metering and the budget sit
// inside the journal: a reply the journal replays reaches no model, and
// was counted and charged by the attempt that got it. reg itself when
// there is nothing to wrap.
func missionModels(reg llm.Registry, env *fleet.RunEnv) llm.Registry {
	w, ok := missionWrap(env)
	if !ok {
		return reg
	}
	return wrapModels(reg, w.wrap)
}

// missionModel is model m, named name, wrapped as missionModels wraps
// each model of the registry: the model of a mission whose agents all
// call one model, which then needs no registry of its own.
func missionModel(name string, m llm.Model, env *fleet.RunEnv) llm.Model {
	if w, ok := missionWrap(env); ok {
		return w.wrap(name, m)
	}
	return m
}

// modelWrap wraps a mission's models (missionModels).
type modelWrap struct {
	metered bool
	metrics *fleet.Metrics
	tracer  trace.Tracer
	budget  *fleet.MissionBudget
	j       *fleet.Journal
	owned   func(context.Context) error
}

// missionWrap returns what wraps the models of the mission of env; false
// when there is nothing to wrap.
func missionWrap(env *fleet.RunEnv) (modelWrap, bool) {
	w := modelWrap{metrics: env.Metrics, tracer: env.Tracer, budget: env.Budget, j: env.Journal}
	w.metered = w.metrics != nil || w.tracer != nil
	if !w.metered && w.budget == nil && w.j == nil {
		return modelWrap{}, false
	}
	if w.j != nil {
		w.owned = env.OwnedFunc()
	}
	return w, true
}

// wrap wraps model m, named name.
func (w *modelWrap) wrap(name string, m llm.Model) llm.Model {
	if w.metered {
		m = &meteredModel{name: name, inner: m, metrics: w.metrics, tracer: w.tracer}
	}
	if w.budget != nil {
		m = llm.WithBudget(m, name, fleetBudget{w.budget})
	}
	if w.j != nil {
		m = &journaledModel{name: name, inner: m, j: w.j, owned: w.owned}
	}
	return m
}

// wrapModels returns a copy of reg with each model m replaced by wrap(name,
// m); a nil model (which the registry reports as invalid) stays nil, and a
// nil reg stays nil.
// Unwrap returns the journaled model (llm.PricesOf looks through it).
func (m *journaledModel) Unwrap() llm.Model { return m.inner }

func wrapModels(reg llm.Registry, wrap func(name string, m llm.Model) llm.Model) llm.Registry {
	if reg == nil {
		return nil
	}
	out := make(llm.Registry, len(reg))
	for name, m := range reg {
		if m != nil {
			m = wrap(name, m)
		}
		out[name] = m
	}
	return out
}

// journaledModel replays and records one model's replies.
type journaledModel struct {
	name  string
	inner llm.Model
	j     *fleet.Journal
	owned func(context.Context) error
}

// journalReply is a model reply as the journal keeps it (the provider's
// raw body is not kept).
type journalReply struct {
	Content   string        `msgpack:"content"`
	ToolCalls []llm.ToolUse `msgpack:"tool_calls,omitempty"`
	// Provider keeps the provider's blocks (thinking with its signature),
	// which must go back to the provider with the reply.
	Provider   []llm.ProviderBlock `msgpack:"provider,omitempty"`
	Usage      llm.Usage           `msgpack:"usage"`
	StopReason llm.StopReason      `msgpack:"stop_reason,omitempty"`
	Model      string              `msgpack:"model,omitempty"`
	ID         string              `msgpack:"id,omitempty"`
}

// Complete answers from the journal when it can, else asks the model and
// records the reply before returning it.
func (m *journaledModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	key := modelKey(m.name, req)
	if data, ok := m.j.Replay(key); ok {
		resp, err := decodeReply(data)
		if err == nil {
			return resp, nil
		}
		zerolog.Ctx(ctx).Warn().Err(err).Msg("journaled model reply unreadable; asking the model")
	}
	// The request carries the answers the loop got so far: their journal
	// writes are acknowledged before it leaves.
	if err := m.j.Flush(ctx); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("answers not journaled")
	}
	// a run whose worker lost touch with NATS confirms it still owns the
	// mission before paying for a reply
	if err := m.owned(ctx); err != nil {
		return nil, err
	}
	resp, err := m.inner.Complete(ctx, req)
	return m.record(ctx, key, resp, err)
}

// CompleteAsync is Complete without holding the caller while the answer
// is awaited (llm.AsyncModel): the journal is read, flushed and the
// ownership checked before the call starts, and the reply recorded when
// it comes.
func (m *journaledModel) CompleteAsync(ctx context.Context, req llm.Request, done func(*llm.Response, error)) {
	key := modelKey(m.name, req)
	if data, ok := m.j.Replay(key); ok {
		resp, err := decodeReply(data)
		if err == nil {
			done(resp, nil)
			return
		}
		zerolog.Ctx(ctx).Warn().Err(err).Msg("journaled model reply unreadable; asking the model")
	}
	if err := m.j.Flush(ctx); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("answers not journaled")
	}
	if err := m.owned(ctx); err != nil {
		done(nil, err)
		return
	}
	llm.CompleteAsync(ctx, m.inner, req, func(resp *llm.Response, err error) {
		done(m.record(ctx, key, resp, err))
	})
}

// record records the model's reply resp under key, and returns what
// Complete returns for resp or err.
func (m *journaledModel) record(ctx context.Context, key string, resp *llm.Response, err error) (*llm.Response, error) {
	if err != nil || resp == nil {
		return resp, err
	}
	data, err := encodeReply(resp)
	if err == nil {
		err = m.j.Record(ctx, key, data)
	}
	// A reply is the costliest answer to lose, and a tool call or the next
	// model call nearly always follows it: its write travels now, while
	// the loop runs the reply's program.
	m.j.Push()
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("model reply not journaled")
	}
	return resp, nil
}

// decodeReply decodes a journaled model reply.
func decodeReply(data []byte) (*llm.Response, error) {
	var rec journalReply
	if err := messages.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("agentrun: journaled model reply: %w", err)
	}
	return &llm.Response{Content: rec.Content, ToolCalls: rec.ToolCalls, Provider: rec.Provider, Usage: rec.Usage,
		StopReason: rec.StopReason, Model: rec.Model, ID: rec.ID}, nil
}

// encodeReply encodes a model reply for the journal.
func encodeReply(resp *llm.Response) ([]byte, error) {
	return messages.Marshal(&journalReply{Content: resp.Content, ToolCalls: resp.ToolCalls, Provider: resp.Provider, Usage: resp.Usage,
		StopReason: resp.StopReason, Model: resp.Model, ID: resp.ID})
}

// modelKey is the journal key of a request to the model named name: it
// covers everything the reply depends on.
func modelKey(name string, req llm.Request) string {
	kb := modelKeyBuilders.Get().(*modelKeyBuilder)
	defer kb.release()
	k := &kb.key
	k.AddString(name)
	k.AddString(req.System)
	if part, err := kb.json(req.Messages); err == nil {
		k.Add(part)
	} else {
		k.AddString(fmt.Sprintf("%v", req.Messages))
	}
	part, _ := kb.json(req.Tools)
	k.Add(part)
	part, _ = kb.json(req.Opts)
	k.Add(part)
	var turn [20]byte
	k.Add(strconv.AppendInt(turn[:0], int64(req.Turn), 10))
	return k.Key()
}

// modelKeyBuilder holds what modelKey builds a key with, for the next key.
type modelKeyBuilder struct {
	key     fleet.ModelKeyBuilder
	scratch bytes.Buffer
	enc     *json.Encoder // writes to scratch
}

// modelKeyBuilders keeps modelKeyBuilders between requests.
var modelKeyBuilders = sync.Pool{New: func() any {
	b := &modelKeyBuilder{}
	b.enc = json.NewEncoder(&b.scratch)
	return b
}}

// maxPooledModelKey bounds the buffers a modelKeyBuilder keeps for the
// next request.
const maxPooledModelKey = 1 << 20

// json returns v's encoding as json.Marshal gives it (nothing on an error),
// valid until the next call.
func (b *modelKeyBuilder) json(v any) ([]byte, error) {
	b.scratch.Reset()
	if err := b.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.scratch.Bytes(), []byte{'\n'}), nil
}

// release puts b back for the next request, unless it grew too large.
func (b *modelKeyBuilder) release() {
	if b.key.Cap() > maxPooledModelKey || b.scratch.Cap() > maxPooledModelKey {
		return
	}
	b.key.Reset()
	b.scratch.Reset()
	modelKeyBuilders.Put(b)
}

// unreplayedUsage is the usage of model replies earlier attempts paid for
// that this run did not replay (a reply recorded just before a worker died
// whose request this run asked differently, or never reached).
func unreplayedUsage(j *fleet.Journal) messages.Usage {
	var u messages.Usage
	for _, data := range j.Unreplayed(fleet.ModelKeyPrefix) {
		var rec journalReply
		if messages.Unmarshal(data, &rec) != nil {
			continue
		}
		u.InputTokens += rec.Usage.InputTokens
		u.OutputTokens += rec.Usage.OutputTokens
		u.TotalTokens += rec.Usage.Total()
		u.CacheReadTokens += rec.Usage.CacheReadTokens
		u.CacheWriteTokens += rec.Usage.CacheWriteTokens
		u.CostUSD += rec.Usage.CostUSD
		u.Requests++
	}
	return u
}

// trackTurns keeps t at the top-level agent's turn.
func (t *turnTracker) observe(e agent.Event) {
	if t == nil {
		return
	}
	switch {
	case e.Kind == agent.EventTurnStart && e.Depth <= 1:
		t.n.Store(int64(e.Turn))
	case e.Kind == agent.EventLLMStop:
		if code, ok := agent.ParseResponse(e.Response); ok {
			t.prog.Store(&code)
		}
	}
}
