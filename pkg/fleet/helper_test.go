package fleet_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// testStore is the store layout of the tests: short AckWait so redelivery
// happens within a test.
var testStore = fleet.StoreConfig{AckWait: time.Second, MaxDeliver: 3}

// earlierLaneTransform is the transform destination that gave a mission
// submitted on mission.submit.*.*.* its lane in an earlier layout, whose
// MISSIONS held the submit subjects alone.
const earlierLaneTransform = "mission.submit.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{partition(8,1)}}"

// earlierParkedSource is the source of PARKED's wakes an earlier
// layout's MISSIONS had, storing each as destination makes it.
func earlierParkedSource(destination string) []*jetstream.StreamSource {
	return []*jetstream.StreamSource{{Name: messages.StreamParked,
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: messages.WakeWildcard, Destination: destination}}}}
}

// storedSubject is the subject MISSIONS stores mission id of submitter
// sub, of priority prio, on: its submit subject in the submitter's lane.
func storedSubject(sub, prio, id string) string {
	return messages.SubmitSubject(sub, prio, id) + "." + strconv.Itoa(messages.SubmitLane(sub))
}

// runJetStream starts an embedded JetStream server in t.TempDir() and
// returns it with an in-process connection; both are closed by t.Cleanup.
func runJetStream(t testing.TB) (*embedded.Server, *nats.Conn) {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	nc := connect(t, s)
	return s, nc
}

func connect(t testing.TB, s *embedded.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Conn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func newClient(t testing.TB, nc *nats.Conn) *fleet.Client {
	t.Helper()
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: testStore})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var workerSeq atomic.Int64

// startWorker starts a worker with test defaults (one priority, short
// waits) and stops it on cleanup.
func startWorker(t testing.TB, nc *nats.Conn, r fleet.Runner, edit ...func(*fleet.WorkerConfig)) *fleet.Worker {
	t.Helper()
	cfg := fleet.WorkerConfig{
		ID:              fmt.Sprintf("w%d", workerSeq.Add(1)),
		Runner:          r,
		Slots:           4,
		Priorities:      []string{messages.PriorityNormal},
		Store:           testStore,
		IdleWait:        200 * time.Millisecond,
		NakDelay:        50 * time.Millisecond,
		DrainGrace:      5 * time.Second,
		ToolTimeout:     2 * time.Second,
		ToolMissRefresh: 50 * time.Millisecond,
		DiscoveryWait:   100 * time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	w, err := fleet.NewWorker(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	return w
}

// countingRunner counts its runs in runs and returns a Step with ret.
func countingRunner(runs *atomic.Int64, ret any) fleet.RunnerFunc {
	return func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return &messages.Step{Return: ret}, nil
	}
}

func newMission(tools ...string) *messages.Mission {
	return &messages.Mission{
		ID:      messages.NewMissionID(),
		Kind:    messages.KindAgent,
		Agent:   &messages.AgentSpec{Prompt: "do it", Tools: tools},
		Tools:   tools,
		Context: map[string]any{"n": int64(2)},
	}
}

// startTools starts a tool service "mail" with search, count (typed), slow,
// boom (panics) and secret tools; calls counts calls per tool.
type mailTools struct {
	svc   *fleet.ToolService
	mu    sync.Mutex
	calls map[string]int
}

func (m *mailTools) count(name string) {
	m.mu.Lock()
	m.calls[name]++
	m.mu.Unlock()
}

func (m *mailTools) Calls(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[name]
}

type countArgs struct {
	Folder string `json:"folder"`
}
type countResult struct {
	Folder string `json:"folder"`
	Count  int    `json:"count"`
}

func startTools(t testing.TB, nc *nats.Conn) *mailTools {
	t.Helper()
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "mail", Description: "mail tools"})
	if err != nil {
		t.Fatal(err)
	}
	m := &mailTools{svc: svc, calls: map[string]int{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(svc.Register("search", fleet.ToolSpec{Signature: "(query :string) -> [{id :int, subject :string}]", Description: "search mail"},
		func(ctx context.Context, args map[string]any) (any, error) {
			m.count("search")
			q, _ := args["query"].(string)
			return []any{map[string]any{"id": 1, "subject": "re: " + q, "_token": "hidden"}}, nil
		}))
	must(fleet.RegisterTyped(svc, "count", fleet.ToolSpec{Description: "count mail"},
		func(ctx context.Context, in countArgs) (countResult, error) {
			m.count("count")
			if in.Folder == "" {
				return countResult{}, fmt.Errorf("folder is required")
			}
			return countResult{Folder: in.Folder, Count: 42}, nil
		}))
	must(svc.Register("slow", fleet.ToolSpec{Description: "sleeps"},
		func(ctx context.Context, args map[string]any) (any, error) {
			m.count("slow")
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Second):
				return "late", nil
			}
		}))
	must(svc.Register("boom", fleet.ToolSpec{Description: "panics"},
		func(ctx context.Context, args map[string]any) (any, error) {
			m.count("boom")
			panic("kaboom")
		}))
	must(svc.Register("secret", fleet.ToolSpec{Description: "not for everyone"},
		func(ctx context.Context, args map[string]any) (any, error) {
			m.count("secret")
			return "the secret", nil
		}))
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return m
}

// resultsStored counts the messages stored on a mission's result subject.
func resultsStored(t testing.TB, c *fleet.Client, id string) uint64 {
	t.Helper()
	info, err := c.Stores().Results.Info(testCtx(t), jetstream.WithSubjectFilter(messages.ResultSubject(messages.DefaultSubmitter, id)))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[messages.ResultSubject(messages.DefaultSubmitter, id)]
}

// eventually polls cond until it holds or the time is up.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMain(m *testing.M) {
	if url := os.Getenv(subprocessEnv); url != "" {
		os.Exit(runSubprocessWorker(url))
	}
	if url := os.Getenv(benchWorkerEnv); url != "" {
		os.Exit(runBenchWorker(url))
	}
	os.Exit(m.Run())
}

// waitState waits for a mission's status to reach state (the status is
// written just after the result) and returns it.
func waitState(t testing.TB, c *fleet.Client, id, state string) *messages.Status {
	t.Helper()
	var st *messages.Status
	eventually(t, 5*time.Second, "state "+state, func() bool {
		var err error
		st, err = c.Status(context.Background(), id)
		return err == nil && st.State == state
	})
	return st
}
