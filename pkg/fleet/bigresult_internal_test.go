package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission's end deletes only its own tool-result objects among the
// references its tools replied: a reference a tool service made up to
// another mission's object, or to an object of another bucket named with
// the mission's id, is left alone; an object already gone is no error.
func TestDeleteMissionKeepsForeignObjects(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket := func(name string) jetstream.ObjectStore {
		obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: name})
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	tools, other := bucket(messages.ToolResultBucket("mail")), bucket("mission_data")
	id, foreign := messages.NewMissionID(), messages.NewMissionID()
	put := func(obs jetstream.ObjectStore, name string) *messages.ObjectRef {
		info, err := obs.PutBytes(ctx, name, make([]byte, 300<<10)) // three chunks
		if err != nil {
			t.Fatal(err)
		}
		return &messages.ObjectRef{Bucket: info.Bucket, Name: info.Name, Size: int64(info.Size), Digest: info.Digest}
	}
	own := put(tools, id+".search.1")
	theirs := put(tools, foreign+".search.1")
	prefixOnly := put(tools, id+"x.search.1") // the id without the separator
	elsewhere := put(other, id+".search.1")
	gone := &messages.ObjectRef{Bucket: messages.ToolResultBucket("mail"), Name: id + ".search.gone"}

	refs := &refStores{nc: nc}
	for _, r := range []*messages.ObjectRef{own, theirs, prefixOnly, elsewhere, gone} {
		refs.note(r)
	}
	n, err := refs.deleteMission(ctx, id)
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want 1", n, err)
	}
	if _, err := tools.GetInfo(ctx, own.Name); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("the mission's object: %v, want it deleted", err)
	}
	for _, r := range []struct {
		obs jetstream.ObjectStore
		ref *messages.ObjectRef
	}{{tools, theirs}, {tools, prefixOnly}, {other, elsewhere}} {
		if data, err := r.obs.GetBytes(ctx, r.ref.Name); err != nil || len(data) != 300<<10 {
			t.Errorf("%s: %d bytes, %v; want it kept whole", r.ref, len(data), err)
		}
	}
	// Its chunks are gone too: only the messages of the two objects kept
	// in this bucket (three chunks and one metadata message each) are left.
	str, err := js.Stream(ctx, "OBJ_"+messages.ToolResultBucket("mail"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2*4 {
		t.Errorf("%s holds %d messages, want 8 (two kept objects)", str.CachedInfo().Config.Name, info.State.Msgs)
	}
	// Deleting again finds nothing noted.
	if n, err := refs.deleteMission(ctx, id); n != 0 || err != nil {
		t.Errorf("second delete: %d, %v", n, err)
	}
}

// A Step too large for one message lies sealed in mission_results: the
// object's bytes (which any reader of the bucket can fetch by sequence)
// hold no plaintext, its result message (on its submitter's subject)
// carries the key, the reader opens it, and a reference with another key
// reads nothing.
func TestLargeResultSealed(t *testing.T) {
	ctx, js, st := testStores(t)
	k := missionKey{sub: "ops", id: messages.NewMissionID()}
	secret := strings.Repeat("the quarterly numbers ", 20_000) // 440 KB
	if _, _, err := publishResult(ctx, js, st, k, &messages.Step{Return: secret}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	raw, err := st.Results.GetLastMsgForSubject(ctx, messages.ResultSubject(k.sub, k.id))
	if err != nil {
		t.Fatal(err)
	}
	stub, err := messages.UnmarshalStep(raw.Data)
	if err != nil || stub.Stored == nil || stub.Stored.Key == "" {
		t.Fatalf("result message %+v, %v: want a sealed object's reference", stub, err)
	}
	obj, err := st.ResultObjects.GetBytes(ctx, stub.Stored.Name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(obj), "quarterly") || len(obj) < len(secret) {
		t.Fatalf("the stored object (%d bytes) holds the plaintext", len(obj))
	}
	step, err := readResult(ctx, st, k)
	if err != nil || step.Return != secret {
		t.Fatalf("read back: %d bytes, %v", len(fmt.Sprint(step.Return)), err)
	}
	wrong := *stub.Stored
	_, wrong.Key, _ = sealStep(nil)
	if _, err := readStoredStep(ctx, st, k.id, &wrong); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("another key: %v", err)
	}
}
