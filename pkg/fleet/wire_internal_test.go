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

// A large result sent out of band is journaled as its reply, the
// reference and not the bytes: a redelivered mission replaying the journal
// reads the same object again and gets the same value, and the tool is not
// called again.
func TestLargeResultJournaledByReference(t *testing.T) {
	s := fleettest.Start(t)
	nc := s.Conn()
	var served atomic.Int64
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "big", LargeResultBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	want := make([]any, 2000)
	for i := range want {
		want[i] = map[string]any{"id": int64(i), "body": "some text to make it large"}
	}
	if err := svc.Register("dump", ToolSpec{}, func(context.Context, map[string]any) (any, error) {
		served.Add(1)
		return want, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := WithTurn(context.Background(), 1)
	journaled := func(recorded map[string][]byte) (*Toolbox, *Journal) {
		js := fleettest.NewHeldJS(messages.StreamJournal)
		js.Release()
		id := messages.NewMissionID()
		j := &Journal{js: js, missionID: id, subject: messages.JournalSubject(id), recorded: recorded, next: map[string]int{},
			linger: time.Hour}
		box, err := NewToolbox(nc, ToolboxConfig{Tools: []string{"dump"}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		box.journal, box.missionID = j, id
		return box, j
	}
	var refs []*messages.ObjectRef
	keep := func(ctx context.Context, r *ToolResult) (any, error) {
		refs = append(refs, r.Ref)
		return plainFromStream(ctx, r)
	}
	box, j := journaled(map[string][]byte{})
	first, err := box.CallAs(ctx, "dump", nil, keep)
	if err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	entry := j.unsent[0]
	j.mu.Unlock()
	if len(entry.Data) > 1024 || !bytes.Contains(entry.Data, []byte("result_ref")) {
		t.Fatalf("journaled %d bytes, want the small reply with the reference", len(entry.Data))
	}
	replay, _ := journaled(map[string][]byte{entry.Key: entry.Data})
	again, err := replay.CallAs(ctx, "dump", nil, keep)
	if err != nil {
		t.Fatalf("replayed: %v", err)
	}
	if served.Load() != 1 {
		t.Fatalf("the tool was called %d times", served.Load())
	}
	if !reflect.DeepEqual(first, again) || len(again.([]any)) != len(want) || len(refs) != 2 || refs[0] == nil || *refs[0] != *refs[1] {
		t.Fatalf("replayed value or reference differs: %d refs", len(refs))
	}
}

// plainFromStream decodes a result, inline or streamed from its object,
// as Go data.
func plainFromStream(ctx context.Context, r *ToolResult) (any, error) {
	rc, err := r.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	var v any
	return v, messages.UnmarshalAs(r.ContentType, buf.Bytes(), &v)
}
