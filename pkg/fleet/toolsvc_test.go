package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

func TestDiscoverToolSchemas(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	// A micro service that is not a tool service is ignored.
	other, err := micro.AddService(nc, micro.Config{Name: "billing", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	if err := other.AddEndpoint("charge", micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(nil) })); err != nil {
		t.Fatal(err)
	}
	tools, err := fleet.Discover(testCtx(t), nc, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]fleet.ToolInfo{}
	for _, ti := range tools {
		names = append(names, ti.Name)
		byName[ti.Name] = ti
	}
	if strings.Join(names, ",") != "boom,count,search,secret,slow" {
		t.Fatalf("discovered %v", names)
	}
	s := byName["search"]
	if s.Service != "mail" || s.Subject != "tool.mail.search" || s.Description != "search mail" ||
		s.Signature != "(query :string) -> [{id :int, subject :string}]" {
		t.Errorf("search = %+v", s)
	}
	// Derived from countArgs and countResult.
	if got := byName["count"].Signature; got != "(folder :string) -> {folder :string, count :int}" {
		t.Errorf("derived count signature = %q", got)
	}
}

func TestToolServiceRegisterErrors(t *testing.T) {
	_, nc := runJetStream(t)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "reg"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	noop := func(context.Context, map[string]any) (any, error) { return nil, nil }
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bad name", svc.Register("a.b", fleet.ToolSpec{}, noop), `tool name "a.b"`},
		{"reserved", svc.Register("return", fleet.ToolSpec{}, noop), `tool name "return"`},
		{"nil func", svc.Register("x", fleet.ToolSpec{}, nil), "nil func"},
		{"bad signature", svc.Register("y", fleet.ToolSpec{Signature: "(a :nope) -> :int"}, noop), "tool y: signature"},
		{"underivable", fleet.RegisterTyped(svc, "z", fleet.ToolSpec{}, func(context.Context, struct{ F func() }) (int, error) { return 0, nil }), "derive signature"},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, fleet.ErrInvalidConfig) || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig mentioning %q", tt.name, tt.err, tt.want)
		}
	}
	if _, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "bad name"}); !errors.Is(err, fleet.ErrInvalidConfig) {
		t.Errorf("NewToolService(bad name) = %v", err)
	}
}

// callRaw sends a tool request the way a worker does and returns the reply.
func callRaw(t *testing.T, nc *nats.Conn, subject string, body []byte) *nats.Msg {
	t.Helper()
	resp, err := nc.Request(subject, body, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestToolServiceWireErrors(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	good, _ := messages.Marshal(&messages.ToolRequest{Version: 1, CallID: "1", Tool: "boom"})
	bad, _ := messages.Marshal(&messages.ToolRequest{Version: 1, Tool: "search"})
	tests := []struct {
		name, subject string
		body          []byte
		code, desc    string
	}{
		{"panic", "tool.mail.boom", good, messages.ToolErrPanic, "the tool crashed: kaboom"},
		{"garbage", "tool.mail.search", []byte{0xc1}, messages.ToolErrBadRequest, "undecodable request"},
		{"invalid", "tool.mail.search", bad, messages.ToolErrBadRequest, "tool_request.call_id: empty"},
	}
	for _, tt := range tests {
		resp := callRaw(t, nc, tt.subject, tt.body)
		if resp.Header.Get(micro.ErrorCodeHeader) != tt.code || !strings.Contains(resp.Header.Get(micro.ErrorHeader), tt.desc) {
			t.Errorf("%s: headers = %v", tt.name, resp.Header)
		}
		var out messages.ToolResponse
		if err := messages.Unmarshal(resp.Data, &out); err != nil || out.Error == nil || out.Error.Code != tt.code {
			t.Errorf("%s: body = %+v, %v", tt.name, out, err)
		}
	}
}

// Calls to one endpoint run concurrently: four calls that each wait for all
// four to arrive would deadlock if micro's one-at-a-time handling leaked
// through.
func TestToolServiceHandlesCallsConcurrently(t *testing.T) {
	_, nc := runJetStream(t)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "par", MaxConcurrent: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	err = svc.Register("meet", fleet.ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			return "met", nil
		case <-ctx.Done():
			return nil, errors.New("the others never came")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := messages.Marshal(&messages.ToolRequest{Version: 1, CallID: "1", Tool: "meet"})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := &nats.Msg{Subject: "tool.par.meet", Data: body, Header: nats.Header{}}
			msg.Header.Set(messages.HeaderTimeout, "3000")
			resp, err := nc.RequestMsg(msg, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			var out messages.ToolResponse
			if err := messages.Unmarshal(resp.Data, &out); err != nil || out.Result != "met" {
				t.Errorf("response = %+v (%v), headers %v", out, err, resp.Header)
			}
		}()
	}
	wg.Wait()
	if err := svc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := svc.Stop(context.Background()); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestWorkerConfigErrors(t *testing.T) {
	_, nc := runJetStream(t)
	noop := fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) { return nil, nil })
	tests := []struct {
		name string
		nc   *nats.Conn
		cfg  fleet.WorkerConfig
		want string
	}{
		{"no runner", nc, fleet.WorkerConfig{}, "Runner"},
		{"nil conn", nil, fleet.WorkerConfig{Runner: noop}, "nil connection"},
		{"bad priority", nc, fleet.WorkerConfig{Runner: noop, Priorities: []string{"urgent"}}, `priority "urgent"`},
	}
	for _, tt := range tests {
		_, err := fleet.NewWorker(tt.nc, tt.cfg)
		if !errors.Is(err, fleet.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
	if _, err := fleet.NewClient(context.Background(), nil, fleet.ClientConfig{}); !errors.Is(err, fleet.ErrInvalidConfig) {
		t.Errorf("NewClient(nil) = %v", err)
	}
}

func TestClientInputErrors(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx := testCtx(t)
	if _, err := c.Submit(ctx, &messages.Mission{Kind: "robot"}); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("Submit(invalid) = %v", err)
	}
	if _, err := c.Await(ctx, "not-a-ulid"); !errors.Is(err, messages.ErrInvalid) {
		t.Errorf("Await(bad id) = %v", err)
	}
	if _, err := c.Status(ctx, messages.NewMissionID()); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("Status(unknown) = %v", err)
	}
	if _, err := c.Result(ctx, messages.NewMissionID()); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("Result(unknown) = %v", err)
	}
	for name, err := range map[string]error{
		"Status": func() error { _, err := c.Status(ctx, "x.y"); return err }(),
		"Result": func() error { _, err := c.Result(ctx, ""); return err }(),
		"Cancel": c.Cancel(ctx, "nope", ""),
	} {
		if !errors.Is(err, messages.ErrInvalid) || !strings.Contains(err.Error(), "is not a ULID") {
			t.Errorf("%s(bad id) = %v", name, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Await(short, messages.NewMissionID()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Await(unknown) = %v, want deadline", err)
	}
	// A client without setup rights binds to what exists.
	if _, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{SkipSetup: true}); err != nil {
		t.Errorf("NewClient(SkipSetup) = %v", err)
	}
}
