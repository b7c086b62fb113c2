package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// "dispatcher mcp -mcp-http" serves the same tools over Streamable HTTP;
// an MCP client (the Go SDK) runs a mission, reads a status and gets clear
// errors for bad requests.
func TestMCPServerOverStreamableHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, paid := startMCPFleet(ctx, t, llmtest.Code(`(return {:paid (count (tool/list_orders {:status "paid"})) :_secret 7})`))
	cs, _ := serveMCPHTTP(ctx, t, srv.Conn())

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_mission", Arguments: map[string]any{
		"prompt": "count paid orders", "signature": "{paid :int, _secret :int}", "tools": []string{"list_orders"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("run_mission: %v", res.Content)
	}
	ret := res.StructuredContent.(map[string]any)["return"].(map[string]any)
	if ret["paid"] != float64(paid) || ret["_secret"] != "<Firewalled>" {
		t.Errorf("return = %v (want paid %d, _secret masked)", ret, paid)
	}
	id := res.StructuredContent.(map[string]any)["mission_id"].(string)
	st, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mission_status", Arguments: map[string]any{"mission_id": id}})
	if err != nil || st.IsError || st.StructuredContent.(map[string]any)["state"] != "succeeded" {
		t.Errorf("mission_status: %v %+v", err, st)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"mission_status", map[string]any{"mission_id": "nope"}, `"nope" is not a ULID`},
		{"run_mission", map[string]any{"prompt": "x", "tools": []string{"no.such"}}, `tools[0]: "no.such" is not a valid tool name`},
		{"mission_result", map[string]any{"mission_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "has no result yet"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError %v, %q; want %q", c.tool, c.args, res.IsError, text, c.want)
		}
	}
}

// A client that cancels run_mission cancels the mission.
func TestMCPCancelledRunCancelsTheMission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Give up on the call once the mission is running and waits on its
	// model (a cancellation before the model call would leave the scripted
	// reply unused).
	calling := make(chan struct{})
	srv, _ := startMCPFleet(ctx, t, llmtest.Hang().Expect(func(llm.Request) error {
		close(calling)
		return nil
	}))
	nc := srv.Conn()
	cs, client := serveMCPHTTP(ctx, t, nc)
	callCtx, giveUp := context.WithCancel(ctx)
	go func() {
		<-calling
		giveUp()
	}()
	_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "run_mission", Arguments: map[string]any{"prompt": "wait forever"}})
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, _ := client.List(ctx, fleet.ListOptions{})
		if len(list) == 1 {
			st, err := client.Status(ctx, list[0].MissionID)
			if err == nil && st.State == "cancelled" {
				if !strings.Contains(st.CancelReason, "MCP client cancelled") {
					t.Errorf("cancel reason %q", st.CancelReason)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mission not cancelled: %v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveMCPHTTP serves "dispatcher mcp -mcp-http" for the fleet on nc at a
// free local port and returns an MCP client session connected to it, with
// the fleet client the server uses. When the test ends the session closes
// and the server stops, which must end without an error.
func serveMCPHTTP(ctx context.Context, t *testing.T, nc *nats.Conn) (*mcp.ClientSession, *fleet.Client) {
	t.Helper()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	bound := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serveMCP(sctx, client, nc, "127.0.0.1:0", zerolog.Nop(), bound) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serveMCP: %v", err)
		}
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + <-bound + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, client
}
