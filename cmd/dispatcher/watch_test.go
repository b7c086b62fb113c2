package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestWatchingDeliversEventsAfterTheResult: a mission's last progress
// events travel on their own stream and can arrive after its result;
// finish, called when the result is in, still hands them to the watcher
// before it returns (run_mission's progress notifications, wait's
// printout).
func TestWatchingDeliversEventsAfterTheResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	nc := srv.Conn()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	var mu sync.Mutex
	var got []string
	finish := watching(ctx, client, id, func(ev *messages.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev.Kind)
		return nil
	})
	var n uint64
	publish := func(ev *messages.Event) {
		ev.Version, ev.MissionID, ev.Time = messages.EventVersion, id, time.Now().UTC()
		data, err := messages.Marshal(ev)
		if err != nil {
			t.Error(err)
			return
		}
		n++
		if err := nc.Publish(messages.EventSubject(client.Submitter(), id, n, ev.Kind), data); err != nil {
			t.Error(err)
		}
	}
	go func() {
		time.Sleep(300 * time.Millisecond) // the result is in; the events are not yet
		publish(&messages.Event{Kind: messages.EventTurnStarted, Turn: 2})
		publish(&messages.Event{Kind: messages.EventFinal, Step: &messages.Step{Version: messages.StepVersion}})
	}()
	start := time.Now()
	finish()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{messages.EventTurnStarted, messages.EventFinal}; !slices.Equal(got, want) {
		t.Fatalf("events seen = %v, want %v", got, want)
	}
	if waited := time.Since(start); waited >= lastEventsGrace {
		t.Errorf("finish waited %v: it should return at the final event", waited)
	}
}
