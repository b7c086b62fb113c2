package fleet

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A wake whose move keeps failing (MISSIONS full for long) is tried again
// after 1 s, then twice as long each time, at most every 30 s.
func TestWakeRetryBacksOff(t *testing.T) {
	for _, c := range []struct {
		delivery uint64
		want     time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {5, 16 * time.Second}, {6, 30 * time.Second}, {1000, 30 * time.Second}} {
		if got := wakeRetryAfter(c.delivery); got != c.want {
			t.Errorf("wakeRetryAfter(%d) = %v, want %v", c.delivery, got, c.want)
		}
	}
}

// Only a wake subject is moved, onto the woken subject of the same
// submitter, priority and mission.
func TestMovedWakeSubject(t *testing.T) {
	id := messages.NewMissionID()
	m, ok := movedWake(messages.WakeSubject("ann", messages.PriorityLow, id), 9, []byte("{}"), nats.Header{jetstream.MsgTTLHeader: {"1h"}, "Nats-Scheduler": {"x"}})
	if !ok || m.Subject != messages.WokenSubject("ann", messages.PriorityLow, id) || m.Header.Get("Nats-Scheduler") != "" || m.Header.Get(jetstream.MsgTTLHeader) != "" {
		t.Fatalf("moved %+v, %v", m, ok)
	}
	for _, bad := range []string{messages.ParkSubject(id), "mission.wake.ann.low", "mission.wake.ann.urgent." + id, messages.WokenSubject("ann", "", id)} {
		if _, ok := movedWake(bad, 1, nil, nil); ok {
			t.Errorf("movedWake(%q) moved it", bad)
		}
	}
}
