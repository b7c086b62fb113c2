package fleet

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// onSubject is how many messages st.Results holds on subject.
func onSubject(ctx context.Context, t *testing.T, st *Stores, subject string) uint64 {
	t.Helper()
	info, err := st.Results.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// The record and the result of a batch are stored together; the result
// names the record, which reads back as published.
func TestPublishWithRecordStoresBoth(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	k := missionKey{sub: "s1", id: messages.NewMissionID()}
	record := []byte("the record of the mission")
	stored, mine, err := publishWithRecord(ctx, js, st, k, &messages.Step{Return: "done"}, record, claimFence{})
	if err != nil || !mine {
		t.Fatalf("publishWithRecord: mine %v, %v", mine, err)
	}
	want := inlineRecordRef(messages.RecordSubject(k.sub, k.id), record)
	if stored.Record == nil || *stored.Record != *want {
		t.Fatalf("the step's record is %+v, want %+v", stored.Record, want)
	}
	got, err := readResult(ctx, st, k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Return != "done" || got.Record == nil || *got.Record != *want {
		t.Fatalf("stored result %+v (record %+v), want its return and record %+v", got, got.Record, want)
	}
	data, _, _, err := directLast(ctx, nc, nil, messages.StreamResults, messages.RecordSubject(k.sub, k.id))
	if err != nil || !bytes.Equal(data, record) {
		t.Fatalf("stored record %q, %v; want %q", data, err, record)
	}
}

// A batch for a mission whose result is stored is refused whole: the
// stored result is returned and kept, and the batch's record is not
// stored. The stored result was published with the same message id (the
// stream's duplicate window refuses the batch) or not (the result's
// expected subject sequence does, or, under a run's claim fence, the
// stream's one message per result subject).
func TestPublishWithRecordKeepsTheStoredResult(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	for _, tc := range []struct {
		sameID bool
		fence  claimFence
	}{{true, claimFence{}}, {false, claimFence{}}, {true, claimFence{set: true}}, {false, claimFence{set: true}}} {
		sameID := tc.sameID
		k := missionKey{sub: "s1", id: messages.NewMissionID()}
		if sameID {
			if _, mine, err := publishResult(ctx, js, st, k, &messages.Step{Return: "first"}, claimFence{}); err != nil || !mine {
				t.Fatalf("first result: mine %v, %v", mine, err)
			}
		} else {
			data, err := messages.MarshalStep(&messages.Step{Return: "first"})
			if err != nil {
				t.Fatal(err)
			}
			m := nats.NewMsg(messages.ResultSubject(k.sub, k.id))
			m.Data = data
			if _, err := publishAcked(ctx, nc, m); err != nil {
				t.Fatal(err)
			}
		}
		second := &messages.Step{Return: "second"}
		stored, mine, err := publishWithRecord(ctx, js, st, k, second, []byte("record"), tc.fence)
		if err != nil || mine {
			t.Fatalf("same id %v, fence %+v: second result: mine %v, %v", sameID, tc.fence, mine, err)
		}
		if stored.Return != "first" {
			t.Fatalf("same id %v: second result returned %+v, want the first", sameID, stored)
		}
		if second.Record != nil {
			t.Fatalf("same id %v: the refused step keeps a record reference %+v", sameID, second.Record)
		}
		if n := onSubject(ctx, t, st, messages.RecordSubject(k.sub, k.id)); n != 0 {
			t.Fatalf("same id %v: %d records stored by a refused batch, want 0", sameID, n)
		}
		if n := onSubject(ctx, t, st, messages.ResultSubject(k.sub, k.id)); n != 1 {
			t.Fatalf("same id %v: %d results stored, want 1", sameID, n)
		}
	}
}

// A batch whose record's subject holds an earlier attempt's record, or
// sent to a stream that does not allow atomic publishes, is refused
// whole (errBatchRefused): neither its record nor its result is stored.
func TestPublishWithRecordRefused(t *testing.T) {
	ctx, nc, js, st := embeddedStores(t)
	k := missionKey{sub: "s1", id: messages.NewMissionID()}
	if _, err := publishAcked(ctx, nc, &nats.Msg{Subject: messages.RecordSubject(k.sub, k.id), Data: []byte("earlier")}); err != nil {
		t.Fatal(err)
	}
	for _, fence := range []claimFence{{}, {set: true}} {
		step := &messages.Step{Return: "done"}
		if _, _, err := publishWithRecord(ctx, js, st, k, step, []byte("record"), fence); !errors.Is(err, errBatchRefused) {
			t.Fatalf("fence %+v: batch onto an earlier record: %v, want errBatchRefused", fence, err)
		}
		if step.Record != nil {
			t.Fatalf("fence %+v: the refused step keeps a record reference %+v", fence, step.Record)
		}
	}
	if n := onSubject(ctx, t, st, messages.ResultSubject(k.sub, k.id)); n != 0 {
		t.Fatalf("%d results stored by a refused batch, want 0", n)
	}

	cfg := st.Results.CachedInfo().Config
	cfg.AllowAtomicPublish = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	k = missionKey{sub: "s1", id: messages.NewMissionID()}
	if _, _, err := publishWithRecord(ctx, js, st, k, &messages.Step{Return: "done"}, []byte("record"), claimFence{}); !errors.Is(err, errBatchRefused) {
		t.Fatalf("batch to a stream without atomic publishes: %v, want errBatchRefused", err)
	}
	for _, subject := range []string{messages.RecordSubject(k.sub, k.id), messages.ResultSubject(k.sub, k.id)} {
		if n := onSubject(ctx, t, st, subject); n != 0 {
			t.Fatalf("%d messages on %s stored by a refused batch, want 0", n, subject)
		}
	}
}
