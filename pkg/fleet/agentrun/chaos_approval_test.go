package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// approvalChaosProgram is the fake model's reply to step s of mission k:
// a call of add, then a call of pay (which needs approval), then the
// return; an even mission's pay is approved, an odd one's denied, and
// the model, told of the denial, returns without the payment.
func approvalChaosProgram(k, s int) string {
	switch s {
	case 1:
		return fmt.Sprintf("```clojure\n(def a (tool/add {:n %d}))\na\n```", k)
	case 2:
		return "```clojure\n(def p (tool/pay {:n (+ a 1)}))\np\n```"
	}
	if k%2 == 1 {
		return "```clojure\n(return {:a a :p \"denied\"})\n```"
	}
	return "```clojure\n(return {:a a :p p})\n```"
}

func approvalChaosWant(k int) map[string]any {
	if k%2 == 1 {
		return map[string]any{"a": int64(k + 1), "p": "denied"}
	}
	return map[string]any{"a": int64(k + 1), "p": int64(k + 3)}
}

// denyReason is the reason of the test's denials; the fake model moves on
// when its feedback names it.
const denyReason = "chaos-deny"

// undecided reports whether mission k of the approval chaos run is left
// to its deadline: one in eight, all of them missions whose call is to
// be denied. Its deadline's schedule fires into PARKED while nodes
// restart, and a worker moves the wake into MISSIONS.
func undecided(k int) bool { return k%8 == 7 }

// deciderDies reports whether mission k's decider dies between
// recording its decision (an approval: k is even) and queueing the
// mission: the test writes the record alone, and only the workers'
// sweep for stalled decisions can queue the mission before its deadline
// (diedTimeout, past the test's end).
func deciderDies(k int) bool { return k%8 == 2 }

// diedTimeout is the approval deadline of the missions whose decider
// dies: longer than the test runs.
const diedTimeout = 10 * time.Minute

// chaosQuota is the running quota of the test's submitter: fewer
// missions at once than the four workers' 16 slots.
const chaosQuota = 6

// undecidedTimeout is the approval deadline of the undecided missions.
const undecidedTimeout = 3 * time.Second

// payTools serves pay, deduplicated by idempotency key, and counts its
// executions per mission and per key, noting when each mission's first
// reached the handler (past the service's deduplicating claim).
type payTools struct {
	mu      sync.Mutex
	mission map[string]int
	key     map[string]int
	first   map[string]time.Time
}

func startPayTools(t testing.TB, nc *nats.Conn, replicas int) *payTools {
	t.Helper()
	p := &payTools{mission: map[string]int{}, key: map[string]int{}, first: map[string]time.Time{}}
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "bank", Dedup: &fleet.DedupConfig{Replicas: replicas}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	_ = svc.Register("pay", fleet.ToolSpec{Signature: "(n :int) -> :int"}, func(ctx context.Context, args map[string]any) (any, error) {
		ci, _ := fleet.CallInfoFrom(ctx)
		p.mu.Lock()
		if _, ok := p.first[ci.MissionID]; !ok {
			p.first[ci.MissionID] = time.Now()
		}
		p.mission[ci.MissionID]++
		p.key[ci.IdempotencyKey]++
		p.mu.Unlock()
		n, _ := args["n"].(int64)
		return n + 1, nil
	})
	return p
}

// arrived returns when mission id's first pay reached the handler.
func (p *payTools) arrived(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.first[id]
	return at, ok
}

func (p *payTools) counts() (missions, keys map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.mission), maps.Clone(p.key)
}

// caughtUp reports whether every stream of the cluster has a leader and
// every replica current.
func caughtUp(ctx context.Context, js jetstream.JetStream) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false
		}
		c := s.CachedInfo().Cluster
		if c == nil || c.Leader == "" {
			return false
		}
		for _, r := range c.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
	}
	return names.Err() == nil
}

// clusterState describes each stream's leader and replicas (and what the
// wake consumer holds), for the log of a chaos run that lost missions.
func clusterState(js jetstream.JetStream) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", name, err)
			continue
		}
		info := s.CachedInfo()
		fmt.Fprintf(&b, "%s: %d messages, last seq %d", name, info.State.Msgs, info.State.LastSeq)
		if c := info.Cluster; c != nil {
			fmt.Fprintf(&b, ", leader %q", c.Leader)
			for _, r := range c.Replicas {
				fmt.Fprintf(&b, ", replica %s current %v offline %v lag %d", r.Name, r.Current, r.Offline, r.Lag)
			}
		}
		if name == messages.StreamParked {
			if c, err := s.Consumer(ctx, fleet.WakeConsumerName); err != nil {
				fmt.Fprintf(&b, ", wake consumer: %v", err)
			} else if ci := c.CachedInfo(); ci != nil {
				fmt.Fprintf(&b, ", wakes not moved %d, being moved %d, redelivered %d", ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
			}
		}
		b.WriteString("\n")
	}
	if err := names.Err(); err != nil {
		fmt.Fprintf(&b, "stream names: %v\n", err)
	}
	return b.String()
}

// approvalChaosMissions is the number of missions of the approval chaos
// run.
func approvalChaosMissions() int {
	if testing.Short() {
		return 40
	}
	return 80
}

// Chaos while missions wait for approval and resume, on a 3-node cluster
// with R3 streams: worker processes are SIGKILLed at random and one NATS
// node at a time is killed and restarted while missions are suspended,
// being decided and resuming (the decider gives each round's decisions
// as a batch, a DecidePending of the calls it names, as the viewer's
// Approve selected does); one mission in eight is never decided and
// is denied at its deadline (3 s: the schedule's wake, moved into
// MISSIONS by a worker while nodes restart); one in eight is approved by
// a decider that dies before queueing it (the workers' sweep for stalled
// decisions queues it); and the submitter runs under a running quota of
// chaosQuota missions, so missions also wait in quota_wait and are woken
// by leases given back or expired. Every mission finishes once
// with the right result (0 lost, 0 duplicated), every approved call runs
// exactly once (the tool service deduplicates by idempotency key: the
// guarantee of docs/approvals.md), no denied call runs, and no worker
// exits.
//
// Under the race detector the node processes are the race-instrumented
// test binary too: on a loaded machine a node restart has left such a
// cluster without stream leaders for minutes, so that build kills worker
// processes only (the node restarts are tested by the plain build).
func TestClusterChaosWhileMissionsAwaitApproval(t *testing.T) {
	nodes := startCluster(t)
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url
	}
	url := joinURLs(urls)
	model := newFakeModel()
	model.delay = 100 * time.Millisecond
	model.program = approvalChaosProgram
	model.advanceOn = []string{denyReason, messages.ReasonApprovalTimeout}
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	logs := newWorkerLogs(t)
	env := []string{envWorkerAckWait + "=3s", envWorkerDeliver + "=30", envWorkerReplica + "=3", envWorkerStalled + "=2s", logs.env()}
	seq := 0
	start := func(wait bool) *proc {
		seq++
		return startWorkerProc(t, url, ms.URL, fmt.Sprintf("a%d", seq), env, wait)
	}
	workers := []*proc{start(false), start(false), start(false), start(false)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc := dial(t, url)
	js, _ := jetstream.New(nc)
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{Replicas: 3, AckWait: 3 * time.Second, MaxDeliver: 30, VerifyOnly: true}); err != nil {
		t.Fatal(err)
	}
	if err := fleet.SetQuota(ctx, js, fleet.QuotaLimit{Scope: fleet.QuotaDefault, MaxRunning: chaosQuota}); err != nil {
		t.Fatal(err)
	}
	add := startCountingTools(t, dial(t, url), 3)
	pay := startPayTools(t, dial(t, url), 3)
	tap := startJournalTap(t, dial(t, url))
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{SkipSetup: true})
	if err != nil {
		t.Fatal(err)
	}
	checkClient, _ := fleet.NewClient(ctx, dial(t, url), fleet.ClientConfig{SkipSetup: true})
	model.finished = hasResult(checkClient, 500*time.Millisecond)

	n := approvalChaosMissions()
	ids := make([]string, n)
	kOf := map[string]int{}
	for k := range n {
		id := messages.NewMissionID()
		m := &messages.Mission{ID: id, Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: fmt.Sprintf("mission %s k=%d: pay", id, k),
				Tools: []string{"add", "pay"}, Limits: messages.Limits{MaxTurns: 8}},
			Tools: []string{"add", "pay"},
			// a decision whose wake is lost to the chaos is found when it
			// is decided again, or at the deadline, when the schedule
			// queues the mission again
			Approval: &messages.ApprovalPolicy{Timeout: 20 * time.Second, Rules: []messages.ApprovalRule{{Tool: "pay"}}}}
		if undecided(k) {
			m.Approval.Timeout = undecidedTimeout
		}
		if deciderDies(k) {
			m.Approval.Timeout = diedTimeout
		}
		ids[k], kOf[id] = id, k
		if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()

	// The decider: a call pending for at least 2 s is approved (even
	// missions) or denied (odd ones); calls wait while workers die.
	var decMu sync.Mutex
	decideErrs := map[string]int{} // failed decisions (tried again) by error
	wakeLost := 0                  // decisions made whose mission was not queued
	unqueued := map[string]bool{}  // their missions, decided again
	requeued := 0                  // missions queued by deciding again
	finished := map[string]bool{}
	died := map[string]bool{} // missions whose decision was recorded, no wake queued
	decCtx, stopDecider := context.WithCancel(ctx)
	deciderDone := make(chan struct{})
	go func() {
		defer close(deciderDone)
		// the calls ready to be decided in a round, to approve (true) and
		// to deny (false)
		ready := map[bool][]fleet.CallRef{}
		for decCtx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			for _, id := range ids {
				decMu.Lock()
				done, again := finished[id], unqueued[id]
				decMu.Unlock()
				if done || undecided(kOf[id]) {
					continue
				}
				if deciderDies(kOf[id]) {
					// approved in its record, and never queued (a call
					// it asks later, too)
					if recordWithoutWake(decCtx, client, id) {
						decMu.Lock()
						died[id] = true
						decMu.Unlock()
					}
					continue
				}
				approve := kOf[id]%2 == 0
				if again {
					// the mission waits with its call decided: deciding
					// again queues it (or decides a call it asked since)
					octx, c := context.WithTimeout(decCtx, 3*time.Second)
					_, err := client.Decide(octx, id, fleet.Decision{Approve: approve, By: "chaos", Reason: denyReason})
					c()
					decMu.Lock()
					switch {
					case errors.Is(err, fleet.ErrQueuedAgain):
						requeued++
						delete(unqueued, id)
					case err == nil || errors.Is(err, fleet.ErrNoPendingCall):
						delete(unqueued, id)
					}
					decMu.Unlock()
					continue
				}
				octx, c := context.WithTimeout(decCtx, 2*time.Second)
				as, err := client.Approvals(octx, id)
				c()
				if err != nil {
					continue
				}
				for _, a := range as {
					if a.State == messages.ApprovalPending && time.Since(a.RequestedAt) >= 2*time.Second {
						ready[approve] = append(ready[approve], fleet.CallRef{MissionID: id, Call: a.Call})
					}
				}
			}
			// the calls found ready, decided at once: approved, then
			// denied, each a DecidePending of the calls named
			for _, approve := range []bool{true, false} {
				if len(ready[approve]) == 0 {
					continue
				}
				octx, c := context.WithTimeout(decCtx, 10*time.Second)
				out, err := client.DecidePending(octx, fleet.PendingFilter{Calls: ready[approve]}, fleet.Decision{Approve: approve, By: "chaos", Reason: denyReason})
				c()
				ready[approve] = ready[approve][:0]
				if err != nil {
					// not listed (no replica answered): found again on
					// the next round
					decMu.Lock()
					decideErrs["list: "+err.Error()]++
					decMu.Unlock()
					continue
				}
				for _, o := range out {
					id, rec, err := o.Call.MissionID, o.Decided, o.Err
					if rec != nil && err != nil {
						// decided, not queued: the deadline's schedule
						// queues the mission
						decMu.Lock()
						wakeLost++
						unqueued[id] = true
						decMu.Unlock()
					} else if err != nil && !errors.Is(err, fleet.ErrNoPendingCall) {
						// the decision may have been recorded with its
						// answer lost (a deadline passed), or not made
						// (the batch stopped before it): decided again
						// on the next round, as an approver tries again,
						// which queues the mission when it was
						decMu.Lock()
						decideErrs[strings.ReplaceAll(err.Error(), id, "<id>")]++
						unqueued[id] = true
						decMu.Unlock()
					}
				}
			}
		}
	}()

	// countFinished reads the status of each mission not seen finished
	// yet: a finished mission stays finished, so a read that fails (a
	// direct get answered by no replica while a node catches up) delays
	// the count, not forever. readErrs counts the failed reads.
	readErrs, lastReadErr, quotaWaits := 0, "", 0
	countFinished := func() (done, waiting int) {
		for _, id := range ids {
			decMu.Lock()
			seen := finished[id]
			decMu.Unlock()
			if seen {
				done++
				continue
			}
			cctx, c := context.WithTimeout(ctx, time.Second)
			st, err := client.Status(cctx, id)
			c()
			switch {
			case err != nil:
				readErrs++
				lastReadErr = err.Error()
			case messages.TerminalState(st.State):
				done++
				decMu.Lock()
				finished[id] = true
				decMu.Unlock()
			case st.State == messages.StateAwaitingApproval:
				waiting++
			case st.State == messages.StateQuotaWait:
				quotaWaits++
			}
		}
		return done, waiting
	}
	rng := rand.New(rand.NewPCG(5, 6))
	kills, selfExits, nodeRestarts := 0, 0, 0
	lastRestart := time.Now().Add(-time.Second)
	lastKill, lastKillDone, lastKillWaiting := time.Time{}, -1, -1
	for ctx.Err() == nil {
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		done, waiting := countFinished()
		if done == n {
			break
		}
		// one node at a time, while missions wait, once every stream has
		// caught up on the node restarted before (a node restarted while
		// another is still behind leaves a stream without a quorum)
		if !fleettest.Race && nodeRestarts < 3 && waiting > 0 && time.Since(lastRestart) > 3*time.Second && caughtUp(ctx, js) {
			nd := nodes[nodeRestarts%len(nodes)]
			nd.kill()
			time.Sleep(time.Second)
			nd.start(t)
			nodeRestarts++
			lastRestart = time.Now()
			t.Logf("node %s killed and restarted with %d missions waiting for approval, %d of %d finished", nd.name, waiting, done, n)
			continue
		}
		i := rng.IntN(len(workers))
		select {
		case <-workers[i].done:
			selfExits++
			t.Log(workers[i].exitReport())
			workers[i] = start(false)
			continue
		default:
		}
		// a worker is killed once it has started, and only while another
		// one runs: a slow start (under -race, or a node restarting) is
		// not killed over and over while nothing makes progress
		ready := 0
		for _, w := range workers {
			if w.isReady() {
				ready++
			}
		}
		if !workers[i].isReady() || ready < 2 {
			continue
		}
		// and only once the missions moved since the last kill, or a
		// redelivery's AckWait went by: on a loaded machine kills faster
		// than missions move would let none reach its call
		if done == lastKillDone && waiting == lastKillWaiting && time.Since(lastKill) < 4*time.Second {
			continue
		}
		workers[i].kill()
		kills++
		lastKill, lastKillDone, lastKillWaiting = time.Now(), done, waiting
		workers[i] = start(false)
	}
	elapsed := time.Since(began)
	stopDecider()
	<-deciderDone
	for _, w := range workers {
		select {
		case <-w.done:
			selfExits++
			t.Log(w.exitReport())
		default:
		}
	}

	if readErrs > 0 {
		t.Logf("%d status reads failed while the missions ran (and were read again), the last: %s", readErrs, lastReadErr)
	}
	// the results are read on contexts of their own: a run that used up
	// ctx still says which missions have one
	lost, wrong, waited, nApproved, nDenied, nTimedOut := 0, 0, 0, 0, 0, 0
	var failed []string // the missions reported at the end
	fail := func(id string) {
		if !slices.Contains(failed, id) {
			failed = append(failed, id)
		}
	}
	for k, id := range ids {
		actx, c := context.WithTimeout(context.Background(), 20*time.Second)
		step, err := client.Await(actx, id)
		c()
		if err != nil {
			lost++
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			st, serr := client.Status(sctx, id)
			c()
			t.Logf("mission %d lost: %v; status %+v %v", k, err, st, serr)
			fail(id)
			continue
		}
		if !step.Ok() || !reflect.DeepEqual(step.Return, approvalChaosWant(k)) {
			wrong++
			t.Logf("mission %d: %+v %+v", k, step.Return, step.Fail)
			fail(id)
		}
		actx, c = context.WithTimeout(context.Background(), 5*time.Second)
		as, err := client.Approvals(actx, id)
		c()
		if err == nil {
			waited += len(as)
			for _, a := range as {
				switch {
				case a.State == messages.ApprovalApproved:
					nApproved++
				case a.State == messages.ApprovalDenied && a.Reason == messages.ReasonApprovalTimeout:
					nTimedOut++
				case a.State == messages.ApprovalDenied:
					nDenied++
				}
				if undecided(k) && (a.State != messages.ApprovalDenied || a.Reason != messages.ReasonApprovalTimeout) {
					// no one decides it: only its deadline can
					wrong++
					t.Logf("undecided mission %d: call %s %s (%s) by %s", k, a.Call, a.State, a.Reason, a.DecidedBy)
					fail(id)
				}
				if deciderDies(k) && (a.State != messages.ApprovalApproved || a.DecidedBy != diedDecider) {
					// its decider's record, queued by the workers' sweep
					wrong++
					t.Logf("mission %d whose decider died: call %s %s (%s) by %s", k, a.Call, a.State, a.Reason, a.DecidedBy)
					fail(id)
				}
			}
			if undecided(k) && len(as) == 0 {
				wrong++
				t.Logf("undecided mission %d: no call waited for approval", k)
				fail(id)
			}
		}
	}
	duplicated := 0
	if stored, err := storedResults(ctx, js); err == nil {
		duplicated = stored - (n - lost)
	}
	perMission, perKey := pay.counts()
	payRepeats, deniedRan, approvedNotRun := 0, 0, 0
	for key, c := range perKey {
		payRepeats += c - 1
		if c > 1 {
			fail(missionOfKey(key))
		}
	}
	for k, id := range ids {
		switch {
		case k%2 == 1 && perMission[id] != 0:
			deniedRan++
			fail(id)
		case k%2 == 0 && perMission[id] != 1:
			approvedNotRun++
			t.Logf("approved mission %d: pay ran %d times", k, perMission[id])
			fail(id)
		}
	}
	addRepeats, _, _ := add.repeats()
	for _, key := range add.repeatedKeys() {
		fail(missionOfKey(key))
	}
	_, _, afterFinal := model.repeats()
	decMu.Lock()
	for e, c := range decideErrs {
		t.Logf("%d decisions failed (and were made again) with: %s", c, e)
	}
	decMu.Unlock()
	t.Logf("%d missions in %v: %d lost, %d duplicated results, %d wrong; %d worker kills, %d node restarts, %d self-exits; "+
		"%d calls waited for approval, calls approved %d, denied %d, denied at their deadline %d (%d decisions whose wake was not confirmed; deciding again queued %d missions; %d recorded by a decider that died, left to the workers' sweep); pay ran %d times for %d approved missions (%d repeated per key, %d not once), %d for denied missions; "+
		"add repeated %d; %d model requests for finished missions; %d status reads saw a mission in quota_wait",
		n, elapsed.Round(time.Millisecond), lost, duplicated, wrong, kills, nodeRestarts, selfExits,
		waited, nApproved, nDenied, nTimedOut, wakeLost, requeued, len(died), len(perKey), (n+1)/2, payRepeats, approvedNotRun, deniedRan, addRepeats, afterFinal, quotaWaits)
	if lost != 0 || duplicated != 0 || wrong != 0 || payRepeats != 0 || approvedNotRun != 0 || deniedRan != 0 || addRepeats != 0 || afterFinal != 0 || selfExits != 0 {
		t.Error("want 0 lost, 0 duplicated, 0 wrong, each approved call run exactly once, no denied call run, 0 repeated add, 0 finished missions run again, 0 self-exits")
		// where the fleet stands: each stream's leader and replicas, and
		// what the live workers wrote last
		t.Log(clusterState(js))
		for _, w := range workers {
			t.Logf("worker %s, the end of its stderr:\n%s", w.id, w.stderr.String())
		}
		// each failing mission: where it stands and what every worker
		// (killed ones too) logged of it
		reportMissions(t, client, logs, tap, model, failed)
		t.Log(parkedState(js, failed))
	}
	if kills == 0 || (nodeRestarts == 0 && !fleettest.Race) || waited < n || quotaWaits == 0 {
		t.Errorf("the chaos did not happen while missions waited: %d kills, %d node restarts, %d calls waited, %d status reads saw quota_wait", kills, nodeRestarts, waited, quotaWaits)
	}
}

// parkedState describes what PARKED holds: its messages by subject, and
// the parked message (the deadline's schedule) of each mission of ids.
func parkedState(js jetstream.JetStream, ids []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	s, err := js.Stream(ctx, messages.StreamParked)
	if err != nil {
		return fmt.Sprintf("PARKED: %v", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return fmt.Sprintf("PARKED: %v", err)
	}
	subjects := slices.Sorted(maps.Keys(info.State.Subjects))
	fmt.Fprintf(&b, "PARKED holds %d messages on %d subjects:\n", info.State.Msgs, len(subjects))
	for _, subj := range subjects {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			fmt.Fprintf(&b, "  %s: %d, last: %v\n", subj, info.State.Subjects[subj], err)
			continue
		}
		fmt.Fprintf(&b, "  %s: %d, last seq %d at %s, %d bytes, headers %v\n", subj, info.State.Subjects[subj], m.Sequence, m.Time.Format("15:04:05.000"), len(m.Data), m.Header)
	}
	for _, id := range ids {
		if _, ok := info.State.Subjects[messages.ParkSubject(id)]; !ok {
			fmt.Fprintf(&b, "mission %s has no parked message\n", id)
		}
	}
	return b.String()
}

// diedDecider is who the decider that dies records as the approver.
const diedDecider = "dying-decider"

// recordWithoutWake approves each call of mission id pending for 2 s or
// more in its record alone, as a decider that dies before queueing the
// mission leaves it. It reports whether a call of the mission is
// recorded so (now, or by an earlier try whose answer was lost).
func recordWithoutWake(ctx context.Context, c *fleet.Client, id string) bool {
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	as, err := c.Approvals(octx, id)
	if err != nil {
		return false
	}
	recorded := false
	for _, a := range as {
		if a.State == messages.ApprovalApproved && a.DecidedBy == diedDecider {
			recorded = true
		}
		if a.State != messages.ApprovalPending || time.Since(a.RequestedAt) < 2*time.Second {
			continue
		}
		kv := c.Stores().Approvals
		key := messages.ApprovalKey(id, a.Call)
		e, err := kv.Get(octx, key)
		if err != nil {
			continue
		}
		a.State, a.DecidedBy, a.DecidedAt = messages.ApprovalApproved, diedDecider, time.Now().UTC()
		data, err := messages.Marshal(a)
		if err != nil {
			continue
		}
		if _, err := kv.Update(octx, key, data, e.Revision()); err == nil {
			recorded = true
		}
	}
	return recorded
}
