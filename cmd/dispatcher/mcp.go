package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/internal/version"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The fleet as an MCP server ("dispatcher mcp"): an MCP client runs
// missions with run_mission (or submit_mission, then mission_status and
// mission_result) and sees what the fleet can call with list_tools. See
// docs/mcp.md.

// missionArgs are the arguments of run_mission and submit_mission.
type missionArgs struct {
	Prompt    string   `json:"prompt" jsonschema:"what the agent should do; {{name}} placeholders read context values"`
	Signature string   `json:"signature,omitempty" jsonschema:"the result's contract in signature syntax, e.g. {count :int, names [:string]}"`
	Tools     []string `json:"tools,omitempty" jsonschema:"the fleet tools the mission may call (see list_tools)"`
	// Context is read again from the raw arguments with exact numbers
	// (mcpArguments); this field gives the schema.
	Context          map[string]any `json:"context,omitempty" jsonschema:"input data, read by the program as ctx/<name>"`
	ContextSignature string         `json:"context_signature,omitempty" jsonschema:"the context's types in signature syntax"`
	Model            string         `json:"model,omitempty" jsonschema:"the model name configured on the workers; empty: their default"`
	MaxTurns         int            `json:"max_turns,omitempty" jsonschema:"the most turns the agent may take"`
	TimeoutSeconds   float64        `json:"timeout_seconds,omitempty" jsonschema:"how long the mission may run"`
	Priority         string         `json:"priority,omitempty" jsonschema:"high, normal (default) or low"`
	Plan             []string       `json:"plan,omitempty" jsonschema:"the mission's steps in order; programs mark step i (from 1) done with (step-done \"i\" \"summary\") and progress notifications report them"`
}

// missionOutcome is the result of run_mission and mission_result.
type missionOutcome struct {
	MissionID string `json:"mission_id"`
	// Return is the mission's returned value; firewalled values (keys
	// starting with "_") are masked, because MCP clients hand results to
	// models, and NaN and infinities are strings (messages.JSONFloat).
	Return any        `json:"return" jsonschema:"the value the mission returned, as its signature describes"`
	Usage  usageOut   `json:"usage"`
	Warn   []string   `json:"warnings,omitempty"`
	Turns  []turnNote `json:"turns,omitempty"`
}

type usageOut struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Turns        int     `json:"turns"`
	ToolCalls    int     `json:"tool_calls"`
	Seconds      float64 `json:"seconds"`
}

// turnNote is one turn of the trace, for a client that wants to see how
// the answer was reached.
type turnNote struct {
	Turn    int    `json:"turn"`
	Program string `json:"program,omitempty"`
	Error   string `json:"error,omitempty"`
}

type idArgs struct {
	MissionID string `json:"mission_id" jsonschema:"the mission id (a ULID) returned by submit_mission"`
}

type resultArgs struct {
	MissionID string `json:"mission_id" jsonschema:"the mission id (a ULID) returned by submit_mission"`
	Wait      bool   `json:"wait,omitempty" jsonschema:"wait for the result when the mission is still running"`
}

type cancelArgs struct {
	MissionID string `json:"mission_id" jsonschema:"the mission id (a ULID)"`
	Reason    string `json:"reason,omitempty" jsonschema:"why, recorded in the cancelled result"`
}

type decideArgs struct {
	MissionID string         `json:"mission_id" jsonschema:"the mission id (a ULID)"`
	Call      string         `json:"call,omitempty" jsonschema:"the call id from list_approvals, or a unique prefix; may be left out when one call waits"`
	Args      map[string]any `json:"args,omitempty" jsonschema:"arguments replacing the call's (approve_call only); the value <Firewalled> keeps a firewalled one"`
	Reason    string         `json:"reason,omitempty" jsonschema:"why; a denial's reason reaches the program"`
	By        string         `json:"by,omitempty" jsonschema:"who decides, recorded in the audit (default: mcp)"`
}

// selectArgs selects waiting calls (fleet.PendingFilter) in
// pending_approvals, approve_pending and deny_pending.
type selectArgs struct {
	Tool      string    `json:"tool,omitempty" jsonschema:"only calls of this tool"`
	Service   string    `json:"service,omitempty" jsonschema:"only calls served by this tool service"`
	Submitter string    `json:"submitter,omitempty" jsonschema:"only calls of this submitter's missions"`
	When      *condArgs `json:"when,omitempty" jsonschema:"only calls whose arguments meet this condition; a call without the argument, or whose argument cannot be compared, is left out"`
}

// filter is the selection as the fleet applies it.
func (a selectArgs) filter() fleet.PendingFilter {
	f := fleet.PendingFilter{Tool: a.Tool, Service: a.Service, Submitter: a.Submitter}
	if a.When != nil {
		f.When = &messages.ApprovalCond{Arg: a.When.Arg, Op: a.When.Op, Value: a.When.Value}
	}
	return f
}

// decidePendingArgs selects the waiting calls approve_pending and
// deny_pending decide (fleet.PendingFilter).
type decidePendingArgs struct {
	selectArgs
	Max    int    `json:"max,omitempty" jsonschema:"at most this many calls, the longest waiting first (default: every call selected)"`
	DryRun bool   `json:"dry_run,omitempty" jsonschema:"list the calls selected in selected, decide none"`
	Reason string `json:"reason,omitempty" jsonschema:"why; a denial's reason reaches each program"`
	By     string `json:"by,omitempty" jsonschema:"who decides, recorded in the audit (default: mcp)"`
}

// condArgs is a messages.ApprovalCond as an MCP client writes it.
type condArgs struct {
	Arg   string `json:"arg" jsonschema:"the argument: a key, or a path of keys joined by '.'"`
	Op    string `json:"op" jsonschema:"one of > >= < <= = !="`
	Value any    `json:"value" jsonschema:"a number, string, boolean or null"`
}

type pendingArgs struct {
	selectArgs
	Limit int `json:"limit,omitempty" jsonschema:"how many calls at most (default 50, at most 1000)"`
	// StalledAfter follows the fleet's -stalled-after, as the CLI's flag
	// of the same name does.
	StalledAfter int `json:"stalled_after_seconds,omitempty" jsonschema:"list as stalled the calls decided at least this many seconds ago whose mission still waits with no call pending (default 60, the fleet's default -stalled-after; at least 1)"`
}

type approvalsOut struct {
	Approvals []approvalItem `json:"approvals"`
}

type submitted struct {
	MissionID string `json:"mission_id"`
	Duplicate bool   `json:"duplicate"`
}

type statusOut struct {
	MissionID       string `json:"mission_id"`
	State           string `json:"state"`
	Attempt         int    `json:"attempt,omitempty"`
	Worker          string `json:"worker,omitempty"`
	Reason          string `json:"reason,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	UpdatedAt       string `json:"updated_at"`
}

type toolOut struct {
	Name        string `json:"name"`
	Service     string `json:"service"`
	Signature   string `json:"signature,omitempty"`
	Description string `json:"description,omitempty"`
}

type toolsOut struct {
	Tools []toolOut `json:"tools"`
}

type noArgs struct{}

// mcpFleet holds what the MCP tools need.
type mcpFleet struct {
	client *fleet.Client
	nc     *nats.Conn
	log    zerolog.Logger

	// approverOnce makes approver: a client reading every submitter's
	// missions, which pending_approvals lists (an approver's view,
	// whatever the server's client reads)
	approverOnce sync.Once
	approver     *fleet.Client
	approverErr  error
}

// approverClient returns a client reading every submitter's missions:
// the server's own when it does, else one made on first use.
func (f *mcpFleet) approverClient(ctx context.Context) (*fleet.Client, error) {
	if f.client.ReadsAllSubmitters() {
		return f.client, nil
	}
	f.approverOnce.Do(func() {
		// made once for every later call: not bound to this call's end
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		f.approver, f.approverErr = fleet.NewClient(ctx, f.nc, fleet.ClientConfig{Submitter: f.client.Submitter(), AllSubmitters: true, SkipSetup: true})
	})
	return f.approver, f.approverErr
}

// newMCPServer returns the MCP server exposing the fleet.
func newMCPServer(client *fleet.Client, nc *nats.Conn, log zerolog.Logger) *mcp.Server {
	f := &mcpFleet{client: client, nc: nc, log: log}
	s := mcp.NewServer(&mcp.Implementation{Name: "ptc-fleet", Version: version.String()}, &mcp.ServerOptions{
		Instructions: "Runs missions on a PTC fleet: an agent writes PTC-Lisp programs that call the fleet's tools " +
			"and shrink their results before anything reaches a model. Call list_tools to see the tools, then run_mission.",
	})
	mcp.AddTool(s, &mcp.Tool{Name: "run_mission", Description: "Run an agent mission on the fleet and return its result. " +
		"The agent writes programs calling the listed tools; progress is reported per turn."}, f.runMission)
	mcp.AddTool(s, &mcp.Tool{Name: "submit_mission", Description: "Queue an agent mission and return its id at once; " +
		"follow it with mission_status and mission_result."}, f.submitMission)
	mcp.AddTool(s, &mcp.Tool{Name: "mission_status", Description: "The state of a mission: queued, running, succeeded, failed, cancelled or dead."}, f.missionStatus)
	mcp.AddTool(s, &mcp.Tool{Name: "mission_result", Description: "The result of a finished mission; with wait, waits for it."}, f.missionResult)
	mcp.AddTool(s, &mcp.Tool{Name: "cancel_mission", Description: "Cancel a queued or running mission."}, f.cancelMission)
	mcp.AddTool(s, &mcp.Tool{Name: "list_approvals", Description: "The tool calls of a mission that need a person's approval, " +
		"pending and decided: call id, tool, arguments (firewalled values masked), the program and turn that made the call, the rule, the deadline and any decision."}, f.listApprovals)
	mcp.AddTool(s, &mcp.Tool{Name: "pending_approvals", Description: "The tool calls waiting for a decision across the fleet, the longest waiting first: " +
		"mission id, call id, tool, arguments (firewalled values masked), the program and turn that made the call, the rule and the deadline; " +
		"decide each with approve_call or deny_call. Stalled lists the calls decided a minute ago or more whose mission still waits " +
		"with no call pending (its wake lost): approve_call or deny_call of the mission, with no call named, queues it again with the recorded decision."}, f.pendingApprovals)
	mcp.AddTool(s, &mcp.Tool{Name: "approve_call", Description: "Approve a tool call that waits for approval; the mission resumes and the call runs once, " +
		"with args in place of its arguments when given."}, f.approveCall)
	mcp.AddTool(s, &mcp.Tool{Name: "deny_call", Description: "Deny a tool call that waits for approval; the mission resumes and the call fails " +
		"with a tool error naming the denial and the reason."}, f.denyCall)
	mcp.AddTool(s, &mcp.Tool{Name: "approve_pending", Description: "Approve at once every tool call waiting for a decision that the filter selects " +
		"(tool, service, submitter, a condition on an argument, at most max), the longest waiting first; each mission resumes and its call runs once. " +
		"With dry_run, list the calls selected and decide none."}, f.approvePending)
	mcp.AddTool(s, &mcp.Tool{Name: "deny_pending", Description: "Deny at once every tool call waiting for a decision that the filter selects, " +
		"as approve_pending selects them; each call fails with a tool error naming the denial and the reason. With dry_run, list them and decide none."}, f.denyPending)
	mcp.AddTool(s, &mcp.Tool{Name: "list_tools", Description: "The tools the fleet can call: name, signature and description."}, f.listTools)
	return s
}

// mission builds a mission from run_mission / submit_mission arguments.
// The context is decoded again from the raw arguments so that integers
// stay integers (the SDK decodes numbers as float64).
func mission(req *mcp.CallToolRequest, in missionArgs) (*messages.Mission, error) {
	if in.Prompt == "" {
		return nil, errors.New("prompt: empty")
	}
	var raw struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &raw); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	var ctxData map[string]any
	if len(raw.Context) > 0 && string(raw.Context) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw.Context))
		dec.UseNumber()
		if err := dec.Decode(&ctxData); err != nil {
			return nil, fmt.Errorf("context: %w", err)
		}
		if _, err := messages.JSONNumbers(ctxData); err != nil {
			return nil, fmt.Errorf("context: %w", err)
		}
	}
	if in.TimeoutSeconds < 0 || in.MaxTurns < 0 {
		return nil, errors.New("timeout_seconds and max_turns must not be negative")
	}
	m := &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: in.Tools, Context: ctxData,
		ContextSignature: in.ContextSignature, Model: in.Model, Priority: in.Priority,
		Agent:  &messages.AgentSpec{Prompt: in.Prompt, Signature: in.Signature, Tools: in.Tools, Plan: in.Plan},
		Limits: messages.Limits{MaxTurns: in.MaxTurns, MissionTimeout: time.Duration(in.TimeoutSeconds * float64(time.Second))},
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func (f *mcpFleet) runMission(ctx context.Context, req *mcp.CallToolRequest, in missionArgs) (*mcp.CallToolResult, missionOutcome, error) {
	m, err := mission(req, in)
	if err != nil {
		return nil, missionOutcome{}, err
	}
	finish := func() {}
	if token := req.Params.GetProgressToken(); token != nil {
		finish = watching(ctx, f.client, m.ID, f.progress(ctx, req.Session, token))
	}
	step, err := f.client.Run(ctx, m)
	finish()
	if err != nil {
		if ctx.Err() != nil {
			// The client gave up on the call (cancelled it or went away):
			// nobody waits for the mission any more.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if cerr := f.client.Cancel(cctx, m.ID, "the MCP client cancelled run_mission"); cerr != nil {
				f.log.Warn().Err(cerr).Str("mission_id", m.ID).Msg("mission not cancelled")
			}
		}
		return nil, missionOutcome{}, fmt.Errorf("mission %s: %w", m.ID, err)
	}
	return outcome(m.ID, step)
}

// progress returns the watcher of a run_mission call's mission: it sends a
// progress notification when the mission starts on a worker, when each
// turn of the top-level agent starts and when its program runs (with the
// program), when a program emits a value (the value as JSON), when the
// plan is set or a step marked done (the plan's state), and when it
// finishes. Progress is the turn number.
func (f *mcpFleet) progress(ctx context.Context, ss *mcp.ServerSession, token any) func(*messages.Event) error {
	return func(ev *messages.Event) error {
		var msg string
		switch ev.Kind {
		case messages.EventStarted:
			msg = "started on worker " + ev.Worker
		case messages.EventTurnStarted:
			if ev.Data["depth"] != nil {
				return nil // a sub-agent's turn
			}
			msg = fmt.Sprintf("turn %d started", ev.Turn)
		case messages.EventProgram:
			if ev.Data["depth"] != nil {
				return nil
			}
			msg = fmt.Sprintf("turn %d: running the program\n%s", ev.Turn, ev.Program)
		case messages.EventEmit:
			msg = fmt.Sprintf("turn %d: emitted %s", ev.Turn, eventValue(ev, "result", ev.Result, fleet.MaxEventBytes))
		case messages.EventPlan:
			msg = planHeadline(ev) + "\n" + planLines(ev.Plan)
		case messages.EventFinal:
			msg = "finished"
		default:
			return nil
		}
		err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(ev.Turn), Message: msg})
		if err != nil {
			f.log.Debug().Err(err).Msg("progress notification not sent")
		}
		return nil
	}
}

// outcome turns a Step into run_mission's result; a failed mission is a
// tool error whose text says why, for the client's model to read.
func outcome(id string, step *messages.Step) (*mcp.CallToolResult, missionOutcome, error) {
	if step.Fail != nil {
		return nil, missionOutcome{}, fmt.Errorf("mission %s failed: %s", id, step.Fail.Error())
	}
	out := missionOutcome{
		MissionID: id, Return: messages.JSONFloats(messages.MaskFirewalled(step.Return)), Warn: step.Warnings,
		Usage: usageOut{InputTokens: step.Usage.InputTokens, OutputTokens: step.Usage.OutputTokens,
			Turns: step.Usage.Turns, ToolCalls: step.Usage.ToolCalls, Seconds: step.Usage.Duration.Seconds()},
	}
	for _, t := range step.Trace {
		out.Turns = append(out.Turns, turnNote{Turn: t.Number, Program: t.Program, Error: t.Error})
	}
	return nil, out, nil
}

func (f *mcpFleet) submitMission(ctx context.Context, req *mcp.CallToolRequest, in missionArgs) (*mcp.CallToolResult, submitted, error) {
	m, err := mission(req, in)
	if err != nil {
		return nil, submitted{}, err
	}
	sub, err := f.client.Submit(ctx, m)
	if err != nil {
		return nil, submitted{}, err
	}
	return nil, submitted{MissionID: sub.ID, Duplicate: sub.Duplicate}, nil
}

func (f *mcpFleet) missionStatus(ctx context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, statusOut, error) {
	st, err := f.client.Status(ctx, in.MissionID)
	if err != nil {
		return nil, statusOut{}, fmt.Errorf("mission %s: %w", in.MissionID, err)
	}
	return nil, statusOut{MissionID: st.MissionID, State: st.State, Attempt: st.Attempt, Worker: st.Worker,
		Reason: st.Reason, CancelRequested: st.CancelRequested, UpdatedAt: st.UpdatedAt.UTC().Format(time.RFC3339Nano)}, nil
}

func (f *mcpFleet) missionResult(ctx context.Context, _ *mcp.CallToolRequest, in resultArgs) (*mcp.CallToolResult, missionOutcome, error) {
	var (
		step *messages.Step
		err  error
	)
	if in.Wait {
		step, err = f.client.Await(ctx, in.MissionID)
	} else {
		step, err = f.client.Result(ctx, in.MissionID)
		if errors.Is(err, fleet.ErrNotFound) {
			state := "unknown"
			if st, serr := f.client.Status(ctx, in.MissionID); serr == nil {
				state = st.State
			}
			return nil, missionOutcome{}, fmt.Errorf("mission %s has no result yet (state %s); call again with wait, or later", in.MissionID, state)
		}
	}
	if err != nil {
		return nil, missionOutcome{}, fmt.Errorf("mission %s: %w", in.MissionID, err)
	}
	return outcome(in.MissionID, step)
}

func (f *mcpFleet) cancelMission(ctx context.Context, _ *mcp.CallToolRequest, in cancelArgs) (*mcp.CallToolResult, statusOut, error) {
	if err := f.client.Cancel(ctx, in.MissionID, in.Reason); err != nil {
		return nil, statusOut{}, err
	}
	return f.missionStatus(ctx, nil, idArgs{MissionID: in.MissionID})
}

func (f *mcpFleet) listApprovals(ctx context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, approvalsOut, error) {
	as, err := f.client.Approvals(ctx, in.MissionID)
	if err != nil {
		return nil, approvalsOut{}, err
	}
	return nil, approvalsOut{Approvals: approvalItems(as)}, nil
}

func (f *mcpFleet) pendingApprovals(ctx context.Context, _ *mcp.CallToolRequest, in pendingArgs) (*mcp.CallToolResult, pendingOut, error) {
	c, err := f.approverClient(ctx)
	if err != nil {
		return nil, pendingOut{}, err
	}
	after := defaultStalledAfter
	if in.StalledAfter != 0 {
		after = time.Duration(in.StalledAfter) * time.Second
		if err := checkStalledAfter("stalled_after_seconds", after); err != nil {
			return nil, pendingOut{}, err
		}
	}
	out, _, _, err := listPending(ctx, c, in.filter(), in.Limit, after)
	if err != nil {
		return nil, pendingOut{}, refusedRead(f.nc, err)
	}
	return nil, out, nil
}

func (f *mcpFleet) approveCall(ctx context.Context, req *mcp.CallToolRequest, in decideArgs) (*mcp.CallToolResult, approvalsOut, error) {
	return f.decide(ctx, req, in, true)
}

func (f *mcpFleet) denyCall(ctx context.Context, req *mcp.CallToolRequest, in decideArgs) (*mcp.CallToolResult, approvalsOut, error) {
	return f.decide(ctx, req, in, false)
}

// decide records a decision; the arguments are read again from the raw
// JSON so that integers stay integers (the SDK decodes numbers as
// float64).
func (f *mcpFleet) decide(ctx context.Context, req *mcp.CallToolRequest, in decideArgs, approve bool) (*mcp.CallToolResult, approvalsOut, error) {
	d := fleet.Decision{Approve: approve, Call: in.Call, Reason: in.Reason, By: in.By}
	if d.By == "" {
		d.By = "mcp"
	}
	if approve && in.Args != nil {
		var raw struct {
			Args json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &raw); err != nil {
			return nil, approvalsOut{}, fmt.Errorf("arguments: %w", err)
		}
		args, err := parseDecisionArgs(string(raw.Args))
		if err != nil {
			return nil, approvalsOut{}, err
		}
		d.Args = args
	}
	a, err := f.client.Decide(ctx, in.MissionID, d)
	if errors.Is(err, fleet.ErrQueuedAgain) {
		// a stalled mission (its wake lost) resumes with the decision
		// recorded before: what the call was made for
		as, aerr := f.client.Approvals(ctx, in.MissionID)
		if aerr != nil {
			return nil, approvalsOut{}, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, approvalsOut{Approvals: approvalItems(as)}, nil
	}
	if err != nil {
		return nil, approvalsOut{}, err
	}
	return nil, approvalsOut{Approvals: approvalItems([]*messages.Approval{a})}, nil
}

func (f *mcpFleet) approvePending(ctx context.Context, _ *mcp.CallToolRequest, in decidePendingArgs) (*mcp.CallToolResult, decidedOut, error) {
	return f.decidePending(ctx, in, true)
}

func (f *mcpFleet) denyPending(ctx context.Context, _ *mcp.CallToolRequest, in decidePendingArgs) (*mcp.CallToolResult, decidedOut, error) {
	return f.decidePending(ctx, in, false)
}

// decidePending decides the waiting calls in selects, as an approver
// (every submitter's), or with dry_run lists them.
func (f *mcpFleet) decidePending(ctx context.Context, in decidePendingArgs, approve bool) (*mcp.CallToolResult, decidedOut, error) {
	c, err := f.approverClient(ctx)
	if err != nil {
		return nil, decidedOut{}, err
	}
	filter := in.filter()
	filter.Max = in.Max
	if in.DryRun {
		as, err := c.SelectPending(ctx, filter)
		if err != nil {
			return nil, decidedOut{}, refusedRead(f.nc, err)
		}
		return nil, decidedOut{Decided: []approvalItem{}, Selected: approvalItems(as)}, nil
	}
	d := fleet.Decision{Approve: approve, Reason: in.Reason, By: in.By}
	if d.By == "" {
		d.By = "mcp"
	}
	results, err := c.DecidePending(ctx, filter, d)
	if err != nil {
		return nil, decidedOut{}, refusedRead(f.nc, err)
	}
	return nil, decidedItems(results), nil
}

func (f *mcpFleet) listTools(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, toolsOut, error) {
	list, err := fleet.Discover(ctx, f.nc, 250*time.Millisecond)
	if err != nil && !errors.Is(err, nats.ErrNoResponders) {
		return nil, toolsOut{}, err
	}
	out := toolsOut{Tools: []toolOut{}}
	for _, t := range list {
		out.Tools = append(out.Tools, toolOut{Name: t.Name, Service: t.Service, Signature: t.Signature, Description: t.Description})
	}
	return nil, out, nil
}

// serveMCP serves the fleet over MCP: on stdin/stdout when addr is empty,
// else over Streamable HTTP on addr (path /mcp) until ctx ends.
func serveMCP(ctx context.Context, client *fleet.Client, nc *nats.Conn, addr string, log zerolog.Logger, bound chan<- string) error {
	srv := newMCPServer(client, nc, log)
	if addr == "" {
		err := srv.Run(ctx, &mcp.StdioTransport{})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	mux := http.NewServeMux()
	// One Host check for the viewer and this endpoint (cli.LoopbackHost),
	// the same as the SDK's own.
	mux.Handle("/mcp", cli.LoopbackHost(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info().Str("addr", ln.Addr().String()).Msg("serving MCP over Streamable HTTP at /mcp")
	if bound != nil {
		bound <- ln.Addr().String()
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
