package fleet

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DefaultMemoryBudget is a worker's memory budget when GOMEMLIMIT is not
// set (WorkerConfig.MemoryBudget).
const DefaultMemoryBudget = 1 << 30

// memoryBudgetShare is the share of GOMEMLIMIT a worker's memory budget
// takes by default: the rest is the worker's own (connections, journal,
// encoding results, what programs build beyond their tool results).
const memoryBudgetShare = 0.75

// defaultMemoryBudget is the budget of a worker given none: three
// quarters of the Go runtime's soft memory limit (GOMEMLIMIT) when one is
// set, else DefaultMemoryBudget.
func defaultMemoryBudget() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return int64(float64(l) * memoryBudgetShare)
	}
	return DefaultMemoryBudget
}

// missionMemory is the memory a mission may hold from its tools: its
// program_memory (the mission's limits over its agent's, as agentrun
// applies them; the default when neither sets one), or -1 when it asks
// for no limit.
func missionMemory(m *messages.Mission) int64 {
	v := m.Limits.ProgramMemory
	if v == 0 && m.Agent != nil {
		v = m.Agent.Limits.ProgramMemory
	}
	limit, ok := messages.LimitOr(v, messages.DefaultProgramMemory)
	if !ok {
		return -1
	}
	return limit
}

// memoryBudget is a worker's bound on what the missions it runs at once
// hold from their tools: each mission reserves its program_memory (at
// most the whole budget) before it runs and gives it back when its result
// is settled; a mission that does not fit waits, first come first served,
// for missions to finish.
type memoryBudget struct {
	size int64 // ≤ 0: no budget
	sem  *semaphore.Weighted
	// raise is what a reservation tells a program that outgrew it
	raise string
}

func newMemoryBudget(size int64) *memoryBudget {
	b := &memoryBudget{size: size, raise: "the mission's program_memory; raise limits.program_memory"}
	if size > 0 {
		b.sem = semaphore.NewWeighted(size)
		b.raise = fmt.Sprintf("the mission's program_memory, which this worker's memory budget caps at %d; raise limits.program_memory", size)
	}
	return b
}

// reservation is what a mission reserved: limit is the bound of the meter
// that charges what it holds (≤ 0: none); held, what it holds of its
// budget's semaphore (sem), which release gives back.
type reservation struct {
	limit int64
	raise string
	sem   *semaphore.Weighted
	held  int64
}

// release gives the reservation back to its budget (a reservation of a
// budget without a bound holds nothing).
func (r reservation) release() {
	if r.sem != nil {
		r.sem.Release(r.held)
	}
}

// release gives back held, what a reservation of b held.
func (b *memoryBudget) release(held int64) {
	reservation{sem: b.sem, held: held}.release()
}

// reserve waits until the budget holds m's memory, or ctx ends, and
// returns the reservation, which its release gives back.
func (b *memoryBudget) reserve(ctx context.Context, m *messages.Mission) (reservation, error) {
	want := missionMemory(m)
	if b.sem == nil {
		return reservation{limit: max(want, 0), raise: b.raise}, nil
	}
	n := want
	if n < 0 || n > b.size {
		n = b.size
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return reservation{}, err
	}
	return reservation{limit: n, raise: b.raise, sem: b.sem, held: n}, nil
}

// idleReturnAfter is how long a worker's missions stay unchanged (none
// starts, none ends) before it gives its spare memory back to the
// operating system.
const idleReturnAfter = 5 * time.Second

// idleReturnOver is the least spare memory worth giving back (with an
// eighth of what the worker keeps, armReturn): below it the collection
// this takes is not worth it.
const idleReturnOver = 32 << 20

// missionChanged notes that a mission started or ended. Once the
// worker's missions stay unchanged for idleReturnAfter (it is idle, or
// every mission it runs waits: on a slow model, a tool), it gives its
// spare memory back to the operating system. A burst (thousands of
// missions starting at once) grows the heap to twice what it keeps, and
// the Go runtime returns the pages it freed only slowly, and not before
// a collection, which a worker that allocates little does not run soon.
// One timer at a time follows the changes.
func (w *Worker) missionChanged() {
	n := w.changes.Add(1)
	if w.returnArmed.CompareAndSwap(false, true) {
		w.armReturn(n, w.idleReturnAfter)
	}
}

// armReturn looks, after d, whether the missions changed since the n-th
// change: if they did it looks again idleReturnAfter later, else it gives
// the spare memory back. While missions run unchanged (they all wait) it
// keeps looking, every fifth of idleReturnAfter: their heartbeats and
// events leave garbage (with 10,000 waiting, 5–8 MB a second) that grows
// the heap toward the collector's goal, twice what the worker keeps, and
// each look gives it back once it exceeds the share worth a collection.
func (w *Worker) armReturn(n int64, d time.Duration) {
	time.AfterFunc(d, func() {
		select {
		case <-w.stopped:
			// the memory is the process's once the worker stopped
			w.returnArmed.Store(false)
			return
		default:
		}
		if cur := w.changes.Load(); cur != n {
			w.armReturn(cur, w.idleReturnAfter)
			return
		}
		if w.Running() > 0 {
			w.returnWaitingSpare()
			w.armReturn(n, w.lookEvery())
			return
		}
		w.lookAt.Store(0)
		// what sync.Pools hold (the encoding buffers and headers of
		// the missions' writes, as many as were in use at once) lives
		// through one collection, as the pool's victim, and the
		// give-back makes one: a collection before it frees what the
		// pools held before the last, so that the give-back's frees
		// the rest. An idle worker's heap is small, so it costs
		// little.
		runtime.GC()
		w.returnSpare()
		w.returnArmed.Store(false)
		if cur := w.changes.Load(); cur != n && w.returnArmed.CompareAndSwap(false, true) {
			w.armReturn(cur, w.idleReturnAfter) // a change came as the timer stood down
		}
	})
}

// returnSpare gives back what the Go runtime holds beyond what the worker
// keeps (the live heap and the stacks) and beyond what the last give-back
// could not free (partly used spans, the runtime's own structures), when
// that is more than returnShare of what it keeps: a give-back costs a
// collection, which marks all that is kept, so it is worth it only for a
// share of that. With 10,000 missions waiting (about 330 MB kept) it
// frees every 41 MB of garbage. What the give-back could not free is the
// spare after it less what was allocated since it began: memory the
// missions took after its collection is theirs, not stuck, and counting
// it would keep the next give-backs from freeing it once it is garbage.
func (w *Worker) returnSpare() {
	m := w.runtimeMemory()
	left := w.returnLeft.Load()
	if m.held <= m.kept+left || m.held-m.kept-left <= returnShare(m.kept) {
		return
	}
	w.giveBack()
	after := w.runtimeMemory()
	left = 0
	if after.held > after.kept {
		left = after.held - after.kept
	}
	left -= min(left, after.allocs-m.allocs)
	w.returnLeft.Store(left)
}

// returnShare is the least spare memory worth a give-back when the worker
// keeps kept: idleReturnOver, or an eighth of kept.
func returnShare(kept uint64) uint64 { return max(idleReturnOver, kept/8) }

// lookEvery is how often the worker looks for spare memory to give back
// while its missions run unchanged: a fifth of idleReturnAfter.
func (w *Worker) lookEvery() time.Duration { return w.idleReturnAfter / 5 }

// returnWaitingSpare is returnSpare for a look made while missions run
// unchanged: it gives back only when they allocate less than half the
// share a look interval, measured since the look before. Missions that
// wait (on models, tools, approvals) leave garbage slowly, and a
// give-back lasts; missions that work (a long program building its data)
// make the garbage again within a look, and a give-back every look would
// cost them a forced collection and the memory's page faults each time
// for nothing. The rate is taken over the time the looks were actually
// apart, so a look that comes late (a loaded machine, a look after
// missions changed) still decides. The first look after the worker was
// idle only takes the measure.
func (w *Worker) returnWaitingSpare() {
	m, now := w.runtimeMemory(), time.Now().UnixNano()
	prevAllocs, prevAt := w.lookAllocs.Swap(m.allocs), w.lookAt.Swap(now)
	if prevAt == 0 || now <= prevAt {
		return
	}
	perLook := float64(m.allocs-prevAllocs) * float64(w.lookEvery()) / float64(now-prevAt)
	if perLook >= float64(returnShare(m.kept)/2) {
		return
	}
	w.returnSpare()
}

// memReading is what the worker reads of the Go runtime's memory to
// decide on a give-back.
type memReading struct {
	// held is the memory the runtime holds from the operating system
	// and has not given back
	held uint64
	// kept is what it keeps after a collection: the heap the last one
	// found live and the goroutine stacks
	kept uint64
	// allocs is what the heap has allocated since the process started
	allocs uint64
}

// runtimeMemory reads the Go runtime's memory (w.readMemory, a test's, or
// readRuntimeMemory).
func (w *Worker) runtimeMemory() memReading {
	if w.readMemory != nil {
		return w.readMemory()
	}
	return readRuntimeMemory()
}

// readRuntimeMemory reads the Go runtime's memory in one metrics.Read.
func readRuntimeMemory() memReading {
	s := [...]metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	metrics.Read(s[:])
	var v [len(s)]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	m := memReading{kept: v[2] + v[3], allocs: v[4]}
	if v[0] > v[1] {
		m.held = v[0] - v[1]
	}
	return m
}
