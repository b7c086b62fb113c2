package agentrun

import (
	"slices"
	"strings"
	"sync"

	"github.com/ptcfleet/ptc/pkg/agent"
)

// Bounds of a Runner's cache of compiled programs: missions applying the
// same program to inputs in batches share one definition.
const (
	// compiledCacheEntries bounds the programs kept.
	compiledCacheEntries = 256
	// compiledCacheBytes bounds the sum of their sources (at most
	// agent.MaxCompiledSource each).
	compiledCacheBytes = 4 << 20
)

// compiledKey names a loaded program: its source, its signature and the
// tools it was loaded with, sorted and joined by a newline (which no tool
// name holds).
type compiledKey struct {
	program, signature, tools string
}

func newCompiledKey(program, signature string, tools []string) compiledKey {
	if !slices.IsSorted(tools) {
		tools = slices.Sorted(slices.Values(tools))
	}
	return compiledKey{program: program, signature: signature, tools: strings.Join(tools, "\n")}
}

// compiledCache keeps the programs of compiled missions as agent.Load
// left them (read, evaluated, checked), so that a mission running a
// program seen before rebinds it to its own tools rather than reading it
// again. Only programs that loaded are kept; the oldest go first when a
// bound is reached. It is safe for concurrent use.
type compiledCache struct {
	mu    sync.Mutex
	progs map[compiledKey]*agent.Compiled
	order []compiledKey // oldest first
	bytes int
}

func newCompiledCache() *compiledCache {
	return &compiledCache{progs: map[compiledKey]*agent.Compiled{}}
}

// get returns the program kept under k, or nil.
func (c *compiledCache) get(k compiledKey) *agent.Compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.progs[k]
}

// put keeps p under k, letting the oldest programs go while the bounds
// are exceeded.
func (c *compiledCache) put(k compiledKey, p *agent.Compiled) {
	size := len(k.program) + len(k.signature) + len(k.tools)
	if size > compiledCacheBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.progs[k]; ok {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= compiledCacheEntries || c.bytes+size > compiledCacheBytes) {
		old := c.order[0]
		c.order = c.order[1:]
		delete(c.progs, old)
		c.bytes -= len(old.program) + len(old.signature) + len(old.tools)
	}
	c.progs[k] = p
	c.order = append(c.order, k)
	c.bytes += size
}
