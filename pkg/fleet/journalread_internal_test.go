package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A journal's message read with journalMsg is the message the stream
// handle's GetMsg returns (headers, data, sequence; none past the last),
// its answer read with fewer allocations: without encoding/json.
func TestJournalMsgReadsAsGetMsg(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	id := messages.NewMissionID()
	subject := messages.JournalSubject(id)
	other := messages.JournalSubject(messages.NewMissionID())
	for i, m := range []*nats.Msg{
		{Subject: subject, Header: nats.Header{messages.HeaderJournalKey: {"t/1/abc#0"}}, Data: []byte("\x81\xa1v\x01 a tool's answer")},
		{Subject: other, Data: []byte("another mission's")},
		{Subject: subject, Header: nats.Header{messages.HeaderJournalBatch: {"1"}, "X": {"a", "b"}}},
	} {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	var seq uint64 = 1
	for range 2 {
		hdr, data, got, err := journalMsg(ctx, nc, nil, subject, seq)
		want, werr := st.Journal.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil || werr != nil {
			t.Fatalf("from %d: %v; GetMsg %v", seq, err, werr)
		}
		// JOURNAL allows direct gets, which GetMsg then makes: their
		// answer adds the server's Nats-* headers to the stored ones
		for k := range want.Header {
			if strings.HasPrefix(k, "Nats-") {
				delete(want.Header, k)
			}
		}
		if got != want.Sequence || !bytes.Equal(data, want.Data) || len(hdr) != len(want.Header) {
			t.Fatalf("from %d: %d %q %v, GetMsg %d %q %v", seq, got, data, hdr, want.Sequence, want.Data, want.Header)
		}
		for k, v := range want.Header {
			if len(hdr[k]) != len(v) || hdr.Get(k) != v[0] {
				t.Fatalf("header %s: %v, GetMsg %v", k, hdr[k], v)
			}
		}
		seq = got + 1
	}
	if _, _, _, err := journalMsg(ctx, nc, nil, subject, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("past the last message: %v, want ErrMsgNotFound", err)
	}

	// the answer read by the scanner, and as encoding/json reads it (an
	// escaped character in its type makes msgGetAnswer leave it to
	// encoding/json)
	r, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+messages.StreamJournal, []byte(`{"seq":1,"next_by_subj":"`+subject+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	escaped := bytes.Replace(r.Data, []byte(`"type":"io.`), []byte(`"type":"\u0069o.`), 1)
	if bytes.Equal(escaped, r.Data) {
		t.Fatalf("answer %s", r.Data)
	}
	q := atSeq(1, subject)
	for _, answer := range [][]byte{r.Data, escaped} {
		hdr, data, got, err := msgGetAnswer(answer, q)
		if err != nil || got != 1 || hdr.Get(messages.HeaderJournalKey) != "t/1/abc#0" || string(data) != "\x81\xa1v\x01 a tool's answer" {
			t.Fatalf("%s: %v %q %d %v", answer, hdr, data, got, err)
		}
	}
	now := testing.AllocsPerRun(100, func() { _, _, _, _ = msgGetAnswer(r.Data, q) })
	before := testing.AllocsPerRun(100, func() { _, _, _, _ = msgGetAnswer(escaped, q) })
	t.Logf("%.0f allocations reading a journal message's answer, %.0f with encoding/json", now, before)
	if now > before-4 {
		t.Errorf("%.0f allocations reading a journal message's answer, want at most %.0f", now, before-4)
	}
}

// scanMsgGet reads the API's usual answer as encoding/json reads it, and
// leaves anything else to it.
func TestScanMsgGet(t *testing.T) {
	type msg struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	}
	for _, m := range []msg{
		{Subject: "journal.x", Seq: 7, Header: []byte("NATS/1.0\r\nA: b\r\n\r\n"), Data: []byte{0, 1, 2, 0xff}, Time: time.Now()},
		{Subject: "journal.y", Seq: 1, Time: time.Now()},
		{Subject: "j", Seq: 1 << 62, Data: bytes.Repeat([]byte("z"), 1000)},
	} {
		b, _ := json.Marshal(struct {
			Type    string `json:"type"`
			Message msg    `json:"message"`
		}{"io.nats.jetstream.api.v1.stream_msg_get_response", m})
		got, ok := scanMsgGet(b)
		if !ok || got.subject != m.Subject || got.seq != m.Seq || !bytes.Equal(got.hdrs, m.Header) || !bytes.Equal(got.data, m.Data) {
			t.Errorf("%s: %+v %v, want %+v", b, got, ok, m)
		}
	}
	for _, s := range []string{
		`{"type":"t","error":{"code":404,"err_code":10037,"description":"no message found"}}`,
		`{"type":"t","message":{"subject":"a","seq":1,"data":"not base64!"}}`,
		`{"type":"t","message":{"subject":"a\u0041","seq":1}}`,
		`{"type":"t","message":{"subject":"a","seq":01}}`,
		`{"type":"t","message":{"subject":"a","seq":1,"seq":2}}`,
		`{"type":"t","message":{"subject":"a","seq":1,"extra":1}}`,
		`{"type":"t","message":{"seq":1}}`,
		`{"type":"t","message":{"subject":"a","seq":1}} x`,
		`{"type":"t","message":{"subject":"a","seq":1}`,
		``,
	} {
		if m, ok := scanMsgGet([]byte(s)); ok {
			t.Errorf("%s read as %+v", s, m)
		}
	}
}

// FuzzScanMsgGet: an answer scanMsgGet reads is one encoding/json reads
// (the form msgGetAnswer falls back to) to the same message, and no
// input makes it panic.
func FuzzScanMsgGet(f *testing.F) {
	for _, s := range []string{
		`{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","message":{"subject":"journal.x","seq":7,"hdrs":"TkFUUy8xLjANCkE6IGINCg0K","data":"AAEC/w==","time":"2026-11-30T09:00:00Z"}}`,
		` { "type" : "t" , "message" : { "subject" : "j" , "seq" : 1 } } `,
		`{"type":"t","error":{"code":404,"err_code":10037,"description":"no message found"}}`,
		`{"type":"t","message":{"subject":"a","seq":1,"data":"not base64!"}}`,
		`{"type":"t","message":{"subject":"a\u0041","seq":1}}`,
		`{"type":"t","message":{"subject":"a","seq":01}}`,
		`{"type":"t","message":{"subject":"a","seq":1,"seq":2}}`,
		`{"type":"t","message":{"subject":"a","seq":18446744073709551616}}`,
		`{"message":{"data":"","hdrs":"","subject":"a","seq":0}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := scanMsgGet(data)
		if !ok {
			return
		}
		var resp msgGetResponse
		if err := json.Unmarshal(data, &resp); err != nil {
			t.Fatalf("scanMsgGet read %q as %+v; encoding/json refuses it: %v", data, m, err)
		}
		if resp.Error != nil || resp.Message == nil {
			t.Fatalf("scanMsgGet read %q as %+v; encoding/json reads no message in it", data, m)
		}
		w := resp.Message
		if m.subject != w.Subject || m.seq != w.Seq || !bytes.Equal(m.hdrs, w.Header) || !bytes.Equal(m.data, w.Data) {
			t.Fatalf("scanMsgGet read %q as %+v; encoding/json as %+v", data, m, *w)
		}
	})
}
