package agentrun

import (
	"context"
	"fmt"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// BuildAgent builds the agent an agent mission runs, as a worker builds
// it: the mission's limits over the spec's, and every tool bound to box
// (which holds the mission's allow-list), validated against the signature
// its service advertises. A tool the agent names that the mission does not
// allow, or a spec that does not build, is an error.
func BuildAgent(ctx context.Context, m *messages.Mission, box *fleet.Toolbox) (*agent.Agent, error) {
	return buildAgent(ctx, m, box, &turnTracker{}, nil)
}

// buildAgent builds m's agent with its tools bound to box. With a cache,
// a spec built before (with the same limits) is rebound to the mission's
// tools rather than built again, and a spec that builds is kept.
func buildAgent(ctx context.Context, m *messages.Mission, box *fleet.Toolbox, turns *turnTracker, cache *agentCache) (*agent.Agent, error) {
	if m.Kind != messages.KindAgent || m.Agent == nil {
		return nil, fmt.Errorf("mission kind %q has no agent", m.Kind)
	}
	if names := m.UnallowedTools(); len(names) > 0 {
		return nil, fmt.Errorf("the agent names tools the mission does not allow: %s", strings.Join(names, ", "))
	}
	var key string
	if cache != nil {
		var kept *agent.Agent
		var ok bool
		if kept, key, ok = cache.find(m); ok {
			if kept != nil {
				// each tool bound by name: a map of the agent's tools
				// (their values are large) is not made per mission
				return kept.RebindEach(m.Agent.Tools, func(name string) agent.Tool { return remoteTool(ctx, box, name, turns) })
			}
		} else {
			cache = nil
		}
	}
	resolve := func(name string) (agent.Tool, bool) { return remoteTool(ctx, box, name, turns), true }
	spec, err := agent.FromWire(m.Agent, resolve)
	if err != nil {
		return nil, err
	}
	spec.Limits = m.EffectiveLimits()
	a, err := agent.New(spec)
	if err != nil || cache == nil {
		return a, err
	}
	cache.keep(key, a, spec.Tools)
	return a, nil
}
