package fleet

import (
	"errors"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// The fence check's read of a status still at the revision the worker
// wrote it hands back the status the worker holds, without decoding the
// answer; a status another writer stored since is decoded and returned,
// and a deleted one is not found.
func TestStatusReadAtTheHeldRevisionIsNotDecoded(t *testing.T) {
	ctx, _, st := testStores(t)
	id := messages.NewMissionID()
	k := missionKey{sub: "s", id: id}
	mine := messages.Status{MissionID: id, Submitter: "s", State: messages.StateRunning, Attempt: 1, Worker: "w1"}
	rev, data, err := casStatusKept(ctx, st, mine, 0)
	if err != nil {
		t.Fatal(err)
	}
	held := &statusEntry{st: mine, rev: rev}
	kept := &statusEntry{st: mine, rev: rev, data: data}
	replies := newReplyMux(st.nc)
	reads := map[string]func() (*statusEntry, error){
		"sent ahead": func() (*statusEntry, error) { return sendFenceRead(ctx, st.nc, st, replies, k, held).wait() },
		"sent ahead, bytes kept": func() (*statusEntry, error) {
			return sendFenceRead(ctx, st.nc, st, replies, k, kept).wait()
		},
		"read at once": func() (*statusEntry, error) { return getStatusAtHeld(ctx, st, k, held) },
	}
	for name, read := range reads {
		cur, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cur != held && cur != kept {
			t.Fatalf("%s: status at the held revision %d decoded again (%+v at %d), want the held entry", name, rev, cur.st, cur.rev)
		}
	}

	// another worker takes the mission over
	theirs := mine
	theirs.Worker, theirs.Attempt = "w2", 2
	rev2, err := casStatus(ctx, st, theirs, rev)
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range reads {
		cur, err := read()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cur == held || cur == kept || cur.rev != rev2 || cur.st.Worker != "w2" || cur.st.Attempt != 2 {
			t.Fatalf("%s: %+v at %d, want w2's attempt 2 at %d", name, cur.st, cur.rev, rev2)
		}
	}

	if err := st.Status.Delete(ctx, messages.StatusKey(k.sub, k.id)); err != nil {
		t.Fatal(err)
	}
	for name, read := range reads {
		if cur, err := read(); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s of a deleted status: %+v, %v; want ErrNotFound", name, cur, err)
		}
	}
}

// The last fence check of a status whose bytes the worker kept asks for
// it without its headers: the server writes none and nats.go parses
// none, so it allocates far less in the process (the server's work
// included) than the read with headers.
func TestFenceReadOfKeptBytesAllocations(t *testing.T) {
	ctx, _, st := testStores(t)
	k := missionKey{sub: "s", id: messages.NewMissionID()}
	mine := messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Attempt: 1, Worker: "w1",
		Summary: &messages.MissionSummary{Kind: messages.KindCompiled}}
	rev, data, err := casStatusKept(ctx, st, mine, 0)
	if err != nil {
		t.Fatal(err)
	}
	replies := newReplyMux(st.nc)
	read := func(held *statusEntry) func() {
		return func() {
			if cur, err := sendFenceRead(ctx, st.nc, st, replies, k, held).wait(); err != nil || cur != held {
				t.Fatalf("fence read: %+v, %v; want the held entry", cur, err)
			}
		}
	}
	kept, withHeaders := fewestAllocs(read(&statusEntry{st: mine, rev: rev, data: data}), read(&statusEntry{st: mine, rev: rev}))
	t.Logf("%.0f allocations a fence read of kept bytes, %.0f with the status's headers", kept, withHeaders)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if kept > fenceReadKeptAllocs {
		t.Errorf("%.0f allocations a fence read of kept bytes (%.0f with headers), want at most %d", kept, withHeaders, fenceReadKeptAllocs)
	}
}

// fenceReadKeptAllocs bounds TestFenceReadOfKeptBytesAllocations.
const fenceReadKeptAllocs = 32
