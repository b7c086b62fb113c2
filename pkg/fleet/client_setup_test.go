package fleet_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A client started with another store configuration (a dispatcher with the
// defaults) binds to the layout the workers created and changes nothing.
func TestClientDoesNotRewriteAnExistingLayout(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	workerLayout := fleet.StoreConfig{AckWait: 7 * time.Second, MaxDeliver: 2, ResultTTL: time.Hour}
	if _, err := fleet.EnsureStores(ctx, js, workerLayout); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, messages.StreamMissions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Consumer(ctx, fleet.ConsumerName(messages.PriorityNormal))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.AckWait != 7*time.Second || info.Config.MaxDeliver != 2 {
		t.Errorf("client rewrote the consumer: ack_wait=%v max_deliver=%d", info.Config.AckWait, info.Config.MaxDeliver)
	}
	res, err := js.Stream(ctx, messages.StreamResults)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedInfo().Config.MaxAge != time.Hour {
		t.Errorf("client rewrote the results stream: max_age=%v", res.CachedInfo().Config.MaxAge)
	}
}

// On an empty server the client creates the layout it needs.
func TestClientCreatesAMissingLayout(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	if _, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 9 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, messages.StreamMissions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Consumer(ctx, fleet.ConsumerName(messages.PriorityHigh))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Info(ctx); info.Config.AckWait != 9*time.Second {
		t.Errorf("ack_wait = %v", info.Config.AckWait)
	}
	// SkipSetup on an empty server is an error naming what is missing.
	_, nc2 := runJetStream(t)
	if _, err := fleet.NewClient(ctx, nc2, fleet.ClientConfig{SkipSetup: true}); err == nil {
		t.Error("SkipSetup on an empty server succeeded")
	}
}
