package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A tool reply is journaled as the bytes that came (msgpack or JSON), and
// a replay from the journal decodes to the very same value, with no
// request sent.
func TestToolReplyReplaysToTheSameValue(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	bodies, want := fleettest.ToolReplies(t)
	svc, err := micro.AddService(nc, micro.Config{Name: "wire", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	var requests atomic.Int64
	for name, body := range bodies {
		var hdr micro.Headers
		if name == "js" {
			hdr = micro.Headers{messages.HeaderContentType: {messages.ContentTypeJSON}}
		}
		err := svc.AddEndpoint(name, micro.HandlerFunc(func(r micro.Request) {
			requests.Add(1)
			_ = r.Respond(body, micro.WithHeaders(hdr))
		}), micro.WithEndpointSubject("tool.wire."+name), micro.WithEndpointMetadata(map[string]string{MetaTool: name}))
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := WithTurn(context.Background(), 1)
	journaled := func(recorded map[string][]byte) (*Toolbox, *Journal, *fleettest.HeldJS) {
		js := fleettest.NewHeldJS(messages.StreamJournal)
		js.Release()
		id := messages.NewMissionID()
		j := &Journal{js: js, missionID: id, subject: messages.JournalSubject(id), recorded: recorded, next: map[string]int{},
			linger: time.Hour} // entries stay unsent: the test reads them
		box, err := NewToolbox(nc, ToolboxConfig{Tools: []string{"mp", "js"}})
		if err != nil {
			t.Fatal(err)
		}
		box.journal, box.missionID = j, id
		return box, j, js
	}
	for name, body := range bodies {
		box, j, _ := journaled(map[string][]byte{})
		first, err := box.CallAs(ctx, name, map[string]any{"q": "x"}, plainResult)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(first, want) {
			t.Errorf("%s: result %#v, want %#v", name, first, want)
		}
		j.mu.Lock()
		if len(j.unsent) != 1 {
			t.Fatalf("%s: %d journal entries", name, len(j.unsent))
		}
		entry := j.unsent[0]
		j.mu.Unlock()
		if !bytes.Equal(entry.Data, body) {
			t.Errorf("%s: journaled %q, want the reply's bytes %q", name, entry.Data, body)
		}
		sent := requests.Load()
		replay, _, _ := journaled(map[string][]byte{entry.Key: entry.Data})
		again, err := replay.CallAs(ctx, name, map[string]any{"q": "x"}, plainResult)
		if err != nil {
			t.Fatalf("%s replayed: %v", name, err)
		}
		if !reflect.DeepEqual(again, want) {
			t.Errorf("%s replayed: %#v, want %#v", name, again, want)
		}
		plainBox, _, _ := journaled(map[string][]byte{entry.Key: entry.Data})
		if plain, err := plainBox.Call(ctx, name, map[string]any{"q": "x"}); err != nil || !reflect.DeepEqual(plain, want) {
			t.Errorf("%s replayed as Go data: %#v, %v", name, plain, err)
		}
		if requests.Load() != sent {
			t.Errorf("%s: a replayed call sent a request", name)
		}
	}
}

// Every tool response body, msgpack or JSON, read as Go data and read
// once into interpreter values gives the same result or the same error.
func TestToolResponseDecodersAgree(t *testing.T) {
	bodies, _ := fleettest.ToolReplies(t)
	for _, data := range [][]byte{bodies["mp"], bodies["js"],
		[]byte(`{"v":1,"call_id":"c","result":null}`), []byte(`{"v":1,"call_id":"c"}`),
		[]byte(`{"v":1,"call_id":"c","error":{"code":"tool_error","message":"declined"}}`),
		[]byte(`{"v":1,"call_id":"c","error":{"code":"tool_error","message":"x"},"result":[1]}`),
		[]byte(`{"v":9,"call_id":"c","result":1}`), []byte(`{"v":1,"result":[1,}`), []byte(`{"v":1,"result":1} x`),
		[]byte(`{"v":1,"result":{"a":1,"a":2},"result":[3]}`), []byte("\n{\"v\":1,\"result\":\"\xff\"}"),
	} {
		agree(t, data)
	}
}

// plainResult decodes a ToolResult as Go data, checking that it is
// handed one value in its content type.
func plainResult(_ context.Context, r *ToolResult) (any, error) {
	var v any
	err := messages.UnmarshalAs(r.ContentType, r.Data, &v)
	return v, err
}

// agree checks that decodePlain and a ResultDecoder's view of
// data (decodeAs) agree on it.
func agree(t *testing.T, data []byte) {
	t.Helper()
	plain, perr := (&Toolbox{}).decodePlain(context.Background(), "t", data)
	got, werr := (&Toolbox{}).decodeAs(plainResult)(context.Background(), "t", data)
	if (perr == nil) != (werr == nil) {
		t.Fatalf("%q: Go data err %v, wire err %v", data, perr, werr)
	}
	if perr != nil {
		var pe, we *ToolError
		if !errors.As(perr, &pe) || !errors.As(werr, &we) || pe.Code != we.Code || pe.Tool != "t" {
			t.Fatalf("%q: errors %v and %v", data, perr, werr)
		}
		return
	}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", plain) {
		t.Fatalf("%q: Go data %#v, wire %#v", data, plain, got)
	}
}
