package llm_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestStreamAccumulates(t *testing.T) {
	st := llm.StreamOf(
		llm.MessageStart{ID: "msg_1", Model: "m", Usage: llm.Usage{InputTokens: 100, CacheReadTokens: 80}},
		llm.TextDelta{Text: "Let me "},
		llm.TextDelta{Text: "check."},
		llm.ToolUseStart{Index: 1, ID: "toolu_1", Name: "get_weather"},
		llm.ToolUseDelta{Index: 1, PartialJSON: `{"city": "Os`},
		llm.ToolUseDelta{Index: 1, PartialJSON: `lo", "days": 3}`},
		llm.ToolUseEnd{Index: 1},
		llm.ToolUseStart{Index: 2, ID: "toolu_2", Name: "ping"},
		llm.ToolUseEnd{Index: 2},
		llm.MessageDelta{StopReason: llm.StopToolUse, Usage: llm.Usage{OutputTokens: 42}},
	)
	var ends []llm.ToolUse
	for st.Next() {
		if e, ok := st.Current().(llm.ToolUseEnd); ok {
			ends = append(ends, e.ToolUse)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if st.Next() {
		t.Error("Next after the end must stay false")
	}
	r := st.Response()
	if r.Content != "Let me check." || r.ID != "msg_1" || r.Model != "m" || r.StopReason != llm.StopToolUse {
		t.Errorf("response = %+v", r)
	}
	if r.Usage != (llm.Usage{InputTokens: 100, OutputTokens: 42, CacheReadTokens: 80}) {
		t.Errorf("usage = %+v", r.Usage)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].Input["city"] != "Oslo" || r.ToolCalls[0].Input["days"] != int64(3) || len(r.ToolCalls[1].Input) != 0 || r.ToolCalls[1].Input == nil {
		t.Errorf("tool calls = %+v", r.ToolCalls)
	}
	if len(ends) != 2 || ends[0].Name != "get_weather" || ends[0].Input["city"] != "Oslo" {
		t.Errorf("ToolUseEnd events = %+v", ends)
	}
	if err := st.Close(); err != nil || st.Close() != nil {
		t.Error("Close must be idempotent")
	}
}

func TestStreamImplicitToolEnd(t *testing.T) {
	// OpenAI-style: tool calls are never explicitly ended.
	r, err := llm.Collect(llm.StreamOf(
		llm.ToolUseStart{Index: 0, ID: "call_a", Name: "a"},
		llm.ToolUseDelta{Index: 0, PartialJSON: `{"x":1}`},
		llm.ToolUseStart{Index: 1, ID: "call_b", Name: "b"},
		llm.ToolUseDelta{Index: 1, PartialJSON: `{"y":[1,2.5]}`},
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].Input["x"] != int64(1) || r.ToolCalls[1].Input["y"].([]any)[1] != 2.5 {
		t.Errorf("tool calls = %+v", r.ToolCalls)
	}
}

func TestStreamErrors(t *testing.T) {
	boom := errors.New("connection reset")
	tests := []struct {
		name   string
		events []llm.Event
		srcErr error
		want   string
	}{
		{"malformed tool json", []llm.Event{llm.ToolUseStart{Index: 0, ID: "c", Name: "t"}, llm.ToolUseDelta{Index: 0, PartialJSON: `{"x":`}, llm.ToolUseEnd{Index: 0}}, nil, `tool call "t" (c): malformed tool input json`},
		{"non-object tool json", []llm.Event{llm.ToolUseStart{Index: 0, ID: "c", Name: "t"}, llm.ToolUseDelta{Index: 0, PartialJSON: `[1]`}}, nil, "tool input must be a json object, got array"},
		{"delta for unknown call", []llm.Event{llm.ToolUseDelta{Index: 3, PartialJSON: `{}`}}, nil, "input delta for unknown tool call 3"},
		{"end of unknown call", []llm.Event{llm.ToolUseEnd{Index: 3}}, nil, "end of unknown tool call 3"},
		{"double start", []llm.Event{llm.ToolUseStart{Index: 0}, llm.ToolUseStart{Index: 0}}, nil, "tool call 0 started twice"},
		{"nil event", []llm.Event{nil}, nil, "nil event"},
		{"source error", []llm.Event{llm.TextDelta{Text: "partial"}}, boom, "connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &errSource{events: tt.events, err: tt.srcErr}
			st := llm.NewStream(src)
			r, err := llm.Collect(st)
			if r != nil || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Collect = %v, %v; want error containing %q", r, err, tt.want)
			}
			if !src.closed {
				t.Error("Collect must close the source")
			}
		})
	}
}

type errSource struct {
	events []llm.Event
	err    error
	closed bool
}

func (s *errSource) Next() (llm.Event, error) {
	if len(s.events) == 0 {
		if s.err != nil {
			return nil, s.err
		}
		return nil, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *errSource) Close() error { s.closed = true; return nil }

func TestDecodeToolInput(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]any
		wantErr string
	}{
		{"", map[string]any{}, ""},
		{"  \n", map[string]any{}, ""},
		{`{}`, map[string]any{}, ""},
		{`{"a":1,"b":1.5,"c":"s","d":[true,null],"e":{"f":12345678901234}}`, map[string]any{"a": int64(1), "b": 1.5, "c": "s", "d": []any{true, nil}, "e": map[string]any{"f": int64(12345678901234)}}, ""},
		{`{"big":[1e400]}`, nil, "number 1e400 is out of range"},
		{`{"huge":123456789012345678901234567890}`, map[string]any{"huge": 1.2345678901234568e29}, ""},
		{`{"a":1} {"b":2}`, nil, "trailing data"},
		{`{"a":1}}`, nil, "trailing data"},
		{`"str"`, nil, "got string"},
		{`null`, nil, "got null"},
		{`12`, nil, "got number"},
		{`{"a":`, nil, "malformed"},
	}
	for _, tt := range tests {
		got, err := llm.DecodeToolInput(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeToolInput(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !equalJSON(got, tt.want) {
			t.Errorf("DecodeToolInput(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !equalJSON(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func FuzzDecodeToolInput(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,{"b":null}],"c":-1.5e3}`, `[1]`, `{"a":`, `{"a":1}}`, "\x00", `{"\u00e9":"\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := llm.DecodeToolInput(s)
		if err != nil {
			if m != nil {
				t.Fatalf("map and error: %v %v", m, err)
			}
			return
		}
		if m == nil {
			t.Fatal("nil map without error")
		}
		assertPlain(t, m)
	})
}

// assertPlain checks that decoded input holds only plain Go data.
func assertPlain(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
	case map[string]any:
		for _, e := range x {
			assertPlain(t, e)
		}
	case []any:
		for _, e := range x {
			assertPlain(t, e)
		}
	default:
		t.Fatalf("unexpected %T in decoded input", v)
	}
}
