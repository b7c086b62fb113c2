package messages

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testID = "01HZY8Q5J7Z4J0G6V9W5X3T2AB"

func validMission() *Mission {
	return &Mission{
		ID:   testID,
		Kind: KindAgent,
		Agent: &AgentSpec{
			Name:   "finder",
			Prompt: "Find {{query}}",
			Tools:  []string{"search", "get-user"},
			SubAgents: map[string]*AgentSpec{
				"summarize": {Prompt: "Summarize", Limits: Limits{MaxTurns: 2}},
			},
			LLMOpts: map[string]any{"temperature": 0.2},
			Limits:  Limits{PromptLimit: PromptLimit{List: 5, String: 1000}},
		},
		Context:  map[string]any{"query": "x", "n": int64(3)},
		Tools:    []string{"search", "get-user"},
		Limits:   Limits{MissionTimeout: time.Minute, MaxToolCalls: 10},
		Priority: PriorityHigh,
		Deadline: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestMissionValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(m *Mission)
		wantErr string // substring; "" means valid
	}{
		{"valid", func(*Mission) {}, ""},
		{"bad id", func(m *Mission) { m.ID = "nope" }, "mission.id"},
		{"lowercase id", func(m *Mission) { m.ID = strings.ToLower(testID) }, "mission.id"},
		{"future version", func(m *Mission) { m.Version = MissionVersion + 1 }, "mission.v"},
		{"bad kind", func(m *Mission) { m.Kind = "robot" }, "mission.kind"},
		{"agent missing", func(m *Mission) { m.Agent = nil }, "mission.agent: required"},
		{"empty prompt", func(m *Mission) { m.Agent.Prompt = "" }, "mission.agent.prompt"},
		{"bad output mode", func(m *Mission) { m.Agent.Output = "json" }, "mission.agent.output"},
		{"bad validation mode", func(m *Mission) { m.Agent.ValidationMode = "lax" }, "mission.agent.validation_mode"},
		{"bad llm_retry backoff", func(m *Mission) { m.Agent.LLMRetry = &RetryPolicy{Backoff: "fibonacci"} }, "mission.agent.llm_retry.backoff"},
		{"negative llm_retry delay", func(m *Mission) { m.Agent.LLMRetry = &RetryPolicy{BaseDelay: -1} }, "mission.agent.llm_retry: negative"},
		{"negative limits are unlimited", func(m *Mission) {
			m.Agent.MaxTurns, m.Agent.SubAgents["summarize"].TurnBudget, m.Limits.MissionTimeout = -1, -2, -time.Second
		}, ""},
		{"sub-agent error has path", func(m *Mission) { m.Agent.SubAgents["summarize"].Output = "json" },
			`mission.agent.sub_agents["summarize"].output`},
		{"reserved sub-agent name", func(m *Mission) { m.Agent.SubAgents["return"] = &AgentSpec{Prompt: "p"} }, `sub_agents["return"]`},
		{"tool name with dot", func(m *Mission) { m.Tools = []string{"a.b"} }, "mission.tools[0]"},
		{"duplicate tool", func(m *Mission) { m.Tools = []string{"a", "a"} }, "listed twice"},
		{"reserved tool", func(m *Mission) { m.Tools = []string{"fail"} }, "mission.tools[0]"},
		{"agent tool not allowed", func(m *Mission) { m.Tools = []string{"search"} },
			"mission.tools: the agent names tools the mission does not allow: get-user"},
		{"sub-agent tools not allowed", func(m *Mission) {
			m.Agent.SubAgents["summarize"].Tools = []string{"zeta", "search", "alpha"}
		}, "does not allow: alpha, zeta"},
		{"sub-agent names are not remote tools", func(m *Mission) { m.Agent.Tools = append(m.Agent.Tools, "summarize") }, ""},
		{"catalog name", func(m *Mission) { m.Agent.ToolCatalog = []ToolSchema{{Name: ""}} }, "tool_catalog[0].name"},
		{"bad priority", func(m *Mission) { m.Priority = "urgent" }, "mission.priority"},
		{"cost not a number", func(m *Mission) { m.Limits.MaxCostUSD = math.NaN() }, "mission.limits.max_cost_usd: NaN is not a finite number"},
		{"agent cost infinite", func(m *Mission) { m.Agent.SubAgents["summarize"].MaxCostUSD = math.Inf(1) },
			`mission.agent.sub_agents["summarize"].max_cost_usd: +Inf is not a finite number`},
		{"context and ref", func(m *Mission) { m.ContextRef = "x/context" }, "mission.context_ref"},
		{"compiled ok", func(m *Mission) {
			m.Kind, m.Agent, m.Compiled = KindCompiled, nil, &CompiledSpec{Program: "(+ 1 2)"}
		}, ""},
		{"compiled empty program", func(m *Mission) {
			m.Kind, m.Agent, m.Compiled = KindCompiled, nil, &CompiledSpec{}
		}, "mission.compiled.program"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMission()
			tt.edit(m)
			err := m.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestAgentSpecDepthLimit(t *testing.T) {
	root := &AgentSpec{Prompt: "p"}
	cur := root
	for range MaxSpecDepth + 2 {
		next := &AgentSpec{Prompt: "p"}
		cur.SubAgents = map[string]*AgentSpec{"sub": next}
		cur = next
	}
	if err := root.Validate(); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("Validate() = %v, want depth error", err)
	}
}

func TestMissionRoundTrip(t *testing.T) {
	m := validMission()
	data, err := MarshalMission(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalMission(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != MissionVersion {
		t.Errorf("version = %d, want %d", got.Version, MissionVersion)
	}
	if got.Context["n"] != int64(3) || got.Agent.LLMOpts["temperature"] != 0.2 {
		t.Errorf("plain data lost: %#v %#v", got.Context, got.Agent.LLMOpts)
	}
	if got.Agent.SubAgents["summarize"].MaxTurns != 2 || !got.Deadline.Equal(m.Deadline) {
		t.Errorf("fields lost: %+v", got)
	}
	if _, err := UnmarshalMission([]byte{0xc1}); err == nil {
		t.Error("UnmarshalMission(garbage) = nil error")
	}
	bad := validMission()
	bad.ID = "x"
	data, _ = MarshalMission(bad)
	if _, err := UnmarshalMission(data); !errors.Is(err, ErrInvalid) {
		t.Errorf("UnmarshalMission(invalid) = %v, want ErrInvalid", err)
	}
}

func TestNewMissionID(t *testing.T) {
	a, b := NewMissionID(), NewMissionID()
	if a == b || !ValidMissionID(a) || !ValidToken(a) {
		t.Fatalf("NewMissionID() = %q, %q", a, b)
	}
}

func TestToolMessagesValidate(t *testing.T) {
	tests := []struct {
		name    string
		v       interface{ Validate() error }
		wantErr string
	}{
		{"request ok", &ToolRequest{CallID: "c1", Tool: "search", MissionID: testID}, ""},
		{"request no call id", &ToolRequest{Tool: "search"}, "tool_request.call_id"},
		{"request bad tool", &ToolRequest{CallID: "c", Tool: "a b"}, "tool_request.tool"},
		{"request bad mission", &ToolRequest{CallID: "c", Tool: "t", MissionID: "m"}, "tool_request.mission_id"},
		{"response ok", &ToolResponse{CallID: "c", Result: int64(1)}, ""},
		{"response error ok", &ToolResponse{Error: &ToolError{Code: ToolErrFailed, Message: "x"}}, ""},
		{"response error no code", &ToolResponse{Error: &ToolError{Message: "x"}}, "tool_response.error.code"},
		{"response both", &ToolResponse{Result: "r", Error: &ToolError{Code: "x"}}, "tool_response.result"},
		{"response version", &ToolResponse{Version: 9}, "tool_response.v"},
		{"cancel ok", &Cancel{MissionID: testID}, ""},
		{"cancel bad id", &Cancel{MissionID: ""}, "cancel.mission_id"},
		{"status ok", &Status{MissionID: testID, State: StateRunning}, ""},
		{"status bad state", &Status{MissionID: testID, State: "lost"}, "status.state"},
		{"status attempt", &Status{MissionID: testID, State: StateQueued, Attempt: -1}, "status.attempt"},
		{"event ok", &Event{MissionID: testID, Kind: EventToolCall}, ""},
		{"event bad kind", &Event{MissionID: testID, Kind: "nap"}, "event.kind"},
		{"event final needs step", &Event{MissionID: testID, Kind: EventFinal}, "event.step"},
		{"event bad step", &Event{MissionID: testID, Kind: EventFinal, Step: &Step{Fail: &Fail{}}}, "step.fail.reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestSubjects(t *testing.T) {
	tests := []struct{ got, want string }{
		{SubmitSubject("ops", "", testID), "mission.submit.ops.normal." + testID},
		{SubmitSubject("ops", PriorityHigh, testID), "mission.submit.ops.high." + testID},
		{SubmitFilter(PriorityLow), "mission.submit.*.low.*"},
		{LaneFilter(PriorityLow, 5), "mission.submit.*.low.*.5"},
		{QueueTransform(), "mission.submit.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}.{{partition(8,2)}}"},
		{WokenSubject("ops", "", testID), "mission.woken.ops.normal." + testID},
		{QueuedSubject("ops", PriorityLow, testID, 5), "mission.queued.ops.low." + testID + ".5"},
		{QueuedTransform(), "mission.queued.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}"},
		{ResultSubject("ops", testID), "mission.result.ops." + testID},
		{EventSubject("ops", testID, 12, EventFinal), "mission.event.ops." + testID + ".12.final"},
		{EventFilter("ops", testID), "mission.event.ops." + testID + ".>"},
		{EventNumberFilter("ops", testID, 3), "mission.event.ops." + testID + ".3.*"},
		{EventBatchSubject("ops", testID, 3, 4), "mission.event.ops." + testID + ".3.4"},
		{StatusKey("ops", testID), "ops." + testID},
		{StatusSubject("ops", testID), "$KV.mission_status.ops." + testID},
		{DeadSubject(testID), "mission.dead." + testID},
		{CancelSubject("ops", testID), "mission.cancel.ops." + testID},
		{StopSubject("ops", testID), "mission.stop.ops." + testID},
		{ToolSubject("mail", "search"), "tool.mail.search"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if s, p, id, ok := ParseSubmitSubject(SubmitSubject("ops", "", testID)); !ok || s != "ops" || p != PriorityNormal || id != testID {
		t.Errorf("ParseSubmitSubject: %q %q %q %v", s, p, id, ok)
	}
	if s, p, id, ok := ParseSubmitSubject(SubmitSubject("ops", PriorityLow, testID) + ".7"); !ok || s != "ops" || p != PriorityLow || id != testID {
		t.Errorf("ParseSubmitSubject with a lane: %q %q %q %v", s, p, id, ok)
	}
	if s, p, id, ok := ParseWakeSubject(WakeSubject("ops", PriorityHigh, testID)); !ok || s != "ops" || p != PriorityHigh || id != testID {
		t.Errorf("ParseWakeSubject: %q %q %q %v", s, p, id, ok)
	}
	if s, p, id, ok := ParseWokenSubject(WokenSubject("ops", PriorityLow, testID)); !ok || s != "ops" || p != PriorityLow || id != testID {
		t.Errorf("ParseWokenSubject: %q %q %q %v", s, p, id, ok)
	}
	for _, bad := range []string{"mission.woken.ops.normal", "mission.woken.ops.urgent." + testID, "mission.woken.ops.normal." + testID + ".1",
		WakeSubject("ops", PriorityLow, testID), SubmitSubject("ops", PriorityLow, testID)} {
		if _, _, _, ok := ParseWokenSubject(bad); ok {
			t.Errorf("ParseWokenSubject(%q) ok", bad)
		}
	}
	for _, bad := range []string{"mission.wake.ops.normal", "mission.wake.ops.urgent." + testID, "mission.wake.ops.normal." + testID + ".1",
		"mission.submit.ops.normal." + testID, "mission.wake.o*.normal." + testID, SweepTickSubject} {
		if _, _, _, ok := ParseWakeSubject(bad); ok {
			t.Errorf("ParseWakeSubject(%q) ok", bad)
		}
	}
	if s, p, id, l, ok := ParseQueuedSubject(QueuedSubject("ops", PriorityHigh, testID, 7)); !ok || s != "ops" || p != PriorityHigh || id != testID || l != 7 {
		t.Errorf("ParseQueuedSubject: %q %q %q %d %v", s, p, id, l, ok)
	}
	for _, bad := range []string{"mission.queued.ops.normal." + testID, "mission.queued.ops.normal." + testID + ".8",
		"mission.queued.ops.normal." + testID + ".01", "mission.queued.ops.urgent." + testID + ".1",
		"mission.queued.ops.normal." + testID + ".1.2", "mission.submit.ops.normal." + testID + ".1"} {
		if _, _, _, _, ok := ParseQueuedSubject(bad); ok {
			t.Errorf("ParseQueuedSubject(%q) ok", bad)
		}
	}
	if s, id, n, c, ok := ParseEventSubject(EventSubject("ops", testID, 7, EventToolCall)); !ok || s != "ops" || id != testID || n != 7 || c != 1 {
		t.Errorf("ParseEventSubject: %q %q %d %d %v", s, id, n, c, ok)
	}
	if s, id, ok := ParseCancelSubject(CancelSubject("ops", testID)); !ok || s != "ops" || id != testID {
		t.Errorf("ParseCancelSubject: %q %q %v", s, id, ok)
	}
	if s, id, ok := ParseStopSubject(StopSubject("ops", testID)); !ok || s != "ops" || id != testID {
		t.Errorf("ParseStopSubject: %q %q %v", s, id, ok)
	}
	if s, id, ok := ParseStatusKey(StatusKey("ops", testID)); !ok || s != "ops" || id != testID {
		t.Errorf("ParseStatusKey: %q %q %v", s, id, ok)
	}
	for _, bad := range []string{"mission.submit.normal", "mission.submit.ops.urgent." + testID, "mission.submit.o*.normal." + testID,
		"mission.submit.ops.normal.x", "mission.submit.ops.normal." + testID + ".x", "mission.submit.ops.normal." + testID + ".8",
		"mission.submit.ops.normal." + testID + ".01", "mission.submit.ops.normal." + testID + ".-1", "mission.submit.ops.normal." + testID + ".1.2"} {
		if _, _, _, ok := ParseSubmitSubject(bad); ok {
			t.Errorf("ParseSubmitSubject(%q) ok", bad)
		}
	}
	for _, bad := range []string{"mission.cancel." + testID, "mission.cancel.*." + testID, "mission.cancel.ops.x"} {
		if _, _, ok := ParseCancelSubject(bad); ok {
			t.Errorf("ParseCancelSubject(%q) ok", bad)
		}
	}
	for _, bad := range []string{"", AllSubmitters, "a.b", "a b", ">", strings.Repeat("a", MaxSubmitterLen+1)} {
		if ValidSubmitter(bad) {
			t.Errorf("ValidSubmitter(%q) = true", bad)
		}
	}
	for _, s := range []string{"", "a.b", "a*", ">", "a b"} {
		if ValidToken(s) {
			t.Errorf("ValidToken(%q) = true", s)
		}
	}
	for _, s := range []string{"", "a.b", "a/b", strings.Repeat("x", 129)} {
		if ValidName(s) {
			t.Errorf("ValidName(%q) = true", s)
		}
	}
	if !ValidName("get-user_2") || !ValidToken(testID) {
		t.Error("valid names rejected")
	}
}

func TestMaskFirewalled(t *testing.T) {
	in := map[string]any{
		"name": "a",
		"_key": "secret",
		"rows": []any{map[string]any{"id": int64(1), "_ssn": "123"}, "x"},
		"deep": map[string]any{"_all": map[string]any{"x": 1}},
	}
	want := map[string]any{
		"name": "a",
		"_key": FirewallMask,
		"rows": []any{map[string]any{"id": int64(1), "_ssn": FirewallMask}, "x"},
		"deep": map[string]any{"_all": FirewallMask},
	}
	got := MaskFirewalled(in)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MaskFirewalled = %#v, want %#v", got, want)
	}
	if in["_key"] != "secret" {
		t.Fatal("MaskFirewalled modified its input")
	}
	if MaskFirewalled("_x") != "_x" {
		t.Fatal("strings are not keys")
	}
	ev := &Event{MissionID: testID, Kind: EventFinal, Args: map[string]any{"_t": 1},
		Result: []any{map[string]any{"_p": 1}}, Data: map[string]any{"_d": 1},
		Step: &Step{Return: map[string]any{"_r": 1, "ok": true}, Memory: map[string]any{"m": 1},
			Trace: []Turn{{Number: 1}}, Fail: &Fail{Reason: "x", Details: map[string]any{"_f": 1}}}}
	m := ev.Masked()
	if m.Args["_t"] != FirewallMask || m.Result.([]any)[0].(map[string]any)["_p"] != FirewallMask ||
		m.Data["_d"] != FirewallMask || m.Step.Return.(map[string]any)["_r"] != FirewallMask ||
		m.Step.Fail.Details["_f"] != FirewallMask || m.Step.Memory != nil || m.Step.Trace != nil {
		t.Fatalf("Masked() = %+v", m)
	}
	if ev.Step.Memory == nil || ev.Args["_t"] != 1 {
		t.Fatal("Masked modified its receiver")
	}
	// an event with nothing firewalled, every tool call's in most
	// missions, is copied, not its values: one allocation
	plain := &Event{MissionID: testID, Kind: EventToolResult, Args: map[string]any{"query": "q"},
		Result: []any{map[string]any{"id": int64(1), "rows": []any{"x"}}}, Data: map[string]any{"d": 1},
		Step: &Step{Return: map[string]any{"ok": true}, Fail: &Fail{Reason: "x", Details: map[string]any{"f": 1}}}}
	if n := testing.AllocsPerRun(100, func() { _ = plain.Masked() }); n > 3 {
		t.Fatalf("%.0f allocations to mask an event with nothing firewalled, want at most 3 (the event, its Step and Fail)", n)
	}
	if m := plain.Masked(); !reflect.DeepEqual(m.Args, plain.Args) || !reflect.DeepEqual(m.Result, plain.Result) ||
		!reflect.DeepEqual(m.Step.Return, plain.Step.Return) || !reflect.DeepEqual(m.Step.Fail.Details, plain.Step.Fail.Details) {
		t.Fatalf("Masked() = %+v", m)
	}
}

func TestTerminalState(t *testing.T) {
	for s, want := range map[string]bool{StateQueued: false, StateRunning: false,
		StateSucceeded: true, StateFailed: true, StateCancelled: true, StateDead: true} {
		if TerminalState(s) != want {
			t.Errorf("TerminalState(%q) = %v", s, !want)
		}
	}
}

// roundTrip is the fuzz oracle: data that decodes and validates must
// re-encode, decode and validate again to the same bytes.
func roundTrip[T any](t *testing.T, data []byte, validate func(*T) error) {
	t.Helper()
	var v T
	if err := Unmarshal(data, &v); err != nil {
		return
	}
	if err := validate(&v); err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Validate error does not wrap ErrInvalid: %v", err)
		}
		return
	}
	enc, err := Marshal(&v)
	if err != nil {
		t.Fatalf("Marshal after decode: %v", err)
	}
	var w T
	if err := Unmarshal(enc, &w); err != nil {
		t.Fatalf("decode of re-encoded value: %v", err)
	}
	if err := validate(&w); err != nil {
		t.Fatalf("re-decoded value invalid: %v", err)
	}
	enc2, err := Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, enc2) {
		t.Fatalf("round trip changed encoding:\n%x\n%x", enc, enc2)
	}
}

func seed(f *testing.F, vs ...any) {
	f.Helper()
	for _, v := range vs {
		b, err := Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
}

func FuzzMission(f *testing.F) {
	m := validMission()
	m.Version = MissionVersion
	seed(f, m, &Mission{ID: testID, Kind: KindCompiled, Compiled: &CompiledSpec{Program: "1", Inputs: []map[string]any{{"a": 1}}}})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*Mission).Validate) })
}

func FuzzToolRequest(f *testing.F) {
	seed(f, &ToolRequest{Version: 1, CallID: "c", Tool: "t", Args: map[string]any{"q": []any{1, "x"}}})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*ToolRequest).Validate) })
}

func FuzzToolResponse(f *testing.F) {
	seed(f, &ToolResponse{Version: 1, CallID: "c", Result: map[string]any{"n": 1.5}},
		&ToolResponse{Error: &ToolError{Code: ToolErrTimeout, Message: "slow"}})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*ToolResponse).Validate) })
}

func FuzzEvent(f *testing.F) {
	seed(f, &Event{Version: 1, MissionID: testID, Kind: EventToolResult, Tool: "t", Result: []any{"x"}},
		&Event{MissionID: testID, Kind: EventFinal, Step: &Step{Return: int64(1)}})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*Event).Validate) })
}

func FuzzCancel(f *testing.F) {
	seed(f, &Cancel{Version: 1, MissionID: testID, Reason: "user", RequestedAt: time.Unix(1, 0).UTC()})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*Cancel).Validate) })
}

func FuzzStatus(f *testing.F) {
	seed(f, &Status{Version: 1, MissionID: testID, State: StateRunning, Attempt: 2, Worker: "w1", StreamSeq: 7})
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, (*Status).Validate) })
}

// A batch's subject names its first event's number and its count in the
// kind's place; a count that is not canonical, under 2, over MaxEventBatch
// or running past the largest number is no event subject.
func TestParseEventBatchSubject(t *testing.T) {
	if s, id, n, c, ok := ParseEventSubject(EventBatchSubject("ops", testID, 5, 4)); !ok || s != "ops" || id != testID || n != 5 || c != 4 {
		t.Errorf("batch: %q %q %d %d %v", s, id, n, c, ok)
	}
	if _, _, n, c, ok := ParseEventSubject(EventBatchSubject("ops", testID, 1, MaxEventBatch)); !ok || n != 1 || c != MaxEventBatch {
		t.Errorf("largest batch: %d %d %v", n, c, ok)
	}
	for _, bad := range []string{
		"mission.event.ops." + testID + ".5.1",
		"mission.event.ops." + testID + ".5.0",
		"mission.event.ops." + testID + ".5.04",
		"mission.event.ops." + testID + ".5." + strconv.Itoa(MaxEventBatch+1),
		"mission.event.ops." + testID + ".5.4x",
		"mission.event.ops." + testID + ".5.",
		"mission.event.ops." + testID + ".0.4",
		"mission.event.ops." + testID + ".18446744073709551615.2",
		"mission.event.ops." + testID + ".5",
	} {
		if _, _, _, _, ok := ParseEventSubject(bad); ok {
			t.Errorf("%q parsed as an event subject", bad)
		}
	}
	if _, _, n, c, ok := ParseEventSubject("mission.event.ops." + testID + ".18446744073709551614.2"); !ok || n != math.MaxUint64-1 || c != 2 {
		t.Errorf("batch ending at the largest number: %d %d %v", n, c, ok)
	}
}

// A batch payload decodes to its events in order; an element that is no
// valid event comes back nil in its place, and a payload holding another
// count of elements than its subject says is refused.
func TestEventBatchRoundTrip(t *testing.T) {
	for _, n := range []int{2, 15, 16, MaxEventBatch} {
		var enc [][]byte
		for i := range n {
			kind := EventToolCall
			if i == 1 {
				kind = "no_such_kind"
			}
			b, err := Marshal(&Event{Version: EventVersion, MissionID: testID, Kind: kind, Turn: i})
			if err != nil {
				t.Fatal(err)
			}
			enc = append(enc, b)
		}
		data := EncodeEventBatch(enc)
		evs, err := DecodeEventBatch(data, n)
		if err != nil || len(evs) != n {
			t.Fatalf("%d events: %v (%d)", n, err, len(evs))
		}
		for i, ev := range evs {
			if (i == 1) != (ev == nil) || (ev != nil && ev.Turn != i) {
				t.Errorf("%d events: event %d is %+v", n, i, ev)
			}
		}
		if _, err := DecodeEventBatch(data, n+1); !errors.Is(err, ErrInvalid) {
			t.Errorf("%d events read as %d: %v", n, n+1, err)
		}
	}
	if _, err := DecodeEventBatch([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, 2); err == nil {
		t.Error("an array declaring 4G elements in 5 bytes decoded")
	}
}

// A status subject is made in one allocation, its key not made apart
// first: it is made for each read and write of a mission's status. (A
// key of at most 32 bytes that does not escape takes no allocation, so
// the submitter here is long enough for one.)
func TestStatusSubjectAllocations(t *testing.T) {
	s, id := "analytics", testID
	var got string
	if n := testing.AllocsPerRun(100, func() { got = StatusSubject(s, id) }); n != 1 {
		t.Errorf("StatusSubject: %v allocations, want 1", n)
	}
	if want := "$KV." + BucketStatus + "." + StatusKey(s, id); got != want {
		t.Errorf("StatusSubject = %q, want %q", got, want)
	}
}

// TestRecordSubjectAllocations: a record's subject is one concatenation,
// its mission's result subject and ".record".
func TestRecordSubjectAllocations(t *testing.T) {
	s, id := "analytics", testID
	var got string
	if n := testing.AllocsPerRun(100, func() { got = RecordSubject(s, id) }); n != 1 {
		t.Errorf("RecordSubject: %v allocations, want 1", n)
	}
	if want := ResultSubject(s, id) + ".record"; got != want {
		t.Errorf("RecordSubject = %q, want %q", got, want)
	}
}

// TestParseSubmitSubjectInPlace: a submit subject's tokens are read in
// place, with no allocation, and read as strings.Split read them.
func TestParseSubmitSubjectInPlace(t *testing.T) {
	split := func(subject string) (s, p, id string, ok bool) {
		rest, found := strings.CutPrefix(subject, SubjectSubmitPrefix)
		if !found {
			return "", "", "", false
		}
		t := strings.Split(rest, ".")
		if len(t) == 4 {
			if l, err := strconv.Atoi(t[3]); err != nil || l < 0 || l >= MissionLanes || t[3] != strconv.Itoa(l) {
				return "", "", "", false
			}
			t = t[:3]
		}
		if len(t) != 3 || !ValidSubmitter(t[0]) || !ValidPriority(t[1]) || !ValidMissionID(t[2]) {
			return "", "", "", false
		}
		return t[0], t[1], t[2], true
	}
	base := SubmitSubject("ops", PriorityLow, testID)
	for _, subject := range []string{base, base + ".0", base + ".7", base + ".07", base + ".x", base + ".1.2", base + ".",
		base + "..", SubjectSubmitPrefix, SubjectSubmitPrefix + ".", SubjectSubmitPrefix + "ops", SubjectSubmitPrefix + "ops.low",
		SubjectSubmitPrefix + "ops.low." + testID + ".1.2.3", "other." + testID, "", SubjectSubmitPrefix + "ops..x"} {
		s, p, id, ok := ParseSubmitSubject(subject)
		ws, wp, wid, wok := split(subject)
		if s != ws || p != wp || id != wid || ok != wok {
			t.Errorf("%q: %q %q %q %v, want %q %q %q %v", subject, s, p, id, ok, ws, wp, wid, wok)
		}
	}
	lane := base + ".3"
	if n := testing.AllocsPerRun(100, func() { _, _, _, _ = ParseSubmitSubject(lane) }); n != 0 {
		t.Errorf("ParseSubmitSubject: %v allocations, want 0", n)
	}
}
