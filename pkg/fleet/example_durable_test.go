package fleet_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool with side effects opts into deduplication: a request repeated
// with the same Idempotency-Key (a worker's resend, or a later attempt of
// the mission) gets the first outcome and the tool runs once.
func ExampleDedupConfig() {
	nc, stop := exampleNATS()
	defer stop()

	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "pay", Dedup: &fleet.DedupConfig{TTL: time.Hour}})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Stop(context.Background())
	charges := 0
	err = svc.Register("charge", fleet.ToolSpec{Signature: "(amount :int) -> :string"},
		func(ctx context.Context, args map[string]any) (any, error) {
			charges++
			ci, _ := fleet.CallInfoFrom(ctx)
			return fmt.Sprintf("receipt %d for key %s", charges, ci.IdempotencyKey), nil
		})
	if err != nil {
		log.Fatal(err)
	}

	// The same call sent twice with one key, as a worker resends it.
	body, _ := messages.Marshal(&messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "1", Tool: "charge",
		Args: map[string]any{"amount": int64(5)}})
	for range 2 {
		msg := &nats.Msg{Subject: messages.ToolSubject("pay", "charge"), Data: body, Header: nats.Header{}}
		msg.Header.Set(messages.HeaderIdempotencyKey, "01J0000000000000000000000A/1/1")
		resp, err := nc.RequestMsg(msg, 5*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		var out messages.ToolResponse
		if err := messages.Unmarshal(resp.Data, &out); err != nil {
			log.Fatal(err)
		}
		fmt.Println(out.Result)
	}
	fmt.Println("charges:", charges)
	// Output:
	// receipt 1 for key 01J0000000000000000000000A/1/1
	// receipt 1 for key 01J0000000000000000000000A/1/1
	// charges: 1
}

// EnsureStores sets the layout up once, from an administrator's command
// (or every worker at start); a worker with Store.VerifyOnly then only
// waits for it.
func ExampleEnsureStores() {
	nc, stop := exampleNATS()
	defer stop()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{Replicas: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Missions.CachedInfo().Config.Name, st.Journal.CachedInfo().Config.Name)
	// Verify only: nothing is created or changed; returns once all exist.
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{VerifyOnly: true}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("layout present")
	// Output:
	// MISSIONS JOURNAL
	// layout present
}
