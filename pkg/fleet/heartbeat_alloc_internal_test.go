package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A mission's heartbeats take their timer from missions before and give it
// back at stop: starting and stopping them allocates once (the beats),
// where a timer and a closure made for each mission made 3.
func TestHeartbeatTimerKept(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's pools drop some of their puts")
	}
	w := &Worker{}
	entry := new(atomic.Pointer[statusEntry])
	_, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	msg := &progressMsg{}
	k := missionKey{sub: "s", id: "m"}
	n := testing.AllocsPerRun(200, func() { w.heartbeat(msg, k, entry, nil, cancel, time.Hour).stop() })
	if n > 1 {
		t.Errorf("a mission's heartbeats allocate %.0f times to start and stop, want at most 1", n)
	}
	b := w.heartbeat(msg, k, entry, nil, cancel, time.Hour)
	b.stop()
	b.stop() // a second stop leaves the timer, another's now, alone
	if b.t != nil {
		t.Fatal("stopped beats keep their timer")
	}
}
