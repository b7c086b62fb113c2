package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A caller may send a tool request as JSON (Content-Type header); a Go tool
// service answers it in JSON.
func TestToolServiceAnswersJSONInJSON(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	req := &nats.Msg{Subject: "tool.mail.search", Header: nats.Header{},
		Data: []byte(`{"v":1,"call_id":"c1","tool":"search","args":{"query":"invoice"}}`)}
	req.Header.Set(messages.HeaderContentType, messages.ContentTypeJSON)
	resp, err := nc.RequestMsgWithContext(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get(messages.HeaderContentType) != messages.ContentTypeJSON {
		t.Fatalf("response content type %q", resp.Header.Get(messages.HeaderContentType))
	}
	var out map[string]any
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		t.Fatalf("response is not JSON: %v: %q", err, resp.Data)
	}
	if out["call_id"] != "c1" || out["result"] == nil {
		t.Errorf("response = %v", out)
	}
	// A bad JSON request gets a JSON error.
	req.Data = []byte(`{"v":1,"call_id":`)
	resp, err = nc.RequestMsgWithContext(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get(micro.ErrorCodeHeader) != messages.ToolErrBadRequest || !json.Valid(resp.Data) {
		t.Errorf("bad JSON request: %v %q", resp.Header, resp.Data)
	}
}

// A tool service that asks for JSON requests (endpoint metadata
// ptc.content_type) gets them, and its JSON answers are decoded with exact
// numbers.
func TestToolboxSpeaksJSONToJSONServices(t *testing.T) {
	_, nc := runJetStream(t)
	svc, err := micro.AddService(nc, micro.Config{Name: "jsonsvc", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	var gotType string
	err = svc.AddEndpoint("double", micro.HandlerFunc(func(r micro.Request) {
		gotType = r.Headers().Get(messages.HeaderContentType)
		var req struct {
			CallID string         `json:"call_id"`
			Args   map[string]any `json:"args"`
		}
		if err := json.Unmarshal(r.Data(), &req); err != nil {
			_ = r.Error("bad_request", err.Error(), nil)
			return
		}
		body := `{"v":1,"call_id":"` + req.CallID + `","result":{"twice":9007199254740992,"of":` + jsonString(req.Args["n"]) + `}}`
		_ = r.Respond([]byte(body), micro.WithHeaders(micro.Headers{messages.HeaderContentType: {messages.ContentTypeJSON}}))
	}), micro.WithEndpointSubject("tool.jsonsvc.double"), micro.WithEndpointMetadata(map[string]string{
		fleet.MetaTool: "double", fleet.MetaSignature: "(n :int) -> {twice :int, of :int}", fleet.MetaContentType: messages.ContentTypeJSON,
	}))
	if err != nil {
		t.Fatal(err)
	}
	// A failure may come as error headers alone, with an empty body.
	err = svc.AddEndpoint("refuse", micro.HandlerFunc(func(r micro.Request) {
		_ = r.Respond(nil, micro.WithHeaders(micro.Headers{messages.HeaderContentType: {messages.ContentTypeJSON},
			micro.ErrorCodeHeader: {messages.ToolErrBadRequest}, micro.ErrorHeader: {"n: too large"}}))
	}), micro.WithEndpointSubject("tool.jsonsvc.refuse"), micro.WithEndpointMetadata(map[string]string{
		fleet.MetaTool: "refuse", fleet.MetaContentType: messages.ContentTypeJSON,
	}))
	if err != nil {
		t.Fatal(err)
	}
	box, err := fleet.NewToolbox(nc, fleet.ToolboxConfig{Tools: []string{"double", "refuse"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := box.Call(testCtx(t), "double", map[string]any{"n": int64(4503599627370496)})
	if err != nil {
		t.Fatal(err)
	}
	if gotType != messages.ContentTypeJSON {
		t.Errorf("request content type %q", gotType)
	}
	m := got.(map[string]any)
	if m["twice"] != int64(9007199254740992) || m["of"] != int64(4503599627370496) {
		t.Errorf("result = %#v", m)
	}
	_, err = box.Call(testCtx(t), "refuse", map[string]any{"n": int64(1)})
	var te *fleet.ToolError
	if !errors.As(err, &te) || te.Code != messages.ToolErrBadRequest || te.Message != "n: too large" {
		t.Errorf("refuse: %v", err)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A mission published as JSON (Content-Type: application/json) runs like
// one published as msgpack; its context keeps integer kinds.
func TestWorkerRunsJSONMission(t *testing.T) {
	s, nc := runJetStream(t)
	c := newClient(t, nc)
	startWorker(t, connect(t, s), fleet.RunnerFunc(func(_ context.Context, m *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: map[string]any{"n": m.Context["n"], "prompt": m.Agent.Prompt}}, nil
	}))
	id := messages.NewMissionID()
	body := `{"v":1,"id":"` + id + `","kind":"agent","agent":{"prompt":"from JSON"},"context":{"n":9007199254740993},"created_at":"2026-01-02T03:04:05Z"}`
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: messages.SubmitSubject(messages.DefaultSubmitter, "", id), Data: []byte(body), Header: nats.Header{}}
	msg.Header.Set(messages.HeaderContentType, messages.ContentTypeJSON)
	msg.Header.Set(messages.HeaderMissionID, id)
	if _, err := js.PublishMsg(testCtx(t), msg, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["n"] != int64(9007199254740993) || ret["prompt"] != "from JSON" {
		t.Errorf("return = %#v", ret)
	}
	// An undecodable JSON mission is dead-lettered with a failure Step
	// naming the problem.
	bad := messages.NewMissionID()
	msg = &nats.Msg{Subject: messages.SubmitSubject(messages.DefaultSubmitter, "", bad), Data: []byte(`{"v":1,"id":"` + bad + `","kind":"agent","created_at":"soon"}`), Header: nats.Header{}}
	msg.Header.Set(messages.HeaderContentType, messages.ContentTypeJSON)
	msg.Header.Set(messages.HeaderMissionID, bad)
	if _, err := js.PublishMsg(testCtx(t), msg, jetstream.WithMsgID(bad)); err != nil {
		t.Fatal(err)
	}
	step, err = c.Await(testCtx(t), bad)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || !strings.Contains(step.Fail.Message, `created_at: "soon" is not an RFC 3339 time`) {
		t.Errorf("bad JSON mission: %+v", step.Fail)
	}
}
