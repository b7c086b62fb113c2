package llmtest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

func userReq(text string) llm.Request {
	return llm.Request{System: "sys", Messages: []llm.Message{llm.UserText(text)}, Turn: 1}
}

func TestRepliesInOrder(t *testing.T) {
	boom := errors.New("boom")
	m := llmtest.New(
		llmtest.Text("one").WithUsage(10, 2),
		llmtest.Error(boom),
		llmtest.Respond(func(_ context.Context, req llm.Request) (*llm.Response, error) {
			return &llm.Response{Content: "echo " + req.Messages[0].Text()}, nil
		}),
		llmtest.ToolCall("search", map[string]any{"q": "x"}).WithToolCall("fetch", nil),
	)
	ctx := context.Background()
	r, err := m.Complete(ctx, userReq("a"))
	if err != nil || r.Content != "one" || r.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 2}) || r.StopReason != llm.StopEndTurn || r.Model != llmtest.ModelName {
		t.Fatalf("reply 1 = %+v, %v", r, err)
	}
	if _, err := m.Complete(ctx, userReq("b")); !errors.Is(err, boom) {
		t.Fatalf("reply 2 err = %v, want boom", err)
	}
	r, err = m.Complete(ctx, userReq("c"))
	if err != nil || r.Content != "echo c" {
		t.Fatalf("reply 3 = %+v, %v", r, err)
	}
	r, err = m.Complete(ctx, userReq("d"))
	if err != nil || len(r.ToolCalls) != 2 || r.StopReason != llm.StopToolUse {
		t.Fatalf("reply 4 = %+v, %v", r, err)
	}
	if r.ToolCalls[0].ID != "call_4_1" || r.ToolCalls[1].ID != "call_4_2" || r.ToolCalls[1].Input == nil {
		t.Errorf("tool calls = %+v", r.ToolCalls)
	}
	_, err = m.Complete(ctx, userReq("e"))
	if !errors.Is(err, llmtest.ErrExhausted) || !strings.Contains(err.Error(), "call 5 (4 scripted)") {
		t.Errorf("exhausted err = %v", err)
	}
	if _, ok := llm.Classify(err); ok {
		t.Error("exhaustion must not be retryable")
	}
	if m.Calls() != 5 || m.Remaining() != 0 {
		t.Errorf("calls %d remaining %d", m.Calls(), m.Remaining())
	}
}

func TestRequestsAreDeepCopies(t *testing.T) {
	m := llmtest.New(llmtest.Text("ok"))
	req := userReq("hello")
	req.Opts = map[string]any{"temperature": 0.2, "nested": map[string]any{"a": []any{1}}}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.ToolUse{ID: "1", Name: "t", Input: map[string]any{"k": "v"}}}})
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Mutate everything the caller still holds.
	req.Opts["temperature"] = 1.0
	req.Opts["nested"].(map[string]any)["a"].([]any)[0] = 2
	req.Messages[1].Content[0].(llm.ToolUse).Input["k"] = "changed"
	req.Messages[0] = llm.UserText("changed")

	got, ok := m.LastRequest()
	if !ok {
		t.Fatal("no request recorded")
	}
	if got.Opts["temperature"] != 0.2 || got.Opts["nested"].(map[string]any)["a"].([]any)[0] != 1 {
		t.Errorf("opts not copied: %v", got.Opts)
	}
	if got.Messages[0].Text() != "hello" || got.Messages[1].Content[0].(llm.ToolUse).Input["k"] != "v" {
		t.Errorf("messages not copied: %+v", got.Messages)
	}
}

func TestCheckFailure(t *testing.T) {
	m := llmtest.New(llmtest.Text("x").Expect(llmtest.LastUserContains("Turn 2 of 5")))
	_, err := m.Complete(context.Background(), userReq("Turn 1 of 5"))
	if !errors.Is(err, llmtest.ErrCheck) || !strings.Contains(err.Error(), `"Turn 2 of 5"`) {
		t.Fatalf("err = %v", err)
	}
	if len(m.Failures()) != 1 {
		t.Errorf("failures = %v", m.Failures())
	}
}

// fakeTB records Errorf calls and cleanups.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, format)
	_ = args
}

func TestNewTReportsCheckFailuresAndLeftovers(t *testing.T) {
	tb := &fakeTB{}
	m := llmtest.NewT(tb, llmtest.Text("x").Expect(llmtest.SystemContains("PTC-Lisp")), llmtest.Text("unused"))
	if _, err := m.Complete(context.Background(), userReq("hi")); err == nil {
		t.Fatal("check should fail: system is \"sys\"")
	}
	for _, fn := range tb.cleanups {
		fn()
	}
	if len(tb.errs) != 2 {
		t.Fatalf("want a check failure and a leftover report, got %q", tb.errs)
	}
}

func TestHangWaitsForContext(t *testing.T) {
	m := llmtest.New(llmtest.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := m.Complete(ctx, userReq("x"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamAccumulatesToSameResponse(t *testing.T) {
	reply := llmtest.Text("Here is the plan:\n(return 1)").WithToolCall("search", map[string]any{"q": "a", "n": int64(2)}).WithUsage(50, 7)
	m := llmtest.New(reply, reply)
	want, err := m.Complete(context.Background(), userReq("x"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Stream(context.Background(), userReq("x"))
	if err != nil {
		t.Fatal(err)
	}
	var deltas, ends int
	for st.Next() {
		switch ev := st.Current().(type) {
		case llm.TextDelta:
			deltas++
		case llm.ToolUseEnd:
			ends++
			if ev.ToolUse.Name != "search" || ev.ToolUse.Input["n"] != int64(2) {
				t.Errorf("tool end = %+v", ev.ToolUse)
			}
		}
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	got := st.Response()
	if deltas < 3 || ends != 1 {
		t.Errorf("deltas %d ends %d", deltas, ends)
	}
	if got.Content != want.Content || got.Usage != want.Usage || got.StopReason != want.StopReason || len(got.ToolCalls) != 1 || got.ToolCalls[0].Input["q"] != "a" {
		t.Errorf("stream response %+v, want %+v", got, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	const n = 50
	replies := make([]llmtest.Reply, n)
	for i := range replies {
		replies[i] = llmtest.Text("r")
	}
	m := llmtest.New(replies...)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := m.Complete(context.Background(), userReq("x")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m.Calls() != n || m.Remaining() != 0 || len(m.Requests()) != n {
		t.Errorf("calls %d remaining %d", m.Calls(), m.Remaining())
	}
}

func TestNoneContainFindsLeaks(t *testing.T) {
	req := llm.Request{System: "s", Messages: []llm.Message{
		llm.UserText("hello"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse{ID: "1", Name: "t", Input: map[string]any{"k": "SECRET-1"}}}},
		llm.ToolResults(llm.ToolResult{ToolUseID: "1", Content: "SECRET-2"}),
	}}
	tests := []struct {
		canary string
		leak   bool
	}{{"SECRET-1", true}, {"SECRET-2", true}, {"hello", true}, {"SECRET-3", false}}
	for _, tt := range tests {
		err := llmtest.NoneContain(tt.canary)(req)
		if (err != nil) != tt.leak {
			t.Errorf("NoneContain(%q) = %v, want leak=%v", tt.canary, err, tt.leak)
		}
	}
}

func TestWithStopReason(t *testing.T) {
	m := llmtest.New(llmtest.Text("(return").WithStopReason(llm.StopMaxTokens))
	r, err := m.Complete(context.Background(), userReq("x"))
	if err != nil || r.StopReason != llm.StopMaxTokens {
		t.Fatalf("reply = %+v, %v", r, err)
	}
}
