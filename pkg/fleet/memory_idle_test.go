package fleet

import (
	"runtime"
	"testing"
	"time"
)

// A worker left without missions gives the memory freed since back to the
// operating system (what its Go runtime holds falls by what a burst
// freed); one that still runs a mission keeps it.
func TestIdleWorkerGivesFreedMemoryBack(t *testing.T) {
	const burst = 128 << 20
	grow := func() {
		b := make([]byte, burst)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page: the memory is resident
		}
		runtime.KeepAlive(b)
		runtime.GC() // freed, but still held by the runtime
	}
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 20 * time.Millisecond}

	// a mission still running: nothing is given back
	grow()
	held := runtimeHeld()
	if held < burst/2 {
		t.Fatalf("the runtime holds %d bytes after the burst; the test needs it to hold the burst", held)
	}
	w.slots <- struct{}{}
	w.missionEnded()
	time.Sleep(200 * time.Millisecond)
	if now := runtimeHeld(); now < held-burst/2 {
		t.Fatalf("a busy worker gave memory back: the runtime held %d, now %d", held, now)
	}

	// the last mission ends: the freed memory goes back
	<-w.slots
	w.missionEnded()
	deadline := time.Now().Add(10 * time.Second)
	for runtimeHeld() > held-burst/2 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle worker kept the burst: the runtime held %d, still %d", held, runtimeHeld())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
