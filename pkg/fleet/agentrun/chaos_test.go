package agentrun_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func dial(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, reconnecting()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// A three-turn mission whose worker process is SIGKILLed during turn 3 is
// finished by another worker process, with default settings, within 10 s:
// the model answers each turn once and each tool call runs once.
func TestKilledWorkerProcessMissionFinishedByAnother(t *testing.T) {
	srv := fleettest.Start(t)
	nc := dial(t, srv.ClientURL())
	tools := startCountingTools(t, nc, 1)
	model := newFakeModel()
	held := make(chan string, 1)
	var holdOnce atomic.Bool
	model.hold = func(id string, turn int) bool {
		if turn == 3 && holdOnce.CompareAndSwap(false, true) {
			held <- id
			return true
		}
		return false
	}
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	procs := map[string]*proc{}
	for _, id := range []string{"wa", "wb"} {
		procs[id] = startWorkerProc(t, srv.ClientURL(), ms.URL, id, nil, true)
	}
	m := chaosMission(7)
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the mission never reached turn 3")
	}
	owner := statusWorker(ctx, client, m.ID)
	p := procs[owner]
	if p == nil {
		t.Fatalf("status names worker %q", owner)
	}
	p.kill()
	killed := time.Now()
	step, err := client.Await(ctx, m.ID)
	took := time.Since(killed)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() || !reflect.DeepEqual(step.Return, wantReturn(7)) {
		t.Fatalf("step = %+v / %+v", step.Return, step.Fail)
	}
	if took > 10*time.Second {
		t.Errorf("takeover and finish took %v after the kill, want < 10s with default settings", took)
	}
	model.mu.Lock()
	for turn := 1; turn <= 3; turn++ {
		if n := model.answered[fmt.Sprintf("%s/%d", m.ID, turn)]; n != 1 {
			t.Errorf("turn %d answered %d times, want 1", turn, n)
		}
	}
	for turn := 1; turn <= 2; turn++ {
		if n := model.asked[fmt.Sprintf("%s/%d", m.ID, turn)]; n != 1 {
			t.Errorf("turn %d asked %d times, want 1", turn, n)
		}
	}
	model.mu.Unlock()
	addRep, noteRep, calls := tools.repeats()
	if addRep != 0 || noteRep != 0 || calls != 3 {
		t.Errorf("tool executions: %d calls, %d repeated add, %d repeated note; want 3 calls, none repeated", calls, addRep, noteRep)
	}
	if step.Attempts != 2 || step.Replayed == nil || step.Replayed.ModelCalls != 2 || step.Replayed.ToolCalls != 3 {
		t.Errorf("attempts %d, replayed %+v", step.Attempts, step.Replayed)
	}
	if step.Usage.Requests != 3 || step.Usage.InputTokens != 300 {
		t.Errorf("usage %+v, want 3 requests and 300 input tokens over both attempts", step.Usage)
	}
	if r, _ := replayStored(t, client, m.ID, agentrun.ReplayOptions{}); len(r.Divergences) > 0 || r.Served != 3 {
		t.Errorf("replay of the resumed mission: served %d, divergences %v", r.Served, r.Divergences)
	}
	t.Logf("killed %s in turn 3; mission finished by the other worker %v later", owner, took.Round(time.Millisecond))
}

// chaosFigures are what a chaos run measured.
type chaosFigures struct {
	missions, lost, duplicated, wrong, kills, selfExits int
	modelRepeats, modelAnswerRepeats, afterFinal        int
	addRepeats, noteRepeats, toolCalls                  int
	replayedModel, replayedTools, multiAttempt          int
	elapsed                                             time.Duration
	// failed holds the ids of the missions lost, wrong or whose
	// deduplicating tool ran twice, for the report of a failed run
	failed []string
}

// report logs, for a run that failed, each failing mission's report and
// the lines of every worker log that name it.
func (f *chaosFigures) report(t *testing.T, client *fleet.Client, tools *countingTools, model *fakeModel, logs *workerLogs, tap *journalTap) {
	t.Helper()
	ids := f.failed
	for _, key := range tools.repeatedKeys() {
		if id := missionOfKey(key); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	model.mu.Lock()
	for _, id := range model.afterFinalIDs {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	model.mu.Unlock()
	reportMissions(t, client, logs, tap, model, ids)
}

// submitChaosMissions submits chaosMission(i) for i below n and returns
// their IDs in that order.
func submitChaosMissions(ctx context.Context, t *testing.T, client *fleet.Client, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		m := chaosMission(i)
		ids[i] = m.ID
		if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// hasResult reports whether a mission has a stored result, asking client
// for at most within.
func hasResult(client *fleet.Client, within time.Duration) func(id string) bool {
	return func(id string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		_, err := client.Result(ctx, id)
		return err == nil
	}
}

// await waits up to within for the result of each mission ids[i] (built
// by chaosMission(i)) and counts those lost, those wrong (logged with
// their turns' errors), those run more than once and what replay saved.
func (f *chaosFigures) await(ctx context.Context, t *testing.T, client *fleet.Client, ids []string, within time.Duration) {
	t.Helper()
	for i, id := range ids {
		actx, c := context.WithTimeout(ctx, within)
		step, err := client.Await(actx, id)
		c()
		switch {
		case err != nil:
			f.lost++
			f.failed = append(f.failed, id)
			continue
		case !step.Ok() || !reflect.DeepEqual(step.Return, wantReturn(i)):
			f.wrong++
			f.failed = append(f.failed, id)
			t.Logf("mission %d: %+v %+v", i, step.Return, step.Fail)
			for _, turn := range step.Trace {
				t.Logf("  turn %d: %s", turn.Number, turn.Error)
			}
		}
		if step.Attempts > 1 {
			f.multiAttempt++
		}
		if step.Replayed != nil {
			f.replayedModel += step.Replayed.ModelCalls
			f.replayedTools += step.Replayed.ToolCalls
		}
	}
}

func (f chaosFigures) String() string {
	return fmt.Sprintf("%d missions in %v: %d lost, %d duplicated results, %d wrong; %d worker kills, %d self-exits; "+
		"model requests repeated %d (answers repeated %d), %d for finished missions; "+
		"tool executions %d, repeated: deduplicating tool %d, plain tool %d; "+
		"%d missions ran more than once, replay saved %d model calls and %d tool calls",
		f.missions, f.elapsed.Round(time.Millisecond), f.lost, f.duplicated, f.wrong, f.kills, f.selfExits,
		f.modelRepeats, f.modelAnswerRepeats, f.afterFinal, f.toolCalls, f.addRepeats, f.noteRepeats,
		f.multiAttempt, f.replayedModel, f.replayedTools)
}

// chaosMissions is the number of missions of a chaos run.
func chaosMissions() int {
	if testing.Short() {
		return 100
	}
	return 150
}

// Missions keep their exactly-once results and lose no work while worker
// processes are SIGKILLed at random and the NATS server restarts once.
func TestChaosWorkersKilledAndNATSRestarted(t *testing.T) {
	dir := t.TempDir()
	port := fleettest.FreePort(t)
	var srvMu sync.Mutex
	srv, err := embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srvMu.Lock(); srv.Close(); srvMu.Unlock() })
	url := srv.ClientURL()
	nc := dial(t, url)
	tools := startCountingTools(t, dial(t, url), 1)
	tap := startJournalTap(t, dial(t, url))
	logs := newWorkerLogs(t)
	model := newFakeModel()
	model.delay = 100 * time.Millisecond
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store := fleet.StoreConfig{AckWait: 2 * time.Second, MaxDeliver: 30}
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	checker := dial(t, url)
	checkClient, _ := fleet.NewClient(ctx, checker, fleet.ClientConfig{SkipSetup: true})
	model.finished = hasResult(checkClient, 200*time.Millisecond)
	env := []string{envWorkerAckWait + "=2s", envWorkerDeliver + "=30", logs.env()}
	var fig chaosFigures
	fig.missions = chaosMissions()
	seq := 0
	start := func() *proc {
		seq++
		return startWorkerProc(t, url, ms.URL, fmt.Sprintf("w%d", seq), env, true)
	}
	workers := []*proc{start(), start(), start()}

	began := time.Now()
	ids := submitChaosMissions(ctx, t, client, fig.missions)
	finished := func() int {
		n := 0
		for _, id := range ids {
			if _, err := client.Result(ctx, id); err == nil {
				n++
			}
		}
		return n
	}
	rng := rand.New(rand.NewPCG(1, 2))
	restarted := false
	for ctx.Err() == nil {
		time.Sleep(time.Duration(150+rng.IntN(350)) * time.Millisecond)
		done := finished()
		if done == fig.missions {
			break
		}
		if !restarted && fig.kills >= 3 && done >= fig.missions/3 {
			restarted = true
			srvMu.Lock()
			srv.Close()
			time.Sleep(300 * time.Millisecond)
			srv, err = embedded.Start(embedded.Options{Dir: dir, Port: port})
			srvMu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("NATS restarted with %d of %d missions finished", done, fig.missions)
			continue
		}
		i := rng.IntN(len(workers))
		select {
		case <-workers[i].done:
			if workers[i].code != -1 {
				fig.selfExits++
				t.Log(workers[i].exitReport())
			}
		default:
			workers[i].kill()
			fig.kills++
		}
		workers[i] = start()
	}
	fig.elapsed = time.Since(began)
	if !restarted {
		t.Error("the missions finished before the NATS restart")
	}
	for _, w := range workers {
		select {
		case <-w.done:
			if w.code != -1 {
				fig.selfExits++
				t.Log(w.exitReport())
			}
		default:
		}
	}
	fig.await(ctx, t, client, ids, 10*time.Second)
	if js, err := jetstream.New(nc); err == nil {
		if n, err := storedResults(ctx, js); err == nil {
			fig.duplicated = n - (fig.missions - fig.lost)
		}
	}
	fig.modelRepeats, fig.modelAnswerRepeats, fig.afterFinal = model.repeats()
	fig.addRepeats, fig.noteRepeats, fig.toolCalls = tools.repeats()
	t.Log(fig)
	if fig.lost != 0 || fig.duplicated != 0 || fig.wrong != 0 || fig.addRepeats != 0 || fig.afterFinal != 0 || fig.selfExits != 0 {
		t.Errorf("want 0 lost, 0 duplicated, 0 wrong, 0 repeated executions of the deduplicating tool, 0 finished missions run again, 0 self-exits: %v", fig)
		fig.report(t, client, tools, model, logs, tap)
	}
	if fig.kills == 0 {
		t.Error("no worker was killed")
	}
}

// natsNode is a nats-server process of a test cluster.
type natsNode struct {
	name, conf, url string
	cmd             *exec.Cmd
	done            chan struct{}
}

func (n *natsNode) start(t testing.TB) {
	t.Helper()
	n.cmd = exec.Command(os.Args[0], "-test.run=^$")
	n.cmd.Env = append(os.Environ(), envNATSConfig+"="+n.conf)
	if os.Getenv("PTC_TEST_NATS_LOG") != "" {
		n.cmd.Stderr = os.Stderr
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.done = make(chan struct{})
	cmd, done := n.cmd, n.done
	go func() { _ = cmd.Wait(); close(done) }()
}

func (n *natsNode) kill() {
	_ = n.cmd.Process.Kill()
	<-n.done
}

// startCluster starts a 3-node JetStream cluster of nats-server processes
// and returns at once (the cluster forms while the caller goes on).
func startCluster(t *testing.T) []*natsNode {
	t.Helper()
	dir := t.TempDir()
	var ports, cports [3]int
	for i := range 3 {
		ports[i], cports[i] = fleettest.FreePort(t), fleettest.FreePort(t)
	}
	routes := ""
	for i := range 3 {
		routes += fmt.Sprintf("\"nats://127.0.0.1:%d\", ", cports[i])
	}
	nodes := make([]*natsNode, 3)
	for i := range 3 {
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), url: fmt.Sprintf("nats://127.0.0.1:%d", ports[i])}
		n.conf = filepath.Join(dir, n.name+".conf")
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster { name: ptc, listen: 127.0.0.1:%d, routes: [ %s ] }
`, n.name, ports[i], filepath.Join(dir, n.name), cports[i], routes)
		if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		n.start(t)
		t.Cleanup(n.kill)
		nodes[i] = n
	}
	return nodes
}

// The chaos test on a 3-node cluster with R3 streams: several workers
// started at once on the fresh cluster all wait for it instead of exiting;
// then worker processes are killed at random and one node at a time is
// killed and restarted. No result is lost or duplicated, no finished
// mission runs again, no deduplicating tool runs twice, no worker exits.
func TestClusterChaos(t *testing.T) {
	nodes := startCluster(t)
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url
	}
	url := joinURLs(urls)
	model := newFakeModel()
	model.delay = 100 * time.Millisecond
	ms := httptest.NewServer(model)
	t.Cleanup(ms.Close)
	logs := newWorkerLogs(t)
	env := []string{envWorkerAckWait + "=3s", envWorkerDeliver + "=30", envWorkerReplica + "=3", logs.env()}
	var fig chaosFigures
	fig.missions = chaosMissions()
	// Several workers at once on a cluster that is still forming.
	seq := 0
	start := func(wait bool) *proc {
		seq++
		return startWorkerProc(t, url, ms.URL, fmt.Sprintf("c%d", seq), env, wait)
	}
	workers := []*proc{start(false), start(false), start(false), start(false)}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	nc := dial(t, url)
	js, _ := jetstream.New(nc)
	formed := time.Now()
	if _, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{Replicas: 3, AckWait: 3 * time.Second, MaxDeliver: 30, VerifyOnly: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("layout ready %v after the nodes started", time.Since(formed).Round(time.Millisecond))
	tools := startCountingTools(t, dial(t, url), 3)
	tap := startJournalTap(t, dial(t, url))
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{SkipSetup: true})
	if err != nil {
		t.Fatal(err)
	}
	checkClient, _ := fleet.NewClient(ctx, dial(t, url), fleet.ClientConfig{SkipSetup: true})
	model.finished = hasResult(checkClient, 500*time.Millisecond)
	began := time.Now()
	ids := submitChaosMissions(ctx, t, client, fig.missions)
	finished := func() int {
		n := 0
		for _, id := range ids {
			cctx, c := context.WithTimeout(ctx, time.Second)
			if _, err := client.Result(cctx, id); err == nil {
				n++
			}
			c()
		}
		return n
	}
	rng := rand.New(rand.NewPCG(3, 4))
	nodeKills := 0
	for ctx.Err() == nil {
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		done := finished()
		if done == fig.missions {
			break
		}
		if nodeKills < 3 && done >= (nodeKills+1)*fig.missions/4 {
			// One node at a time: kill it, let it come back.
			n := nodes[nodeKills%len(nodes)]
			n.kill()
			time.Sleep(time.Second)
			n.start(t)
			nodeKills++
			t.Logf("node %s killed and restarted (%d of %d missions finished)", n.name, done, fig.missions)
			continue
		}
		i := rng.IntN(len(workers))
		select {
		case <-workers[i].done:
			fig.selfExits++
			t.Log(workers[i].exitReport())
		default:
			workers[i].kill()
			fig.kills++
		}
		workers[i] = start(false)
	}
	fig.elapsed = time.Since(began)
	for _, w := range workers {
		select {
		case <-w.done:
			fig.selfExits++
			t.Log(w.exitReport())
		default:
		}
	}
	fig.await(ctx, t, client, ids, 20*time.Second)
	if n, err := storedResults(ctx, js); err == nil {
		fig.duplicated = n - (fig.missions - fig.lost)
	}
	fig.modelRepeats, fig.modelAnswerRepeats, fig.afterFinal = model.repeats()
	fig.addRepeats, fig.noteRepeats, fig.toolCalls = tools.repeats()
	t.Logf("%v; %d node restarts", fig, nodeKills)
	if fig.lost != 0 || fig.duplicated != 0 || fig.wrong != 0 || fig.addRepeats != 0 || fig.afterFinal != 0 || fig.selfExits != 0 {
		t.Errorf("want 0 lost, 0 duplicated, 0 wrong, 0 repeated executions of the deduplicating tool, 0 finished missions run again, 0 self-exits: %v", fig)
		fig.report(t, client, tools, model, logs, tap)
	}
	// On R3 a worker stores a mission's record and result in one atomic
	// batch, falling back to two publishes when the batch is refused: the
	// chaos ran through the batch, and what it stored is checked above.
	batched, all, err := batchedResults(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d results stored in a batch with their record", batched, all)
	if batched == 0 {
		t.Errorf("no result stored in a batch with its record on the R3 cluster")
	}
	// Every finished mission replays from its record on the cluster,
	// those that resumed after a kill included.
	resumed := 0
	for _, id := range ids {
		r, step := replayStored(t, client, id, agentrun.ReplayOptions{})
		if len(r.Divergences) > 0 {
			t.Errorf("replay of %s (attempts %d): %v", id, step.Attempts, r.Divergences)
		}
		if step.Attempts > 1 {
			resumed++
		}
	}
	t.Logf("%d missions replayed with no divergence, %d of them resumed after a kill", len(ids), resumed)
}

// batchedResults reads every result RESULTS holds and counts those
// stored in an atomic batch (with their mission's record).
func batchedResults(ctx context.Context, js jetstream.JetStream) (batched, all int, err error) {
	n, err := storedResults(ctx, js)
	if err != nil {
		return 0, 0, err
	}
	c, err := js.OrderedConsumer(ctx, messages.StreamResults, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.ResultSubject("*", "*")}})
	if err != nil {
		return 0, 0, err
	}
	// the cluster may still be electing leaders after its last restart:
	// a read that fails is made again, for up to a minute
	deadline := time.Now().Add(time.Minute)
	for all < n {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			if time.Now().After(deadline) {
				return batched, all, fmt.Errorf("result %d of %d: %w", all+1, n, err)
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		all++
		if m.Headers().Get("Nats-Batch-Id") != "" {
			batched++
		}
	}
	return batched, all, nil
}

// storedResults counts the results RESULTS holds (not the missions'
// records next to them).
func storedResults(ctx context.Context, js jetstream.JetStream) (int, error) {
	s, err := js.Stream(ctx, messages.StreamResults)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(messages.ResultSubject("*", "*")))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, nil
}
