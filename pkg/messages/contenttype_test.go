package messages

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestJSONAndMsgpackDecodeAlike(t *testing.T) {
	// Decoded times are in the local zone, as msgpack decodes them.
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC).Local()
	m := &Mission{
		Version: MissionVersion, ID: NewMissionID(), Kind: KindAgent, CreatedAt: at, Deadline: at.Add(time.Hour),
		Agent: &AgentSpec{Prompt: "p", Signature: "{n :int}", Limits: Limits{LLMTimeout: 1500 * time.Millisecond},
			SubAgents: map[string]*AgentSpec{"helper": {Prompt: "q"}}},
		Context: map[string]any{"n": int64(9007199254740993), "f": 2.5, "zero": int64(0), "list": []any{"a", nil, true}},
		Tools:   []string{"search"}, Limits: Limits{MissionTimeout: time.Minute, MaxTurns: 3},
		Labels: map[string]string{"tenant": "t1"},
	}
	for _, ct := range []string{"", ContentTypeMsgpack, ContentTypeJSON, "application/json; charset=utf-8"} {
		data, err := MarshalAs(ct, m)
		if err != nil {
			t.Fatal(err)
		}
		var back Mission
		if err := UnmarshalAs(ct, data, &back); err != nil {
			t.Fatalf("%q: %v", ct, err)
		}
		if !reflect.DeepEqual(&back, m) {
			t.Errorf("%q: round trip\n got %#v\nwant %#v", ct, back, *m)
		}
	}
	js, _ := EncodeJSON(m)
	for _, want := range []string{`"created_at":"2026-01-02T03:04:05.0000006Z"`, `"llm_timeout":1500000000`, `"n":9007199254740993`, `"zero":0`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON %s lacks %s", js, want)
		}
	}
}

func TestStepJSONKeepsTypeMarker(t *testing.T) {
	s := &Step{Return: map[string]any{"x": int64(1)}, Usage: Usage{Turns: 1}}
	data, err := MarshalStep(s)
	if err != nil {
		t.Fatal(err)
	}
	var plain map[string]any
	if err := Unmarshal(data, &plain); err != nil {
		t.Fatal(err)
	}
	js, err := EncodeJSON(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"type":"step"`) {
		t.Errorf("step JSON %s has no type marker", js)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for _, c := range []struct {
		ct, body, want string
	}{
		{ContentTypeJSON, `{"v":1,"created_at":"yesterday"}`, `created_at: "yesterday" is not an RFC 3339 time`},
		{ContentTypeJSON, `{"v":1,"created_at":5}`, "created_at: expected an RFC 3339 time string"},
		{ContentTypeJSON, `{"v":1} {"v":2}`, "trailing data"},
		{ContentTypeJSON, `{"v":1,`, "JSON: unexpected EOF"},
		{ContentTypeJSON, `{"context":{"n":1e999}}`, "context.n: number 1e999 is out of range"},
		{ContentTypeJSON, `{"agent":{"prompt":"p","sub_agents":{"a":{"prompt":5}}}}`, "decode"},
		{"text/plain", `x`, `content type "text/plain" is not`},
	} {
		var m Mission
		err := UnmarshalAs(c.ct, []byte(c.body), &m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: %v, want %q", c.body, err, c.want)
		}
	}
}

func TestDecodeJSONBounds(t *testing.T) {
	// A large tool response (more than a mission may be) decodes.
	big := `{"v":1,"call_id":"1","result":"` + strings.Repeat("x", 900<<10) + `"}`
	var r ToolResponse
	if err := DecodeJSON([]byte(big), &r); err != nil || len(r.Result.(string)) != 900<<10 {
		t.Fatalf("900 KiB response: %v", err)
	}
	// Beyond the bound, nothing is parsed.
	huge := make([]byte, MaxJSONBytes+1)
	if err := DecodeJSON(huge, &r); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized body: %v", err)
	}
	// Nesting beyond the decoder's bound is an error, not a crash.
	deep := `{"v":1,"call_id":"1","tool":"t","args":{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`
	var q ToolRequest
	if err := DecodeJSON([]byte(deep), &q); err == nil {
		t.Fatal("600 levels of nesting decoded")
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add(`{"v":1,"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","kind":"agent","agent":{"prompt":"p"},"deadline":"2026-01-02T03:04:05Z"}`)
	f.Add(`{"v":1,"call_id":"1","tool":"t","args":{"a":[1,2.5,null]}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		var m Mission
		if DecodeJSON([]byte(body), &m) == nil {
			if _, err := EncodeJSON(&m); err != nil {
				t.Fatalf("decoded mission does not encode: %v", err)
			}
		}
		var r ToolRequest
		_ = DecodeJSON([]byte(body), &r)
	})
}

// JSON has no NaN or infinities: every JSON form of a value holding them
// renders them as the strings "NaN", "Infinity" and "-Infinity", and the
// value itself is left as it is.
func TestJSONRendersNonFiniteFloats(t *testing.T) {
	ret := map[string]any{"avg": math.NaN(), "max": math.Inf(1), "min": math.Inf(-1), "n": 2.5,
		"list": []any{int64(1), math.NaN()}, "plain": []any{"a"}}
	step := &Step{Version: StepVersion, Return: ret}
	b, err := EncodeJSON(step)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"avg":"NaN"`, `"max":"Infinity"`, `"min":"-Infinity"`, `"n":2.5`, `"list":[1,"NaN"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("EncodeJSON: %s lacks %s", b, want)
		}
	}
	got := JSONFloats(ret).(map[string]any)
	if got["avg"] != "NaN" || got["max"] != "Infinity" || got["min"] != "-Infinity" || got["n"] != 2.5 ||
		got["list"].([]any)[1] != "NaN" {
		t.Errorf("JSONFloats: %v", got)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("JSONFloats' result is not JSON: %v", err)
	}
	if !math.IsNaN(ret["avg"].(float64)) || !math.IsNaN(ret["list"].([]any)[1].(float64)) {
		t.Errorf("JSONFloats changed its input: %v", ret)
	}
	plain := ret["plain"].([]any)
	if p := JSONFloats(plain).([]any); &p[0] != &plain[0] {
		t.Errorf("a list without such floats was copied")
	}
}
