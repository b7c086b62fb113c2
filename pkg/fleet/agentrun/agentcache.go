package agentrun

import (
	"bytes"
	"context"
	"sync"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// Bounds of a Runner's cache of built agents: missions of one agent spec
// share what depends only on the spec.
const (
	// agentCacheEntries bounds the agents kept.
	agentCacheEntries = 256
	// agentCacheBytes bounds the sum of their keys (each the encoded spec,
	// with the mission's limits).
	agentCacheBytes = 4 << 20
)

// agentKey names what an agent mission builds its agent from: its spec
// with the mission's effective limits in place of the spec's, encoded as
// on the wire (messages.Marshal writes maps by their keys, so equal specs
// give equal keys, and tells an integer from a float). ok is false for a
// spec the cache does not keep: one with sub-agents or spawn_agent (whose
// tools are agents built per mission) or one that does not encode.
func agentKey(m *messages.Mission) (key string, ok bool) {
	ks, ok := encodeAgentKey(m)
	if !ok {
		return "", false
	}
	key = ks.buf.String()
	ks.release()
	return key, true
}

// keyScratch is what encoding an agent key takes: the spec with the
// mission's limits and the buffer it is encoded into, kept for the next
// key (keyScratches).
type keyScratch struct {
	spec messages.AgentSpec
	buf  bytes.Buffer
}

// keyScratches holds keyScratches between keys: a cache of memory, not
// state (a scratch goes back holding no spec, and each key is encoded
// into its emptied buffer).
var keyScratches sync.Pool

// maxKeptKeyBuffer bounds the buffer a keyScratch keeps.
const maxKeptKeyBuffer = 64 << 10

// encodeAgentKey encodes m's agent key (agentKey) into a kept scratch's
// buffer; the caller releases the scratch once done with its bytes. ok is
// false as for agentKey.
func encodeAgentKey(m *messages.Mission) (ks *keyScratch, ok bool) {
	w := m.Agent
	if w == nil || len(w.SubAgents) > 0 || w.SpawnAgent != nil {
		return nil, false
	}
	ks, _ = keyScratches.Get().(*keyScratch)
	if ks == nil {
		ks = &keyScratch{}
	}
	ks.spec = *w
	ks.spec.Limits = m.EffectiveLimits()
	ks.buf.Reset()
	err := messages.MarshalTo(&ks.buf, &ks.spec)
	ks.spec = messages.AgentSpec{}
	if err != nil {
		ks.release()
		return nil, false
	}
	return ks, true
}

// release gives ks back for another key.
func (ks *keyScratch) release() {
	if ks.buf.Cap() > maxKeptKeyBuffer {
		ks.buf = bytes.Buffer{}
	}
	keyScratches.Put(ks)
}

// agentCache keeps agents as agent.New built them, bound to stand-in
// tools that fail, so that a mission of a spec seen before rebinds the
// kept agent to its own tools (agent.Agent.Rebind): its signature,
// template, tool catalog and system prompt are built once and shared,
// never written after. Only agents that built are kept; the oldest go
// first when a bound is reached.
type agentCache struct {
	*keptCache[string, *agent.Agent]
}

func newAgentCache() *agentCache {
	return &agentCache{newKeptCache[string, *agent.Agent](agentCacheEntries, agentCacheBytes, func(k string) int { return len(k) })}
}

// find returns the agent kept for m's spec (agentKey), encoding the key
// into a kept buffer and looking it up without a copy; when none is kept
// it returns the key to keep m's agent under. ok is false for a spec the
// cache does not keep.
func (c *agentCache) find(m *messages.Mission) (kept *agent.Agent, key string, ok bool) {
	ks, ok := encodeAgentKey(m)
	if !ok {
		return nil, "", false
	}
	defer ks.release()
	c.mu.Lock()
	kept = c.vals[string(ks.buf.Bytes())]
	c.mu.Unlock()
	if kept != nil {
		return kept, "", true
	}
	return nil, ks.buf.String(), true
}

// keep puts a (built from the spec named k) in the cache, bound to
// stand-ins of its tools: each keeps the tool's signature and
// description, so that a mission whose tools advertise the same
// signatures reuses their parsed form.
func (c *agentCache) keep(k string, a *agent.Agent, tools map[string]agent.Tool) {
	unbound := func(context.Context, map[string]any) (any, error) { return nil, errUnboundTool }
	stand := make(map[string]agent.Tool, len(tools))
	for name, t := range tools {
		s := agent.Skip(unbound)
		if t.Signature != "" {
			s = agent.FuncSig(t.Signature, unbound)
		}
		stand[name] = s.WithDescription(t.Description)
	}
	if kept, err := a.Rebind(stand); err == nil {
		c.put(k, kept)
	}
}
