package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/signature"
)

// MisspelledTool is a tool a mission names that no tool service offers
// while a tool service offers one with a close name.
type MisspelledTool struct {
	// Name is the name the mission gives.
	Name string
	// Closest is the offered tool it is probably a typo of.
	Closest string
}

// MisspelledToolsError says which of a mission's tools are probably typos
// of offered tools. A worker fails such a mission as ReasonInvalid before
// it runs; CheckTools returns it to a submitter.
type MisspelledToolsError struct {
	Tools []MisspelledTool
}

func (e *MisspelledToolsError) Error() string {
	parts := make([]string, len(e.Tools))
	for i, t := range e.Tools {
		parts[i] = fmt.Sprintf("%s is offered by no tool service (did you mean %s?)", t.Name, t.Closest)
	}
	return "tools: " + strings.Join(parts, "; ")
}

// misspelledTools returns the names of names that offered lacks and that
// are close to an offered name, or nil. A name with no close offered
// name is left alone: its service may be starting, and a call reports it
// unavailable.
func misspelledTools(names []string, offered []string) error {
	var out []MisspelledTool
	for _, n := range names {
		if slices.Contains(offered, n) {
			continue
		}
		if c := signature.Closest(n, offered); c != "" {
			out = append(out, MisspelledTool{Name: n, Closest: c})
		}
	}
	if out == nil {
		return nil
	}
	return &MisspelledToolsError{Tools: out}
}

// CheckTools discovers the tools offered on nc (waiting up to wait for
// services to answer) and returns a *MisspelledToolsError when one of
// names is not offered while a close name is: the check a submitter makes
// before sending a mission, so that a typo in its tool list is reported
// at once. It returns nil when discovery itself fails (a submitter may
// lack the permission to see the services); the worker checks again.
func CheckTools(ctx context.Context, nc *nats.Conn, names []string, wait time.Duration) error {
	if len(names) == 0 {
		return nil
	}
	d, err := DiscoverTools(ctx, nc, DiscoverOptions{Wait: wait})
	if err != nil {
		return nil
	}
	offered := make([]string, 0, len(d.Tools)+len(d.Conflicts))
	for _, t := range d.Tools {
		offered = append(offered, t.Name)
	}
	for _, c := range d.Conflicts {
		offered = append(offered, c.Tool)
	}
	return misspelledTools(names, offered)
}

// CheckNames returns a *MisspelledToolsError when one of the mission's
// tools is offered by no service while a close name is (discovery
// refreshed as for a call), or nil. The worker's runner calls it before a
// mission runs.
func (b *Toolbox) CheckNames(ctx context.Context) error {
	var missing []string
	for _, n := range b.names {
		// a tool discovery heard no answer about is not known missing
		if _, ok, unheard := b.reg.lookupHeard(ctx, n); !ok && unheard == nil && b.reg.conflict(n) == nil {
			missing = append(missing, n)
		}
	}
	if missing == nil {
		return nil
	}
	tools, _ := b.reg.snapshot()
	offered := make([]string, 0, len(tools))
	for n := range tools {
		offered = append(offered, n)
	}
	slices.Sort(offered)
	return misspelledTools(missing, offered)
}
