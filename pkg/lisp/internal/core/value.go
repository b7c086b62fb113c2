package core

import (
	"regexp"
	"sync"
	"sync/atomic"
	"weak"
)

// The declarations of the values: Value and the types a value is made of
// (keywords, vectors, maps and their shapes, tries and stores, sets, host
// records), with the scalar helpers. The types refer to each other, so they
// are declared here together and their methods live in the files above:
// vector.go, record.go, shape.go, trie.go, mapstore.go, builder.go, view.go,
// map.go.

// Value is a PTC-Lisp value. The set of dynamic types is closed:
//
//	nil          Go nil (the only nil; a typed nil pointer never enters a value)
//	bool
//	int64
//	float64
//	string       also the reader's characters (\a is the 1-char string "a")
//	*Keyword     :name
//	*Vector      [1 2 3] (also lists: there is no list type)
//	*Map         {:a 1}
//	*Set         #{1 2}
//	*Closure     a compiled (fn ...)
//	*Builtin     a Go function
//	*Regex       #"..."
//	*LazySeq     (range), (iterate f x), (cycle v), (repeat x), (repeatedly f)
//	*Var         the result of def, prints as #'name
//	*Reduced     the wrapper made by (reduced x)
//
// Values are immutable once built and safe to share between goroutines.
type Value = any

// Keyword is an interned keyword. Keywords read from one program are
// interned per run, so they usually compare by pointer; equality falls back
// to the name, so keywords from different runs (e.g. stored in memory) are
// still equal. A keyword hashes like its name string, which lets flex lookup
// (:id against a host key "id") probe once.
type Keyword struct {
	Name  string
	hash  uint32
	cache atomic.Pointer[kwCache] // last shape lookup (a hint, any goroutine)
	slot  FieldHint               // last host record slot (a hint, see readField)
}

// NewKeyword returns a keyword that is not interned in any run.
func NewKeyword(name string) *Keyword { return &Keyword{Name: name, hash: hashString(name)} }

// Regex is a compiled RE2 regular expression.
type Regex struct {
	Source   string
	Compiled *regexp.Regexp
	lit      string // Literal's answer, set by CompileRegex
	isLit    bool
}

// Var is the result of (def name v); it prints as #'name.
type Var struct{ Name string }

// Reduced wraps a value to stop reduce early.
type Reduced struct{ Val Value }

// Truthy reports whether v counts as true: everything but nil and false.
func Truthy(v Value) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	}
	return true
}

// small-int cache: boxing these into an interface does not allocate.
const smallIntMax = 1024

var smallInts = func() [smallIntMax + 129]Value {
	var a [smallIntMax + 129]Value
	for i := range a {
		a[i] = int64(i - 128)
	}
	return a
}()

// Int boxes n, without allocating for small values.
func Int(n int64) Value {
	if n >= -128 && n <= smallIntMax {
		return smallInts[n+128]
	}
	return n
}

// Vector is an immutable vector backed by a Go slice. Appending to the
// newest version of a vector reuses spare capacity (the tail claim is an
// atomic counter shared by all vectors on the same backing array), so conj
// in a loop is amortized O(1) while older versions stay unchanged.
type Vector struct {
	Slots []Value       // the items, unless src is set
	Claim *atomic.Int64 // number of slots of the backing array in use; nil: none spare
	// src, when set, holds host records viewed as the items: their item
	// slots are made only on first need (see recsView), so a host vector
	// costs no allocation per record until a consumer needs the slots.
	src *recsView
	// FromHost marks vectors converted from host data (and views of them):
	// the host's memory, not counted against the program's limit.
	FromHost bool
}

// NewVector wraps items (which the caller must not modify afterwards).
func NewVector(items []Value) *Vector { return &Vector{Slots: items} }

// EmptyVector is shared; it is never modified.
var EmptyVector = &Vector{}

// recsView is the source of a host vector of records: the host's slice
// itself, and the vector's item slots (recordOf of each record), made at
// most once, on first need. Values are shared between goroutines (pmap),
// so the slots are published with a compare-and-swap: racing first readers
// may each build them, one wins, and all return the winner's.
type recsView struct {
	src   ItemsOf // the host's records
	slots atomic.Pointer[[]Value]
}

// ItemsOf is a vector's items as a loop reads them one by one: its item
// slots, or the host records of a host vector whose slots are not made
// (each read as recordOf, allocating nothing).
type ItemsOf struct {
	Items []Value
	Recs  []map[string]any // host records, when set
	// anys is the host's own slice when it is a []any (recs holds the same
	// maps): what ShareToGo hands back
	anys []any
}

// SmallMapMax is the largest map a program builds as a sorted array map.
const SmallMapMax = 8

// WideMapMax is the largest map decoded or converted from host data that
// is kept as a shape and its values (a wide map) rather than a trie. Tool
// records have 10 to 40 fields; up to 64 the values slice that an assoc
// of an existing key copies (1 KiB) costs no more than the path a trie
// copies, and a new shape per assoc of a new key (a sorted insert into
// at most 64 keys and their index) stays cheap; beyond it a map grows
// and is written as a trie.
const WideMapMax = 64

// MapEntry is one key and its value.
type MapEntry struct {
	Key, Val Value
}

// Map is an immutable map. Up to smallMapMax entries it is a sorted array
// map: a shared key shape plus a value slice (linear scan lookup); a map
// decoded or converted from host data of up to wideMapMax entries with
// string keys is one too (a wide map: its shape indexes its keys); other
// maps are a hash array mapped trie. Iteration and printing follow the key
// key order (numbers, keywords, strings, others by printed
// form).
//
// Lookups are flex: a keyword key also finds the same-named string
// key and the other way round; an exact match wins. Writes (Assoc, Dissoc)
// resolve keys the same way, keeping the existing key's spelling.
type Map struct {
	Shape *Shape  // small or wide map keys; used when root == nil
	Vals  []Value // small or wide map values, parallel to shape.keys
	Root  *Hnode
	// Cache holds a trie's entries in key order, or a view's
	// interpreter form, made on first need
	Cache atomic.Pointer[MapCache]
	// Edit is set only on the accumulator of a reduce whose function uses
	// it linearly (compile-time check, see linearAcc): Assoc then updates
	// the trie in place. It is cleared before the map escapes the reduce.
	Edit *EditToken
	// Src, when set, makes m a view of a host map (view.go): n, shape,
	// vals and root are unset (Len is len(src)), Get and lookupKey read src
	// in place, and every other operation works on the map's interpreter
	// form (cache.form), built on first need.
	Src map[string]any
	// N is the number of entries (an int32 beside the flags keeps the
	// header at 72 bytes: every small map and every view has one)
	N int32
	// OwnVals: vals belongs to this transient and may be updated in place.
	OwnVals bool
	// host marks maps converted from host data: the host's memory, not
	// counted against the program's limit.
	host bool
	// Ord marks a map (or a set's map) ordered by a comparator
	// (sortedby.go): cache holds its entries in that order and the
	// comparator, stored once when the map is built.
	Ord bool
}

// MapCache is what a map computes once and keeps (Map.cache).
type MapCache struct {
	sorted []MapEntry // a trie's entries in key order
	Form   *Map       // a view's or a stored map's interpreter form
	Store  *hashStore // a stored map's entries, until its form is built (mapstore.go)
	ord    *Ordering  // a comparator-ordered map's comparator
	// chunks holds a comparator-ordered map's entries in its order
	// (sortedby.go); sorted is their concatenation, made on first need
	chunks [][]MapEntry
}

// EmptyMap is the empty map (shared, never changed).
var EmptyMap = &Map{Shape: emptyShape}

// Shape is the sorted key list of a map kept as a shape and its values.
// Maps built from host data with the same keys share one shape, so key
// scans hit hot memory, and a keyword caches the slot it found per shape.
// A shape of more than smallMapMax keys (a wide map's: its keys are
// strings and keywords only) also indexes its keys by name, built once
// when the shape is made, and remembers the last shape an assoc of a new
// key or a dissoc led to, so records that change the same way share one
// new shape. Everything but those memos is immutable once made; a memo
// is an atomic pointer (shapes are shared across goroutines: pmap) and
// holds the next shape weakly: the maps of that shape keep it alive, a
// shape does not (else a program that keeps changing a record's keys
// would build a chain of shapes the record holds, uncounted).
type Shape struct {
	Keys []Value
	// Strs and kws index a wide shape's string and keyword keys by name
	Strs, kws map[string]int32
	// added and removed are the memos of the last assoc of a new key and
	// the last dissoc (shapeStep)
	added, removed atomic.Pointer[shapeStep]
}

// shapeStep is a shape's memo: an assoc of key (dissoc: key nil, slot
// at) leads to shape to, key at slot at, while to is alive.
type shapeStep struct {
	key Value
	at  int
	to  weak.Pointer[Shape]
}

var emptyShape = &Shape{}

// kwCache remembers where a keyword was found in a shape.
type kwCache struct {
	shape *Shape
	idx   int
}

// smallMapAlloc co-allocates a small map and its values.
type smallMapAlloc struct {
	m Map
	v [SmallMapMax]Value
}

// ShapeCache interns shapes while converting host data, so records with
// the same keys share one shape. A nil cache interns nothing.
type ShapeCache struct {
	one *Shape // the first shape, compared key by key: most conversions have one
	m   map[string]*Shape
	buf []byte
	// recent holds the last shapes handed out (records nest: a record, its
	// user, the user's address), tried first by match
	recent [4]*Shape
	next   int
	// slabs of small maps, wide map headers and wide map values (small,
	// wide), and the size each was last made at
	smalls                 []smallMapAlloc
	heads                  []Map
	vals                   []Value
	nSmalls, nHeads, nVals int
	// maxSmalls, when not 0, is how many small maps the conversion may
	// make at most (the maps of a decoded message): a first slab of small
	// maps is made no larger
	maxSmalls int
	// made is the charge of the shapes made since madeBytes last took it
	// (shapeBytes): a decoder charges them with its values
	made int64
	// arrKeys are the keys of the last map built by sorting, in the
	// order they arrived (strings, kept in the boxes they came in, so
	// that looking them up in the shape boxes none again); arrShape its
	// shape and arrPerm the slot of each key in it (nil: no note)
	arrKeys  []Value
	arrPerm  []int32
	arrShape *Shape
}

// Hnode is a node of the hash trie. Nodes are never modified once
// reachable from a published Map (set and del copy the path).
type Hnode struct {
	bitmap uint32
	Slots  []hslot
	edit   *EditToken // owner while a transient reduce may mutate it in place
}

// hslot is either a child node or a leaf with all entries whose full hash
// is hash (true collisions and flex pairs such as :id and "id").
type hslot struct {
	Child *Hnode
	Leaf  *hleaf
}

// hleaf holds the entries of one full hash; it is never modified once
// published (updates make a new leaf).
type hleaf struct {
	hash uint32
	Ents []MapEntry
}

// leafAlloc co-allocates a leaf and its single entry.
type leafAlloc struct {
	l hleaf
	e [1]MapEntry
}

const leafChunk = 32

// EditToken identifies one transient session (see Map.edit). It also
// hands out the session's new leaves from chunks: one allocation per
// leafChunk inserts. Leaves are immutable once made, and every chunk was
// charged entry by entry as the map grew, so sharing a chunk changes only
// when the memory is freed, not how much the budget admits.
type EditToken struct {
	leaves []leafAlloc
	// Store holds the transient's entries while they are kept in Go hash
	// maps (mapstore.go); nil when they are in the map's shape or trie
	Store *hashStore
	// Items and done: when a reduce feeds the transient, the number of
	// items it has and the number it has fed so far (0: unknown), from
	// which the store sizes its maps (hashStore.fit)
	Items, Done int
	// wrote holds the keys and values written since writes was last
	// reset that may hold new memory (holdsNothing is false: the first
	// len(wrote); writes counts them all): what a call of the reducing
	// function may have added that the map holds (loopCaller.call,
	// Thread.creditGrown)
	wrote  [8]Value
	writes int
	// chunk is how many leaves newLeaf allocates at a time (0:
	// leafChunk)
	chunk int
	// counts holds running sums kept unboxed (transient_counts.go)
	counts *pendingCounts
}

// pendingCounts are the sums a transient keeps unboxed, not yet boxed
// into its values (transient_counts.go).
type pendingCounts struct {
	set   uint64   // slots whose sum is here, not in Vals
	float uint64   // of set, the slots whose sum is a float64 (bits in n)
	n     []uint64 // the sums by slot: an int64, or a float64's bits
}

// hashStore holds a map's entries by key type.
type hashStore struct {
	ints map[int64]Value
	strs map[string]Value // entries whose key is a string
	kws  map[string]kwEnt // entries whose key is a keyword, by name
}

// kwEnt is an entry with a keyword key.
type kwEnt struct {
	k *Keyword
	v Value
}

// Ordering is a comparator-ordered collection's comparator.
type Ordering struct {
	cmp  Value  // the comparator, called through a Thread
	name string // sorted-map-by or sorted-set-by, named by its errors
	set  bool   // the collection is a set: members are exact keys
}

// ordChunk is the size an ordered map's chunk splits in two beyond (at
// twice it): an insert copies one chunk and the list of chunks, not
// every entry.
const ordChunk = 64

// Set is an immutable set of values, iterated in key order.
type Set struct{ M *Map }

// EmptySet is the empty set (shared, never changed).
var EmptySet = &Set{M: EmptyMap}

// HostMap is a host record read in place: a pointer to the variable that
// holds the host's map (an item of the host's []map[string]any, or a
// variable of its own for a map nested in host data). One pointer is
// stored in a Value without an allocation, and compares (==) and hashes
// in a Go map by identity, as a *Map does (a Go map value would panic in
// both). A record read twice from the same host slot is the same Value.
type HostMap struct{ p *map[string]any }

// Kept is host data a run kept unchanged (a tool result decoded from its
// wire bytes, or Go data FromGo had to convert) as ShareToGo hands it out
// in Step.Memory: the interpreter value itself, not a copy. It stands for
// its Go form (what ToGo gives) everywhere that form goes: encoded as
// msgpack (EncodeMsgpack) or JSON (MarshalJSON) it writes exactly the
// bytes its Go form would; masked (messages.MaskFirewalled) it is its Go
// form masked; given back to a run (Options.Memory, Options.Context, a
// tool's result, FromGo) it is the same interpreter value again, so a
// value kept across turns is never converted. Go returns the Go form,
// built on the first call.
type Kept struct {
	v Value
	// form caches v's Go form and whether v holds a firewalled key
	form goForm
}

// goForm caches, for a value handed to Go callers (Kept, WireResult),
// what they ask of it once: its Go form (ToGo) and whether it holds a
// firewalled map key (MaskFirewalled). Its methods are in togo.go.
type goForm struct {
	plainOnce sync.Once
	plain     any
	fwOnce    sync.Once
	fw        bool
}
