package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// runCluster starts a 3-node JetStream cluster of in-process servers
// (stopped by tb.Cleanup) and returns their client URLs once each accepts
// connections and JetStream answers.
func runCluster(tb testing.TB) []string {
	tb.Helper()
	var routes []*url.URL
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = fleettest.FreePort(tb)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	var urls []string
	for i := range ports {
		s := startServer(tb, server.Options{ServerName: fmt.Sprintf("n%d", i+1),
			Cluster: server.ClusterOpts{Name: "ptc", Host: "127.0.0.1", Port: ports[i]}, Routes: routes})
		urls = append(urls, s.ClientURL())
	}
	return urls
}

// BenchmarkRecordAndResultReplicated stores a mission's record (600
// bytes) and a small result on a 3-node cluster with the layout
// replicated 3 times: in one atomic batch (publishWithRecord, "batch"),
// or the record then the result, each acknowledged ("sequential"), what a
// worker does without the batch.
func BenchmarkRecordAndResultReplicated(b *testing.B) {
	urls := runCluster(b)
	nc, err := nats.Connect(urls[0])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := EnsureStores(ctx, js, StoreConfig{Replicas: 3})
	if err != nil {
		b.Fatal(err)
	}
	if !st.batchResults {
		b.Fatal("a replicated RESULTS does not take batches")
	}
	record := make([]byte, 600)
	for _, batch := range []bool{true, false} {
		b.Run(map[bool]string{true: "batch", false: "sequential"}[batch], func(b *testing.B) {
			for b.Loop() {
				k := missionKey{sub: "s1", id: messages.NewMissionID()}
				step := &messages.Step{Return: "ok"}
				var mine bool
				if batch {
					_, mine, err = publishWithRecord(ctx, js, st, k, step, record, claimFence{})
				} else {
					if _, err = publishRecord(ctx, js, nil, k, record); err == nil {
						_, mine, err = publishResult(ctx, js, st, k, step, claimFence{})
					}
				}
				if err != nil || !mine {
					b.Fatalf("mine %v, %v", mine, err)
				}
			}
		})
	}
}

// On a replicated RESULTS the record and result batch is fenced as a
// single result publish is: stored under the mission's last claim
// marker; refused whole for a newer marker (errClaimedSince, nothing
// stored); and refused whole onto a stored result, which is returned
// (not errBatchRefused, which would store the record next to it).
func TestFencedBatchReplicated(t *testing.T) {
	urls := runCluster(t)
	nc, err := nats.Connect(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := EnsureStores(ctx, js, StoreConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !st.batchResults || !st.claimMarkers {
		t.Fatalf("batches %v, claim markers %v; want both", st.batchResults, st.claimMarkers)
	}
	record := []byte("the record")
	newKey := func() missionKey { return missionKey{sub: "s1", id: messages.NewMissionID()} }

	k := newKey()
	seq, err := markClaim(ctx, nc, st, k, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, mine, err := publishWithRecord(ctx, js, st, k, &messages.Step{Return: "mine"}, record, claimFence{set: true, seq: seq}); err != nil || !mine {
		t.Fatalf("under the last marker: mine %v, %v", mine, err)
	}

	k = newKey()
	if _, err := markClaim(ctx, nc, st, k, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := publishWithRecord(ctx, js, st, k, &messages.Step{Return: "taken"}, record, claimFence{set: true}); !errors.Is(err, errClaimedSince) {
		t.Fatalf("under an older fence: %v, want errClaimedSince", err)
	}
	for _, subject := range []string{messages.RecordSubject(k.sub, k.id), messages.ResultSubject(k.sub, k.id)} {
		if n := onSubject(ctx, t, st, subject); n != 0 {
			t.Fatalf("%d messages on %s from a fenced batch, want 0", n, subject)
		}
	}

	k = newKey()
	data, err := messages.MarshalStep(&messages.Step{Return: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := publishAcked(ctx, nc, &nats.Msg{Subject: messages.ResultSubject(k.sub, k.id), Data: data}); err != nil {
		t.Fatal(err)
	}
	stored, mine, err := publishWithRecord(ctx, js, st, k, &messages.Step{Return: "second"}, record, claimFence{set: true})
	if err != nil || mine || stored.Return != "first" {
		t.Fatalf("onto a stored result: %+v, mine %v, %v; want the stored one", stored, mine, err)
	}
	if n := onSubject(ctx, t, st, messages.RecordSubject(k.sub, k.id)); n != 0 {
		t.Fatalf("%d records stored by a refused batch, want 0", n)
	}
}
