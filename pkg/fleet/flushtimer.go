package fleet

import (
	"sync"
	"time"
)

// timerHolder is what a flushTimer calls when it fires.
type timerHolder interface{ timerFired() }

// flushTimer is a timer that calls its holder's timerFired when it fires:
// a mission's journal's linger (Journal.Record) and its events' delay
// (emitter.emit). Its timer and the timer's func are made once and kept,
// in flushTimers, from one holder to the next, where time.AfterFunc made
// both for each mission.
type flushTimer struct {
	t      *time.Timer
	mu     sync.Mutex
	holder timerHolder
}

// flushTimers holds the flushTimers released while pending, with no
// firing left to come.
var flushTimers sync.Pool

// startFlushTimer returns a flushTimer that calls h.timerFired after d.
func startFlushTimer(h timerHolder, d time.Duration) *flushTimer {
	ft, _ := flushTimers.Get().(*flushTimer)
	if ft == nil {
		ft = &flushTimer{holder: h}
		ft.mu.Lock() // the func, should it fire at once, waits until t is set
		defer ft.mu.Unlock()
		ft.t = time.AfterFunc(d, ft.fire)
		return ft
	}
	ft.mu.Lock()
	ft.holder = h
	ft.mu.Unlock()
	ft.t.Reset(d)
	return ft
}

func (ft *flushTimer) fire() {
	ft.mu.Lock()
	h := ft.holder
	ft.mu.Unlock()
	if h != nil {
		h.timerFired()
	}
}

// reset makes ft fire after d, as time.Timer.Reset does.
func (ft *flushTimer) reset(d time.Duration) { ft.t.Reset(d) }

// release stops ft for good. When its timer was pending, no firing of it
// is left to come, and ft goes back to flushTimers for another holder;
// one that fired (its holder's timerFired may yet run) is left as it is.
func (ft *flushTimer) release() {
	if !ft.t.Stop() {
		return
	}
	ft.mu.Lock()
	ft.holder = nil
	ft.mu.Unlock()
	flushTimers.Put(ft)
}
