package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// getStatus reads a status with its own direct get where the stores have
// a connection, and through the bucket's KeyValue where they have none:
// both give the same answers for a missing key, a stored status (and its
// revision) and a deleted one.
func TestGetStatusDirectReadsAsTheBucket(t *testing.T) {
	ctx, nc, _, st := embeddedStores(t)
	if st.nc == nil {
		t.Fatal("the stores have no connection: getStatus would not read directly")
	}
	kvOnly := *st
	kvOnly.nc = nil
	both := func(k missionKey) (direct, kv *statusEntry, derr, kerr error) {
		direct, derr = getStatus(ctx, st, k)
		kv, kerr = getStatus(ctx, &kvOnly, k)
		return
	}

	missing := missionKey{sub: "alice", id: messages.NewMissionID()}
	if d, k, derr, kerr := both(missing); !errors.Is(derr, ErrNotFound) || !errors.Is(kerr, ErrNotFound) {
		t.Fatalf("missing status: direct %v, %v; bucket %v, %v; want ErrNotFound", d, derr, k, kerr)
	}

	stored := missionKey{sub: "alice", id: messages.NewMissionID()}
	want := messages.Status{MissionID: stored.id, Submitter: stored.sub, State: messages.StateRunning, Worker: "w1", Attempt: 2, StreamSeq: 7}
	rev, err := casStatus(ctx, st, want, 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err = casStatus(ctx, st, want, rev) // a revision past the first
	if err != nil {
		t.Fatal(err)
	}
	d, k, derr, kerr := both(stored)
	if derr != nil || kerr != nil {
		t.Fatalf("stored status: direct %v, bucket %v", derr, kerr)
	}
	for name, e := range map[string]*statusEntry{"direct": d, "bucket": k} {
		if e.rev != rev || e.st.MissionID != want.MissionID || e.st.State != want.State || e.st.Worker != want.Worker ||
			e.st.Attempt != want.Attempt || e.st.StreamSeq != want.StreamSeq {
			t.Errorf("%s: %+v at revision %d, want %+v at %d", name, e.st, e.rev, want, rev)
		}
	}

	if err := st.Status.Delete(ctx, messages.StatusKey(stored.sub, stored.id)); err != nil {
		t.Fatal(err)
	}
	if d, k, derr, kerr := both(stored); !errors.Is(derr, ErrNotFound) || !errors.Is(kerr, ErrNotFound) {
		t.Fatalf("deleted status: direct %v, %v; bucket %v, %v; want ErrNotFound", d, derr, k, kerr)
	}

	// a stream that is not there: an error, not a message
	if _, _, _, err := directLast(ctx, nc, nil, "NO_SUCH_STREAM", messages.StatusSubject(stored.sub, stored.id)); err == nil {
		t.Fatal("a direct get on a missing stream answered")
	}
}

// TestGetStatusAllocations: a status read costs the request, its answer
// (the server's work included: it runs in this process) and the decoded
// status, not the stream handle's request encoding, subject formatting
// and message conversion: 65 allocations, 76 through the bucket's Get.
func TestGetStatusAllocations(t *testing.T) {
	ctx, _, _, st := embeddedStores(t)
	k := missionKey{sub: "alice", id: messages.NewMissionID()}
	if _, err := casStatus(ctx, st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
	read := func(st *Stores) func() {
		return func() {
			if _, err := getStatus(ctx, st, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	kvOnly := *st
	kvOnly.nc = nil
	direct := testing.AllocsPerRun(200, read(st))
	bucket := testing.AllocsPerRun(200, read(&kvOnly))
	t.Logf("allocations per status read: direct %.1f, through the bucket %.1f", direct, bucket)
	limit := 66.0
	if fleettest.Race {
		limit += 12 // sync.Pool drops some of what it is given
	}
	if direct > limit || direct > bucket-8 {
		t.Errorf("%.1f allocations per status read, want at most %.0f and 8 fewer than through the bucket (%.1f)", direct, limit, bucket)
	}
}

// A submission's status read under a context without a deadline waits
// its directGetWait on a pooled timer, not on a context of its own: no
// more allocations than the same read under a context that has a
// deadline, and the same answer.
func TestSendStatusReadWithoutDeadline(t *testing.T) {
	ctx, nc, _, _ := embeddedStores(t)
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	if _, err := casStatus(ctx, c.st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context) func() {
		return func() {
			cur, err := c.sendStatusRead(ctx, k).wait()
			if err != nil || cur.st.Worker != "w1" {
				t.Fatalf("read %+v, %v", cur, err)
			}
		}
	}
	if _, err := c.sendStatusRead(context.Background(), missionKey{sub: c.sub, id: messages.NewMissionID()}).wait(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a mission without a status: %v, want %v", err, ErrNotFound)
	}
	without, with := fewestAllocs(read(context.Background()), read(ctx))
	t.Logf("%.0f allocations a status read under a context without a deadline, %.0f under one with", without, with)
	if !fleettest.Race && without > with {
		t.Errorf("%.0f allocations a status read under a context without a deadline, %.0f under one with: want no more", without, with)
	}
}

// The direct get of a status asks for the status's subject, and both
// subjects are one string made.
func TestStatusDirectGet(t *testing.T) {
	k := missionKey{sub: "analytics", id: messages.NewMissionID()}
	request, subject := statusDirectGet(k)
	if want := messages.StatusSubject(k.sub, k.id); subject != want {
		t.Errorf("subject %q, want %q", subject, want)
	}
	if want := "$JS.API.DIRECT.GET." + statusStream + "." + messages.StatusSubject(k.sub, k.id); request != want {
		t.Errorf("request %q, want %q", request, want)
	}
	if n := testing.AllocsPerRun(100, func() { request, subject = statusDirectGet(k) }); n != 1 {
		t.Errorf("%.0f allocations for a status read's subjects, want 1", n)
	}
}

// A stored status decodes into the entry returned, the status as written
// and its revision, in one allocation for both.
func TestDecodeStatus(t *testing.T) {
	k := missionKey{sub: "ops", id: messages.NewMissionID()}
	want := messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 2}
	data, err := messages.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeStatus(k, data, 7)
	if err != nil || e.rev != 7 || e.st.MissionID != k.id || e.st.Worker != "w1" || e.st.Attempt != 2 || e.st.State != messages.StateRunning {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	if _, err := decodeStatus(k, []byte{0xc1}, 7); err == nil {
		t.Error("a malformed status decoded")
	}
	withEntry := testing.AllocsPerRun(100, func() { decodeStatus(k, data, 7) })
	alone := testing.AllocsPerRun(100, func() {
		var s messages.Status
		if err := messages.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations decoding a status into its entry, %.0f into a status alone", withEntry, alone)
	if !raceOn && withEntry > alone {
		t.Errorf("%.0f allocations decoding a status into its entry, want no more than the %.0f of a status alone", withEntry, alone)
	}
}

// TestSendStatusReadAllocations: a status read sent ahead and waited for
// (a submission's duplicate check, a worker's fence check) is one value
// with the call waiting on the reply mux, not a call and a closure over
// it: the whole read in the process, the server's work and the decoded
// status included, in at most sentStatusReadAllocs allocations.
func TestSendStatusReadAllocations(t *testing.T) {
	ctx, nc, _, _ := embeddedStores(t)
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	if _, err := casStatus(ctx, c.st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateRunning, Worker: "w1", Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
	read := func() {
		cur, err := c.sendStatusRead(ctx, k).wait()
		if err != nil || cur.st.Worker != "w1" {
			t.Fatalf("read %+v, %v", cur, err)
		}
	}
	n, _ := fewestAllocs(read, read)
	t.Logf("%.0f allocations a sent status read", n)
	if raceOn {
		t.Skip("allocation counts under -race")
	}
	if n > sentStatusReadAllocs {
		t.Errorf("%.0f allocations a sent status read, want at most %d", n, sentStatusReadAllocs)
	}
}

// sentStatusReadAllocs bounds TestSendStatusReadAllocations.
const sentStatusReadAllocs = 62
