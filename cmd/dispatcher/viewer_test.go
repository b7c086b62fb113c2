package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// observedFleet is an embedded server with the shop tools, one worker
// whose model answers from a script, a client, and one finished mission:
// turn 1's program fails (the error goes back to the model), turn 2 calls
// two tools and a sub-agent (which calls a third) and returns a customer
// whose phone is firewalled.
type observedFleet struct {
	url    string
	client *fleet.Client
	id     string
	step   *messages.Step
}

func scriptedReplies(replies map[string][]string) llm.Model {
	return llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		for key, rs := range replies {
			if strings.Contains(req.Prompt, key) {
				if req.Turn < 1 || req.Turn > len(rs) {
					return nil, fmt.Errorf("no reply for turn %d of %q", req.Turn, key)
				}
				return &llm.Response{Content: "```clojure\n" + rs[req.Turn-1] + "\n```", Usage: llm.Usage{InputTokens: 120, OutputTokens: 30}}, nil
			}
		}
		return nil, fmt.Errorf("no script for %q", req.Prompt)
	})
}

// serveViewer serves the mission viewer for f's client on a local test
// server, closed when the test ends.
func (f *observedFleet) serveViewer(t *testing.T) *httptest.Server {
	t.Helper()
	v, err := newViewer(f.client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func startObservedFleet(t *testing.T) *observedFleet {
	t.Helper()
	srv := fleettest.Start(t)
	conn := srv.Conn
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	svc, err := fleet.NewToolService(conn(), fleet.ToolServiceConfig{Name: shop.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := shop.Generate(200, 1000, 300).Register(svc); err != nil {
		t.Fatal(err)
	}
	model := scriptedReplies(map[string][]string{
		"Report on paid orders": {
			"(def paid (tool/list_orders {:status \"paid\"}))\n(+ 1 \"x\")",
			"(let [c (tool/get_customer {:id 1})\n      best (tool/best_customer {:region \"north\"})]\n  (return {:paid (count (tool/list_orders {:status \"paid\"})) :customer c :best (:name best)}))",
		},
		"Find the best customer": {
			"(return {:name (:name (first (sort-by :id (tool/list_customers {:region ctx/region}))))})",
		},
	})
	agentworker.Start(ctx, t, conn(), model, func(c *fleet.WorkerConfig) { c.ID = "viewer-worker" })
	client, err := fleet.NewClient(ctx, conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Labels: map[string]string{"team": "shop"},
		Agent: &messages.AgentSpec{
			Name:   "reporter",
			Prompt: "Report on paid orders.", Signature: "{paid :int, customer :any, best :string}",
			Tools: []string{"list_orders", "get_customer", "best_customer"},
			SubAgents: map[string]*messages.AgentSpec{"best_customer": {
				Prompt: "Find the best customer of {{region}}.", Signature: "(region :string) -> {name :string}",
				Description: "the best customer of a region", Tools: []string{"list_customers"},
			}},
		},
		Tools: []string{"list_orders", "get_customer", "list_customers"},
	}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail != nil || len(step.Trace) != 2 {
		t.Fatalf("mission: fail %+v, %d turns", step.Fail, len(step.Trace))
	}
	if ph, _ := step.Return.(map[string]any)["customer"].(map[string]any)["_phone"].(string); !strings.HasPrefix(ph, "+1-555-") {
		t.Fatalf("the test mission should return a firewalled phone: %v", step.Return)
	}
	// The final status lands just after the result.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if st, err := client.Status(ctx, m.ID); err == nil && st.State == messages.StateSucceeded {
			break
		}
	}
	return &observedFleet{url: srv.ClientURL(), client: client, id: m.ID, step: step}
}

func TestListAndTraceCommands(t *testing.T) {
	f := startObservedFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vars := testEnv(map[string]string{"PTC_NATS_URL": f.url})
	dispatch := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, vars, &out, &errOut)
		return out.String(), err
	}

	out, err := dispatch("list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "MISSION") || !strings.Contains(out, f.id+"  succeeded") || !strings.Contains(out, "viewer-worker") ||
		!strings.Contains(out, "reporter") || !strings.Contains(out, "Report on paid orders. · team=shop") {
		t.Errorf("list:\n%s", out)
	}
	// flags after the command's arguments, and a label filter
	if out, err = dispatch("list", "-label", "team=other"); err != nil || strings.TrimSpace(out) != "no missions" {
		t.Errorf("list -label team=other: %v\n%s", err, out)
	}
	if out, err = dispatch("list", "-label", "team=shop"); err != nil || !strings.Contains(out, f.id) {
		t.Errorf("list -label team=shop: %v\n%s", err, out)
	}
	if _, err = dispatch("list", "-label", "team"); err == nil || !strings.Contains(err.Error(), `label "team" is not key=value`) {
		t.Errorf("list -label team: %v", err)
	}
	if out, err = dispatch("list", "-state", "running,queued"); err != nil || strings.TrimSpace(out) != "no missions" {
		t.Errorf("list -state running,queued: %v\n%s", err, out)
	}
	if _, err = dispatch("list", "-state", "done"); err == nil || !strings.Contains(err.Error(), `state "done"`) {
		t.Errorf("list -state done: %v", err)
	}
	// Another submitter's mission (this server has no users: a client
	// names its submitter) is listed, read and traced only with
	// -all-submitters.
	nc, err := nats.Connect(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	other, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Submitter: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "a mission of ops"}}
	if _, err := other.Submit(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if out, err = dispatch("list"); err != nil || strings.Contains(out, theirs.ID) {
		t.Errorf("list: another submitter's mission listed: %v\n%s", err, out)
	}
	if _, err = dispatch("status", theirs.ID); err == nil {
		t.Errorf("status of another submitter's mission: no error")
	}
	if out, err = dispatch("list", "-all-submitters"); err != nil || !strings.Contains(out, theirs.ID) || !strings.Contains(out, f.id) {
		t.Errorf("list -all-submitters: %v\n%s", err, out)
	}
	if out, err = dispatch("status", "-all-submitters", theirs.ID); err != nil || !strings.Contains(out, theirs.ID) || !strings.Contains(out, "submitter=ops") {
		t.Errorf("status -all-submitters: %v\n%s", err, out)
	}
	out, err = dispatch("list", "-json")
	if err != nil {
		t.Fatal(err)
	}
	var items []listItem
	if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 1 {
		t.Fatalf("list -json: %v\n%s", err, out)
	}
	if it := items[0]; it.ID != f.id || it.State != "succeeded" || it.Attempt != 1 || it.Worker != "viewer-worker" || it.DurationNs <= 0 || it.Submitted.IsZero() ||
		it.Agent != "reporter" || it.Prompt != "Report on paid orders." || it.Labels["team"] != "shop" || it.Scripted {
		t.Errorf("list -json item %+v", it)
	}

	out, err = dispatch("trace", f.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mission " + f.id + "  SUCCEEDED  attempt 1  worker viewer-worker",
		"reporter · Report on paid orders. · team=shop", "(queued and run; the list's duration)",
		"── turn 1", "── turn 2", "program:", `(+ 1 "x")`,
		"tool list_orders {\"status\":\"paid\"}", "error: ", "feedback to the model:",
		"tool get_customer {\"id\":1}", `"_phone":"<Firewalled>"`,
		"tool best_customer {\"region\":\"north\"}", "sub-agent best_customer:", "tool list_customers {\"region\":\"north\"}",
		"RETURN {", "usage: 2 turns, 3 model requests, 4 tool calls, 360 in / 90 out tokens, run ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	if strings.Contains(out, "+1-555-") {
		t.Errorf("trace shows a firewalled value")
	}
	if t.Failed() {
		t.Logf("trace:\n%s", out)
	}

	out, err = dispatch("trace", "-json", f.id)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ID, State string
		Status    map[string]any
		Step      struct {
			Trace []struct {
				Turn      int              `json:"turn"`
				Program   string           `json:"program"`
				Feedback  string           `json:"feedback"`
				ToolCalls []map[string]any `json:"tool_calls"`
			} `json:"trace"`
			Usage map[string]any `json:"usage"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("trace -json: %v\n%s", err, out)
	}
	if v.ID != f.id || v.State != "succeeded" || v.Status["worker"] != "viewer-worker" || len(v.Step.Trace) != 2 ||
		v.Step.Trace[0].Feedback == "" || len(v.Step.Trace[1].ToolCalls) != 3 || v.Step.Usage["turns"] != float64(2) {
		t.Errorf("trace -json: %s", out)
	}
	if strings.Contains(out, "+1-555-") || !strings.Contains(out, `"_phone":"<Firewalled>"`) {
		t.Errorf("trace -json does not mask the firewalled phone")
	}

	missing := messages.NewMissionID()
	_, err = dispatch("trace", missing)
	if err == nil || exitCode(err) != exitNotFound || !strings.Contains(err.Error(), "no such mission") {
		t.Errorf("trace of an unknown id: %v (exit %d)", err, exitCode(err))
	}
	if _, err = dispatch("status", missing); err == nil || exitCode(err) != exitNotFound {
		t.Errorf("status of an unknown id: %v (exit %d)", err, exitCode(err))
	}
	if _, err = dispatch("trace", "nope"); err == nil || exitCode(err) != 1 {
		t.Errorf("trace of a bad id: %v", err)
	}

	// A finished mission whose result has expired says so.
	if err := f.client.Stores().Results.Purge(ctx, jetstream.WithPurgeSubject(messages.ResultSubject(f.client.Submitter(), f.id))); err != nil {
		t.Fatal(err)
	}
	if out, err = dispatch("trace", f.id); err != nil || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "the result is no longer stored") {
		t.Errorf("trace after the result expired: %v\n%s", err, out)
	}
}

func TestViewerAPI(t *testing.T) {
	f := startObservedFleet(t)
	srv := f.serveViewer(t)
	get := func(path string) (int, string, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ctype, body := get("/")
	if code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, `data-id="`+f.id+`"`) || !strings.Contains(body, "/static/app.js") {
		t.Errorf("page: %d %s\n%s", code, ctype, body)
	}
	if code, _, body = get("/missions/" + f.id); code != 200 || !strings.Contains(body, `data-selected="`+f.id+`"`) {
		t.Errorf("mission page: %d\n%s", code, body)
	}
	if code, ctype, _ = get("/static/app.js"); code != 200 || !strings.Contains(ctype, "javascript") {
		t.Errorf("app.js: %d %s", code, ctype)
	}
	code, _, body = get("/api/missions?state=succeeded")
	if code != 200 || !strings.Contains(body, `"id":"`+f.id+`"`) {
		t.Errorf("list: %d %s", code, body)
	}
	code, _, body = get("/api/missions/" + f.id)
	if code != 200 || !strings.Contains(body, `"feedback":`) || !strings.Contains(body, `"<Firewalled>"`) || strings.Contains(body, "+1-555-") ||
		strings.Contains(body, `"step_bytes"`) || strings.Contains(body, `"cut":`) {
		t.Errorf("mission: %d %.500s", code, body)
	}
	for path, want := range map[string]int{
		"/api/missions/" + messages.NewMissionID(): 404,
		"/api/missions/not-an-id":                  404,
		"/api/missions?state=done":                 400,
		"/api/missions?limit=-1":                   400,
		"/missions/../etc":                         404,
	} {
		if code, _, body := get(path); code != want {
			t.Errorf("GET %s = %d, want %d (%s)", path, code, want, body)
		}
	}
}

// dispatcher local -ui serves the viewer for its one-process fleet, and
// keeps serving after the mission until interrupted. With the default
// address busy (another viewer on the machine; the test holds it when it
// is free) it serves on a free port and prints that one.
func TestLocalServesTheViewer(t *testing.T) {
	const defaultAddr = "127.0.0.1:8090" // the -ui-addr default
	if ln, err := net.Listen("tcp", defaultAddr); err == nil {
		defer ln.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"local", "-ui", "../../examples/missions/top-customers.yaml"}, testEnv(nil), &out, &errOut)
	}()
	addr := regexp.MustCompile(`mission viewer: (http://[0-9.:]+)/missions/([0-9A-Z]{26})\n`)
	var base string
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "keeps serving") {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("local ended: %v\n%s\n%s", err, out.String(), errOut.String())
		default:
		}
	}
	if base == "" {
		t.Fatalf("no viewer address or the mission did not end:\n%s", out.String())
	}
	if base == "http://"+defaultAddr || !strings.Contains(errOut.String(), "default viewer address in use") {
		t.Errorf("viewer at %s with the default address busy; stderr:\n%s", base, errOut.String())
	}
	resp, err := http.Get(base + "/api/missions")
	if err != nil {
		t.Fatal(err)
	}
	var items []listItem
	err = json.NewDecoder(resp.Body).Decode(&items)
	resp.Body.Close()
	if err != nil || len(items) != 1 || items[0].State != "succeeded" || !strings.Contains(out.String(), "mission "+items[0].ID+" submitted") {
		t.Errorf("viewer list: %v %+v", err, items)
	}
	// The URL printed is the mission's own page, and it says the run was
	// scripted.
	if m := addr.FindStringSubmatch(out.String()); len(items) == 1 && m[2] != items[0].ID || len(items) == 1 && !items[0].Scripted || len(items) == 1 && items[0].Agent != "top_customers" {
		t.Errorf("printed %q for mission %+v", m[0], items)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("local -ui after interrupt: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("local -ui did not stop on interrupt")
	}
}

// runLargeStepMission runs, on an embedded fleet, a mission that
// returns a 3,000,000-byte text (its Step, trace included, is about 6 MB
// and stored in the mission_results object store), and returns the
// client, the mission id and its Step.
func runLargeStepMission(t *testing.T) (*fleet.Client, string, *messages.Step) {
	t.Helper()
	srv := fleettest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	model := scriptedReplies(map[string][]string{
		"Make a big text": {`(let [big (apply str (repeat 300000 "abcdefghij"))] (return {:text big :n (count big)}))`},
	})
	agentworker.Start(ctx, t, srv.Conn(), model, func(c *fleet.WorkerConfig) { c.ID = "big-worker" })
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent:  &messages.AgentSpec{Prompt: "Make a big text.", Signature: "{text :string, n :int}"},
		Limits: messages.Limits{ProgramMemory: 64 << 20},
	}
	step, err := client.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail != nil {
		t.Fatalf("mission failed: %+v", step.Fail)
	}
	return client, m.ID, step
}

// A mission whose Step is several MB (stored in the mission_results
// object store): the viewer's mission API serves a preview under 256 KiB
// that names the sizes and the full link, and the full link serves the
// whole Step, equal to fleet.Client.Result's.
func TestViewerPreviewsALargeStep(t *testing.T) {
	client, id, step := runLargeStepMission(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	whole, err := messages.Marshal(step)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 3_000_000 {
		t.Fatalf("the test Step is %d bytes, want several MB", len(whole))
	}
	v, err := newViewer(client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(v.Handler())
	t.Cleanup(hs.Close)
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v %.300s", path, resp.StatusCode, err, b)
		}
		return resp, b
	}
	_, body := get("/api/missions/" + id)
	t.Logf("preview %d bytes of a %d-byte Step", len(body), len(whole))
	if len(body) > 256<<10 {
		t.Fatalf("the preview is %d bytes, want at most 256 KiB", len(body))
	}
	var view struct {
		StepBytes int    `json:"step_bytes"`
		Full      string `json:"full"`
		Step      struct {
			Return struct {
				Cut struct {
					Bytes   int64  `json:"bytes"`
					Preview string `json:"preview"`
				} `json:"cut"`
			} `json:"return"`
		} `json:"step"`
	}
	if err := json.Unmarshal(body, &view); err != nil {
		t.Fatalf("%v: %.500s", err, body)
	}
	retBytes, _ := messages.Marshal(step.Return)
	if view.StepBytes != len(whole) || view.Step.Return.Cut.Bytes != int64(len(retBytes)) ||
		!strings.Contains(view.Step.Return.Cut.Preview, "abcdefghij") || view.Full != "/api/missions/"+id+"?full=1" {
		t.Fatalf("preview: step_bytes %d (want %d), return %d bytes (want %d), full %q, preview %.80q",
			view.StepBytes, len(whole), view.Step.Return.Cut.Bytes, len(retBytes), view.Full, view.Step.Return.Cut.Preview)
	}
	resp, body := get(view.Full)
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") {
		t.Errorf("full: Content-Disposition %q, want an attachment", cd)
	}
	var full struct {
		Step json.RawMessage `json:"step"`
	}
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	fetched, err := client.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := messages.EncodeJSON(fetched) // nothing firewalled: masking changes nothing
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Compact(&got, full.Step); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), bytes.TrimSpace(want)) {
		t.Fatalf("the full Step (%d bytes of JSON) differs from fleet.Client.Result's (%d bytes)", got.Len(), len(want))
	}
	var ret messages.Step
	if err := messages.DecodeJSON(full.Step, &ret); err != nil {
		t.Fatal(err)
	}
	if s, _ := ret.Return.(map[string]any)["text"].(string); len(s) != 3_000_000 {
		t.Fatalf("the full Step's return text is %d bytes, want 3000000", len(s))
	}
}
