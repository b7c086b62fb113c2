package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// apiSpy counts the JetStream API requests, the status writes, the
// writes of parked and woken missions and the object store writes made on a server, by subject with the mission's id replaced by <id>; a status
// write that only creates (its expected last sequence 0) counts as
// "create " and its subject.
type apiSpy struct {
	nc  *nats.Conn
	sub *nats.Subscription
	id  string
	n   map[string]int
}

func spyAPI(t *testing.T, nc *nats.Conn) *apiSpy {
	t.Helper()
	sub, err := nc.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	s := &apiSpy{nc: nc, sub: sub}
	s.watch(t, "")
	return s
}

// take counts the requests received so far: after a round trip to the
// server, every request it passed on before is pending on the
// subscription.
func (s *apiSpy) take(t *testing.T) {
	t.Helper()
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := s.sub.NextMsg(time.Millisecond)
		if err != nil {
			return
		}
		if s.id == "" {
			continue
		}
		subj := strings.ReplaceAll(m.Subject, s.id, "<id>")
		switch {
		case strings.HasPrefix(subj, "$KV."+messages.BucketStatus+".") && m.Header.Get(jetstream.ExpectedLastSubjSeqHeader) == "0":
			s.n["create "+subj]++
		case strings.HasPrefix(subj, "$JS.API.") || strings.HasPrefix(subj, "$KV."+messages.BucketStatus+".") || strings.HasPrefix(subj, "$O.") ||
			strings.HasPrefix(subj, messages.SubjectParkPrefix) || strings.HasPrefix(subj, messages.SubjectParkedPrefix) ||
			strings.HasPrefix(subj, messages.SubjectWakePrefix) || strings.HasPrefix(subj, messages.SubjectWokenPrefix):
			s.n[subj]++
		}
	}
}

// watch starts counting the requests of mission id, dropping those
// received before.
func (s *apiSpy) watch(t *testing.T, id string) {
	t.Helper()
	s.id = ""
	s.take(t)
	s.id, s.n = id, map[string]int{}
}

// count returns the requests received whose subject starts with prefix.
func (s *apiSpy) count(t *testing.T, prefix string) int {
	t.Helper()
	s.take(t)
	n := 0
	for subj, k := range s.n {
		if strings.HasPrefix(subj, prefix) {
			n += k
		}
	}
	return n
}

// TestApprovedMissionResumesAtOnceWithFewRequests: a decided mission is
// taken by a worker as soon as it is queued again (the worker hears its
// wake, as it hears a submit, rather than finding it at its next full
// sweep, a second later); its resumed run reads its journal, one
// message, with one message get and no consumer (the status the claim
// took it from names the journal's last message), and its claim reads the status
// it knows exists rather than trying to create it first; and the mission's approval
// records are read with no stream info request, once by the decider and
// once by the gate (whose list the trace's audit uses); the decider reads
// no status (the record names the submitter); neither the decider nor
// the claiming worker reads the mission's last event (the parked message
// and the wake give its number); the decision's wake is one message,
// published into MISSIONS, none in PARKED; and the mission's record
// is one message next to its result.
func TestApprovedMissionResumesAtOnceWithFewRequests(t *testing.T) {
	s, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	spy := spyAPI(t, connect(t, s))
	ctx := testCtx(t)
	for range 5 {
		m := refundMission(250)
		spy.watch(t, m.ID)
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		waitAwaiting(t, c, m.ID)
		// the suspension parks the mission with one message: the
		// schedule that queues it again at its deadline carries it
		if n := spy.count(t, "mission.park"); n != 1 {
			t.Errorf("the suspension wrote %d messages on %s* and %s*, want 1", n, messages.SubjectParkPrefix, messages.SubjectParkedPrefix)
		}
		spy.watch(t, m.ID)
		at := time.Now()
		if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the approved call reaches its service", func() bool { _, ok := shop.arrived(m.ID); return ok })
		arrived, _ := shop.arrived(m.ID)
		step, err := c.Await(ctx, m.ID)
		if err != nil || !step.Ok() {
			t.Fatalf("mission %s: %+v %v", m.ID, step, err)
		}
		// a mission found by a sweep instead waits at least one sweep
		// period (a second); the margin below it is for a loaded machine
		if d := arrived.Sub(at); d > 900*time.Millisecond {
			t.Errorf("the approved call reached its service %s after the decision: the woken mission waited for a sweep", d)
		}
		// its journal, one message, is read with one direct get and no
		// consumer: the status it was suspended with names that message
		// the last, so no get asks for one after it, and none goes
		// through the JetStream API
		if n := spy.count(t, "$JS.API.CONSUMER.CREATE."+messages.StreamJournal+"."); n != 0 {
			t.Errorf("the resumed run created %d consumers on %s, want none", n, messages.StreamJournal)
		}
		if n := spy.count(t, "$JS.API.DIRECT.GET."+messages.StreamJournal); n != 1 {
			t.Errorf("the resumed run read its journal with %d direct gets, want 1", n)
		}
		if n := spy.count(t, "$JS.API.STREAM.MSG.GET."+messages.StreamJournal); n != 0 {
			t.Errorf("the resumed run read its journal with %d message gets of the JetStream API, want none", n)
		}
		// once finished, the journal's message the suspended run wrote
		// is removed by its sequence (a rollup of the subject would scan
		// every message stored since it); a rollup removes only what
		// the resumed run wrote, if it wrote
		eventually(t, 5*time.Second, "the journal's earlier message removed", func() bool {
			return spy.count(t, "$JS.API.STREAM.MSG.DELETE."+messages.StreamJournal) > 0
		})
		if n := spy.count(t, "$JS.API.STREAM.MSG.DELETE."+messages.StreamJournal); n != 1 {
			t.Errorf("the resumed run removed %d journal messages by sequence, want 1 (the one it read)", n)
		}
		// the woken mission is known to have a status: its claim
		// reads it, with no attempt to create it
		if n := spy.count(t, "create $KV."+messages.BucketStatus+"."); n != 0 {
			t.Errorf("the resumed run's claim tried to create the status %d times", n)
		}
		// the run that finishes a resumed mission keeps its record next
		// to its result, as a first attempt does: no object is written
		if n := spy.count(t, "$O."); n != 0 {
			t.Errorf("the resumed run wrote %d object store messages", n)
		}
		// the decision and the trace's audit each read the mission's
		// approval records with one batch direct get (the worker's
		// once-a-second look at MISSIONS is a stream info of its own)
		if n := spy.count(t, "$JS.API.STREAM.INFO.") - spy.count(t, "$JS.API.STREAM.INFO."+messages.StreamMissions); n != 0 {
			t.Errorf("the decision and the resumption asked for stream info %d times", n)
		}
		// the decider's list and the gate's: the trace's audit uses the
		// records the gate listed
		if n := spy.count(t, "$JS.API.DIRECT.GET.KV_"+messages.BucketApprovals); n > 2 {
			t.Errorf("the decision and the resumption read approval records %d times, want at most 2 (the decider's list, the gate's)", n)
		}
		// the finished mission's parked message is removed with one
		// write (that schedule), no other is made
		eventually(t, 5*time.Second, "the parked message removed", func() bool { return spy.count(t, "mission.park") > 0 })
		if n := spy.count(t, "mission.park"); n != 1 {
			t.Errorf("the decision and the resumption wrote %d messages on %s* and %s*, want 1 (the removal)", n, messages.SubjectParkPrefix, messages.SubjectParkedPrefix)
		}
		// the decider numbers its event after the number the parked
		// message gives, the claiming worker its own after the number
		// the wake gives: EVENTS is not read
		if n := spy.count(t, "$JS.API.DIRECT.GET."+messages.StreamEvents) + spy.count(t, "$JS.API.STREAM.MSG.GET."+messages.StreamEvents); n != 0 {
			t.Errorf("the decision and the resumption read EVENTS %d times, want none", n)
		}
		// the decision's wake is stored once, in MISSIONS: none is
		// written in PARKED for MISSIONS to source (the client's first
		// decision also asks once whether it may publish there)
		if n := spy.count(t, messages.WokenSubject(c.Submitter(), m.Priority, "<id>")); n != 1 {
			t.Errorf("the decision published %d wakes on %s, want 1", n, messages.WokenSubject(c.Submitter(), m.Priority, m.ID))
		}
		if n := spy.count(t, messages.SubjectWakePrefix); n != 0 {
			t.Errorf("the decision and the resumption wrote %d wakes on %s* (in PARKED), want none", n, messages.SubjectWakePrefix)
		}
		// the decider finds the submitter in the call's record, and the
		// result's claim fence needs no status read before it: the
		// status is read by the claim only
		if n := spy.count(t, "$JS.API.DIRECT.GET.KV_"+messages.BucketStatus); n != 1 {
			t.Errorf("the decision and the resumption read the status %d times, want 1 (the claim)", n)
		}
	}
}

// lookupsRunner looks up n orders, one call each (so its journal holds n
// messages: each answer is written before the next call), then refunds
// the mission's amount, which needs approval above 100.
func lookupsRunner(n int) fleet.RunnerFunc {
	return func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		ctx = fleet.WithTurn(ctx, 1)
		for i := range n {
			if _, err := env.Tools.Call(ctx, "lookup", map[string]any{"order": fmt.Sprintf("A-%d", i)}); err != nil {
				return nil, err
			}
		}
		res, err := env.Tools.Call(ctx, "refund", map[string]any{"order": "A-0", "amount": m.Context["amount"]})
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: res}, nil
	}
}

// TestResumedRunReadsItsJournalUpToTheSuspension: a mission suspended
// with a journal of several messages records the last one's sequence in
// its status; the run that takes it from awaiting_approval reads every
// message up to it and asks for none after it, and replays every answer
// (no lookup repeated). A status without that sequence (one written
// before it was recorded) has the journal read until a get finds
// nothing, with the same replay.
func TestResumedRunReadsItsJournalUpToTheSuspension(t *testing.T) {
	s, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	const lookups = 3
	startWorker(t, nc, lookupsRunner(lookups))
	spy := spyAPI(t, connect(t, s))
	ctx := testCtx(t)
	for _, recorded := range []bool{true, false} {
		m := refundMission(250)
		submitAwaiting(ctx, t, c, m)
		key, st := statusOf(ctx, t, c, m.ID)
		if st.State != messages.StateAwaitingApproval || st.JournalSeq == 0 {
			t.Fatalf("status of the suspended mission: %+v, want awaiting_approval with the journal's last sequence", st)
		}
		last, err := c.Stores().Journal.GetLastMsgForSubject(ctx, messages.JournalSubject(m.ID))
		if err != nil {
			t.Fatal(err)
		}
		if st.JournalSeq != last.Sequence {
			t.Fatalf("the status names journal sequence %d, the journal's last message is %d", st.JournalSeq, last.Sequence)
		}
		if !recorded {
			st.JournalSeq = 0
			raw, err := messages.Marshal(&st)
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.Stores().Status.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Stores().Status.Update(ctx, key, raw, e.Revision()); err != nil {
				t.Fatal(err)
			}
		}
		before, _, _ := shop.counts()
		spy.watch(t, m.ID)
		if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
			t.Fatal(err)
		}
		step, err := c.Await(ctx, m.ID)
		if err != nil || !step.Ok() {
			t.Fatalf("mission %s: %+v %v", m.ID, step, err)
		}
		if after, _, _ := shop.counts(); after != before {
			t.Errorf("the resumed run looked up %d orders again, want none (replayed from the journal)", after-before)
		}
		// one direct get per message up to the one the status names;
		// without it, one message get of the leader per message and one
		// that finds no message after the last
		wantDirect, wantGets := lookups, 0
		if !recorded {
			wantDirect, wantGets = 0, lookups+1
		}
		if n, g := spy.count(t, "$JS.API.DIRECT.GET."+messages.StreamJournal), spy.count(t, "$JS.API.STREAM.MSG.GET."+messages.StreamJournal); n != wantDirect || g != wantGets {
			t.Errorf("journal sequence recorded %v: the resumed run read its journal of %d messages with %d direct gets and %d message gets, want %d and %d", recorded, lookups, n, g, wantDirect, wantGets)
		}
		if _, st := statusOf(ctx, t, c, m.ID); st.JournalSeq != 0 {
			t.Errorf("the finished mission's status still names journal sequence %d", st.JournalSeq)
		}
	}
}

// statusOf returns the key and the value of mission id's status.
func statusOf(ctx context.Context, t *testing.T, c *fleet.Client, id string) (string, messages.Status) {
	t.Helper()
	keys, err := c.Stores().Status.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if !strings.HasSuffix(k, "."+id) {
			continue
		}
		e, err := c.Stores().Status.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var st messages.Status
		if err := messages.Unmarshal(e.Value(), &st); err != nil {
			t.Fatal(err)
		}
		return k, st
	}
	t.Fatalf("no status of mission %s", id)
	return "", messages.Status{}
}
