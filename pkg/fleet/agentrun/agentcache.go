package agentrun

import (
	"context"

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
	w := m.Agent
	if w == nil || len(w.SubAgents) > 0 || w.SpawnAgent != nil {
		return "", false
	}
	kw := *w
	kw.Limits = m.EffectiveLimits()
	b, err := messages.Marshal(&kw)
	if err != nil {
		return "", false
	}
	return string(b), true
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
