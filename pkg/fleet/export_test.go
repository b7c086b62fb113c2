package fleet

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// MoveWakes moves st's wakes from PARKED into MISSIONS on nc, as a
// worker does, until tb ends.
func MoveWakes(tb testing.TB, nc *nats.Conn, st *Stores) {
	tb.Helper()
	startTestMover(tb, nc, st, nil)
}

// OnApprovalParked makes w call f with the id of each mission it parks
// for approval, once parked and acknowledged, before it looks for a
// decision made meanwhile. It is set before w starts.
func OnApprovalParked(w *Worker, f func(id string)) {
	w.approvalParked = func(k missionKey) { f(k.id) }
}

// OnDecidePendingListed makes c's DecidePending call f once, before its
// first decision, the calls it decides listed.
func OnDecidePendingListed(c *Client, f func()) { c.decidePendingListed = f }

// startTestMover starts a wake mover of st's wakes on nc, counting its
// moves in metrics (nil: none), and stops it when tb ends.
func startTestMover(tb testing.TB, nc *nats.Conn, st *Stores, metrics *Metrics) *wakeMover {
	tb.Helper()
	m := &wakeMover{nc: nc, parked: st.Parked, metrics: metrics, log: zerolog.Nop()}
	if err := m.start(st.Wakes); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.stop)
	return m
}

// LiveCalls makes b call tools that report progress the way a worker's
// Toolbox does (sendLive), asking for progress every interval, and hear
// of its connection's drops as a worker's does (SharedDrops).
func LiveCalls(tb testing.TB, b *Toolbox, every time.Duration) {
	b.replies, b.heartbeat = newReplyMux(b.nc), every
	SharedDrops(tb, b)
}

// SharedDrops makes b's calls hear of its connection's drops through one
// listener, as a worker's Toolbox does, removed when tb ends.
func SharedDrops(tb testing.TB, b *Toolbox) {
	b.drops = newConnDrops(b.nc)
	tb.Cleanup(b.drops.stop)
}

// CallDigest is callDigest: the content part of a tool call's journal key
// and idempotency key.
func CallDigest(tool string, args any) string { return callDigest(tool, args) }

// FullSweepBackstop is fullSweepBackstop: the longest a worker with free
// slots goes without looking at every lane.
const FullSweepBackstop = fullSweepBackstop

// RunnersStarted is how many goroutines w started to poll for or run
// missions.
func RunnersStarted(w *Worker) int64 { return w.stats.runnersStarted.Load() }

// IdleRunners is how many of w's runner goroutines wait for a mission.
func IdleRunners(w *Worker) int { return int(w.idleRunners.Load()) }

// RunnerGrace has runners beyond the four kept wait d for the next
// mission.
func RunnerGrace(d time.Duration) func(*WorkerConfig) {
	return func(c *WorkerConfig) { c.runnerGrace = d }
}

// RunnerIdle has the four runners kept wait d for the next mission.
func RunnerIdle(d time.Duration) func(*WorkerConfig) {
	return func(c *WorkerConfig) { c.runnerIdle = d }
}

// BatchOnOneReplica has a worker publish each mission's record and result
// in one atomic batch on a results stream of one replica too (as it does
// on a replicated one).
func BatchOnOneReplica(c *WorkerConfig) { c.resultBatches = 1 }

// AwaitUnread is how long Run waits for its result before it reads it,
// when it read no status.
const AwaitUnread = awaitUnread

// NoResultBatches has a worker publish each mission's record and result
// one after the other on a replicated results stream too.
func NoResultBatches(c *WorkerConfig) { c.resultBatches = -1 }

// RunCluster is runCluster: a 3-node JetStream cluster of in-process
// servers for tb, and its client URLs.
func RunCluster(tb testing.TB) []string { return runCluster(tb) }

// IdleCallers is how many of s's caller goroutines wait for a tool call.
func IdleCallers(s *ToolService) int { return int(s.idleCallers.Load()) }

// CallerGrace has s's callers wait d for the next call; call it before
// any call.
func CallerGrace(s *ToolService, d time.Duration) { s.callerGrace = d }

// WakesThroughParked has c's decisions publish their wakes in PARKED,
// which MISSIONS sources, as a client whose user may not publish them
// into MISSIONS does.
func WakesThroughParked(c *Client) { c.wokenPublish.Store(wokenRefused) }

// GivenUpAfter has a worker check MISSIONS's oldest message for one its
// consumer gave up on once it has been the oldest for d.
func GivenUpAfter(d time.Duration) func(*WorkerConfig) {
	return func(c *WorkerConfig) { c.givenUpAfter = d }
}

// SweepEvery has a worker check for unannounced missions, and whether its
// full sweep's backstop is due, every d.
func SweepEvery(d time.Duration) func(*WorkerConfig) {
	return func(c *WorkerConfig) { c.sweepEvery = d }
}
