package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loop fetches missions for free slots until Stop.
//
// While missions are queued it sweeps every priority, highest first, with
// no-wait fetches for the free slots. When nothing is queued it keeps one
// long poll (Fetch of one message, IdleWait) outstanding per priority, each
// on a slot reserved for it, so that a mission of any priority starts as soon
// as it is submitted; a poll that ends empty gives its slot back. With fewer
// free slots than priorities the polls start from a rotating priority.
//
// A sweep skips the priorities known to hold nothing: one with a long poll
// outstanding (the server fills a waiting poll before anything else, so
// its consumer had nothing pending when the poll was made and whatever
// arrives since goes to the poll), and one whose poll just ended empty or
// with the last message pending. Whatever is queued there later goes to
// the next poll, which the loop starts at once.
func (w *Worker) loop() {
	defer close(w.loopDone)
	var polls sync.WaitGroup
	defer polls.Wait()
	n := len(w.consum)
	polling := make([]bool, n)
	drained := make([]bool, n) // the poll that just ended left nothing pending
	pollDone := make(chan pollEnd, n)
	turn := 0
	for !w.isStopping() {
		if w.layoutLost.Load() {
			w.resetup()
			continue
		}
		got := 0
		for i, c := range w.consum {
			free := cap(w.slots) - len(w.slots)
			if free == 0 {
				break
			}
			if polling[i] || drained[i] {
				continue
			}
			got += w.fetch(c, free, false)
		}
		clear(drained)
		if got > 0 {
			continue
		}
		for k := range n {
			i := (turn + k) % n
			if polling[i] {
				continue
			}
			if !w.reserveSlot() {
				break
			}
			polling[i] = true
			polls.Add(1)
			c := w.consum[i]
			go func() {
				defer polls.Done()
				pollDone <- pollEnd{i: i, drained: w.poll(c)}
			}()
		}
		turn++
		select {
		case e := <-pollDone:
			polling[e.i], drained[e.i] = false, e.drained
		case <-w.slotFreed:
		case <-w.stopping:
			return
		}
	}
}

// reserveSlot takes a free slot for a long poll, if there is one.
func (w *Worker) reserveSlot() bool {
	w.reserved.Add(1)
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		w.reserved.Add(-1)
		return false
	}
}

// pollEnd is how the long poll of consumer i ended: drained when it left
// nothing pending (it ran out of time, or its message was the last one).
type pollEnd struct {
	i       int
	drained bool
}

// poll waits up to IdleWait for one mission of c on a reserved slot: a
// mission that arrives takes the slot, otherwise the slot is given back.
// It reports whether c was left with nothing pending: the poll ended
// empty without an error, or its message's metadata counts none after it.
func (w *Worker) poll(c jetstream.Consumer) bool {
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(w.cfg.IdleWait))
	if err != nil {
		w.fetchFailed(err)
		w.reserved.Add(-1)
		w.releaseSlot()
		return false
	}
	started, drained := false, false
	for msg := range batch.Messages() {
		if started || w.isStopping() {
			_ = msg.NakWithDelay(0) // arrived after Stop: hand it back
			continue
		}
		started = true
		if meta, err := msg.Metadata(); err == nil && meta.NumPending == 0 {
			drained = true
		}
		w.reserved.Add(-1)
		w.inflight.Add(1)
		go w.process(msg)
	}
	ended := w.batchEnded(batch)
	if !started {
		w.reserved.Add(-1)
		w.releaseSlot()
		return ended
	}
	return drained
}

// fetch pulls up to n messages and starts them; it returns how many.
func (w *Worker) fetch(c jetstream.Consumer, n int, wait bool) int {
	var batch jetstream.MessageBatch
	var err error
	if wait {
		batch, err = c.Fetch(n, jetstream.FetchMaxWait(w.cfg.IdleWait))
	} else {
		batch, err = c.FetchNoWait(n)
	}
	if err != nil {
		w.fetchFailed(err)
		return 0
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		if w.isStopping() {
			_ = msg.NakWithDelay(0) // arrived after Stop: hand it back
			continue
		}
		w.slots <- struct{}{}
		w.inflight.Add(1)
		go w.process(msg)
	}
	w.batchEnded(batch)
	return got
}

func (w *Worker) releaseSlot() {
	<-w.slots
	select {
	case w.slotFreed <- struct{}{}:
	default:
	}
}

// fetchFailed logs and notes a fetch that could not start, then waits
// IdleWait (or until Stop) before the next one.
func (w *Worker) fetchFailed(err error) {
	w.log.Warn().Err(err).Msg("fetch failed")
	w.noteFetchError(err)
	select {
	case <-time.After(w.cfg.IdleWait):
	case <-w.stopping:
	}
}

// batchEnded logs and notes the error that ended a batch, unless the
// batch merely ran out of time or messages; it reports whether it merely
// did.
func (w *Worker) batchEnded(batch jetstream.MessageBatch) bool {
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		w.log.Debug().Err(err).Msg("fetch ended")
		w.noteFetchError(err)
		return false
	}
	return true
}

// noteFetchError marks the layout lost when a fetch says the consumer or
// its stream is gone (deleted, or lost with a node), or finds no responders:
// a pull request sent to a consumer that no longer exists gets no answer
// (a consumer deleted while no pull of ours was outstanding ends that way,
// not with ErrConsumerDeleted). The loop then sets the layout up again,
// which reads before it writes and, while JetStream is unavailable, keeps
// the worker not ready and retries.
func (w *Worker) noteFetchError(err error) {
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrNoResponders) {
		w.layoutLost.Store(true)
	}
}

// resetup runs the start-up setup again from the loop goroutine (the only
// reader of w.consum): the worker is not ready meanwhile, and retries until
// the layout is back or Stop is called.
func (w *Worker) resetup() {
	w.ready.Store(false)
	w.log.Warn().Msg("mission consumers gone; setting the layout up again")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	st, err := EnsureStores(ctx, w.js, w.storeConfig())
	if err != nil {
		return // stopping
	}
	for i, p := range w.cfg.Priorities {
		w.consum[i] = st.Consumers[p]
	}
	w.layoutLost.Store(false)
	if !w.isStopping() {
		w.ready.Store(true)
	}
	w.log.Info().Msg("layout set up again; fetching")
}
