package fleet

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// A worker gives the memory a burst left behind back to the operating
// system once its missions stay unchanged: not while missions keep
// starting and ending, but when every mission it runs waits (on a slow
// model), and when it is idle. What the worker decides is counted through
// its giveBack; the memory itself is measured only where it must go down,
// since any other running worker of the test process gives back all of
// the process's spare memory. The Go runtime's background scavenger also
// returns spare memory, slowly; on a loaded machine it may return a burst
// before the worker's look, which then rightly finds nothing to give
// back, so each phase grows a burst anew, up to five times, until a
// give-back takes it. A give-back counts for a burst only when it began
// after the burst was freed: the worker's looks go on between the phases
// (a mission still runs), and one that a loaded machine delays may come
// while the next burst is live, freeing none of it. The decisions alone
// are tested on a set reading of the memory below (fakeMemory).
func TestQuietWorkerGivesFreedMemoryBack(t *testing.T) {
	// begun and given count the give-backs begun and ended; one timer at
	// a time gives back, so they end in the order they begin
	var begun, given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 500 * time.Millisecond, stopped: make(chan struct{}),
		giveBack: func() { begun.Add(1); debug.FreeOSMemory(); given.Add(1) }}
	defer close(w.stopped)
	// a burst after start goes back in a give-back begun after the burst
	// was freed, the runtime holding at least half the burst less than
	// after it
	givenBack := func(what string, start func()) {
		t.Helper()
		for try := 1; ; try++ {
			held := growBurst(t)
			mark := begun.Load()
			start()
			deadline := time.Now().Add(5 * time.Second)
			for given.Load() <= mark && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if given.Load() > mark {
				if now := readRuntimeMemory().held; now > held-idleBurst/2 {
					t.Fatalf("%s gave back, yet the runtime held %d after the burst, still %d", what, held, now)
				}
				return
			}
			if try == 5 {
				m := readRuntimeMemory()
				t.Fatalf("%s gave nothing back after five bursts (%d give-backs; the runtime holds %d, keeps %d; the last give-back left %d)", what, given.Load(), m.held, m.kept, w.returnLeft.Load())
			}
		}
	}

	// missions keep starting and ending (a change every 5 ms, for more
	// than twice idleReturnAfter): nothing is given back. A machine that
	// stalls the test for idleReturnAfter leaves the missions unchanged
	// that long, and a give-back then is right: the phase is run again.
	for try := 1; ; try++ {
		growBurst(t)
		before := given.Load()
		last, gap := time.Now(), time.Duration(0)
		for range 250 {
			w.missionChanged()
			now := time.Now()
			gap, last = max(gap, now.Sub(last)), now
			time.Sleep(5 * time.Millisecond)
		}
		n := given.Load() - before
		gap = max(gap, time.Since(last))
		if n == 0 {
			break
		}
		if gap < w.idleReturnAfter {
			t.Fatalf("a worker whose missions kept changing (at most %v apart) gave memory back %d times", gap, n)
		}
		if try == 5 {
			// this phase could not be checked on a machine this
			// stalled; the phases after it still are
			t.Logf("the machine stalled the test for %v or more in five tries: no check of missions that keep changing", w.idleReturnAfter)
			break
		}
	}

	// then a mission runs, waiting: the freed memory goes back
	w.slots <- struct{}{}
	givenBack("a worker whose missions all wait", w.missionChanged)

	// the last mission ends: what it freed goes back (a retry is another
	// mission that starts and ends)
	ended := false
	givenBack("an idle worker", func() {
		if ended {
			w.slots <- struct{}{}
			w.missionChanged()
		}
		<-w.slots
		w.missionChanged()
		ended = true
	})
}

// idleBurst is the memory growBurst allocates and frees.
const idleBurst = 128 << 20

// growBurst allocates idleBurst, touches it and frees it, so that the Go
// runtime holds it spare; it returns what the runtime holds. A give-back
// that comes between the burst's collection and the reading (a look of
// the worker's) takes the burst back at once: the burst is grown again.
func growBurst(t *testing.T) uint64 {
	t.Helper()
	var held uint64
	for range 5 {
		b := make([]byte, idleBurst)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page: the memory is resident
		}
		runtime.KeepAlive(b)
		runtime.GC() // freed, but still held by the runtime
		if held = readRuntimeMemory().held; held >= idleBurst/2 {
			return held
		}
	}
	t.Fatalf("the runtime holds %d bytes after the burst; the test needs it to hold the burst", held)
	return 0
}

// fakeMemory is a worker's reading of the Go runtime's memory set by a
// test: what the tests below decide on is the spare and the missions'
// allocation rate, which the real runtime's background scavenger and a
// loaded machine's scheduler would change under them.
type fakeMemory struct {
	held, kept, allocs atomic.Uint64
	// perRead is added to allocs at each reading: the missions'
	// allocation between looks
	perRead atomic.Uint64
	reads   atomic.Int64
	given   atomic.Int64
	// frees says a give-back frees the spare (else it frees nothing)
	frees bool
	// allocAfter is memory the missions allocate right after a
	// give-back's collection, once (live, not yet counted as kept)
	allocAfter atomic.Uint64
}

// newFakeMemory is a worker keeping 100 MiB and holding spare beyond it.
func newFakeMemory(spare uint64, frees bool) *fakeMemory {
	m := &fakeMemory{frees: frees}
	m.kept.Store(100 << 20)
	m.held.Store(100<<20 + spare)
	return m
}

func (m *fakeMemory) read() memReading {
	m.reads.Add(1)
	return memReading{held: m.held.Load(), kept: m.kept.Load(), allocs: m.allocs.Add(m.perRead.Load())}
}

// giveBack counts a give-back and frees the spare when m frees.
func (m *fakeMemory) giveBack() {
	m.given.Add(1)
	if m.frees {
		m.held.Store(m.kept.Load())
	}
	a := m.allocAfter.Swap(0)
	m.held.Add(a)
	m.allocs.Add(a)
}

// pile makes spare memory pile up again.
func (m *fakeMemory) pile(spare uint64) { m.held.Store(m.kept.Load() + spare) }

// worker is a worker with m as its memory and one slot of two taken when
// running; it stops when the test ends, so its timer gives nothing back
// in the tests after it.
func (m *fakeMemory) worker(t *testing.T, idleReturnAfter time.Duration, running bool) *Worker {
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: idleReturnAfter, stopped: make(chan struct{}),
		giveBack: m.giveBack, readMemory: m.read}
	if running {
		w.slots <- struct{}{}
	}
	t.Cleanup(func() { close(w.stopped) })
	return w
}

// waitFor waits up to 30 s (a loaded machine delays timers) for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// A stopped worker gives nothing back: the memory is the process's then,
// and a timer armed before Stop does not free it on the worker's behalf.
func TestStoppedWorkerGivesNothingBack(t *testing.T) {
	m := newFakeMemory(200<<20, true)
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 100 * time.Millisecond, stopped: make(chan struct{}),
		giveBack: m.giveBack, readMemory: m.read}
	w.missionChanged()
	close(w.stopped)
	waitFor(t, "the timer stands down", func() bool { return !w.returnArmed.Load() })
	if n := m.given.Load(); n != 0 {
		t.Fatalf("a stopped worker gave memory back %d times", n)
	}
}

// While missions wait unchanged, the garbage their heartbeats and events
// leave grows the heap again toward the collector's goal: the worker
// keeps looking, and gives back again what piled up since the last time.
// Once no mission is left it stops looking.
func TestWaitingWorkerGivesBackWhatPilesUpAgain(t *testing.T) {
	m := newFakeMemory(200<<20, true)
	w := m.worker(t, 100*time.Millisecond, true) // a mission runs, waiting
	w.missionChanged()
	waitFor(t, "the first give-back", func() bool { return m.given.Load() >= 1 })
	m.pile(200 << 20) // garbage piles up, no mission starts or ends
	waitFor(t, "the second give-back", func() bool { return m.given.Load() >= 2 })

	<-w.slots // the mission ends
	w.missionChanged()
	waitFor(t, "an idle worker stops looking", func() bool { return !w.returnArmed.Load() })
}

// Memory a give-back could not free (here: none) is not given back again
// at every look while missions wait: each look would be a collection for
// nothing.
func TestWaitingWorkerDoesNotRepeatAGiveBackThatFreedNothing(t *testing.T) {
	m := newFakeMemory(200<<20, false)
	w := m.worker(t, 50*time.Millisecond, true)
	w.missionChanged()
	waitFor(t, "the first give-back", func() bool { return m.given.Load() >= 1 })
	reads := m.reads.Load()
	waitFor(t, "ten more looks", func() bool { return m.reads.Load() >= reads+10 })
	if n := m.given.Load(); n != 1 {
		t.Fatalf("gave back %d times what it could not free; want once", n)
	}
}

// Memory the missions allocate right after a give-back's collection is
// not what the give-back could not free: once it is garbage, a look gives
// it back.
func TestGiveBackDoesNotCountWhatWasAllocatedAfterIt(t *testing.T) {
	m := newFakeMemory(200<<20, true)
	m.allocAfter.Store(128 << 20)
	w := m.worker(t, 100*time.Millisecond, true)
	w.missionChanged()
	waitFor(t, "the first give-back", func() bool { return m.given.Load() >= 1 })
	// the 128 MiB allocated after it are garbage now: held is still
	// kept+128 MiB
	waitFor(t, "a give-back of what was allocated after the first", func() bool { return m.given.Load() >= 2 })
}

// While missions wait, the worker looks every fifth of idleReturnAfter,
// not only once per idleReturnAfter: with 10,000 waiting their garbage
// grows RSS by 40–50 MB in 5 s. What piles up after a give-back goes back
// at the next look, a fifth of idleReturnAfter later (here 0.8 s), where
// looking once per idleReturnAfter would take 4 s.
func TestWaitingWorkerLooksOften(t *testing.T) {
	m := newFakeMemory(200<<20, true)
	w := m.worker(t, 4*time.Second, true)
	w.missionChanged()
	waitFor(t, "the first give-back", func() bool { return m.given.Load() >= 1 })
	first := time.Now()
	m.pile(200 << 20)
	waitFor(t, "the second give-back", func() bool { return m.given.Load() >= 2 })
	if d := time.Since(first); d > 3*w.idleReturnAfter/4 {
		t.Fatalf("what piled up after a give-back was not given back in %s; want it within %s", d.Round(time.Millisecond), 3*w.idleReturnAfter/4)
	}
	t.Logf("given back again %s after the first time", time.Since(first).Round(time.Millisecond))
}

// A worker whose missions run unchanged but keep allocating (a long
// program building its data) gives nothing back while they do: what a
// give-back would free is made again within a look, and each would cost
// them a forced collection and the page faults of taking the memory
// again. Once they only wait, it gives back.
func TestWorkingWorkerGivesNothingBackWhileItAllocates(t *testing.T) {
	m := newFakeMemory(200<<20, true)
	// 1 GiB between two looks, far more than half the share worth a
	// give-back (32 MiB at least)
	m.perRead.Store(1 << 30)
	w := m.worker(t, 500*time.Millisecond, true) // a mission runs
	w.missionChanged()
	// the first look, then ten more
	waitFor(t, "eleven looks", func() bool { return m.reads.Load() >= 11 })
	if n := m.given.Load(); n != 0 {
		t.Fatalf("gave back %d times while the mission allocated", n)
	}
	// the mission now only waits: the next looks give the spare back
	m.perRead.Store(0)
	waitFor(t, "a give-back once the mission stopped allocating", func() bool { return m.given.Load() >= 1 })
}

// A look that comes late (a loaded machine delays timers, or the looks
// resume after missions changed) decides on the missions' allocation
// rate over the time since the look before: a little allocated over ten
// look intervals is waiting, the same rate's worth of work is not.
func TestLateLookDecidesOnTheRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perLook  float64 // allocated a look interval, in shares worth a give-back
		wantGive int64
	}{
		{"waiting", 0.15, 1},
		{"working", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMemory(200<<20, true)
			w := m.worker(t, time.Second, false)
			share := float64(returnShare(m.kept.Load()))
			const looks = 10
			m.allocs.Store(1 << 40)
			w.lookAllocs.Store(m.allocs.Load() - uint64(tc.perLook*share*looks))
			w.lookAt.Store(time.Now().Add(-looks * w.lookEvery()).UnixNano())
			w.returnWaitingSpare()
			if n := m.given.Load(); n != tc.wantGive {
				t.Fatalf("gave back %d times; want %d", n, tc.wantGive)
			}
		})
	}
}

// What sync.Pools hold when a worker goes idle (a burst of missions'
// writes leaves as many encoding buffers pooled as were in use at once)
// goes back with the give-back: a pooled object outlives one collection,
// as the pool's victim, and a give-back is one.
func TestIdleGiveBackFreesWhatPoolsHeld(t *testing.T) {
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 1), idleReturnAfter: 200 * time.Millisecond, stopped: make(chan struct{}),
		giveBack: func() { debug.FreeOSMemory(); given.Add(1) }}
	defer close(w.stopped)
	objects := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const n, size = 2048, 32 << 10 // 64 MiB pooled
	runtime.GC()
	before := objects()
	// no collection while the buffers go into the pool, as at the end of
	// a burst: each would move them to the pool's victim, the next drop them
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	fill := make([]byte, size)
	for range n {
		b := bytes.NewBuffer(make([]byte, 0, size))
		b.Write(fill) // touched: resident
		putPublishBuffer(b)
	}
	pooled := objects() - before
	if pooled < n*size/2 {
		t.Fatalf("%d bytes pooled of %d put; the test needs the pool to hold them", pooled, n*size)
	}
	debug.SetGCPercent(gcPercent)
	// a mission started and ended: the worker goes idle
	w.slots <- struct{}{}
	w.missionChanged()
	<-w.slots
	w.missionChanged()
	waitFor(t, "the idle worker's give-back", func() bool { return given.Load() > 0 && !w.returnArmed.Load() })
	if left := int64(objects()) - int64(before); left > int64(pooled)/4 {
		t.Fatalf("after the idle give-back the heap holds %d bytes more than before the pooled burst (%d were pooled)", left, pooled)
	}
}
