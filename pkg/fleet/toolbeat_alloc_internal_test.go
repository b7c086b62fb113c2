package fleet

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A call that asks for progress messages and is answered before the
// first is due takes what sends them from its service, which keeps it
// with its timer and the timer's func: no allocation, where the beat, its
// timer and the func made three (six as a closure's variables).
func TestToolBeatAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	s := &ToolService{}
	hdr := micro.Headers{messages.HeaderHeartbeatMs: {"60000"}}
	n := testing.AllocsPerRun(100, func() { s.heartbeat("_INBOX.x", hdr).stop() })
	if n > 0 {
		t.Errorf("a call's progress messages cost %v allocations to start and stop, want none", n)
	}
	if b := s.heartbeat("_INBOX.x", micro.Headers{}); b != nil {
		t.Fatal("a call that asks for no progress messages gets a beat")
	}
	var none *toolBeat
	none.stop()
}

// A kept beat sends its next call's progress messages to that call's
// reply subject, none to the call before's; a beat whose timer fired is
// not kept, as its firing may yet reach it.
func TestToolBeatKeptOnlyWhenStoppedBeforeItFired(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's pools drop some of their puts")
	}
	nc := fleettest.Start(t).Conn()
	s := &ToolService{nc: nc}
	first, err := nc.SubscribeSync("_INBOX.first")
	if err != nil {
		t.Fatal(err)
	}
	second, err := nc.SubscribeSync("_INBOX.second")
	if err != nil {
		t.Fatal(err)
	}
	hdr := micro.Headers{messages.HeaderHeartbeatMs: {"50"}}
	b := s.heartbeat("_INBOX.first", hdr)
	b.stop() // before its first beat: kept
	b2 := s.heartbeat("_INBOX.second", hdr)
	if b2 != b {
		t.Fatal("a beat stopped before it fired is not kept")
	}
	if _, err := second.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("no progress message for the second call: %v", err)
	}
	b2.stop() // after a beat: the timer, set again, was pending
	if _, err := first.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatal("a progress message went to the first call's reply")
	}
	b3 := s.heartbeat("_INBOX.second", micro.Headers{messages.HeaderHeartbeatMs: {"50"}})
	b3.mu.Lock()
	b3.sent = MaxToolProgress - 1 // its next beat is its last: the timer is not set again
	b3.mu.Unlock()
	if _, err := second.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	b3.stop()
	if b4 := s.heartbeat("_INBOX.second", hdr); b4 == b3 {
		t.Fatal("a beat whose timer fired and was not set again is kept")
	}
}
