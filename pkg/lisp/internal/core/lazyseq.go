package core

import (
	"math"
)

// LazyChunk is how many items of a pure sequence are realised at once.
const LazyChunk = 256

// LazyItemBytes is the charge for one realised item: its slot and the
// slack of the cache, which grows by doubling.
const LazyItemBytes = 2 * SlotBytes

// NewLazySeq returns a lazy sequence produced by gen.
func NewLazySeq(gen func(th *Thread) (Value, bool)) *LazySeq { return &LazySeq{gen: gen} }

// NewPureSeq returns a lazy sequence whose items fill computes in
// chunks (see LazySeq.fill); fill must not call back into the program.
func NewPureSeq(fill func(buf []Value) []Value) *LazySeq { return &LazySeq{fill: fill} }

// Nth realises up to item i and returns it.
func (s *LazySeq) Nth(th *Thread, i int) (Value, bool) {
	if s.Stream {
		return s.streamNth(th, i)
	}
	s.mu.Lock()
	if i < len(s.items) {
		v := s.items[i]
		s.mu.Unlock()
		return v, true
	}
	s.mu.Unlock()
	items, _ := s.realise(th, i+1)
	if i < len(items) {
		return items[i], true
	}
	return nil, false
}

// streamNth returns item i of a stream sequence, which is read in order:
// the chunk before i is dropped, uncharged. Reading an item already
// dropped is an internal error (the compiler marks only sequences whose
// one reader goes in order).
func (s *LazySeq) streamNth(th *Thread, i int) (Value, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.base {
		th.Raise(KindInternal, "stream sequence read out of order (item %d after %d)", i, s.base)
	}
	for i >= s.base+len(s.items) {
		if s.done {
			return nil, false
		}
		s.base += len(s.items)
		s.nextChunk(th)
	}
	return s.items[i-s.base], true
}

// nextChunk replaces a stream sequence's chunk with the next one: up to
// lazyChunk items of a pure sequence (the one buffer, charged once), one
// item of a gen (so the program's functions run no further ahead than
// they are read: some stops at the first match).
func (s *LazySeq) nextChunk(th *Thread) {
	if s.fill != nil {
		if s.items == nil {
			th.AllocBytes(LazyChunk * SlotBytes)
			s.items = make([]Value, 0, LazyChunk)
		}
		th.Ticks(LazyChunk)
		s.items = s.fill(s.items[:0:LazyChunk])
		if len(s.items) < LazyChunk {
			s.done, s.fill = true, nil
		}
		return
	}
	th.Tick()
	v, ok := s.gen(th)
	if !ok {
		s.done, s.gen, s.items = true, nil, s.items[:0]
		return
	}
	if s.items == nil {
		s.items = make([]Value, 1)
	}
	s.items = s.items[:1]
	s.items[0] = v
}

// realise realises items until at least n are realised or the sequence
// ends (a pure one up to the end of a chunk), and returns the realised
// items and whether the sequence is complete.
func (s *LazySeq) realise(th *Thread, n int) ([]Value, bool) {
	if s.Stream {
		th.Raise(KindInternal, "stream sequence realised whole")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) < n && !s.done {
		s.realiseLocked(th, n)
		th.keep() // the cache lives as long as the seq, made before any scope
	}
	return s.items[:len(s.items):len(s.items)], s.done
}

// realiseAll realises the whole sequence (an endless one until a limit
// stops the run) and returns its items.
func (s *LazySeq) realiseAll(th *Thread) []Value {
	items, _ := s.realise(th, math.MaxInt)
	return items
}

func (s *LazySeq) realiseLocked(th *Thread, n int) {
	if s.fill != nil {
		for len(s.items) < n && !s.done {
			th.Ticks(LazyChunk)
			th.AllocBytes(LazyChunk * LazyItemBytes) // charged before it is built
			full := growCache(s.items, LazyChunk)
			m := len(full)
			got := len(s.fill(full[m : m : m+LazyChunk]))
			s.items = full[:m+got]
			if got < LazyChunk {
				s.done, s.fill = true, nil
				th.Alloc -= int64(LazyChunk-got) * LazyItemBytes
			}
		}
		return
	}
	for len(s.items) < n {
		th.Tick()
		v, ok := s.gen(th)
		if !ok {
			s.done, s.gen = true, nil
			return
		}
		th.AllocBytes(LazyItemBytes)
		s.items = append(growCache(s.items, 1), v)
	}
}

// growCache returns items with room for k more, doubling its capacity
// when it grows (append grows large slices by a quarter, which copies a
// long cache several times over).
func growCache(items []Value, k int) []Value {
	if len(items)+k <= cap(items) {
		return items
	}
	c := 2 * cap(items)
	if c < len(items)+k {
		c = len(items) + k
	}
	if c < 8 {
		c = 8
	}
	out := make([]Value, len(items), c)
	copy(out, items)
	return out
}

// Snapshot returns the realised items and whether the seq is complete.
func (s *LazySeq) Snapshot() ([]Value, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items[:len(s.items):len(s.items)], s.done
}
