package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The first stored result wins; later writers, with or without the same
// Msg-Id, get the stored one back.
func TestPublishResultExactlyOnce(t *testing.T) {
	ctx, js, st := testStores(t)
	id := messages.NewMissionID()
	first := &messages.Step{Return: "first"}
	got, mine, err := publishResult(ctx, js, st, missionKey{messages.DefaultSubmitter, id}, first, claimFence{})
	if err != nil || !mine || got.Return != "first" {
		t.Fatalf("first publish = %v, %v, %v", got, mine, err)
	}
	for i := range 3 {
		got, mine, err = publishResult(ctx, js, st, missionKey{messages.DefaultSubmitter, id}, &messages.Step{Return: "second"}, claimFence{})
		if err != nil || mine || got.Return != "first" {
			t.Fatalf("publish %d = %+v, %v, %v; want the stored first result", i+2, got, mine, err)
		}
	}
	info, err := st.Results.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("results stored = %d, %v", info.State.Msgs, err)
	}
}

// testStores is the default layout on a fresh embedded server, with a
// context that ends with the test (at most 30 s).
func testStores(t *testing.T) (context.Context, jetstream.JetStream, *Stores) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	js, err := jetstream.New(fleettest.Start(t).Conn())
	if err != nil {
		t.Fatal(err)
	}
	st, err := EnsureStores(ctx, js, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, st
}
