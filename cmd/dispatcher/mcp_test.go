package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/internal/testnode"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// mainEnv makes the test binary run the dispatcher's main (TestMain), so
// that an MCP client can start "dispatcher mcp" as a child process.
const mainEnv = "PTC_DISPATCHER_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The official TypeScript MCP SDK drives "dispatcher mcp" over stdio: it
// lists the tools, runs a scripted two-turn mission with progress
// notifications, sees a bad request as a tool error, and submits a mission
// and waits for its result.
func TestMCPServerWithTypeScriptSDK(t *testing.T) {
	dir := testnode.Folder(t, "testdata/mcpclient")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv, paid := startMCPFleet(ctx, t,
		llmtest.Code(`(def paid (count (tool/list_orders {:status "paid"}))) (emit {:paid paid}) (step-done "1" "counted")`),
		llmtest.Code(`(return {:paid paid :region ctx/region :big ctx/big})`),
		llmtest.Code(`(return {:paid (count (tool/list_orders {:status "paid"}))})`),
	)
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PTC_TEST_DISPATCHER="+os.Args[0], "PTC_NATS_URL="+srv.ClientURL(), "PTC_LOG_LEVEL=warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Tools      []string
		FleetTools []string
		Run        struct {
			IsError    bool
			Structured map[string]any
			Text       string
		}
		Progress []string
		Bad      struct {
			IsError bool
			Text    string
		}
		Submitted struct {
			ID     string
			Result map[string]any
			State  string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if strings.Join(got.Tools, ",") != "approve_call,approve_pending,cancel_mission,deny_call,deny_pending,list_approvals,list_tools,mission_result,mission_status,pending_approvals,run_mission,submit_mission" {
		t.Errorf("MCP tools = %v", got.Tools)
	}
	if !containsPrefix(got.FleetTools, "list_orders (customer_id :int?, status :string?) -> [{id :int, customer_id :int, total :float,") {
		t.Errorf("fleet tools = %v", got.FleetTools)
	}
	if got.Run.IsError {
		t.Fatalf("run_mission failed: %s", got.Run.Text)
	}
	ret, _ := got.Run.Structured["return"].(map[string]any)
	if ret["paid"] != float64(paid) || ret["region"] != "north" || ret["big"] != float64(1234567) {
		t.Errorf("run_mission return = %v (want paid %d)", ret, paid)
	}
	if !strings.Contains(got.Run.Text, fmt.Sprintf(`"paid":%d`, paid)) {
		t.Errorf("run_mission text = %s", got.Run.Text)
	}
	if !contains(got.Progress, "turn 1 started") || !contains(got.Progress, "turn 2 started") ||
		!contains(got.Progress, "turn 2: running the program\n(return {:paid paid :region ctx/region :big ctx/big})") {
		t.Errorf("progress notifications = %q, want one per turn", got.Progress)
	}
	// a program's emit and the plan's progress reach the caller at once
	if !contains(got.Progress, fmt.Sprintf(`turn 1: emitted {"paid":%d}`, paid)) ||
		!contains(got.Progress, "plan: step 1 done, 1/2 steps done\n[x] 1. Count the paid orders — counted\n[ ] 2. Answer") {
		t.Errorf("progress notifications = %q, want the emit and the plan", got.Progress)
	}
	if !got.Bad.IsError || !strings.Contains(got.Bad.Text, "prompt: empty") {
		t.Errorf("bad run_mission = %+v", got.Bad)
	}
	if got.Submitted.State != "succeeded" || got.Submitted.Result["return"].(map[string]any)["paid"] != float64(paid) {
		t.Errorf("submitted mission = %+v", got.Submitted)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func containsPrefix(list []string, prefix string) bool {
	for _, e := range list {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// startMCPFleet starts an embedded fleet: the shop tools, one worker whose
// model plays replies, and returns the server and the number of paid
// orders in the shop data.
func startMCPFleet(ctx context.Context, t *testing.T, replies ...llmtest.Reply) (*fleettest.Server, int) {
	t.Helper()
	srv := fleettest.Start(t)
	nc := srv.Conn()

	data := shop.Generate(50, 300, 10)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: shop.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := data.Register(svc); err != nil {
		t.Fatal(err)
	}
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"list_orders"}})
	if err != nil {
		t.Fatal(err)
	}
	paidOrders, err := box.Call(ctx, "list_orders", map[string]any{"status": "paid"})
	if err != nil {
		t.Fatal(err)
	}
	paid := len(paidOrders.([]any))

	agentworker.Start(ctx, t, srv.Conn(), llmtest.NewT(t, replies...))
	return srv, paid
}
