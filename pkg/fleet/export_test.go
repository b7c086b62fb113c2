package fleet

import "time"

// LiveCalls makes b call tools that report progress the way a worker's
// Toolbox does (sendLive), asking for progress every interval.
func LiveCalls(b *Toolbox, every time.Duration) { b.replies, b.heartbeat = newReplyMux(b.nc), every }

// CallDigest is callDigest: the content part of a tool call's journal key
// and idempotency key.
func CallDigest(tool string, args any) string { return callDigest(tool, args) }

// FullSweepBackstop is fullSweepBackstop: the longest a worker with free
// slots goes without looking at every lane.
const FullSweepBackstop = fullSweepBackstop

// IdleRunners is how many of w's runner goroutines wait for a mission.
func IdleRunners(w *Worker) int { return int(w.idleRunners.Load()) }
