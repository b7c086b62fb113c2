package agentrun_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission waiting on its model holds no goroutine besides the model
// call's: the goroutine that took the mission (Worker.process) and the
// frames of its run (the runner's, the agent's set-up and loop) have
// returned, and the model call's goroutine holds the call alone. Once the
// reply comes the run goes on on that goroutine and the mission finishes
// as before.
func TestMissionWaitingOnItsModelHoldsOnlyTheModelCall(t *testing.T) {
	reached, gate := make(chan struct{}, 1), make(chan struct{})
	model := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		if req.Turn == 1 {
			reached <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &llm.Response{Content: "```clojure\n(return {:k 7})\n```"}, nil
	})
	env := startFleetModels(t, llm.Registry{"default": model}, true)
	type result struct {
		step *messages.Step
		err  error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "answer", Limits: messages.Limits{MaxTurns: 2}}}
		step, err := env.client.Run(ctx, m)
		res <- result{step, err}
	}()
	select {
	case <-reached:
	case r := <-res:
		t.Fatalf("the mission ended before its model call: %+v %v", r.step, r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the mission did not reach its model")
	}
	// what goroutines hold frames of the mission besides its model call
	held := func() (run []string, call string) {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			isCall := strings.Contains(g, "TestMissionWaitingOnItsModelHoldsOnlyTheModelCall.func1")
			for _, frame := range []string{"fleet.(*Worker).process", "agentrun.(*Runner).Run", "agentrun.(*Runner).Start",
				"agent.(*Agent).run(", "agent.(*Agent).loop(", "agent.(*Agent).RunAsync"} {
				if strings.Contains(g, frame) {
					run = append(run, g)
					break
				}
			}
			if isCall {
				call = g
			}
		}
		return run, call
	}
	// the goroutine that started the call returns just after it started
	var run []string
	var call string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if run, call = held(); len(run) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(run) > 0 {
		t.Errorf("%d goroutines hold the waiting mission's run besides its model call; the first:\n%s", len(run), run[0])
	}
	if call == "" {
		t.Error("no goroutine holds the model call")
	}
	close(gate)
	r := <-res
	if r.err != nil || !r.step.Ok() || fmt.Sprint(r.step.Return) != "map[k:7]" || r.step.Usage.Requests != 1 {
		t.Fatalf("after the reply the mission ended with %+v, %v; want it to return {:k 7} after 1 request", r.step, r.err)
	}
}
