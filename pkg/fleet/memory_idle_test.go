package fleet

import (
	"runtime"
	"testing"
	"time"
)

// A worker gives the memory a burst left behind back to the operating
// system once its missions stay unchanged: not while missions keep
// starting and ending, but when every mission it runs waits (on a slow
// model), and when it is idle.
func TestQuietWorkerGivesFreedMemoryBack(t *testing.T) {
	const burst = 128 << 20
	grow := func() uint64 {
		b := make([]byte, burst)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page: the memory is resident
		}
		runtime.KeepAlive(b)
		runtime.GC() // freed, but still held by the runtime
		held := runtimeHeld()
		if held < burst/2 {
			t.Fatalf("the runtime holds %d bytes after the burst; the test needs it to hold the burst", held)
		}
		return held
	}
	givenBack := func(what string, held uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for runtimeHeld() > held-burst/2 {
			if time.Now().After(deadline) {
				t.Fatalf("%s kept the burst: the runtime held %d, still %d", what, held, runtimeHeld())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w := &Worker{slots: make(chan struct{}, 2), idleReturnAfter: 200 * time.Millisecond}

	// missions keep starting and ending: nothing is given back
	held := grow()
	for range 40 {
		w.missionChanged()
		time.Sleep(5 * time.Millisecond)
	}
	if now := runtimeHeld(); now < held-burst/2 {
		t.Fatalf("a worker whose missions kept changing gave memory back: the runtime held %d, now %d", held, now)
	}

	// then a mission runs, waiting: the freed memory goes back
	w.slots <- struct{}{}
	w.missionChanged()
	givenBack("a worker whose missions all wait", held)

	// the last mission ends: what it freed goes back
	held = grow()
	<-w.slots
	w.missionChanged()
	givenBack("an idle worker", held)
}
