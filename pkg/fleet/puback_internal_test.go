package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// publishAck reads every answer as nats.go's PublishMsg does: the usual
// ones without encoding/json, the others with it, to the same PubAck or
// error.
func TestPublishAckReadsWhatNatsGoReads(t *testing.T) {
	scanned := []string{
		`{"stream":"RESULTS","seq":12}`,
		`{"stream":"RESULTS","domain":"hub","seq":7}`,
		`{"stream":"RESULTS","seq":12,"duplicate": true}`,
		`{"stream":"RESULTS","domain":"hub","seq":3,"duplicate": true}`,
		` { "stream" : "S" , "seq" : 0 , "duplicate" : false } `,
		`{"seq":18446744073709551615,"stream":"S"}`,
		`{"stream":"RESULTS","seq":12,"batch":"01KB3ZV9RG6WQ1S4Y1XQ8N0J5T","count":2}`,
	}
	slow := []string{
		`{"stream":"RESULTS","seq":12,"batch":"b1","batch":"b2","count":3}`,
		`{"stream":"RESULTS","seq":12,"batch":"b1","count":-3}`,
		`{"stream":"RESULTS","seq":12,"batch":"b1","count":"3"}`,
		`{"stream":"RESULTS","seq":12,"batch":3,"count":3}`,
		`{"stream":"RESULTS","seq":12,"val":"5"}`,
		`{"stream":"RE\u0053ULTS","seq":1}`,
		`{"stream":"S","seq":1,"seq":2}`,
		`{"stream":"S","seq":1}x`,
		`{"stream":"S","seq":-1}`,
		`{"stream":"S","seq":01}`,
		"{\"stream\":\"\x80\",\"seq\":1}",
		`{"stream":"S","seq":18446744073709551616}`,
		`{"stream":"","seq":1}`,
		`{"seq":1}`,
		`{"stream":"S"}`,
		`{}`,
		``,
		`not json`,
		`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 4"}}`,
		`{"error":{"code":503,"err_code":10039,"description":"JetStream not enabled"},"stream":"","seq":0}`,
	}
	natsGo := natsGoPublishAckValue
	for _, in := range append(append([]string{}, scanned...), slow...) {
		_, fast := scanPublishAck([]byte(in))
		if want := slices.Contains(scanned, in); fast != want {
			t.Errorf("%s: read without encoding/json %v, want %v", in, fast, want)
		}
		got, err := publishAck([]byte(in))
		want, werr := natsGo([]byte(in))
		if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) || (err != nil && !errors.Is(err, werr)) {
			t.Errorf("%s: %+v, %v; nats.go reads %+v, %v", in, got, err, want, werr)
		}
	}
	_, err := publishAck([]byte(slow[len(slow)-2]))
	if !errors.Is(err, jetstream.ErrKeyExists) || !isWrongLastSeq(err) {
		t.Errorf("a refused compare-and-set reads as %v", err)
	}
}

// An acknowledgement of a stream the fleet publishes to is read with no
// allocation: its keys are compared where they lie, the stream's name is
// the fleet's own, not a copy, and the PubAck is returned by value.
// Another stream's name is copied out of the answer's bytes, which
// nats.go may reuse.
func TestPublishAckAllocations(t *testing.T) {
	for _, stream := range []string{statusStream, messages.StreamResults, messages.StreamMissions} {
		data := []byte(`{"stream":"` + stream + `","seq":42}`)
		n := testing.AllocsPerRun(100, func() {
			if ack, err := publishAck(data); err != nil || ack.Stream != stream || ack.Sequence != 42 {
				t.Fatalf("%s: %+v, %v", data, ack, err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations, want 0", data, n)
		}
	}
	data := []byte(`{"stream":"OTHER","domain":"hub","seq":7,"duplicate":true}`)
	ack, err := publishAck(data)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, bytes.Repeat([]byte("x"), len(data)))
	if ack.Stream != "OTHER" || ack.Domain != "hub" || ack.Sequence != 7 || !ack.Duplicate {
		t.Errorf("the ack changed with the answer's bytes: %+v", ack)
	}
}

// natsGoPublishAck is what nats.go's publishMsg does with an answer's
// bytes.
func natsGoPublishAck(data []byte) (*jetstream.PubAck, error) {
	var resp struct {
		Type  string              `json:"type"`
		Error *jetstream.APIError `json:"error,omitempty"`
		*jetstream.PubAck
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.PubAck == nil || resp.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return resp.PubAck, nil
}

// natsGoPublishAckValue is natsGoPublishAck's PubAck as publishAck
// returns it: by value, the zero value with an error.
func natsGoPublishAckValue(data []byte) (jetstream.PubAck, error) {
	ack, err := natsGoPublishAck(data)
	if err != nil {
		return jetstream.PubAck{}, err
	}
	return *ack, nil
}

// FuzzPublishAck: any answer reads as nats.go reads it, to the same PubAck
// or error, whether it is read without encoding/json or with it.
func FuzzPublishAck(f *testing.F) {
	for _, s := range []string{
		`{"stream":"RESULTS","seq":12}`,
		`{"stream":"RESULTS","domain":"hub","seq":3,"duplicate": true}`,
		` { "stream" : "S" , "seq" : 0 , "duplicate" : false } `,
		`{"stream":"S","seq":1,"seq":2}`,
		`{"Stream":"S","SEQ":1}`,
		`{"stream":"RE\u0053ULTS","seq":1}`,
		`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 4"}}`,
		// an atomic batch's commit is answered with its id and count
		`{"stream":"RESULTS","seq":9,"batch":"01JQ0000000000000000000000","count":2}`,
		`{"stream":"RESULTS","seq":9,"batch":"b","count":2,"count":3}`,
		`{"error":{"code":400,"err_code":10201,"description":"atomic publish batch contains duplicate message id"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := publishAck(data)
		want, werr := natsGoPublishAckValue(data)
		if !reflect.DeepEqual(got, want) || (err == nil) != (werr == nil) || (err != nil && !errors.Is(err, werr)) {
			t.Fatalf("%q: %+v, %v; nats.go reads %+v, %v", data, got, err, want, werr)
		}
	})
}

// acksStream is an embedded connection and the stream ACKS on acks.>,
// with a minute's duplicate window, and a context of 30 s.
func acksStream(t *testing.T) (context.Context, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := embeddedConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ACKS", Subjects: []string{"acks.>"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return ctx, nc, js
}

// publishAcked against a stream: a message stored, its duplicate, a
// compare-and-set refused, no stream; and fewer allocations than
// nats.go's PublishMsg for the same publish.
func TestPublishAcked(t *testing.T) {
	ctx, nc, js := acksStream(t)
	var err error
	msg := func(subject, id string, hdr ...string) *nats.Msg {
		m := &nats.Msg{Subject: subject, Data: []byte("x"), Header: nats.Header{}}
		if id != "" {
			m.Header[jetstream.MsgIDHeader] = []string{id}
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			m.Header[hdr[i]] = []string{hdr[i+1]}
		}
		return m
	}
	ack, err := publishAcked(context.Background(), nc, msg("acks.a", "m1"))
	if err != nil || ack.Stream != "ACKS" || ack.Sequence != 1 || ack.Duplicate {
		t.Fatalf("stored: %+v, %v", ack, err)
	}
	ack, err = publishAcked(ctx, nc, msg("acks.a", "m1"))
	if err != nil || ack.Sequence != 1 || !ack.Duplicate {
		t.Fatalf("duplicate: %+v, %v", ack, err)
	}
	_, err = publishAcked(ctx, nc, msg("acks.a", "", jetstream.ExpectedLastSubjSeqHeader, "0"))
	if !isWrongLastSeq(err) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("compare-and-set against a subject holding a message: %v", err)
	}
	ack, err = publishAcked(ctx, nc, msg("acks.b", "", jetstream.ExpectedLastSubjSeqHeader, "0"))
	if err != nil || ack.Sequence != 2 {
		t.Fatalf("compare-and-set against an empty subject: %+v, %v", ack, err)
	}
	if _, err = publishAcked(ctx, nc, msg("nostream.a", "")); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("no stream: %v", err)
	}

	ours := testing.AllocsPerRun(50, func() {
		if _, err := publishAcked(ctx, nc, msg("acks.c", "")); err != nil {
			t.Fatal(err)
		}
	})
	theirs := testing.AllocsPerRun(50, func() {
		m := &nats.Msg{Subject: "acks.c", Data: []byte("x")}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations a publish, nats.go's PublishMsg %.0f (the server's included)", ours, theirs)
	if ours > theirs-4 {
		t.Errorf("%.0f allocations a publish, nats.go's PublishMsg %.0f: want at least 4 fewer", ours, theirs)
	}
}

// casStatus at a revision writes as Status.Update does: the new revision
// when the key is at rev, and a refusal that is ErrKeyRevisionMismatch
// (and ErrKeyExists) when another writer moved it.
func TestCasStatusAtARevision(t *testing.T) {
	nc := embeddedConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := EnsureStores(ctx, js, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if st.nc == nil {
		t.Fatal("the stores do not know their connection")
	}
	s := messages.Status{MissionID: messages.NewMissionID(), Submitter: messages.DefaultSubmitter, State: messages.StateQueued}
	rev, err := casStatus(ctx, st, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.State = messages.StateRunning
	next, err := casStatus(ctx, st, s, rev)
	if err != nil || next <= rev {
		t.Fatalf("write at revision %d: %d, %v", rev, next, err)
	}
	e, err := st.Status.Get(ctx, messages.StatusKey(s.Submitter, s.MissionID))
	if err != nil || e.Revision() != next {
		t.Fatalf("stored revision %v, %v; want %d", e, err, next)
	}
	var got messages.Status
	if err := messages.Unmarshal(e.Value(), &got); err != nil || got.State != messages.StateRunning {
		t.Fatalf("stored %+v, %v", got, err)
	}
	_, err = casStatus(ctx, st, s, rev)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("write at a stale revision: %v", err)
	}
	_, uerr := st.Status.Update(ctx, messages.StatusKey(s.Submitter, s.MissionID), e.Value(), rev)
	if uerr == nil || uerr.Error() != err.Error() {
		t.Fatalf("refused as %q, Update refuses as %q", err, uerr)
	}
}

// A publish whose context can never be done waits on nats.go's pooled
// timers, not on a context of its own: fewer allocations than the same
// publish under a context that can be cancelled, and a deadline that
// passes unanswered is context.DeadlineExceeded, as under a context.
func TestPublishAckedWithoutDone(t *testing.T) {
	_, nc, _ := acksStream(t)
	msg := &nats.Msg{Subject: "acks.a", Data: []byte("x")}
	background := context.WithValue(context.Background(), attemptKey{}, (*attempt)(nil))
	cancellable, stop := context.WithCancel(context.Background())
	defer stop()
	if ack, err := publishAcked(background, nc, msg); err != nil || ack.Stream != "ACKS" {
		t.Fatalf("stored: %+v, %v", ack, err)
	}
	if _, err := publishAcked(background, nc, &nats.Msg{Subject: "nostream.a"}); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("no stream: %v", err)
	}
	// a responder that never answers
	sub, err := nc.SubscribeSync("silent.a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	start := time.Now()
	if _, err := publishAckedBy(background, nc, nil, &nats.Msg{Subject: "silent.a"}, start.Add(50*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered: %v, want %v", err, context.DeadlineExceeded)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("unanswered: returned after %v, before its deadline", waited)
	}
	if _, err := publishAckedBy(background, nc, nil, msg, start); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past its deadline: %v, want %v", err, context.DeadlineExceeded)
	}

	publish := func(ctx context.Context) func() {
		return func() {
			if _, err := publishAcked(ctx, nc, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	without := testing.AllocsPerRun(100, publish(background))
	with := testing.AllocsPerRun(100, publish(cancellable))
	t.Logf("%.0f allocations a publish under a context never done, %.0f under one that can be", without, with)
	if without > with-3 {
		t.Errorf("%.0f allocations a publish under a context never done, %.0f under one that can be: want at least 3 fewer", without, with)
	}
}

// A status write encodes the status in a pooled buffer, free again once
// the write is acknowledged (nats.go copied it by then), and publishes it
// with a pooled header: casStatus allocates no more than publishing the
// same message already encoded with a header of its own, plus one (the
// encoder's own work), and neither a copy of the bytes nor of the status
// stamped.
func TestCasStatusEncodesInAPooledBuffer(t *testing.T) {
	ctx, _, _, st := embeddedStores(t)
	s := messages.Status{MissionID: messages.NewMissionID(), Submitter: messages.DefaultSubmitter, State: messages.StateRunning,
		Worker: "w1", Attempt: 1, StreamSeq: 12}
	rev, err := casStatus(ctx, st, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	write := func() {
		if rev, err = casStatus(ctx, st, s, rev); err != nil {
			t.Fatal(err)
		}
	}
	buf := new(bytes.Buffer)
	if err := encodeStatus(buf, s); err != nil {
		t.Fatal(err)
	}
	encoded := buf.Bytes()
	publish := func() {
		ack, err := publishAcked(ctx, st.nc, &nats.Msg{Subject: messages.StatusSubject(s.Submitter, s.MissionID), Data: encoded,
			Header: nats.Header{jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatUint(rev, 10)}}})
		if err != nil {
			t.Fatal(err)
		}
		rev = ack.Sequence
	}
	writes, publishes := fewestAllocs(write, publish)
	t.Logf("%.0f allocations a status write, %.0f publishing it encoded", writes, publishes)
	if !raceOn && writes > publishes+1 {
		t.Errorf("%.0f allocations a status write, %.0f publishing it encoded: want at most 1 more (the encoder's own work)", writes, publishes)
	}
	var got messages.Status
	e, err := st.Status.Get(ctx, messages.StatusKey(s.Submitter, s.MissionID))
	if err != nil || messages.Unmarshal(e.Value(), &got) != nil || got.Worker != "w1" || got.StreamSeq != 12 || e.Revision() != rev {
		t.Fatalf("stored %+v (%v); want the status written at revision %d", got, err, rev)
	}
}

// A result is encoded in a pooled buffer and published with a pooled
// header too: publishResult allocates fewer times than publishing the same
// message already encoded with a header of its own.
func TestPublishResultEncodesInAPooledBuffer(t *testing.T) {
	ctx, _, js, st := embeddedStores(t)
	step := &messages.Step{Return: map[string]any{"n": int64(7)}, Attempts: 1}
	ids := make([]string, 1024) // five rounds of 51 runs each, twice
	for i := range ids {
		ids[i] = messages.NewMissionID()
	}
	next := 0
	key := func() missionKey {
		next++
		return missionKey{sub: messages.DefaultSubmitter, id: ids[next-1]}
	}
	write := func() {
		if _, mine, err := publishResult(ctx, js, st, key(), step, claimFence{}); err != nil || !mine {
			t.Fatalf("result not stored as this writer's: %v", err)
		}
	}
	encoded, err := messages.MarshalStep(step)
	if err != nil {
		t.Fatal(err)
	}
	publish := func() {
		k := key()
		msg := &nats.Msg{Subject: messages.ResultSubject(k.sub, k.id), Data: encoded, Header: nats.Header{
			messages.HeaderMissionID:            {k.id},
			jetstream.ExpectedLastSubjSeqHeader: {"0"},
			jetstream.MsgIDHeader:               {messages.StatusKey(k.sub, k.id) + "/final"},
		}}
		if ack, err := publishAcked(ctx, js.Conn(), msg); err != nil || ack.Duplicate {
			t.Fatalf("result not stored: %v", err)
		}
	}
	writes, publishes := fewestAllocs(write, publish)
	t.Logf("%.0f allocations a result write, %.0f publishing it encoded", writes, publishes)
	if !raceOn && writes >= publishes {
		t.Errorf("%.0f allocations a result write, %.0f publishing it encoded: want fewer", writes, publishes)
	}
	got, err := readResult(ctx, st, missionKey{sub: messages.DefaultSubmitter, id: ids[0]})
	if err != nil || got.Attempts != 1 || !reflect.DeepEqual(got.Return, step.Return) {
		t.Fatalf("stored %+v, %v; want %+v", got, err, step)
	}
}

// fewestAllocs returns the fewest allocations a and b each made a run
// over five rounds of 50 runs, taken in turns: the embedded server's own
// work (timers, flushes) lands in a round now and then.
func fewestAllocs(a, b func()) (float64, float64) {
	na, nb := testing.AllocsPerRun(50, a), testing.AllocsPerRun(50, b)
	for range 4 {
		na, nb = min(na, testing.AllocsPerRun(50, a)), min(nb, testing.AllocsPerRun(50, b))
	}
	return na, nb
}

// An ackedHeader sets values as nats.Header.Set does, past the room it
// has too, and comes back from the pool empty, allocating nothing once
// its map has grown.
func TestAckedHeader(t *testing.T) {
	h := newAckedHeader()
	for i := range 6 {
		h.set("K"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	h.set("K0", "again")
	want := nats.Header{}
	for i := range 6 {
		want.Set("K"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	want.Set("K0", "again")
	if !reflect.DeepEqual(h.h, want) {
		t.Fatalf("header %v, want %v", h.h, want)
	}
	h.h.Add("K1", "added")
	if got := h.h.Values("K2"); len(got) != 1 || got[0] != "v2" {
		t.Fatalf("an Add to K1 changed K2: %v", got)
	}
	h.release()
	n := testing.AllocsPerRun(100, func() {
		h := newAckedHeader()
		h.set(jetstream.ExpectedLastSubjSeqHeader, "0")
		h.set(jetstream.MsgIDHeader, "id")
		if len(h.h) != 2 {
			t.Fatalf("header %v, want its two values alone", h.h)
		}
		h.release()
	})
	if !raceOn && n != 0 {
		t.Errorf("%.1f allocations a pooled header of two values, want 0", n)
	}
}

// A submission is encoded in a pooled buffer, given back once its publish
// returned (nats.go copied it by then): the buffer the pool hands out
// next holds the mission's encoding, which the stream stored.
func TestSubmitEncodesInAPooledBuffer(t *testing.T) {
	ctx, nc, _, _ := embeddedStores(t)
	c, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindCompiled, Tools: []string{"t"},
			Compiled: &messages.CompiledSpec{Program: "(fn [x] x)", Inputs: []map[string]any{{"n": int64(1)}}}}
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
		want, err := messages.MarshalMission(m)
		if err != nil {
			t.Fatal(err)
		}
		buf := publishBuffers.Get().(*bytes.Buffer) // as put back: not reset
		got := bytes.Clone(buf.Bytes())
		putPublishBuffer(buf)
		if bytes.Equal(got, want) {
			return
		}
	}
	t.Fatal("no submission's encoding came back to the pool")
}
