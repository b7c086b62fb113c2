package fleet

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// lane is one mission consumer the worker fetches from: a lane of a
// priority (messages.MissionLanes), or the priority's missions stored
// with no lane. Only the loop goroutine reads or writes it.
type lane struct {
	c jetstream.Consumer
	// next is the subject of the consumer's pull requests (pullSubject).
	next string
	// pending is how many messages the consumer had left after the last
	// message the worker fetched from it; 0 once a fetch found it empty.
	pending uint64
	// bell is set when a mission on the lane was heard of and no fetch
	// has found a mission on the lane since (a fetch may come before the
	// mission is stored: where submits are heard as published, or on a
	// cluster node whose copy of the stream lags).
	bell    bool
	polling bool // a long poll on the lane is open
	// due is set for every lane when the full sweep is called for
	// (markDue) and cleared when a fetch looks at the lane.
	due bool
	// turn counts the missions taken from the lane in its current turn
	// of the round robin, which lasts its weight in missions.
	turn int
}

// fullSweepEvery is how often the worker checks for missions no bell
// announced (a redelivery, a mission stored while the worker was not
// listening; without notices, a mission woken by its schedule) and, when
// there may be some, looks at every lane, empty or not: such a mission is
// fetched about this long after it is due.
const fullSweepEvery = time.Second

// fullSweepBackstop bounds how long a worker with free slots goes without
// looking at every lane, whatever the check for unannounced missions
// says: a mission no notification reached (a notice or bell lost, a
// pending count or poll that raced with the store, a miscount in the
// check) waits at most about this long.
const fullSweepBackstop = 10 * time.Second

// probesPerPass bounds the lanes with no known missions a pass of the
// loop looks at, so that the full sweep, spread over passes, never holds
// up the lanes with missions and the submits heard for long.
const probesPerPass = 1

// pollResult is what a long poll on lane i found.
type pollResult struct {
	i       int
	got     bool
	pending uint64
}

// laneIndex is the index in w.lanes of lane l (messages.MissionLanes for
// the missions with no lane) of priority index pi.
func laneIndex(pi, l int) int { return pi*(messages.MissionLanes+1) + l }

// setLanes lays the stores' consumers out as w.lanes: for each of the
// worker's priorities its lanes, then its consumer of missions with no
// lane.
//
// Set up again (resetup), the lanes keep their state and get the new
// consumers: a long poll still open on one reports to the same lane.
func (w *Worker) setLanes(st *Stores) {
	var cs []jetstream.Consumer
	for _, p := range w.cfg.Priorities {
		cs = append(cs, st.Lanes[p]...)
		cs = append(cs, st.Consumers[p])
	}
	if len(w.lanes) == len(cs) {
		for i, c := range cs {
			w.lanes[i].c, w.lanes[i].next = c, pullSubject(c)
		}
		return
	}
	w.lanes = make([]*lane, len(cs))
	for i, c := range cs {
		w.lanes[i] = &lane{c: c, next: pullSubject(c)}
	}
}

// onQueued hears a mission MISSIONS stored (its headers, republished on
// its queued subject) and rings the bell of its lane, so that a worker
// with free slots fetches it from that lane at once.
func (w *Worker) onQueued(msg *nats.Msg) {
	if _, p, _, l, ok := messages.ParseQueuedSubject(msg.Subject); ok {
		if pi, ok := w.priorityIndex[p]; ok {
			w.ringLane(laneIndex(pi, l))
		}
	}
}

// onSubmit hears a mission submitted on its submit subject and rings the
// bell of its lane, so that a worker with free slots fetches from that
// lane at once: where MISSIONS does not republish what it stores.
func (w *Worker) onSubmit(msg *nats.Msg) {
	if sub, p, _, ok := messages.ParseSubmitSubject(msg.Subject); ok {
		w.ring(sub, p)
	}
}

// onWake hears a suspended or waiting mission queued again on its wake
// subject (a decision, a quota lease given back) or its woken subject (a
// decision, into MISSIONS directly) and rings the bell of the lane
// MISSIONS stores it in, so that a worker with free slots fetches it at
// once rather than at its next full sweep.
func (w *Worker) onWake(msg *nats.Msg) {
	sub, p, _, ok := messages.ParseWakeSubject(msg.Subject)
	if !ok {
		sub, p, _, ok = messages.ParseWokenSubject(msg.Subject)
	}
	if ok {
		w.ring(sub, p)
	}
}

// ring rings the bell of the lane of submitter sub's missions of
// priority p, so that the worker fetches from it when it has a slot.
func (w *Worker) ring(sub, p string) {
	if pi, ok := w.priorityIndex[p]; ok {
		w.ringLane(laneIndex(pi, messages.SubmitLane(sub)))
	}
}

// ringLane rings the bell of lane i (an index in w.lanes).
func (w *Worker) ringLane(i int) {
	select {
	case w.bells <- i:
	default:
		// the loop is behind: its next full sweep looks at every lane
		w.bellLost.Store(true)
	}
}

// loop fetches missions for free slots until Stop.
//
// Each pass sweeps the lanes that have missions (known from the last
// fetch's pending count or from a submit heard on the lane), priorities
// highest first, and within a priority shares the free slots among the
// lanes in turn (round robin from the lane after the one last served), so
// a submitter's backlog in one lane takes no more than its share while
// other lanes have missions. Every fullSweepEvery it checks whether
// MISSIONS may hold missions no bell announced (unannounced) and if so
// looks at every lane, probesPerPass lanes a pass after those; so does a
// worker that starts, sets its layout up again or lost a bell, and, as a
// backstop whatever the check says, one that has not looked at every lane
// for fullSweepBackstop.
// A lane known only by its bell gets a long poll (Fetch of one message,
// IdleWait) on a slot reserved for it, so that the mission starts as soon
// as its consumer can deliver it; a poll that ends empty gives its slot
// back. When no lane has a mission the loop waits for a bell.
func (w *Worker) loop() {
	defer close(w.loopDone)
	defer w.handBackStrays()
	var polls sync.WaitGroup
	defer polls.Wait()
	pollDone := make(chan pollResult, len(w.lanes))
	// startPoll opens a long poll on lane i on a slot reserved for it, if
	// a slot is free.
	startPoll := func(i int) bool {
		if !w.reserveSlot() {
			return false
		}
		l := w.lanes[i]
		l.bell, l.polling, l.due = false, true, false
		polls.Add(1)
		// The pull goes out from here, before a runner is woken to wait
		// for its mission.
		pl, err := w.pulls.send(l.next, 1, w.cfg.IdleWait)
		w.hand(runJob{poll: func() jetstream.Msg {
			defer polls.Done()
			msg, pending := w.poll(pl, err)
			pollDone <- pollResult{i: i, got: msg != nil, pending: pending}
			return msg
		}})
		return true
	}
	next := make([]int, len(w.cfg.Priorities)) // per priority, the lane to serve first
	w.markDue()
	probe := 0 // the lane to look at next in the full sweep
	probeFirst := false
	sweepEvery := cmp.Or(w.cfg.sweepEvery, fullSweepEvery)
	fullTimer := time.NewTimer(sweepEvery)
	defer fullTimer.Stop()
	// checked carries the answer of the check for unannounced missions
	// in flight, if checking
	checked := make(chan sweepCheck, 1)
	checking := false
	var last sweepCheck // the last check's answer
	tick := func() {
		fullTimer.Reset(sweepEvery)
		if time.Since(w.dueAt) >= fullSweepBackstop {
			w.markDue()
		}
		if checking {
			return
		}
		checking = true
		polls.Add(1)
		go func(prev sweepCheck) {
			defer polls.Done()
			checked <- w.unannounced(prev)
		}(last)
	}
	answer := func(c sweepCheck) {
		checking, last = false, c
		if c.due {
			w.markDue()
		}
	}
	for !w.isStopping() {
		if w.layoutLost.Load() {
			w.resetup()
			w.markDue()
			continue
		}
		select {
		case <-fullTimer.C:
			tick()
		case c := <-checked:
			answer(c)
		case msg := <-w.strays:
			w.adoptStray(msg)
		case msg := <-w.pulls.ch:
			w.pulls.take(msg, nil)
		default:
		}
		w.takeBells()
		if w.freeSlots() > 0 {
			// The lanes with missions go first, the full sweep's probes
			// after them, unless the last pass left no slot to probe
			// with: then the probes go first, so that a lane with an
			// unannounced mission is looked at while others keep every
			// slot busy.
			var got, n int
			var more bool
			if probeFirst {
				n, more = w.probe(&probe)
				got = w.sweep(next, startPoll)
			} else {
				got = w.sweep(next, startPoll)
				n, more = w.probe(&probe)
			}
			probeFirst = more && w.freeSlots() == 0
			if got+n > 0 || (more && w.freeSlots() > 0) {
				continue
			}
		}
		for i, l := range w.lanes {
			if l.bell && !l.polling && !startPoll(i) {
				break
			}
		}
		// ended runs wait to store their ends while missions wait for
		// slots (finishGate)
		backlog := false
		for _, l := range w.lanes {
			backlog = backlog || l.pending > 0 || l.bell
		}
		w.finishes.setBacklog(backlog)
		select {
		case r := <-pollDone:
			l := w.lanes[r.i]
			l.polling = false
			if r.got {
				l.pending = r.pending
			}
		case i := <-w.bells:
			w.lanes[i].bell = true
		case <-w.slotFreed:
		case msg := <-w.strays:
			w.adoptStray(msg)
		case msg := <-w.pulls.ch:
			w.pulls.take(msg, nil)
		case <-fullTimer.C:
			tick()
		case c := <-checked:
			answer(c)
		case <-w.stopping:
			return
		}
	}
}

// takeBells marks the lanes whose missions were heard of since the last
// look, and every lane for the full sweep when a bell was lost.
func (w *Worker) takeBells() {
	if w.bellLost.Swap(false) {
		w.markDue()
	}
	for {
		select {
		case i := <-w.bells:
			w.lanes[i].bell = true
		default:
			return
		}
	}
}

func (w *Worker) freeSlots() int { return cap(w.slots) - len(w.slots) }

// sweepCheck is what a check for unannounced missions found.
type sweepCheck struct {
	due     bool   // the lanes are due for the full sweep
	lastSeq uint64 // the stream's last sequence when it was read
	// firstSeq is the stream's first sequence when it was read, the
	// oldest message; firstSince is when the checks first saw it there,
	// and lookedAt when one last had it checked for a message its
	// consumer gave up on (settleOldest)
	firstSeq             uint64
	firstSince, lookedAt time.Time
}

// unannounced checks whether MISSIONS may hold a mission no bell
// announced: a redelivery, a mission stored while the worker was not
// listening, or (without notices) one woken by its schedule. It reads the
// stream's info (one request) and finds the lanes due when the stream
// holds more messages than the missions this worker runs and its oldest
// message was stored before the previous check (prev): every message
// stored since was announced, and its bell fetches it, so messages that
// are all that new need no sweep. An unannounced one is found at the
// check after the one following its storage at the latest. Old messages
// held by other workers or by this worker's longer runs, or queued ones
// of priorities this worker does not fetch, make the lanes due (the
// sweep looks), as does a failed read. A mission finishing as the stream
// is read counts as held, so an unannounced one may wait for the next
// check.
//
// An oldest message that stays the oldest for givenUpAfter is checked for
// one its consumer gave up on (settleOldest), once per givenUpAfter while
// it stays.
func (w *Worker) unannounced(prev sweepCheck) sweepCheck {
	ctx, cancel := context.WithTimeout(context.Background(), fullSweepEvery)
	defer cancel()
	go func() {
		select {
		case <-w.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	info, err := w.st.Missions.Info(ctx)
	if err != nil {
		prev.due = true
		return prev
	}
	st := info.State
	now := time.Now()
	c := sweepCheck{
		due:      st.Msgs > uint64(w.Running()+w.finishes.waitingNow()) && st.FirstSeq <= prev.lastSeq,
		lastSeq:  st.LastSeq,
		firstSeq: st.FirstSeq, firstSince: now,
	}
	if st.Msgs > 0 && st.FirstSeq == prev.firstSeq {
		c.firstSince, c.lookedAt = prev.firstSince, prev.lookedAt
		after := cmp.Or(w.cfg.givenUpAfter, givenUpAfter)
		if now.Sub(c.firstSince) >= after && now.Sub(c.lookedAt) >= after {
			c.lookedAt = now
			w.goSettleOldest(st.FirstSeq)
		}
	}
	return c
}

// markDue marks every lane for the full sweep.
func (w *Worker) markDue() {
	w.dueAt = time.Now()
	for _, l := range w.lanes {
		l.due = true
	}
}

// probe looks at up to probesPerPass lanes marked due that have no known
// missions, from lane *from on, with a no-wait fetch for one free slot
// each. It returns how many missions it started and whether lanes are
// still due.
func (w *Worker) probe(from *int) (int, bool) {
	got, looked := 0, 0
	for k := range len(w.lanes) {
		i := (*from + k) % len(w.lanes)
		l := w.lanes[i]
		if !l.due {
			continue
		}
		if looked == probesPerPass || w.freeSlots() == 0 || w.layoutLost.Load() {
			*from = i
			return got, true
		}
		l.due = false
		if l.polling || l.pending > 0 || l.bell {
			continue // looked at by the sweep, or polled
		}
		looked++
		n, pending := w.fetch(l, 1)
		got += n
		if n > 0 {
			l.pending = pending
			// The lane stays due until a fetch finds it empty: missions
			// handed back (NakDelay) come back as redeliveries, which no
			// bell announces and the pending count leaves out, so a
			// burst of them would otherwise be fetched one per check.
			l.due = true
		}
	}
	return got, false
}

// sweep fetches missions for the free slots from the lanes that have some
// and returns how many it started. Priorities go highest first; within
// one, the lanes with missions share the free slots in turn, starting
// from next[priority], which is left at the lane after the last one
// served. A lane's turn lasts its weight (per-submitter quotas): it
// takes up to weight shares of the free slots, and keeps the turn over
// passes until it took weight missions. A lane known only by its bell
// (no pending count) gets a long poll of one mission (startPoll) rather
// than a no-wait fetch: the stream tells its consumers of a message
// apart from republishing it, so a fetch the bell makes may reach the
// consumer before it knows of the mission, and the poll waits for it
// (it ends empty, after IdleWait, only where another worker took it).
func (w *Worker) sweep(next []int, startPoll func(int) bool) int {
	got := 0
	var cands []int
	for pi := range w.cfg.Priorities {
		cands = cands[:0]
		for k := range messages.MissionLanes + 1 {
			i := laneIndex(pi, (next[pi]+k)%(messages.MissionLanes+1))
			if l := w.lanes[i]; !l.polling && (l.pending > 0 || l.bell) {
				cands = append(cands, i)
			}
		}
		for len(cands) > 0 {
			free := w.freeSlots()
			if free == 0 {
				return got
			}
			weight := 0
			for _, i := range cands {
				weight += w.laneWeight(i)
			}
			share := max(1, free/weight)
			more := cands[:0]
			for _, i := range cands {
				free = w.freeSlots()
				if free == 0 || w.layoutLost.Load() {
					return got
				}
				l := w.lanes[i]
				lw := w.laneWeight(i)
				if l.pending == 0 {
					// only its bell: one mission known, counted as taken
					// (what else the lane has, the poll's pending count
					// tells)
					if !startPoll(i) {
						return got
					}
					got++
					if l.turn++; l.turn >= lw {
						l.turn = 0
						next[pi] = (i - laneIndex(pi, 0) + 1) % (messages.MissionLanes + 1)
					} else {
						next[pi] = i - laneIndex(pi, 0)
					}
					continue
				}
				want := min(max(share*lw-l.turn, 1), free, maxPullBatch)
				n, pending := w.fetch(l, want)
				l.due = false
				got += n
				keep := false
				if n > 0 {
					// a bell heard before this fetch is answered by it; one
					// that found nothing stays set: the consumer may not
					// know of the mission yet, and the lane gets a long
					// poll in the next pass
					l.bell = false
					// the lane keeps its turn until it took its weight
					l.turn += n
					if l.turn >= lw {
						l.turn = 0
						next[pi] = (i - laneIndex(pi, 0) + 1) % (messages.MissionLanes + 1)
					} else {
						next[pi], keep = i-laneIndex(pi, 0), n == want
					}
				}
				if n < want {
					l.pending, l.turn = 0, 0
					continue
				}
				l.pending = pending
				if keep && pending > 0 {
					// its turn goes on: a slot freed meanwhile is its, in
					// the next pass, not the next lane's
					return got
				}
				if pending > 0 {
					more = append(more, i)
				}
			}
			cands = more
		}
	}
	return got
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

// poll waits up to IdleWait for the one mission of pl, a long poll on a
// reserved slot (err the error sending it): a mission that arrives takes
// the slot, otherwise the slot is given back. It returns the mission, for
// the caller to run (nil when none arrived), and how many the consumer
// had left.
func (w *Worker) poll(pl *pull, err error) (jetstream.Msg, uint64) {
	if err != nil {
		w.fetchFailed(err)
		w.reserved.Add(-1)
		w.releaseSlot()
		return nil, 0
	}
	t := time.NewTimer(w.cfg.IdleWait + pullMargin)
	got, err := w.pulls.recv(pl, t.C)
	t.Stop()
	w.pulls.end(pl, func(msg *nats.Msg) {
		if got == nil {
			got = msg // came as the pull was given up on
		} else {
			w.strayPull(msg)
		}
	})
	if err != nil {
		w.pullEnded(err)
	}
	if got != nil && w.isStopping() {
		w.nakPulled(got) // arrived after Stop
		got = nil
	}
	if got == nil {
		w.reserved.Add(-1)
		w.releaseSlot()
		return nil, 0
	}
	w.reserved.Add(-1)
	w.inflight.Add(1)
	return newPulledMsg(w.nc, got), ackPending(got.Reply)
}

// fetch pulls up to n messages from lane l without waiting and starts
// them; it returns how many, and how many the consumer had left after the
// last. Only the loop goroutine calls it.
func (w *Worker) fetch(l *lane, n int) (int, uint64) {
	pl, err := w.pulls.send(l.next, n, 0)
	if err != nil {
		w.fetchFailed(err)
		return 0, 0
	}
	if w.fetchTimer == nil {
		w.fetchTimer = time.NewTimer(pullMargin)
	} else {
		w.fetchTimer.Reset(pullMargin)
	}
	got := 0
	var pending uint64
	for got < n {
		msg, err := w.pulls.recv(pl, w.fetchTimer.C)
		if msg == nil {
			if err != nil {
				w.pullEnded(err)
			}
			break
		}
		got++
		pending = ackPending(msg.Reply)
		if w.isStopping() {
			w.nakPulled(msg) // arrived after Stop
			continue
		}
		w.slots <- struct{}{}
		w.inflight.Add(1)
		w.start(newPulledMsg(w.nc, msg))
	}
	w.fetchTimer.Stop()
	w.pulls.end(pl, w.adoptStray)
	return got, pending
}

// ackPending is the consumer's count of messages left after the one
// whose acknowledgement subject is reply (0 when it cannot be read).
func ackPending(reply string) uint64 {
	md, err := parseAckMetadata(reply)
	if err != nil {
		return 0
	}
	return md.NumPending
}

// strayPull takes a message that came to the worker's pulls' subscription
// for no open pull: a mission delivered to a pull given up on (its
// answer late, or the connection back after a reconnect) goes to the loop
// (adoptStray), or back to the consumer when the loop is stopping or
// behind; a status that says the consumer is gone is noted.
func (w *Worker) strayPull(msg *nats.Msg) {
	if status, _, err := pullStatus(msg); status {
		if err != nil {
			w.noteFetchError(err)
		}
		return
	}
	if msg.Reply == "" {
		return
	}
	if !w.isStopping() {
		select {
		case w.strays <- msg:
			return
		default:
		}
	}
	w.stats.straysBack.Add(1)
	w.nakPulled(msg)
}

// adoptStray runs a mission delivered to a pull that had ended, on a free
// slot, or hands it back to its consumer at once when no slot is free or
// the worker is stopping. Only the loop goroutine calls it.
func (w *Worker) adoptStray(msg *nats.Msg) {
	if w.isStopping() || w.freeSlots() == 0 {
		w.stats.straysBack.Add(1)
		w.nakPulled(msg)
		return
	}
	w.stats.straysRun.Add(1)
	w.slots <- struct{}{}
	w.inflight.Add(1)
	w.start(newPulledMsg(w.nc, msg))
}

// nakPulled gives a delivered mission the worker will not run back to its
// consumer, for redelivery at once.
func (w *Worker) nakPulled(msg *nats.Msg) { _ = newPulledMsg(w.nc, msg).NakWithDelay(0) }

// handBackStrays hands the missions still waiting for the loop back to
// their consumers, as the loop ends: the strays, and those the pulls'
// subscription holds (no pull is open any more).
func (w *Worker) handBackStrays() {
	for {
		select {
		case msg := <-w.strays:
			w.nakPulled(msg)
		case msg := <-w.pulls.ch:
			if status, _, _ := pullStatus(msg); !status && msg.Reply != "" {
				w.nakPulled(msg)
			}
		default:
			return
		}
	}
}

// A mission runs on a goroutine that ran an earlier one when one waits
// (start): a new goroutine's stack starts small and is copied to a larger
// one each time a mission's calls outgrow it, several times a mission
// (the agent loop, the interpreter, the codecs), which cost an idle
// mission about as much CPU as its JetStream calls. Up to keptRunners
// goroutines wait for the next mission for runnerIdle each. Missions
// finish in bursts while the next fetch is out, so up to the worker's
// Slots more (as many as run missions at once) wait for runnerGrace, about
// what that fetch takes on a loaded machine: a busy worker starts its
// missions on goroutines that ran missions, and a burst leaves no more
// than keptRunners behind it for longer than runnerGrace.
const (
	keptRunners = 4
	runnerIdle  = time.Second
	runnerGrace = 5 * time.Millisecond
)

// runJob is what a runner goroutine is handed: a mission to run (msg),
// or a long poll (poll), whose mission, if one arrives, the same
// goroutine runs. A poll's mission so starts on the goroutine that
// received it, with no hand-off to another one on the idle path, and the
// poll's fetch runs on a stack that ran missions before.
type runJob struct {
	msg  jetstream.Msg
	poll func() jetstream.Msg
}

// start runs msg's mission (w.process) on a waiting runner goroutine, or
// on a new one.
func (w *Worker) start(msg jetstream.Msg) { w.hand(runJob{msg: msg}) }

// hand gives j to a waiting runner goroutine, or to a new one.
func (w *Worker) hand(j runJob) {
	select {
	case w.runners <- j:
	default:
		w.stats.runnersStarted.Add(1)
		go w.runner(j)
	}
}

// runner does j, then the jobs hand gives it, until none comes for
// runnerIdle (runnerGrace when keptRunners others wait), the worker
// stops, or Slots others wait. One that has run no mission yet ends when
// its poll brings none, as a goroutine started for a poll alone did: the
// missions that runners wait for go to the ones whose stacks grew.
func (w *Worker) runner(j runJob) {
	var idle *time.Timer
	ran := false
	for {
		msg := j.msg
		if j.poll != nil {
			msg = j.poll()
		}
		if msg == nil {
			if !ran {
				return
			}
		} else {
			ran = true
			w.process(msg)
		}
		n := w.idleRunners.Add(1)
		if n > int32(cap(w.slots)) {
			w.idleRunners.Add(-1)
			return
		}
		wait := cmp.Or(w.cfg.runnerIdle, runnerIdle)
		if n > keptRunners {
			wait = cmp.Or(w.cfg.runnerGrace, runnerGrace)
		}
		if idle == nil {
			idle = time.NewTimer(wait)
			defer idle.Stop()
		} else {
			idle.Reset(wait)
		}
		select {
		case j = <-w.runners:
			w.idleRunners.Add(-1)
		case <-idle.C:
			w.idleRunners.Add(-1)
			return
		case <-w.stopping:
			w.idleRunners.Add(-1)
			return
		}
	}
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

// pullEnded logs and notes the error that ended a pull.
func (w *Worker) pullEnded(err error) {
	w.log.Debug().Err(err).Msg("fetch ended")
	w.noteFetchError(err)
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
// reader of w.lanes): the worker is not ready meanwhile, and retries until
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
	w.setLanes(st)
	w.layoutLost.Store(false)
	if !w.isStopping() {
		w.ready.Store(true)
	}
	w.log.Info().Msg("layout set up again; fetching")
}
