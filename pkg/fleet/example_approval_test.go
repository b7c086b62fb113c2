package fleet_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A refund above 100 waits for a person: the tool's owner says so in its
// spec. The mission is suspended at the call, holding no worker; the
// decision (here approved with the amount edited) resumes it on any
// worker, and the call runs once, with the approved arguments.
func ExampleClient_Decide() {
	nc, stop := exampleNATS()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	bank, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "bank"})
	if err != nil {
		log.Fatal(err)
	}
	defer bank.Stop(ctx)
	spec := fleet.ToolSpec{Description: "refund an order",
		Approval: &fleet.ToolApproval{When: &messages.ApprovalCond{Arg: "amount", Op: ">", Value: int64(100)}}}
	err = bank.Register("refund", spec, func(ctx context.Context, args map[string]any) (any, error) {
		return fmt.Sprintf("refunded %v", args["amount"]), nil
	})
	if err != nil {
		log.Fatal(err)
	}

	// A runner that makes the call a program would make (pkg/agent in
	// production); the tool error of a denial would come back here.
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		res, err := env.Tools.Call(fleet.WithTurn(ctx, 1), "refund", map[string]any{"order": "A-1", "amount": m.Context["amount"]})
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: res}, nil
	})
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{Runner: runner})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()

	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "refund order A-1"}, Tools: []string{"refund"},
		Context: map[string]any{"amount": int64(250)}}
	if _, err := client.Submit(ctx, m); err != nil {
		log.Fatal(err)
	}

	// The approver's side: the calls waiting across the fleet, then the
	// decision of one of them.
	var pending []*messages.Approval
	for len(pending) == 0 {
		if pending, _, err = client.PendingApprovals(ctx, 10); err != nil {
			log.Fatal(err)
		}
		if len(pending) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	fmt.Println("waiting:", pending[0].Tool, pending[0].Args["amount"])
	_, err = client.Decide(ctx, pending[0].MissionID, fleet.Decision{Call: pending[0].Call, Approve: true, By: "alice", Reason: "partial refund",
		Args: map[string]any{"order": "A-1", "amount": int64(200)}})
	if err != nil {
		log.Fatal(err)
	}

	step, err := client.Await(ctx, m.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", step.Return)
	as, err := client.Approvals(ctx, m.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decided:", as[0].State, "by", as[0].DecidedBy, "-", as[0].Reason)
	// Output:
	// waiting: refund 250
	// result: refunded 200
	// decided: approved by alice - partial refund
}

// Many calls waiting at once are decided with one DecidePending: here
// the refunds of at most 300 are approved together, each mission resuming
// at once, and the larger one is left for a decision of its own.
func ExampleClient_DecidePending() {
	nc, stop := exampleNATS()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	bank, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "bank"})
	if err != nil {
		log.Fatal(err)
	}
	defer bank.Stop(ctx)
	spec := fleet.ToolSpec{Description: "refund an order", Approval: &fleet.ToolApproval{}}
	err = bank.Register("refund", spec, func(ctx context.Context, args map[string]any) (any, error) {
		return fmt.Sprintf("refunded %v", args["amount"]), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		res, err := env.Tools.Call(fleet.WithTurn(ctx, 1), "refund", map[string]any{"amount": m.Context["amount"]})
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: res}, nil
	})
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{Runner: runner})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		log.Fatal(err)
	}

	var ids []string
	for _, amount := range []int64{120, 900, 250} {
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "refund"}, Tools: []string{"refund"}, Context: map[string]any{"amount": amount}}
		if _, err := client.Submit(ctx, m); err != nil {
			log.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for n := 0; n < len(ids); time.Sleep(10 * time.Millisecond) {
		if _, n, err = client.PendingApprovals(ctx, 10); err != nil {
			log.Fatal(err)
		}
	}

	small := fleet.PendingFilter{Tool: "refund", When: &messages.ApprovalCond{Arg: "amount", Op: "<=", Value: int64(300)}}
	out, err := client.DecidePending(ctx, small, fleet.Decision{Approve: true, By: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	var decided []string
	for _, o := range out {
		if o.Err != nil {
			log.Fatal(o.Err)
		}
		decided = append(decided, fmt.Sprint(o.Call.Args["amount"], " ", o.Decided.State))
	}
	slices.Sort(decided) // the order they waited in is the workers'
	fmt.Println("decided:", decided)
	for _, id := range []string{ids[0], ids[2]} {
		step, err := client.Await(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("result:", step.Return)
	}
	_, waiting, err := client.PendingApprovals(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("still waiting:", waiting)
	// Output:
	// decided: [120 approved 250 approved]
	// result: refunded 120
	// result: refunded 250
	// still waiting: 1
}
