package fleet

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// singleReadsFixture stores what the single-message reads below read: two
// events, a result too large for one message (its chunks in
// mission_results), a queued mission, a parked one and a journal entry.
type singleReadsFixture struct {
	k, queued  missionKey
	big        string
	queuedData []byte
	parkedData []byte
	journal    []byte
	journalSeq uint64 // the journal's last message, as a suspended mission's status names it
	call       string
	callRev    uint64
}

func storeSingleReads(ctx context.Context, t *testing.T, js jetstream.JetStream, st *Stores) singleReadsFixture {
	t.Helper()
	f := singleReadsFixture{k: missionKey{sub: "s", id: messages.NewMissionID()}, queued: missionKey{sub: "s", id: messages.NewMissionID()},
		big: strings.Repeat("chunked ", messages.LargeResultBytes/4), journal: []byte(`{"reply":"stored"}`)}
	for n, kind := range []string{messages.EventStarted, messages.EventTurnStarted} {
		data, err := messages.Marshal(&messages.Event{MissionID: f.k.id, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, messages.EventSubject(f.k.sub, f.k.id, uint64(n+1), kind), data); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := publishResult(ctx, js, st, f.k, &messages.Step{Return: f.big}, claimFence{}); err != nil {
		t.Fatal(err)
	}
	data, _, _, err := directLast(ctx, st.nc, nil, messages.StreamResults, messages.ResultSubject(f.k.sub, f.k.id))
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := decodeStep(data); err != nil || ref.Stored == nil {
		t.Fatalf("the result of %d bytes is not stored in %s: %v", len(f.big), messages.BucketResults, err)
	}
	var merr error
	if f.queuedData, merr = messages.MarshalMission(&messages.Mission{ID: f.queued.id, Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "queued"}}); merr != nil {
		t.Fatal(merr)
	}
	if _, err := js.Publish(ctx, messages.SubmitSubject(f.queued.sub, messages.PriorityNormal, f.queued.id), f.queuedData); err != nil {
		t.Fatal(err)
	}
	if f.parkedData, merr = messages.MarshalMission(&messages.Mission{ID: f.k.id, Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "parked"}}); merr != nil {
		t.Fatal(merr)
	}
	if err := park(ctx, js, f.k, messages.PriorityNormal, f.parkedData, nats.Header{messages.HeaderMissionID: {f.k.id}},
		time.Now().Add(time.Hour), parkMark{event: 2, suspension: 1}); err != nil {
		t.Fatal(err)
	}
	a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: f.k.id, Submitter: f.k.sub, Call: "1.d0.0",
		State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal,
		RequestedAt: time.Now().UTC(), Deadline: time.Now().Add(time.Hour).UTC()}
	adata, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	f.call = a.Call
	if f.callRev, err = st.Approvals.Create(ctx, messages.ApprovalKey(f.k.id, a.Call), adata); err != nil {
		t.Fatal(err)
	}
	j := NewJournal(js, f.k.id)
	if err := j.Record(ctx, "model.1", f.journal); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if f.journalSeq, ok = j.lastWritten(); !ok {
		t.Fatal("the journal's write has no sequence")
	}
	return f
}

// readAll makes every single-message read of f, each within 10 s (a
// direct get waits at most directPatience of them; a large result's read
// waits for the silent replica twice, then reads its chunks from the
// leader, which under -race on a loaded machine takes seconds), and
// checks what each returns.
func (f singleReadsFixture) readAll(ctx context.Context, t *testing.T, js jetstream.JetStream, st *Stores) {
	t.Helper()
	read := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) }

	// the mission's events, one by one by number, and the last one's
	rctx, cancel := read()
	r := newEventReader(st.nc, st.Events, f.k)
	for _, want := range []string{messages.EventStarted, messages.EventTurnStarted} {
		ev, err := r.next(rctx)
		if err != nil || ev.Kind != want {
			t.Fatalf("event: %+v %v, want %s", ev, err, want)
		}
	}
	if ev, err := r.next(rctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("event after the last: %+v %v, want ErrNotFound", ev, err)
	}
	cancel()
	rctx, cancel = read()
	n, err := lastEventNumber(rctx, st.nc, st.Events, f.k)
	cancel()
	if err != nil || n != 2 {
		t.Fatalf("last event number: %d %v, want 2", n, err)
	}

	// a result too large for one message: its metadata and chunks
	rctx, cancel = read()
	step, err := readResult(rctx, st, f.k)
	cancel()
	if err != nil {
		t.Fatalf("large result: %v", err)
	}
	if got, _ := step.Return.(string); got != f.big {
		t.Fatalf("large result: %d bytes returned, want %d", len(got), len(f.big))
	}

	// the parked message, read by a decision
	rctx, cancel = read()
	parked, err := parkedMessage(rctx, st.nc, nil, st.Parked, f.k.id)
	cancel()
	if err != nil || parked == nil {
		t.Fatalf("parked message: %v %v", parked, err)
	}
	if !bytes.Equal(parked.Data, f.parkedData) || parked.Header.Get(messages.HeaderParkedEvent) != "2" ||
		parked.Subject != messages.ParkSubject(f.k.id) || parked.Sequence == 0 || parked.Time.IsZero() {
		t.Fatalf("parked message on %s at %d (%v) with headers %v, want the one parked", parked.Subject, parked.Sequence, parked.Time, parked.Header)
	}
	rctx, cancel = read()
	none, err := parkedMessage(rctx, st.nc, nil, st.Parked, f.queued.id)
	cancel()
	if none != nil || err != nil {
		t.Fatalf("parked message of a mission not parked: %v %v, want none", none, err)
	}

	// a queued mission by subject, then by its sequence (the dead
	// letter's read)
	rctx, cancel = read()
	q, err := queuedMsg(rctx, st.nc, st.Missions, f.queued.sub, f.queued.id)
	cancel()
	if err != nil || !bytes.Equal(q.Data, f.queuedData) {
		t.Fatalf("queued mission: %v %v", q, err)
	}
	rctx, cancel = read()
	bySeq, err := getMsg(rctx, st.nc, st.Missions, atSeq(q.Sequence, ""))
	cancel()
	if err != nil || bySeq.Subject != q.Subject || !bytes.Equal(bySeq.Data, f.queuedData) || !bySeq.Time.Equal(q.Time) {
		t.Fatalf("queued mission at %d: %+v %v, want %s", q.Sequence, bySeq, err, q.Subject)
	}
	rctx, cancel = read()
	_, err = getMsg(rctx, st.nc, st.Missions, atSeq(q.Sequence+1000, ""))
	cancel()
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("a sequence past the stream's last: %v, want ErrMsgNotFound", err)
	}

	// one approval record (the worker's gate), and one not stored
	rctx, cancel = read()
	a, rev, err := getApproval(rctx, st.nc, nil, st.Approvals, messages.ApprovalKey(f.k.id, f.call))
	cancel()
	if err != nil || a.Call != f.call || a.State != messages.ApprovalPending || rev != f.callRev {
		t.Fatalf("approval record: %+v at %d %v, want call %s pending at %d", a, rev, err, f.call, f.callRev)
	}
	rctx, cancel = read()
	_, _, err = getApproval(rctx, st.nc, nil, st.Approvals, messages.ApprovalKey(f.k.id, "2.d0.0"))
	cancel()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("approval record not stored: %v, want ErrNotFound", err)
	}

	// the journal of a resumed mission, whose status names its last
	// message (direct gets), and of a redelivered one (the leader's
	// message gets: its message and the get that finds none after it)
	for _, upTo := range []uint64{f.journalSeq, 0} {
		rctx, cancel = read()
		j, err := openJournalOn(rctx, js, nil, f.k.id, true, upTo, true)
		cancel()
		if err != nil {
			t.Fatalf("journal read up to %d: %v", upTo, err)
		}
		if got, ok := j.Replay("model.1"); !ok || !bytes.Equal(got, f.journal) {
			t.Fatalf("journal read up to %d: %q %v, want %q", upTo, got, ok, f.journal)
		}
	}
}

// The events, a large result's chunks, the parked message, a queued
// mission (by subject and by sequence), one approval record (the
// worker's gate) and a resumed mission's journal
// are read when no replica answers direct gets: from the stream's leader,
// within the caller's time, with what an answered direct get returns.
func TestSingleMessageReadsWhenNoReplicaAnswersDirectGets(t *testing.T) {
	eachSilence(t, func(t *testing.T, silent bool) {
		ctx, js, st := testStores(t)
		f := storeSingleReads(ctx, t, js, st)
		dropped := silenceReplicas(ctx, t, js, silent, messages.StreamEvents, messages.StreamResults, resultObjectStream,
			messages.StreamParked, messages.StreamMissions, messages.StreamJournal, "KV_"+messages.BucketApprovals)
		f.readAll(ctx, t, js, st)
		if silent && dropped() == 0 {
			t.Fatal("no direct get reached the replica that answers nothing")
		}
	})
}

// Reads whose direct gets are answered ask no leader.
func TestAnsweredSingleMessageReadsAskNoLeader(t *testing.T) {
	ctx, js, st := testStores(t)
	f := storeSingleReads(ctx, t, js, st)
	asked := leaderReads(t, js.Conn())
	f.readAll(ctx, t, js, st)
	// the redelivered mission's journal only: the spy hears the requests
	// on a goroutine of its own, so the count is awaited
	var others []string
	journal := 0
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		others, journal = nil, 0
		for _, subj := range asked() {
			if subj == "$JS.API.STREAM.MSG.GET."+messages.StreamJournal {
				journal++
			} else {
				others = append(others, subj)
			}
		}
		if journal >= 2 || time.Now().After(deadline) {
			break
		}
	}
	for _, subj := range others {
		t.Errorf("an answered direct get asked the leader too (%s)", subj)
	}
	if journal != 2 {
		t.Errorf("%d message gets of %s, want 2 (the redelivered mission's journal, whose last nobody names)", journal, messages.StreamJournal)
	}
}

// A decision made while no replica answers direct gets (a node
// restarting) reads the mission's approval records and its parked
// message from the streams' leaders and queues the mission again.
func TestDecideWhenNoReplicaAnswersDirectGets(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	if _, err := casStatus(ctx, c.st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateAwaitingApproval, Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
	a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: k.id, Submitter: k.sub, Call: "1.d0.0",
		State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal,
		RequestedAt: time.Now().UTC(), Deadline: time.Now().Add(time.Hour).UTC()}
	data, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.Approvals.Create(ctx, messages.ApprovalKey(k.id, a.Call), data); err != nil {
		t.Fatal(err)
	}
	mission, err := messages.MarshalMission(&messages.Mission{ID: k.id, Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "refund"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := park(ctx, c.js, k, messages.PriorityNormal, mission, nats.Header{messages.HeaderMissionID: {k.id}},
		time.Now().Add(time.Hour), parkMark{event: 3, suspension: 1}); err != nil {
		t.Fatal(err)
	}
	dropped := silenceReplicas(ctx, t, c.js, true, statusStream, "KV_"+messages.BucketApprovals, messages.StreamParked, messages.StreamEvents)

	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	decided, err := c.Decide(dctx, k.id, Decision{Approve: true, By: "ann"})
	dcancel()
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	if decided.State != messages.ApprovalApproved {
		t.Fatalf("decided %+v, want approved", decided)
	}
	// the wake, stored in MISSIONS, carries the parked mission, the
	// decided call and the number of the decision's event
	data, _, hdr, err := leaderMsg(ctx, nc, messages.StreamMissions, lastOn(messages.QueuedFilters(k.sub, k.id)[0]))
	if err != nil {
		t.Fatalf("the wake: %v", err)
	}
	if !bytes.Equal(data, mission) || hdr.Get(messages.HeaderWokenEvent) != "4" || hdr.Get(messages.HeaderWoken) != a.Call {
		t.Fatalf("the wake carries %d bytes and headers %v, want the parked mission, woken call %s and woken event 4", len(data), hdr, a.Call)
	}
	if dropped() == 0 {
		t.Fatal("no direct get reached the replica that answers nothing")
	}
}

// A single-message read whose direct get is answered allocates no more
// than the stream handle's read it replaces (the leader fallback costs
// nothing until it is needed): the last message on a subject, the
// message at a sequence, and the next one on a subject. Measured: 47,
// 50 and 51 allocations against the handle's 54–55, 55 and 58.
func TestSingleMessageReadAllocations(t *testing.T) {
	ctx, _, js, st := embeddedStores(t)
	f := storeSingleReads(ctx, t, js, st)
	q, err := queuedMsg(ctx, st.nc, st.Missions, f.queued.sub, f.queued.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		stream jetstream.Stream
		q      msgQuery
		handle func() (*jetstream.RawStreamMsg, error)
	}{
		{"last on a subject", st.Events, lastOn(messages.EventNumberFilter(f.k.sub, f.k.id, 1)), func() (*jetstream.RawStreamMsg, error) {
			return st.Events.GetLastMsgForSubject(ctx, messages.EventNumberFilter(f.k.sub, f.k.id, 1))
		}},
		{"at a sequence", st.Missions, atSeq(q.Sequence, ""), func() (*jetstream.RawStreamMsg, error) {
			return st.Missions.GetMsg(ctx, q.Sequence)
		}},
		{"next on a subject", st.Missions, atSeq(1, q.Subject), func() (*jetstream.RawStreamMsg, error) {
			return st.Missions.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(q.Subject))
		}},
	} {
		mine := testing.AllocsPerRun(200, func() {
			if m, err := getMsg(ctx, st.nc, c.stream, c.q); err != nil || m.Sequence == 0 {
				t.Fatal(m, err)
			}
		})
		handle := testing.AllocsPerRun(200, func() {
			if _, err := c.handle(); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s: %.1f allocations, %.1f through the stream handle", c.name, mine, handle)
		if !fleettest.Race && mine > handle {
			t.Errorf("%s: %.1f allocations, more than the stream handle's %.1f", c.name, mine, handle)
		}
	}
}

// A result stored in chunks, read while no replica answers direct gets,
// waits for a replica once for its metadata and once for its first
// chunk: the chunks after it are read from the stream's leader at once,
// so the read's time does not grow with the number of chunks.
func TestLargeResultChunksAskTheLeaderOnceNoReplicaAnswers(t *testing.T) {
	ctx, js, st := testStores(t)
	f := storeSingleReads(ctx, t, js, st)
	if chunks := len(f.big) / maxOneChunk; chunks < 3 {
		t.Fatalf("the result fills %d chunks; the test needs several", chunks)
	}
	dropped := silenceReplicas(ctx, t, js, true, resultObjectStream)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step, err := readResult(rctx, st, f.k)
	if err != nil {
		t.Fatalf("large result: %v", err)
	}
	if got, _ := step.Return.(string); got != f.big {
		t.Fatalf("large result: %d bytes returned, want %d", len(got), len(f.big))
	}
	if n := dropped(); n != 2 {
		t.Fatalf("%d direct gets went to the replica that answers nothing; want 2 (the metadata and the first chunk)", n)
	}
}

// parkAwaiting makes mission k wait for the approval of call 1.d0.0 as a
// worker leaves it: its status awaiting_approval, the call's record
// pending, its message parked (its approval_requested event number 3).
// It returns the parked message's body.
func parkAwaiting(ctx context.Context, t *testing.T, c *Client, k missionKey) []byte {
	t.Helper()
	if _, err := casStatus(ctx, c.st, messages.Status{MissionID: k.id, Submitter: k.sub, State: messages.StateAwaitingApproval, Attempt: 1, Suspensions: 1}, 0); err != nil {
		t.Fatal(err)
	}
	a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: k.id, Submitter: k.sub, Call: "1.d0.0",
		State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal,
		RequestedAt: time.Now().UTC(), Deadline: time.Now().Add(time.Hour).UTC()}
	data, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.Approvals.Create(ctx, messages.ApprovalKey(k.id, a.Call), data); err != nil {
		t.Fatal(err)
	}
	mission, err := messages.MarshalMission(&messages.Mission{ID: k.id, Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "refund"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := park(ctx, c.js, k, messages.PriorityNormal, mission, nats.Header{messages.HeaderMissionID: {k.id}},
		time.Now().Add(time.Hour), parkMark{event: 3, suspension: 1}); err != nil {
		t.Fatal(err)
	}
	return mission
}

// queueOfTwo is a client on an embedded server whose MISSIONS holds at
// most two missions (StoreConfig.MaxQueued).
func queueOfTwo(t *testing.T) (*nats.Conn, *Client) {
	t.Helper()
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{Store: StoreConfig{MaxQueued: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return nc, c
}

// A worker's wake (a quota's lease given back, a decision found after
// parking: wakeNow) goes into MISSIONS with its marks; where MISSIONS
// refuses it (full), into PARKED, for a worker to move.
func TestWakeNowGoesThroughParkedWhenMissionsIsFull(t *testing.T) {
	nc, c := queueOfTwo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	moved := nats.Header{}
	moved.Set(messages.HeaderWakeMoved, "7")
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	mission := parkAwaiting(ctx, t, c, k)
	hdr := nats.Header{}
	hdr.Set(messages.HeaderMissionID, k.id)
	if err := wakeNow(ctx, c.js, nil, k, messages.PriorityNormal, mission, hdr, k.id+"/quota/7", moved); err != nil {
		t.Fatal(err)
	}
	data, _, got, err := leaderMsg(ctx, nc, messages.StreamMissions, lastOn(messages.QueuedFilters(k.sub, k.id)[0]))
	if err != nil || !bytes.Equal(data, mission) || got.Get(messages.HeaderWakeMoved) != "7" || got.Get(jetstream.MsgIDHeader) != k.id+"/quota/7" {
		t.Fatalf("the wake in MISSIONS: %d bytes, headers %v, %v", len(data), got, err)
	}
	// another mission, with MISSIONS full (the wake above and a filler)
	if _, err := c.js.Publish(ctx, messages.SubmitSubject(k.sub, messages.PriorityNormal, messages.NewMissionID()), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	k2 := missionKey{sub: c.sub, id: messages.NewMissionID()}
	mission2 := parkAwaiting(ctx, t, c, k2)
	if err := wakeNow(ctx, c.js, nil, k2, messages.PriorityNormal, mission2, hdr, k2.id+"/quota/8", moved); err != nil {
		t.Fatalf("a wake while MISSIONS is full: %v", err)
	}
	if data, _, _, err := leaderMsg(ctx, nc, messages.StreamParked, lastOn(messages.WakeSubject(k2.sub, messages.PriorityNormal, k2.id))); err != nil || !bytes.Equal(data, mission2) {
		t.Fatalf("the wake in PARKED: %d bytes, %v", len(data), err)
	}
}

// A decision whose wake MISSIONS refuses (full: MaxQueued missions
// queued, DiscardNew) is not an error: the wake is stored in PARKED
// instead, from which a worker moves it into MISSIONS once it has room,
// then removes it.
func TestDecisionWakesAMissionIntoAFullQueue(t *testing.T) {
	nc, c := queueOfTwo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := EnsureStores(ctx, js, StoreConfig{MaxQueued: 2})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	startTestMover(t, nc, st, metrics)
	moves := func(outcome string) float64 {
		var d dto.Metric
		if err := metrics.wakesMoved.WithLabelValues("", outcome).Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	if !missionsHoldWoken(c.st.Missions) {
		t.Fatalf("MISSIONS subjects %v: no %s", c.st.Missions.CachedInfo().Config.Subjects, messages.WokenWildcard)
	}
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	mission := parkAwaiting(ctx, t, c, k)
	var fillers []uint64
	for range 2 {
		ack, err := c.js.Publish(ctx, messages.SubmitSubject(k.sub, messages.PriorityNormal, messages.NewMissionID()), []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, ack.Sequence)
	}
	// the queue is full: a woken mission published into it is refused
	err = wakeWoken(ctx, nc, nil, k, &messages.Approval{Call: "1.d0.0", Priority: messages.PriorityNormal}, mission, nil, "probe-full", nil)
	if !wakeRefused(err) {
		t.Fatalf("a wake into the full MISSIONS: %v, want it refused", err)
	}
	if _, err := c.Decide(ctx, k.id, Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatalf("a decision while MISSIONS is full: %v", err)
	}
	wakeSubject := messages.WakeSubject(k.sub, messages.PriorityNormal, k.id)
	data, _, _, err := leaderMsg(ctx, nc, messages.StreamParked, lastOn(wakeSubject))
	if err != nil || !bytes.Equal(data, mission) {
		t.Fatalf("the wake in PARKED: %d bytes, %v", len(data), err)
	}
	// the mover tries it again meanwhile (wakeRetryAfter)
	time.Sleep(2 * wakeRetryDelay)
	if _, _, _, err := leaderMsg(ctx, nc, messages.StreamParked, lastOn(wakeSubject)); err != nil {
		t.Fatalf("the wake left PARKED while MISSIONS was full: %v", err)
	}
	if n := moves("failed"); n < 1 || moves("moved") != 0 {
		t.Fatalf("while MISSIONS was full: %v moves failed, %v moved; want the failures counted", n, moves("moved"))
	}
	if err := c.st.Missions.DeleteMsg(ctx, fillers[0]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _, hdr, err := leaderMsg(ctx, nc, messages.StreamMissions, lastOn(messages.QueuedFilters(k.sub, k.id)[0]))
		if err == nil {
			if !bytes.Equal(data, mission) || hdr.Get(messages.HeaderWakeMoved) == "" || hdr.Get(messages.HeaderWokenEvent) != "4" ||
				hdr.Get(jetstream.MsgTTLHeader) != "" {
				t.Fatalf("the woken mission in MISSIONS: %d bytes, headers %v", len(data), hdr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the wake never reached MISSIONS once it had room: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		_, _, _, err := leaderMsg(ctx, nc, messages.StreamParked, lastOn(wakeSubject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			if n := moves("moved"); n != 1 {
				t.Fatalf("%v moves counted, want 1", n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the moved wake still in PARKED: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A decision whose wake no stream answers (MISSIONS electing a leader
// after its node went down; here MISSIONS deleted, then set up again a
// second later) publishes it into MISSIONS again until MISSIONS answers,
// rather than through PARKED, whose wakes reach MISSIONS only through a
// source that node restarts can stall: the wake is stored once, woken,
// and PARKED holds none.
func TestDecisionWaitsOutAMissionsElection(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := missionKey{sub: c.sub, id: messages.NewMissionID()}
	mission := parkAwaiting(ctx, t, c, k)
	if err := c.js.DeleteStream(ctx, messages.StreamMissions); err != nil {
		t.Fatal(err)
	}
	decided := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := c.Decide(ctx, k.id, Decision{Approve: true, By: "ann"})
		decided <- err
	}()
	time.Sleep(time.Second)
	if _, err := EnsureStores(ctx, c.js, StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := <-decided; err != nil {
		t.Fatalf("a decision while MISSIONS did not answer for a second: %v", err)
	}
	if d := time.Since(began); d < time.Second {
		t.Fatalf("the decision returned after %v, before MISSIONS was back", d)
	}
	data, _, hdr, err := leaderMsg(ctx, nc, messages.StreamMissions, lastOn(messages.QueuedFilters(k.sub, k.id)[0]))
	if err != nil || !bytes.Equal(data, mission) || hdr.Get(messages.HeaderWoken) == "" || hdr.Get(headerStreamSource) != "" {
		t.Fatalf("the woken mission in MISSIONS: %d bytes, headers %v, %v; want it published there, woken", len(data), hdr, err)
	}
	if _, _, _, err := leaderMsg(ctx, nc, messages.StreamParked, lastOn(messages.WakeSubject(k.sub, messages.PriorityNormal, k.id))); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("a wake in PARKED: %v, want none", err)
	}
}
