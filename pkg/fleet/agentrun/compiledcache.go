package agentrun

import (
	"slices"
	"strings"
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
// left them (read, evaluated, checked, their tools bound), so that a
// mission running a program seen before, with tools of the same shapes,
// runs it as it is (Runner.loadCompiled). Only programs that loaded are
// kept; the oldest go first when a bound is reached.
type compiledCache = keptCache[compiledKey, *keptCompiled]

func newCompiledCache() *compiledCache {
	return newKeptCache[compiledKey, *keptCompiled](compiledCacheEntries, compiledCacheBytes, compiledKey.size)
}

// size is what a key counts against compiledCacheBytes.
func (k compiledKey) size() int { return len(k.program) + len(k.signature) + len(k.tools) }
