package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestWorkerKeepsLargeToolResults runs the worker binary as its own
// process against a real nats-server and a tool service returning 50,000
// (and, without the race detector, 200,000) email records of 12 fields,
// several MB to about 50 MB of msgpack: the result travels out of band,
// the program keeps it with def in turn 1 and filters it in turn 2, and
// the mission returns the right count with the tool called once. The
// worker runs on its shipped settings, under the shipped pod's GOMEMLIMIT;
// the mission raises program_memory to their ceiling (256 MiB), which
// 200,000 records kept with def fit in, and the worker's peak RSS stays
// within that GOMEMLIMIT (460 MiB of the pod's 512 MiB): keeping the
// records costs no copy of them.
func TestWorkerKeepsLargeToolResults(t *testing.T) {
	sizes := []int{50_000}
	if !fleettest.Race {
		sizes = append(sizes, 200_000) // under -race this one takes minutes
	}
	ns := fleettest.Start(t)
	var calls atomic.Int32
	svc, err := fleet.NewToolService(ns.Conn(), fleet.ToolServiceConfig{Name: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("search_mail", fleet.ToolSpec{Signature: "(n :int) -> [:map]"}, func(_ context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		n, _ := args["n"].(int64)
		return fleettest.MailRecords(int(n)), nil
	}); err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, n := range sizes {
		replies = append(replies,
			fmt.Sprintf("```clojure\n(def mail (tool/search_mail {:n %d}))\n(count mail)\n```", n),
			"```clojure\n(return {:n (count mail) :big (count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) mail))})\n```")
	}
	llmSrv, _ := webtest.ScriptedChat(t, replies...)

	w := startWorkerProcess(t,
		shippedGOMEMLIMIT,
		"PTC_NATS_URL="+ns.ClientURL(),
		// building and storing 50,000 records under the race detector on
		// a loaded machine may take longer than the default 10 s bound of
		// a tool call; the test is about keeping the result, not its speed
		"PTC_TOOL_TIMEOUT=2m",
		"PTC_MODEL_DEFAULT=openai:test-model@"+llmSrv.URL+"/v1",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client, err := fleet.NewClient(ctx, ns.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		want := fleettest.BigUnread(fleettest.MailRecords(n))
		start := time.Now()
		step, err := client.Run(ctx, &messages.Mission{
			ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"search_mail"},
			Agent: &messages.AgentSpec{Prompt: "Keep the mail, then count the big unread ones.", Tools: []string{"search_mail"},
				// more than the default program_memory (64 MiB): the
				// ceiling of the worker's shipped settings
				Limits: messages.Limits{MaxTurns: 2, ProgramMemory: defaultMaxProgramMemory, ProgramTimeout: 4 * time.Minute}},
		})
		if err != nil {
			t.Fatalf("%d records: %v\n%s", n, err, w.stderr.String())
		}
		if step.Fail != nil {
			for _, turn := range step.Trace {
				t.Logf("turn %d error: %.400s", turn.Number, turn.Error)
			}
			t.Fatalf("%d records: %+v", n, step.Fail)
		}
		got, _ := step.Return.(map[string]any)
		if got["n"] != int64(n) || got["big"] != want {
			t.Fatalf("%d records: return %v, want n %d big %d", n, step.Return, n, want)
		}
		if c := calls.Load(); c != int32(i+1) {
			t.Fatalf("%d records: the tool was called %d times in all, want %d", n, c, i+1)
		}
		peak := vmHWM(t, w.cmd.Process.Pid)
		t.Logf("%d records kept and filtered in %v; worker peak RSS so far %d MiB", n, time.Since(start).Round(time.Millisecond), peak>>20)
		if !fleettest.Race && peak > shippedMemLimit {
			t.Errorf("%d records: worker peak RSS %d MiB, over the shipped GOMEMLIMIT of %d MiB", n, peak>>20, shippedMemLimit>>20)
		}
	}
}
