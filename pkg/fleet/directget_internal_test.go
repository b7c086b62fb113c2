package fleet

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// silenceReplicas leaves the direct gets of each of streams unanswered, as
// a replica does that restarted and answers nothing while it catches up:
// the server stops answering them (the stream's AllowDirect turned off,
// which the fleet's readers do not look at) and, when silent, a subscriber
// takes every request and drops it (without it the direct gets find no
// responders). It returns the number of requests dropped so far.
func silenceReplicas(ctx context.Context, t *testing.T, js jetstream.JetStream, silent bool, streams ...string) func() int64 {
	t.Helper()
	var dropped atomic.Int64
	for _, name := range streams {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.AllowDirect = false
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if !silent {
			continue
		}
		for _, subj := range []string{"$JS.API.DIRECT.GET." + name, "$JS.API.DIRECT.GET." + name + ".>"} {
			sub, err := js.Conn().Subscribe(subj, func(*nats.Msg) { dropped.Add(1) })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
		}
	}
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	return dropped.Load
}

// eachSilence runs f as two subtests of t: direct gets that find no
// responders, and a replica that takes each and answers nothing
// (silenceReplicas).
func eachSilence(t *testing.T, f func(t *testing.T, silent bool)) {
	for _, silent := range []bool{false, true} {
		name := "no responders"
		if silent {
			name = "a replica that answers nothing"
		}
		t.Run(name, func(t *testing.T) { f(t, silent) })
	}
}

// A status, a result and the approval records of a mission are read when
// no replica answers direct gets (a NATS node restarting, or a replica
// catching up that answers nothing): the read asks the stream's leader
// instead, within the caller's time, and tells a missing entry, a deleted
// one and another submitter's as a direct get does.
func TestReadsWhenNoReplicaAnswersDirectGets(t *testing.T) {
	eachSilence(t, func(t *testing.T, silent bool) {
		ctx, js, st := testStores(t)
		id, gone := messages.NewMissionID(), messages.NewMissionID()
		s := messages.Status{MissionID: id, Submitter: "s", State: messages.StateSucceeded, Attempt: 1}
		rev, err := casStatus(ctx, st, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		g := messages.Status{MissionID: gone, Submitter: "s", State: messages.StateRunning, Attempt: 1}
		if _, err := casStatus(ctx, st, g, 0); err != nil {
			t.Fatal(err)
		}
		if err := st.Status.Delete(ctx, messages.StatusKey("s", gone)); err != nil {
			t.Fatal(err)
		}
		step := &messages.Step{Return: map[string]any{"n": int64(7)}}
		if _, _, err := publishResult(ctx, js, st, missionKey{sub: "s", id: id}, step, claimFence{}); err != nil {
			t.Fatal(err)
		}
		a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: id, Call: "1.d0.0",
			State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal,
			RequestedAt: time.Unix(1000, 0).UTC(), Deadline: time.Unix(5000, 0).UTC()}
		data, err := messages.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		arev, err := st.Approvals.Create(ctx, messages.ApprovalKey(id, a.Call), data)
		if err != nil {
			t.Fatal(err)
		}

		dropped := silenceReplicas(ctx, t, js, silent, statusStream, messages.StreamResults, "KV_"+messages.BucketApprovals)
		// each read has 4 s: the direct get waits at most
		// directPatience of them
		read := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 4*time.Second) }

		for _, k := range []missionKey{{sub: "s", id: id}, {sub: messages.AllSubmitters, id: id}} {
			rctx, cancel := read()
			e, err := getStatus(rctx, st, k)
			cancel()
			if err != nil {
				t.Fatalf("status %v: %v", k, err)
			}
			if e.st.State != messages.StateSucceeded || e.st.MissionID != id || e.rev != rev {
				t.Fatalf("status %v: %+v at %d, want succeeded at %d", k, e.st, e.rev, rev)
			}
		}
		for _, k := range []missionKey{{sub: "s", id: gone}, {sub: "other", id: id}, {sub: "s", id: messages.NewMissionID()}} {
			rctx, cancel := read()
			_, err := getStatus(rctx, st, k)
			cancel()
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("status %v: %v, want ErrNotFound", k, err)
			}
		}
		// the status read sent ahead of a submission or a result (its
		// answer awaited later) asks the leader too, with and without a
		// deadline of the caller's
		replies := newReplyMux(st.nc)
		for _, deadline := range []bool{true, false} {
			rctx, cancel := context.WithCancel(ctx)
			if deadline {
				rctx, cancel = read()
			}
			e, err := sendStatusRead(rctx, st.nc, st, replies, missionKey{sub: "s", id: id}).wait()
			if err != nil || e.st.State != messages.StateSucceeded || e.rev != rev {
				cancel()
				t.Fatalf("status read sent ahead (deadline %v): %+v, %v; want succeeded at %d", deadline, e, err, rev)
			}
			_, err = sendStatusRead(rctx, st.nc, st, replies, missionKey{sub: "s", id: gone}).wait()
			cancel()
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("status read sent ahead of a deleted status (deadline %v): %v, want ErrNotFound", deadline, err)
			}
		}

		rctx, cancel := read()
		got, err := readResult(rctx, st, missionKey{sub: "s", id: id})
		cancel()
		if err != nil {
			t.Fatalf("result: %v", err)
		}
		if r, ok := got.Return.(map[string]any); !ok || r["n"] != int64(7) {
			t.Fatalf("result %+v, want n 7", got.Return)
		}
		rctx, cancel = read()
		_, err = readResult(rctx, st, missionKey{sub: "s", id: gone})
		cancel()
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("result of a mission without one: %v, want ErrNotFound", err)
		}

		rctx, cancel = read()
		as, revs, err := listApprovals(rctx, newReplyMux(js.Conn()), js, id)
		cancel()
		if err != nil {
			t.Fatalf("approvals: %v", err)
		}
		if len(as) != 1 || as[0].Call != a.Call || as[0].State != messages.ApprovalPending || revs[a.Call] != arev {
			t.Fatalf("approvals %+v %v, want call %s pending at %d", as, revs, a.Call, arev)
		}
		if silent && dropped() == 0 {
			t.Fatal("no direct get reached the replica that answers nothing")
		}
	})
}

// A read whose direct get is answered costs one request: the leader is
// not asked.
func TestAnsweredDirectGetAsksNoLeader(t *testing.T) {
	ctx, js, st := testStores(t)
	id := messages.NewMissionID()
	s := messages.Status{MissionID: id, Submitter: "s", State: messages.StateRunning, Attempt: 1}
	if _, err := casStatus(ctx, st, s, 0); err != nil {
		t.Fatal(err)
	}
	asked := leaderReads(t, js.Conn())
	for _, k := range []missionKey{{sub: "s", id: id}, {sub: "s", id: messages.NewMissionID()}} {
		if _, err := getStatus(ctx, st, k); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		if _, err := sendStatusRead(ctx, st.nc, st, newReplyMux(st.nc), k).wait(); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	if subjects := asked(); len(subjects) > 0 {
		t.Fatalf("an answered direct get asked the leader too (%s)", subjects[0])
	}
}

// leaderReads watches nc's connection for the message gets a read makes
// of a stream's leader ($JS.API.STREAM.MSG.GET): it returns the subjects
// of those made so far, once the server has passed on everything sent
// before the call.
func leaderReads(t *testing.T, nc *nats.Conn) func() []string {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	sub, err := nc.Subscribe("$JS.API.STREAM.MSG.GET.>", func(m *nats.Msg) {
		mu.Lock()
		asked = append(asked, m.Subject)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, c := range []struct {
		filter, subject string
		want            bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a.*.c", "a.b.c", true},
		{"a.*", "a.b.c", false},
		{"a.*.c", "a.b", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
		{"*", "", false},
	} {
		if got := subjectMatches(c.filter, c.subject); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", c.filter, c.subject, got, c.want)
		}
	}
}

// A message read is answered only with a message it asked for, and one
// that names nothing is refused before any request.
func TestMsgQueryAnswers(t *testing.T) {
	for _, c := range []struct {
		q       msgQuery
		subject string
		seq     uint64
		want    bool
	}{
		{lastOn("a.b"), "a.b", 9, true},
		{lastOn("a.*"), "a.c", 9, true},
		{lastOn("a.b"), "a.c", 9, false},
		{atSeq(5, ""), "x.y", 5, true},
		{atSeq(5, ""), "x.y", 6, false},
		{atSeq(5, "a.b"), "a.b", 7, true},
		{atSeq(5, "a.b"), "a.b", 4, false},
		{atSeq(5, "a.b"), "a.c", 7, false},
	} {
		if got := c.q.answers(c.subject, c.seq); got != c.want {
			t.Errorf("%v answered with %s at %d: %v, want %v", c.q, c.subject, c.seq, got, c.want)
		}
	}
	for q, want := range map[msgQuery]string{
		lastOn("a.b"):   `{"last_by_subj":"a.b"}`,
		atSeq(3, ""):    `{"seq":3}`,
		atSeq(3, "a.>"): `{"seq":3,"next_by_subj":"a.\u003e"}`,
	} {
		if got, err := q.request(); err != nil || string(got) != want {
			t.Errorf("request of %v: %s %v, want %s", q, got, err, want)
		}
	}
	if _, err := (msgQuery{}).request(); !errors.Is(err, errEmptyQuery) {
		t.Errorf("request of an empty query: %v, want errEmptyQuery", err)
	}
	if _, _, _, err := directMsg(context.Background(), nil, nil, "S", msgQuery{}); !errors.Is(err, errEmptyQuery) {
		t.Errorf("read of an empty query: %v, want errEmptyQuery", err)
	}
}
