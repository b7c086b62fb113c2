package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, s string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(s))
	var out []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"anthropic style", "event: message_start\ndata: {\"a\":1}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
			[]Event{{"message_start", []byte(`{"a":1}`)}, {"ping", []byte(`{"type": "ping"}`)}}},
		{"openai style", "data: {\"x\":1}\n\ndata: [DONE]\n\n", []Event{{"", []byte(`{"x":1}`)}, {"", []byte("[DONE]")}}},
		{"crlf and comments", ": keep-alive\r\n\r\ndata: a\r\n\r\n", []Event{{"", []byte("a")}}},
		{"multi-line data", "data: a\ndata: b\ndata:c\n\n", []Event{{"", []byte("a\nb\nc")}}},
		{"empty data field", "data:\n\n", []Event{{"", []byte("")}}},
		{"unknown fields ignored", "id: 7\nretry: 100\nfoo\ndata: z\n\n", []Event{{"", []byte("z")}}},
		{"cut off at eof", "event: x\ndata: tail", []Event{{"x", []byte("tail")}}},
		{"blank lines only", "\n\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %q, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d = %q %q, want %q %q", i, got[i].Type, got[i].Data, tt.want[i].Type, tt.want[i].Data)
				}
			}
		})
	}
}

func TestReaderLineTooLong(t *testing.T) {
	_, err := readAll(t, "data: ok\n\ndata: "+strings.Repeat("x", MaxLine+10))
	if err == nil || !strings.Contains(err.Error(), "line 3: longer than") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: b\n\n", "data: [DONE]\n\n", ":c\r\n\r\ndata:x\r\ndata: y\n\n", "data", "\n\n\ndata: \x00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader(strings.NewReader(s))
		for i := 0; ; i++ {
			if i > len(s)+1 {
				t.Fatal("more events than input bytes")
			}
			_, err := r.Next()
			if err != nil {
				return
			}
		}
	})
}
