package fleet

import (
	"sync"
	"time"
)

// endWaitMax bounds how long a run's end waits for the worker's backlog
// to clear (finishGate); a sixth of the mission consumers' AckWait bounds
// it where that is shorter, so the wait stays well within the AckWait
// that runs from the run's last heartbeat (every third of it).
const endWaitMax = time.Second

// endsWaitingMax bounds the ended runs of a worker that wait at once
// (finishGate); an end past it is stored at once. Each one waiting keeps
// its goroutine, its Step and what of its memory reservation it may still
// hold (missionRun.freeForEnd).
const endsWaitingMax = 1024

// finishGate lets the missions that wait for a worker's slots go before
// the ends of its runs already over. An ended run still has its result,
// record, status, events and ack to store: about half of what a mission
// costs the worker and the NATS server. When many missions come at once
// (a burst of approvals, each mission waiting for its call to run),
// storing the ends of those already run would take that half of the CPU
// from the runs still to start, and each of them would wait longer for
// its call. So while the worker's loop knows of missions waiting in its
// lanes (the backlog), an ended run gives back its slot, its running
// quota's lease and the memory it no longer needs, and waits until the
// backlog clears or the wait's bound passes; then it stores its end. Where no backlog is known (a
// fleet keeping up with its missions) an end is stored at once, as is one
// past endsWaitingMax, or one that would keep most of its memory
// reservation while it waits.
type finishGate struct {
	maxWait time.Duration

	mu      sync.Mutex
	backlog bool
	clear   chan struct{} // closed while there is no backlog
	waiting int           // ends waiting
}

// newFinishGate returns the gate of a worker whose mission consumers have
// the given AckWait.
func newFinishGate(ackWait time.Duration) *finishGate {
	clear := make(chan struct{})
	close(clear)
	return &finishGate{clear: clear, maxWait: min(endWaitMax, ackWait/6)}
}

// setBacklog says whether missions wait in the worker's lanes for its
// slots (the loop's view each time it waits).
func (g *finishGate) setBacklog(b bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b == g.backlog {
		return
	}
	g.backlog = b
	if b {
		g.clear = make(chan struct{})
	} else {
		close(g.clear)
	}
}

// waitingNow returns how many ends wait.
func (g *finishGate) waitingNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// wait returns once an ended run may store its end: at once where there
// is no backlog or endsWaitingMax others wait. Otherwise it calls free,
// which gives back what the run no longer needs, or reports false, having
// given nothing back, when the run would keep too much to be worth
// waiting; then it returns when the backlog clears, the wait's bound
// passes or stop is closed.
func (g *finishGate) wait(stop <-chan struct{}, free func() bool) {
	g.mu.Lock()
	if !g.backlog || g.waiting >= endsWaitingMax || g.maxWait <= 0 {
		g.mu.Unlock()
		return
	}
	g.waiting++
	clear := g.clear
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	if !free() {
		return
	}
	t := time.NewTimer(g.maxWait)
	defer t.Stop()
	select {
	case <-clear:
	case <-t.C:
	case <-stop:
	}
}
