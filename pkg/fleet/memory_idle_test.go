package fleet

import (
	"runtime"
	"runtime/debug"
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
// the process's spare memory.
func TestQuietWorkerGivesFreedMemoryBack(t *testing.T) {
	grow := func() uint64 { return growBurst(t) }
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 200 * time.Millisecond,
		giveBack: func() { debug.FreeOSMemory(); given.Add(1) }}
	// the memory goes back, in at least calls give-backs so far (while a
	// mission waits the worker keeps looking, and a look during a burst
	// gives back nothing of it: the next one does)
	givenBack := func(what string, held uint64, calls int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for given.Load() < calls || runtimeHeld() > held-idleBurst/2 {
			if time.Now().After(deadline) {
				t.Fatalf("%s kept the burst (%d give-backs): the runtime held %d, still %d", what, given.Load(), held, runtimeHeld())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// missions keep starting and ending (a change every 5 ms, for more
	// than twice idleReturnAfter): nothing is given back
	held := grow()
	for range 100 {
		w.missionChanged()
		time.Sleep(5 * time.Millisecond)
	}
	if n := given.Load(); n != 0 {
		t.Fatalf("a worker whose missions kept changing gave memory back %d times", n)
	}

	// then a mission runs, waiting: the freed memory goes back (no burst
	// again here: the timer the changes armed may fire while one grows)
	w.slots <- struct{}{}
	w.missionChanged()
	givenBack("a worker whose missions all wait", held, 1)

	// the last mission ends: what it freed goes back
	held = grow()
	<-w.slots
	w.missionChanged()
	givenBack("an idle worker", held, 2)
}

// idleBurst is the memory growBurst allocates and frees.
const idleBurst = 128 << 20

// growBurst allocates idleBurst, touches it and frees it, so that the Go
// runtime holds it spare; it returns what the runtime holds.
func growBurst(t *testing.T) uint64 {
	t.Helper()
	b := make([]byte, idleBurst)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1 // touch every page: the memory is resident
	}
	runtime.KeepAlive(b)
	runtime.GC() // freed, but still held by the runtime
	held := runtimeHeld()
	if held < idleBurst/2 {
		t.Fatalf("the runtime holds %d bytes after the burst; the test needs it to hold the burst", held)
	}
	return held
}

// A stopped worker gives nothing back: the memory is the process's then,
// and a timer armed before Stop does not free it on the worker's behalf.
func TestStoppedWorkerGivesNothingBack(t *testing.T) {
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 100 * time.Millisecond, stopped: make(chan struct{}),
		giveBack: func() { given.Add(1) }}
	growBurst(t)
	w.missionChanged()
	close(w.stopped)
	time.Sleep(5 * w.idleReturnAfter)
	if n := given.Load(); n != 0 {
		t.Fatalf("a stopped worker gave memory back %d times", n)
	}
	if w.returnArmed.Load() {
		t.Error("a stopped worker's timer is still armed")
	}
}

// While missions wait unchanged, the garbage their heartbeats and events
// leave grows the heap again toward the collector's goal: the worker
// keeps looking, and gives back again what piled up since the last time.
// Once no mission is left it stops looking.
func TestWaitingWorkerGivesBackWhatPilesUpAgain(t *testing.T) {
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 100 * time.Millisecond,
		giveBack: func() { debug.FreeOSMemory(); given.Add(1) }}
	waitGiven := func(calls int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); given.Load() < calls; {
			if time.Now().After(deadline) {
				t.Fatalf("given back %d times; want %d", given.Load(), calls)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	w.slots <- struct{}{} // a mission runs, waiting
	growBurst(t)
	w.missionChanged()
	waitGiven(1)
	growBurst(t) // garbage piles up, no mission starts or ends
	waitGiven(2)

	<-w.slots // the mission ends
	w.missionChanged()
	for deadline := time.Now().Add(10 * time.Second); w.returnArmed.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("an idle worker keeps looking for memory to give back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Memory a give-back could not free (here: none, the give-back is only
// counted) is not given back again at every look while missions wait:
// each look would be a collection for nothing.
func TestWaitingWorkerDoesNotRepeatAGiveBackThatFreedNothing(t *testing.T) {
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 50 * time.Millisecond,
		giveBack: func() { given.Add(1) }}
	w.slots <- struct{}{}
	defer func() { <-w.slots; w.missionChanged() }()
	growBurst(t)
	w.missionChanged()
	time.Sleep(10 * w.idleReturnAfter)
	if n := given.Load(); n != 1 {
		t.Fatalf("gave back %d times what it could not free; want once", n)
	}
}

// While missions wait, the worker looks every fifth of idleReturnAfter,
// not only once per idleReturnAfter: with 10,000 waiting their garbage
// grows RSS by 40–50 MB in 5 s. The look after the burst sees it
// allocated and passes; the one after gives back: two looks, 0.8 s here,
// against 4 s were it to look once per idleReturnAfter.
func TestWaitingWorkerLooksOften(t *testing.T) {
	var given atomic.Int64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 2 * time.Second, stopped: make(chan struct{}),
		giveBack: func() { debug.FreeOSMemory(); given.Add(1) }}
	w.slots <- struct{}{}
	// stopped, its timer gives nothing back in the tests after this one
	defer close(w.stopped)
	growBurst(t)
	w.missionChanged()
	for deadline := time.Now().Add(10 * time.Second); given.Load() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing given back")
		}
	}
	first := time.Now()
	growBurst(t)
	for given.Load() < 2 {
		if d := time.Since(first); d > w.idleReturnAfter {
			t.Fatalf("what piled up after a give-back was not given back in %s; want it within %s", d.Round(time.Millisecond), w.idleReturnAfter)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("given back again %s after the first time", time.Since(first).Round(time.Millisecond))
}

// A worker whose missions run unchanged but keep allocating (a long
// program building its data) gives nothing back while they do: what a
// give-back would free is made again within a look, and each would cost
// them a forced collection and the page faults of taking the memory
// again. Once they only wait, it gives back. The spare is real (a
// burst's); the missions' allocation is set through the worker's
// reading of it, so that a test goroutine the scheduler holds back on a
// loaded machine cannot pass for a mission that stopped allocating.
func TestWorkingWorkerGivesNothingBackWhileItAllocates(t *testing.T) {
	var given, looks atomic.Int64
	var working atomic.Bool
	working.Store(true)
	var allocs atomic.Uint64
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 500 * time.Millisecond, stopped: make(chan struct{}),
		giveBack: func() { debug.FreeOSMemory(); given.Add(1) },
		allocated: func() uint64 {
			looks.Add(1)
			if working.Load() {
				// 1 GiB between two looks, far more than half the share
				// worth a give-back (32 MiB at least)
				return allocs.Add(1 << 30)
			}
			return allocs.Load()
		}}
	w.slots <- struct{}{} // a mission runs
	// stopped, its timer gives nothing back in the tests after this one
	defer close(w.stopped)
	growBurst(t)
	w.missionChanged()
	// the first look, then ten more
	var spare uint64
	for deadline := time.Now().Add(30 * time.Second); looks.Load() < 11; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d looks in 30 s; want 11", looks.Load())
		}
		if held, kept := runtimeHeld(), runtimeKept(); held > kept && held-kept > returnShare(kept) {
			spare = held - kept
		}
	}
	if spare == 0 {
		t.Fatal("the spare never reached the share worth a give-back: the test shows nothing")
	}
	if n := given.Load(); n != 0 {
		t.Fatalf("gave back %d times while the mission allocated", n)
	}
	// the mission now only waits: the next looks give the spare back
	working.Store(false)
	for deadline := time.Now().Add(30 * time.Second); given.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing given back once the mission stopped allocating")
		}
	}
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
			var given atomic.Int64
			var allocs atomic.Uint64
			w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: time.Second,
				giveBack:  func() { debug.FreeOSMemory(); given.Add(1) },
				allocated: func() uint64 { return allocs.Load() }}
			growBurst(t)
			share := float64(returnShare(runtimeKept()))
			const looks = 10
			allocs.Store(1 << 40)
			w.lookAllocs.Store(allocs.Load() - uint64(tc.perLook*share*looks))
			w.lookAt.Store(time.Now().Add(-looks * w.lookEvery()).UnixNano())
			w.returnWaitingSpare()
			if n := given.Load(); n != tc.wantGive {
				t.Fatalf("gave back %d times; want %d", n, tc.wantGive)
			}
		})
	}
}
