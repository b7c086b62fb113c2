package fleet_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// stacksWith counts the goroutines whose stack names fn.
func stacksWith(fn string) int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// A Run waiting for its result holds its own goroutine and no other: the
// result subscription delivers from the connection's read loop, not from
// a goroutine of its own (nats.go's async subscriptions have one each).
func TestWaitingRunsHoldNoSubscriptionGoroutine(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc) // no worker: the missions stay queued
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var wg sync.WaitGroup
	waiting := func(runs int) {
		for range runs {
			wg.Go(func() { _, _ = c.Run(ctx, newMission()) })
		}
	}
	// the first Run makes what the client keeps (its subscription for
	// status reads)
	waiting(1)
	eventually(t, 10*time.Second, "the first Run waits for its result", func() bool { return stacksWith("fleet.(*Client).awaitOn(") == 1 })
	before := stacksWith("(*Conn).waitForMsgs(")
	const runs = 20
	waiting(runs)
	eventually(t, 10*time.Second, "every Run waits for its result", func() bool { return stacksWith("fleet.(*Client).awaitOn(") == 1+runs })
	if n := stacksWith("(*Conn).waitForMsgs("); n > before {
		t.Errorf("%d more waiting Runs hold %d more subscription goroutines", runs, n-before)
	}
	cancel()
	wg.Wait()
}
