package fleet

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// connDrops tells the tool calls of a worker whether its connection
// dropped (DISCONNECTED or RECONNECTING) while they waited, with one
// status listener on the connection for every call: a listener of each
// call's own is registered and removed under the connection's lock, which
// every publish on it takes too. The listener is registered at the first
// call; stop removes it.
type connDrops struct {
	nc *nats.Conn

	mu     sync.Mutex
	status chan nats.Status
	// next's channel closes at the next drop; one signal is shared by
	// every caller until then
	next    *dropSignal
	stopped bool
	done    chan struct{} // closed once watch returned (nil: not started)
}

func newConnDrops(nc *nats.Conn) *connDrops { return &connDrops{nc: nc} }

// since returns a channel closed once the connection drops after this
// call (or a moment before it: the listener's goroutine may not have
// passed on a drop yet), nil once stopped or when d is nil (no
// connection watched).
func (d *connDrops) since() <-chan struct{} {
	return d.signal().c
}

// signal is since as a dropSignal, one for every caller until the next
// drop: taking it allocates nothing. Stopped, or with no connection
// watched (d nil), it never fires.
func (d *connDrops) signal() *dropSignal {
	if d == nil {
		return &noDrops
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return &noDrops
	}
	if d.done == nil {
		d.next, d.done = &dropSignal{make(chan struct{})}, make(chan struct{})
		d.status = d.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING)
		go d.watch(d.status)
	}
	return d.next
}

// dropSignal holds a channel closed at a connection's next drop (nil:
// none comes). It is never changed once made.
type dropSignal struct{ c chan struct{} }

// noDrops is the signal of no connection watched: its nil channel never
// closes.
var noDrops dropSignal

// fired reports whether the connection dropped since the signal was
// taken; a nil signal (none taken) is taken for a drop, since one may
// have come unseen.
func (d *dropSignal) fired() bool {
	if d == nil {
		return true
	}
	select {
	case <-d.c:
		return true
	default:
		return false
	}
}

// watch closes the channel since gave out at each status the listener
// hears, until stop removes it.
func (d *connDrops) watch(status chan nats.Status) {
	defer close(d.done)
	for range status {
		d.mu.Lock()
		if !d.stopped {
			close(d.next.c)
			d.next = &dropSignal{make(chan struct{})}
		}
		d.mu.Unlock()
	}
}

// stop removes the listener and waits for its goroutine; calls waiting
// then hear of no further drop.
func (d *connDrops) stop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.stopped = true
	done, status := d.done, d.status
	d.mu.Unlock()
	if done == nil {
		return
	}
	d.nc.RemoveStatusListener(status)
	<-done
}
