package agentrun

import (
	"errors"
	"sync"
)

// keptCache keeps values under comparable keys within two bounds: a
// number of entries and a sum of sizes (size(k) of each key). The oldest
// go first when a bound is reached; a key larger than the whole size
// bound is not kept, and a key kept already keeps its value. It is safe
// for concurrent use. The Runner keeps its loaded compiled programs and
// its built agents in one each.
type keptCache[K comparable, V any] struct {
	maxEntries, maxBytes int
	size                 func(K) int

	mu    sync.Mutex
	vals  map[K]V
	order []K // oldest first
	bytes int
}

func newKeptCache[K comparable, V any](maxEntries, maxBytes int, size func(K) int) *keptCache[K, V] {
	return &keptCache[K, V]{maxEntries: maxEntries, maxBytes: maxBytes, size: size, vals: map[K]V{}}
}

// get returns the value kept under k, or V's zero value.
func (c *keptCache[K, V]) get(k K) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vals[k]
}

// put keeps v under k, letting the oldest entries go while the bounds are
// exceeded.
func (c *keptCache[K, V]) put(k K, v V) {
	size := c.size(k)
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.vals[k]; ok {
		return
	}
	for len(c.order) > 0 && (len(c.order) >= c.maxEntries || c.bytes+size > c.maxBytes) {
		old := c.order[0]
		c.order = c.order[1:]
		delete(c.vals, old)
		c.bytes -= c.size(old)
	}
	c.vals[k] = v
	c.order = append(c.order, k)
	c.bytes += size
}

// set keeps v under k as put does, in place of the value kept under k
// when there is one.
func (c *keptCache[K, V]) set(k K, v V) {
	c.mu.Lock()
	if _, ok := c.vals[k]; ok {
		c.vals[k] = v
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.put(k, v)
}

// len returns how many entries are kept.
func (c *keptCache[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.vals)
}

// errUnboundTool is the error of a tool of what a keptCache holds (a
// compiled program or an agent), bound to stand-ins: it runs only once
// rebound to a mission's tools.
var errUnboundTool = errors.New("agentrun: a kept program's or agent's tool is called unbound")
