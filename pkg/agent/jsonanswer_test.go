package agent

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		prims bool
		want  any
	}{
		{"bare object", `{"sentiment": "positive", "score": 0.95}`, false,
			map[string]any{"sentiment": "positive", "score": 0.95}},
		{"bare array", ` [1, 2.5, -3] `, false, []any{int64(1), 2.5, int64(-3)}},
		{"fenced json", "Here you go:\n```json\n{\"result\": 42}\n```\nDone.", false, map[string]any{"result": int64(42)}},
		{"fenced without info", "```\n[\"a\"]\n```", false, []any{"a"}},
		{"fenced one line", "```{\"a\": 1}```", false, map[string]any{"a": int64(1)}},
		{"fenced json on the fence line", "```{\"a\":\n 1}\n```", false, map[string]any{"a": int64(1)}},
		{"unterminated fence", "```json\n{\"a\": true}", false, map[string]any{"a": true}},
		{"embedded in prose", `The answer is {"result": 32} as computed.`, false, map[string]any{"result": int64(32)}},
		{"prose braces before the object", `Using {curly} notation: {"ok": true} -- end`, false, map[string]any{"ok": true}},
		{"second fence is the json", "```text\nnot json\n```\n```json\n{\"x\": 1}\n```", false, map[string]any{"x": int64(1)}},
		{"big integer exact", `{"id": 9007199254740993}`, false, map[string]any{"id": int64(9007199254740993)}},
		{"beyond int64 is float", `{"n": 18446744073709551616}`, false, map[string]any{"n": 18446744073709551616.0}},
		{"float with zero fraction stays float", `{"n": 42.0}`, false, map[string]any{"n": 42.0}},
		{"nested", `{"a": [{"b": null}]}`, false, map[string]any{"a": []any{map[string]any{"b": nil}}}},
		{"primitive int", " 42\n", true, int64(42)},
		{"primitive float", "0.75", true, 0.75},
		{"primitive bool", "true", true, true},
		{"primitive string", `"positive"`, true, "positive"},
		{"primitive in fence", "```json\n17\n```", true, int64(17)},
		{"html kept", `{"s": "<b>&</b>"}`, false, map[string]any{"s": "<b>&</b>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extractJSON(tc.reply, tc.prims)
			if err != nil {
				t.Fatalf("extractJSON: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestExtractJSONErrors(t *testing.T) {
	tests := []struct {
		name, reply string
		prims       bool
		want        string
	}{
		{"prose only", "I think it is positive.", false, "no JSON value found in the answer"},
		{"primitive not accepted for composite types", "42", false, "no JSON value found in the answer"},
		{"truncated object", `{"a": 1, "b": `, false, "no JSON value found in the answer: unexpected EOF"},
		{"bad fenced json", "```json\n{a: 1}\n```", false, "invalid character 'a'"},
		{"empty", "", true, "no JSON value found in the answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := extractJSON(tc.reply, tc.prims)
			if err == nil {
				t.Fatalf("got %#v, want error %q", v, tc.want)
			}
			if !errors.Is(err, errNoJSON) {
				t.Fatalf("error %v does not match errNoJSON", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestExtractJSONBounded checks that a reply full of braces is not
// decoded from every position.
func TestExtractJSONBounded(t *testing.T) {
	reply := strings.Repeat("{[", 50000) + `{"late": 1}`
	if _, err := extractJSON(reply, false); err == nil {
		t.Fatal("found a value past the candidate limit")
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "```json\n[1, 2]\n```", `prose {"x": "y"} more`, "42", `"s"`, "```", "```json\n", "{[{[",
		`{"n": 1e400}`, `[18446744073709551616]`, "```{\"a\":1}```", "\x00{\"\\u0000\": 0}",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, reply string, prims bool) {
		v, err := extractJSON(reply, prims)
		if err != nil {
			if v != nil {
				t.Fatalf("value %#v with error %v", v, err)
			}
			if !errors.Is(err, errNoJSON) {
				t.Fatalf("error %v does not match errNoJSON", err)
			}
			return
		}
		if !prims && !isComposite(v) {
			t.Fatalf("primitive %#v returned without prims", v)
		}
		// the value re-encodes (plain data only)
		if b := jsonBytes(v); len(b) == 0 {
			t.Fatal("empty encoding")
		}
	})
}
