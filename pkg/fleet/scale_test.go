package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestManyMissionsAcrossWorkers is the Consume-stall regression: missions
// spread over several workers must all finish, each once, with no long idle
// gap while work is queued (a lost pull request used to idle a worker for
// the whole 30 s pull expiry).
func TestManyMissionsAcrossWorkers(t *testing.T) {
	missions := scaleMissions
	const workers, submitters = 3, 8
	srv, nc := runJetStream(t)
	// A roomy AckWait: this test is about dispatch, not redelivery, and a
	// loaded 2-core machine under -race can stall a heartbeat for a second.
	store := testStore
	store.AckWait = 10 * time.Second
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	startTools(t, nc)

	var mu sync.Mutex
	var starts []time.Time
	var worstQueue time.Duration
	runs := map[string]int{}
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		now := time.Now()
		mu.Lock()
		starts = append(starts, now)
		worstQueue = max(worstQueue, now.Sub(m.CreatedAt))
		runs[m.ID]++
		mu.Unlock()
		r, err := env.Tools.Call(ctx, "search", map[string]any{"query": m.ID})
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: r}, nil
	})
	for range workers {
		wnc := connect(t, srv) // one connection per worker, as in a fleet
		startWorker(t, wnc, runner, func(cfg *fleet.WorkerConfig) {
			cfg.Slots, cfg.Store = 8, store
			log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
			cfg.Logger = &log
		})
	}

	got := make(chan string, 2*missions)
	sub, err := nc.Subscribe(messages.ResultSubject("*", "*"), func(msg *nats.Msg) {
		got <- msg.Header.Get(messages.HeaderMissionID)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(missions) {
				if _, err := c.Submit(ctx, newMission("search")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[string]bool{}
	for len(seen) < missions {
		select {
		case id := <-got:
			seen[id] = true
		case <-ctx.Done():
			t.Fatalf("only %d of %d results", len(seen), missions)
		}
	}
	wg.Wait()
	elapsed := time.Since(begin)
	// A core subscriber can see a result a moment before the stream has
	// stored it: wait for the count, then read every result back.
	eventually(t, 10*time.Second, fmt.Sprintf("all %d results stored", missions), func() bool {
		// the results, not the missions' records next to them
		info, err := c.Stores().Results.Info(ctx, jetstream.WithSubjectFilter(messages.ResultSubject("*", "*")))
		return err == nil && len(info.State.Subjects) == missions
	})
	for id := range seen {
		if step, err := c.Result(ctx, id); err != nil || step.Fail != nil {
			t.Errorf("result of %s: %v (%+v)", id, err, step)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("mission %s ran %d times", id, n)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	var worstGap time.Duration
	for i := 1; i < len(starts); i++ {
		worstGap = max(worstGap, starts[i].Sub(starts[i-1]))
	}
	t.Logf("%d missions, %d workers: %s (%.0f/s), worst gap between starts %s, worst queue-to-start %s",
		missions, workers, elapsed.Round(time.Millisecond), float64(missions)/elapsed.Seconds(), worstGap, worstQueue)
	// A lost pull request idled a Consume-based worker for the whole 30 s
	// pull expiry; scheduling noise, even under -race on a loaded shared
	// machine, stays far below this bound.
	if worstGap > 10*time.Second {
		t.Errorf("worst gap between mission starts = %s: a worker stalled while work was queued", worstGap)
	}
}

func TestHigherPriorityFirst(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx := testCtx(t)
	for _, p := range []string{messages.PriorityLow, messages.PriorityNormal, messages.PriorityHigh} {
		m := newMission()
		m.Priority = p
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		order = append(order, m.Priority)
		mu.Unlock()
		return &messages.Step{}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Slots = 1; cfg.Priorities = nil })
	eventually(t, 10*time.Second, "three runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if order[0] != messages.PriorityHigh || order[1] != messages.PriorityNormal || order[2] != messages.PriorityLow {
		t.Fatalf("run order = %v, want high normal low", order)
	}
}

func TestLargeContextTravelsThroughObjectStore(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		rows, _ := m.Context["rows"].([]any)
		return &messages.Step{Return: map[string]any{"rows": int64(len(rows)), "ref": m.ContextRef}}, nil
	}))
	m := newMission()
	rows := make([]any, 20000)
	for i := range rows {
		rows[i] = map[string]any{"id": int64(i), "body": "some text to make the row longer"}
	}
	m.Context = map[string]any{"rows": rows}
	step, err := c.Run(testCtx(t), m)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["rows"] != int64(20000) || ret["ref"] != "" {
		t.Fatalf("runner saw %v", ret)
	}
	// A mission that is large for another reason is refused before
	// anything is stored.
	huge := newMission()
	huge.Agent.Prompt = strings.Repeat("x", 300<<10)
	if _, err := c.Submit(testCtx(t), huge); !errors.Is(err, messages.ErrInvalid) || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("Submit(huge prompt) = %v", err)
	}
	if _, err := c.Status(testCtx(t), huge.ID); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("a refused mission has a status: %v", err)
	}
}
