package core

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ptcfleet/ptc/internal/ctxval"
)

// Meter charges the memory a mission holds from its tools against the
// mission's budget: every tool result decoded from its wire bytes (the
// bytes the result is kept as, plus the interpreter values decoded from
// them, charged as they are built) and the record of every tool call (its
// name, arguments and timing, kept in the run's ToolCalls and a mission's
// trace). What is charged stays charged for the meter's life: the trace
// holds it until the mission's result is published.
//
// One Meter serves a whole mission: every run of its agents (turns,
// sub-agents, pmap branches) charges the same one, so a mission's limit
// bounds what all of them hold together. A run takes its meter from
// Options.Meter, else from its context (WithMeter), else makes its own,
// limited to the run's MaxMemory; it hands the meter on to its tools in
// their context, so a tool that decodes its result with DecodeWireResult
// (or a decoder that calls Charge as it reads) is charged as the result
// enters, and a result over the limit fails before it is decoded whole.
//
// The charge of a decoded value follows the interpreter's accounting
// (docs/lisp.md, "Memory"): 16 B per collection slot plus a vector's
// 48 B header, 48 B per entry of a map of up to eight entries and 128 B
// per entry of a larger one, 16 B plus the bytes of a string, 8 B per
// number. A run also adds what it charges to the memory its program holds
// (Options.MaxMemory): within one run the program and the results it gets
// share one budget; what earlier runs of the mission hold stays on the
// meter only, so that a sub-agent with a smaller program_memory of its own
// is not charged for its parent's results.
//
// A Meter is safe for concurrent use. A nil *Meter charges nothing and
// never fails.
type Meter struct {
	limit int64
	raise string
	used  atomic.Int64
}

// NewMeter returns a meter that fails a charge taking what is held past
// limit bytes (limit ≤ 0: no limit, the meter only counts). raise tells
// the reader of the error how to allow more (e.g. "raise
// limits.program_memory"); it ends the error's message.
func NewMeter(limit int64, raise string) *Meter {
	return &Meter{limit: limit, raise: raise}
}

// Limit returns the meter's limit in bytes (≤ 0: none).
func (m *Meter) Limit() int64 {
	if m == nil {
		return 0
	}
	return m.limit
}

// Used returns the bytes charged and not released.
func (m *Meter) Used() int64 {
	if m == nil {
		return 0
	}
	return m.used.Load()
}

// Charge adds n bytes to what the meter holds. When that takes it past
// its limit the charge is not kept and Charge returns a *Error of
// KindMemory (memory_limit) naming the limit and how to raise it; the
// caller stops reading and releases what it charged for the value it was
// building.
func (m *Meter) Charge(n int64) error {
	if m == nil || n <= 0 {
		return nil
	}
	used := m.used.Add(n)
	if m.limit > 0 && used > m.limit {
		m.used.Add(-n)
		return m.limitError(used)
	}
	return nil
}

// Release gives back n bytes charged for something no longer held (a
// value whose decoding failed).
func (m *Meter) Release(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.used.Add(-n)
}

func (m *Meter) limitError(wanted int64) *Error {
	msg := fmt.Sprintf("memory limit exceeded: tool results and the record of tool calls would hold %d bytes, more than the limit of %d", wanted, m.limit)
	if m.raise != "" {
		msg += " (" + m.raise + ")"
	}
	return &Error{Kind: KindMemory, Msg: msg,
		Hint: "ask tools for less (filter, page or limit the call) and call them fewer times per mission"}
}

type meterKey struct{}

// WithMeter returns ctx carrying m: the runs and tools given the context
// charge m (see Meter).
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// WithNewMeter returns ctx carrying a new meter (NewMeter(limit, raise))
// and that meter, made in one allocation.
func WithNewMeter(ctx context.Context, limit int64, raise string) (context.Context, *Meter) {
	mc := &ctxval.Ctx[meterKey, Meter]{Context: ctx, V: Meter{limit: limit, raise: raise}}
	return mc, &mc.V
}

// MeterFrom returns the meter ctx carries, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// chargeEvery is how many bytes a decoder builds between charges to its
// meter: a result over the limit stops within this much of it.
const chargeEvery = 64 << 10

// charger counts what a decoder builds and charges it to a meter every
// chargeEvery bytes, so that a result over the limit fails while it is
// read, not after.
type charger struct {
	m       *Meter
	total   int64 // counted so far, charged or pending
	pending int64 // counted, not yet charged
}

// Add counts n bytes built; it fails when the meter refuses them.
func (c *charger) Add(n int64) error {
	c.total += n
	c.pending += n
	if c.pending >= chargeEvery {
		return c.flush()
	}
	return nil
}

// flush charges what is pending.
func (c *charger) flush() error {
	p := c.pending
	c.pending = 0
	if err := c.m.Charge(p); err != nil {
		c.total -= p
		return err
	}
	return nil
}

// undo releases what was charged (the decoding failed).
func (c *charger) undo() {
	c.m.Release(c.total - c.pending)
	c.total, c.pending = 0, 0
}

// Charges of decoded values (see Meter).
const (
	numberBytes = 8             // a boxed number
	stringBytes = 2 * SlotBytes // a boxed string's header, before its bytes
)

// scalarCharge is the charge of a decoded scalar (its slot is its
// container's): none for a small integer, whose box is shared (Int).
func scalarCharge(v Value) int64 {
	switch x := v.(type) {
	case int64:
		if x >= -128 && x <= smallIntMax {
			return 0
		}
		return numberBytes
	case float64:
		return numberBytes
	case string:
		return stringBytes + int64(len(x))
	}
	return 0
}

// vectorCharge is the charge of a decoded vector of n items.
func vectorCharge(n int) int64 { return VectorBytes + int64(n)*SlotBytes }

// mapHeaderBytes is a map's header (Map), smallMapBytes a decoded small
// map: its header and its values, allocated together (smallMapAlloc), with
// its keys in a shape shared by the records of one result (a shape is
// charged once, when the decoder makes it: shapeBytes).
const (
	mapHeaderBytes = int64(unsafe.Sizeof(Map{}))
	smallMapBytes  = int64(unsafe.Sizeof(smallMapAlloc{}))
	shapeHeadBytes = int64(unsafe.Sizeof(Shape{}))
)

// mapCharge is the charge of a decoded map of n entries: a small map, a
// wide map (its header and n values), or a trie beyond wideMapMax.
func mapCharge(n int) int64 {
	switch {
	case n > WideMapMax:
		return mapHeaderBytes + int64(n)*trieEntryBytes
	case n > SmallMapMax:
		return mapHeaderBytes + int64(n)*SlotBytes
	}
	return smallMapBytes
}

// shapeBytes is the charge of a new shape of n keys: its header, its key
// slots and, for a wide shape, the entries of its index (a Go map entry
// of a string and an int32 with its share of the map's groups: 32 B).
func shapeBytes(n int) int64 {
	c := shapeHeadBytes + int64(n)*SlotBytes
	if n > SmallMapMax {
		c += int64(n) * 2 * SlotBytes
	}
	return c
}

// goDataBytes is the charge of plain Go data (a tool call's arguments, as
// ToGo gives them) by the rules of a decoded value, a Go map of more than
// smallMapMax entries charged as a trie (it holds its keys itself).
func goDataBytes(x any) int64 {
	switch v := x.(type) {
	case map[string]any:
		n := mapCharge(len(v))
		if len(v) > SmallMapMax {
			n = mapHeaderBytes + int64(len(v))*trieEntryBytes
		}
		for k, e := range v {
			n += int64(len(k)) + goDataBytes(e)
		}
		return n
	case []any:
		n := vectorCharge(len(v))
		for _, e := range v {
			n += goDataBytes(e)
		}
		return n
	case string:
		return stringBytes + int64(len(v))
	case nil, bool:
		return 0
	}
	return numberBytes
}

// SlotBytes is the charge for one collection slot (an interface value).
const SlotBytes = 16

// VectorBytes is the charge for a vector's header (its slice, claim and
// host flag: a 48-byte object), made by a vector literal or MakeVector.
// conj charges none: the header it makes replaces the one it was given.
const VectorBytes = 3 * SlotBytes

// slotString is the length up to which a string counts as part of the
// slot that holds it: the sizer measures only longer strings.
const slotString = 16

// ConjSlotBytes is the charge for a slot that conj appends: the slot and
// the spare capacity of a backing array that grows by doubling.
const ConjSlotBytes = 2 * SlotBytes

// entryBytes is the charge for one entry of a small map or set (at most
// smallMapMax entries: its value's slot, its key's share of the shape and
// of the map's header).
const entryBytes = 3 * SlotBytes

// trieEntryBytes is the charge for one entry of a larger map or set (a
// hash trie): its leaf (64 B), its slot in a node (16 B), its share of the
// nodes and the boxes of numeric keys and values — 120–136 B an entry
// measured on maps of 200k integers.
const trieEntryBytes = 8 * SlotBytes
