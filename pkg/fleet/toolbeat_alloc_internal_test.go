package fleet

import (
	"testing"

	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A call that asks for progress messages makes what sends them in three
// allocations: the beat, its timer and the timer's func (six as a
// closure's variables).
func TestToolBeatAllocations(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	s := &ToolService{}
	hdr := micro.Headers{messages.HeaderHeartbeatMs: {"60000"}}
	n := testing.AllocsPerRun(100, func() { s.heartbeat("_INBOX.x", hdr).stop() })
	if n > 3 {
		t.Errorf("a call's progress messages cost %v allocations to start and stop, want at most 3", n)
	}
	if b := s.heartbeat("_INBOX.x", micro.Headers{}); b != nil {
		t.Fatal("a call that asks for no progress messages gets a beat")
	}
	var none *toolBeat
	none.stop()
}
