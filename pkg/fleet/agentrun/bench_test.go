package agentrun_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// firstCallModel is a zero-latency model that answers every mission with a
// one-tool-call program and records when each mission first reached it.
type firstCallModel struct {
	mu        sync.Mutex
	submitted map[string]time.Time // prompt → submit time
	firstCall []time.Duration
}

func (m *firstCallModel) Complete(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	if t0, ok := m.submitted[req.Prompt]; ok {
		m.firstCall = append(m.firstCall, time.Since(t0))
		delete(m.submitted, req.Prompt)
	}
	m.mu.Unlock()
	return &llm.Response{Content: "```clojure\n(return {:n (count (tool/get_customer {:id 1}))})\n```"}, nil
}

// BenchmarkMissions measures missions per second end to end (submit →
// worker → agent loop with a zero-latency model → one NATS tool call →
// result stored → Await) with 1 and 2 in-process workers, and the
// queue-to-first-model-call latency: with one mission in flight (an idle
// fleet: pickup is bounded by the worker's IdleWait when it serves several
// priorities, and immediate when it serves one) and with 32 (a busy fleet,
// where queueing dominates). Workers use their default configuration; the
// 32-in-flight cases run with the turn journal on (the default: the model
// reply and the tool result are journaled before the loop uses them) and
// off, in the same run. cpu-µs/mission is the CPU time the whole process
// (server, workers, client) spent per mission: unlike missions/s it holds
// on a busy machine; so do the journal's messages and bytes per mission.
func BenchmarkMissions(b *testing.B) {
	for _, c := range []struct {
		workers, inflight int
		priorities        []string
		noJournal         bool
	}{{1, 1, nil, false}, {1, 1, []string{messages.PriorityNormal}, false},
		{1, 32, nil, false}, {1, 32, nil, true}, {2, 32, nil, false}, {2, 32, nil, true}} {
		workers := c.workers
		name := fmt.Sprintf("workers=%d/inflight=%d", c.workers, c.inflight)
		if c.priorities != nil {
			name += "/one-priority"
		}
		if c.inflight > 1 {
			name += map[bool]string{false: "/journal=on", true: "/journal=off"}[c.noJournal]
		}
		b.Run(name, func(b *testing.B) {
			conn := fleettest.Start(b).Conn
			ctx := context.Background()
			svc, err := fleet.NewToolService(conn(), fleet.ToolServiceConfig{Name: shop.ServiceName})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Stop(ctx)
			if err := shop.Generate(100, 10, 10).Register(svc); err != nil {
				b.Fatal(err)
			}
			model := &firstCallModel{submitted: map[string]time.Time{}}
			for range workers {
				w, err := fleet.NewWorker(conn(), fleet.WorkerConfig{
					Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}),
					Slots:  8, Priorities: c.priorities, NoJournal: c.noJournal,
				})
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Start(ctx); err != nil {
					b.Fatal(err)
				}
				defer w.Stop()
			}
			cnc := conn()
			client, err := fleet.NewClient(ctx, cnc, fleet.ClientConfig{})
			if err != nil {
				b.Fatal(err)
			}
			spec := &messages.AgentSpec{Prompt: "Mission {{n}}", Signature: "(n :int) -> {n :int}", Tools: []string{"get_customer"}}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, cpuOK := fleettest.ProcessCPU()
			elapsed, errs := runMissions(ctx, b, client, spec, c.inflight, func(i int) {
				model.mu.Lock()
				model.submitted["Mission "+strconv.Itoa(i)] = time.Now()
				model.mu.Unlock()
			})
			for _, err := range errs {
				if !strings.Contains(err.Error(), "context") {
					b.Fatal(err)
				}
			}
			model.mu.Lock()
			lat := slices.Clone(model.firstCall)
			model.mu.Unlock()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "missions/s")
			if cpu1, ok := fleettest.ProcessCPU(); ok && cpuOK {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-µs/mission")
			}
			if c.inflight > 1 && !c.noJournal {
				// What the journal wrote, whatever the machine's load.
				js, err := jetstream.New(cnc)
				if err != nil {
					b.Fatal(err)
				}
				s, err := js.Stream(ctx, messages.StreamJournal)
				if err != nil {
					b.Fatal(err)
				}
				info, err := s.Info(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(info.State.Msgs)/float64(b.N), "journal-msgs/mission")
				b.ReportMetric(float64(info.State.Bytes)/float64(b.N), "journal-B/mission")
			}
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-first-call-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-first-call-ms")
			}
		})
	}
}

// runMissions runs b.N missions of spec on client, inflight at a time
// (mission i with context n = i), calling before(i), if given, just ahead
// of submitting mission i. It stops the timer when all are done and
// returns the time they took and the errors of those that did not succeed.
func runMissions(ctx context.Context, b *testing.B, client *fleet.Client, spec *messages.AgentSpec, inflight int, before func(i int)) (time.Duration, []error) {
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, inflight)
	errs := make(chan error, b.N)
	for i := range b.N {
		sem <- struct{}{}
		wg.Add(1)
		if before != nil {
			before(i)
		}
		go func() {
			defer func() { <-sem; wg.Done() }()
			step, err := client.Run(ctx, &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
				Agent: spec, Context: map[string]any{"n": int64(i)}, Tools: spec.Tools})
			if err == nil && step.Fail != nil {
				err = fmt.Errorf("mission failed: %s", step.Fail.Error())
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	var failed []error
	for err := range errs {
		failed = append(failed, err)
	}
	return elapsed, failed
}
