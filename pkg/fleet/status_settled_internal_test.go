package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A worker stores a mission's result and then writes its final status.
// A status read between the two, or after a worker that stopped between
// them (the status left running for good), reports the final state the
// stored result implies: Status and List alike, with the result's failure
// reason, replay counts and the time it was stored. A mission still
// running without a result costs one read of its result more, a finished
// one none.
func TestStatusOfAStoredResultIsFinal(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	client, err := NewClient(ctx, nc, ClientConfig{Submitter: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	// the direct gets on RESULTS, seen by a subscription of the
	// connection that sends them: each is in its pending messages once a
	// flush returns
	seen, err := nc.SubscribeSync("$JS.API.DIRECT.GET." + messages.StreamResults + ".>")
	if err != nil {
		t.Fatal(err)
	}
	defer seen.Unsubscribe()
	resultGets := func() int {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := seen.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// gets returns the result gets fn made
	gets := func(fn func()) int {
		t.Helper()
		before := resultGets()
		fn()
		return resultGets() - before
	}
	// running stores the status of a mission run by worker w1, whose
	// final status write never comes
	running := func(state string) missionKey {
		t.Helper()
		k := missionKey{sub: "alice", id: messages.NewMissionID()}
		s := messages.Status{MissionID: k.id, Submitter: k.sub, State: state, Worker: "w1", Attempt: 2, StreamSeq: 7}
		if _, err := casStatus(ctx, st, s, 0); err != nil {
			t.Fatal(err)
		}
		return k
	}
	status := func(k missionKey) *messages.Status {
		t.Helper()
		var s *messages.Status
		n := gets(func() {
			var err error
			if s, err = client.Status(ctx, k.id); err != nil {
				t.Fatal(err)
			}
		})
		if messages.TerminalState(s.State) && s.UpdatedAt.IsZero() || n > 1 {
			t.Errorf("status of %s: %+v after %d result reads", k.id, s, n)
		}
		return s
	}

	// no result yet: running, at one result read
	noResult := running(messages.StateRunning)
	if n := gets(func() { status(noResult) }); n != 1 {
		t.Errorf("the status of a running mission read its result %d times, want once", n)
	}
	if s := status(noResult); s.State != messages.StateRunning || s.Worker != "w1" {
		t.Errorf("a running mission without a result: %+v", s)
	}

	// the result stored, the final status not written
	done := running(messages.StateRunning)
	before := time.Now().UTC()
	replayed := &messages.Replayed{ModelCalls: 2, ToolCalls: 3}
	if _, _, err := publishResult(ctx, js, st, done, &messages.Step{Return: "ok", Attempts: 2, Replayed: replayed}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	s := status(done)
	if s.State != messages.StateSucceeded || s.Reason != "" || s.Replayed == nil || *s.Replayed != *replayed ||
		s.Worker != "w1" || s.Attempt != 2 || s.StreamSeq != 7 || s.UpdatedAt.Before(before.Add(-time.Second)) {
		t.Errorf("a mission whose result is stored: %+v, want succeeded with the result's replay counts", s)
	}

	// a failure, a cancel: their states and reasons
	failed := running(messages.StateRunning)
	if _, _, err := publishResult(ctx, js, st, failed, failStep(ReasonTimeout, "too slow"), claimFence{}); err != nil {
		t.Fatal(err)
	}
	if s := status(failed); s.State != messages.StateFailed || s.Reason != ReasonTimeout {
		t.Errorf("a mission whose failure is stored: %+v", s)
	}
	cancelled := running(messages.StateQuotaWait)
	if _, _, err := publishResult(ctx, js, st, cancelled, failStep(ReasonCancelled, "by caller"), claimFence{}); err != nil {
		t.Fatal(err)
	}
	if s := status(cancelled); s.State != messages.StateCancelled || s.Reason != ReasonCancelled {
		t.Errorf("a waiting mission whose cancel is stored: %+v", s)
	}

	// a result too large for one message: read from its object
	big := running(messages.StateRunning)
	if _, _, err := publishResult(ctx, js, st, big, &messages.Step{Return: strings.Repeat("large ", messages.LargeResultBytes/4)}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	if s, err := client.Status(ctx, big.id); err != nil || s.State != messages.StateSucceeded {
		t.Errorf("a mission whose large result is stored: %+v, %v", s, err)
	}

	// a final status reads no result
	final := missionKey{sub: "alice", id: messages.NewMissionID()}
	if _, err := casStatus(ctx, st, messages.Status{MissionID: final.id, Submitter: final.sub, State: messages.StateSucceeded, Worker: "w1"}, 0); err != nil {
		t.Fatal(err)
	}
	if n := gets(func() { status(final) }); n != 0 {
		t.Errorf("the status of a finished mission read its result %d times, want none", n)
	}

	// List reports the same states
	infos, err := client.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{noResult.id: messages.StateRunning, done.id: messages.StateSucceeded, failed.id: messages.StateFailed,
		cancelled.id: messages.StateCancelled, big.id: messages.StateSucceeded, final.id: messages.StateSucceeded}
	for _, mi := range infos {
		if w, ok := want[mi.MissionID]; !ok || mi.State != w {
			t.Errorf("List: %s is %s, want %s", mi.MissionID, mi.State, w)
		}
		delete(want, mi.MissionID)
	}
	if len(want) > 0 {
		t.Errorf("List left out %v", want)
	}
	if infos, err := client.List(ctx, ListOptions{States: []string{messages.StateRunning}}); err != nil || len(infos) != 1 || infos[0].MissionID != noResult.id {
		t.Errorf("List of the running missions: %+v, %v; want %s alone", infos, err, noResult.id)
	}
}
