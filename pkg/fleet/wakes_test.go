package fleet_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A wake stored in PARKED (a deadline's schedule fired, a quota's lease
// given back) is moved into MISSIONS by the workers: stored once in the
// lane of its submitter, on its submit subject, with its body and its own
// headers (not PARKED's TTL or Msg-Id), marked Ptc-Wake-Moved with its
// sequence in PARKED, under the Msg-Id "<id>/moved/<seq>" (a move made
// again is a duplicate), and removed from PARKED. MISSIONS sources
// nothing.
func TestWorkersMoveParkedWakesIntoMissions(t *testing.T) {
	_, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	if src := st.Missions.CachedInfo().Config.Sources; len(src) != 0 {
		t.Fatalf("MISSIONS sources %+v", src)
	}
	fleet.MoveWakes(t, nc, st)
	id := messages.NewMissionID()
	body := []byte(`{"id":"` + id + `","kind":"agent"}`)
	wake := &nats.Msg{Subject: messages.WakeSubject("ann", messages.PriorityHigh, id), Data: body, Header: nats.Header{}}
	wake.Header.Set(messages.HeaderMissionID, id)
	wake.Header.Set(messages.HeaderTraceParent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	wake.Header.Set(messages.HeaderWokenEvent, "7")
	wake.Header.Set(jetstream.MsgIDHeader, id+"/quota/3")
	wake.Header.Set(jetstream.MsgTTLHeader, "1h")
	ack, err := js.PublishMsg(ctx, wake)
	if err != nil {
		t.Fatal(err)
	}
	laned := storedSubject("ann", messages.PriorityHigh, id)
	var moved *jetstream.RawStreamMsg
	eventually(t, 10*time.Second, "the wake in MISSIONS", func() bool {
		moved, err = st.Missions.GetLastMsgForSubject(ctx, laned)
		return err == nil
	})
	seq := strconv.FormatUint(ack.Sequence, 10)
	if string(moved.Data) != string(body) || moved.Header.Get(messages.HeaderWakeMoved) != seq ||
		moved.Header.Get(messages.HeaderMissionID) != id || moved.Header.Get(messages.HeaderTraceParent) != wake.Header.Get(messages.HeaderTraceParent) ||
		moved.Header.Get(messages.HeaderWokenEvent) != "7" || moved.Header.Get(jetstream.MsgIDHeader) != id+"/moved/"+seq ||
		moved.Header.Get(jetstream.MsgTTLHeader) != "" {
		t.Fatalf("the moved wake: %q, headers %v", moved.Data, moved.Header)
	}
	eventually(t, 10*time.Second, "the wake removed from PARKED", func() bool {
		_, err := st.Parked.GetMsg(ctx, ack.Sequence)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	// a move made again (its ack lost) is stored once
	again := &nats.Msg{Subject: messages.WokenSubject("ann", messages.PriorityHigh, id), Data: body, Header: nats.Header{}}
	for _, name := range []string{messages.HeaderMissionID, messages.HeaderWakeMoved, jetstream.MsgIDHeader} {
		again.Header.Set(name, moved.Header.Get(name))
	}
	if ack, err := js.PublishMsg(ctx, again); err != nil || !ack.Duplicate {
		t.Fatalf("the move made again: %+v, %v; want a duplicate", ack, err)
	}
	if info, err := st.Missions.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("MISSIONS holds %+v, %v; want the one wake", info, err)
	}
}

// A wake taken by a worker that dies before it moved it (here: fetched
// and never acknowledged) is handed to another after AckWait, and moved.
func TestWakeTakenByADeadWorkerIsMovedByAnother(t *testing.T) {
	_, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	id := messages.NewMissionID()
	if _, err := js.Publish(ctx, messages.WakeSubject("bo", messages.PriorityNormal, id), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	batch, err := st.Wakes.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for range batch.Messages() {
		taken++
	}
	if taken != 1 {
		t.Fatalf("the dead worker took %d wakes (%v)", taken, batch.Error())
	}
	taken0 := time.Now()
	fleet.MoveWakes(t, nc, st)
	laned := storedSubject("bo", messages.PriorityNormal, id)
	eventually(t, 10*time.Second, "the wake in MISSIONS", func() bool {
		_, err := st.Missions.GetLastMsgForSubject(ctx, laned)
		return err == nil
	})
	if d := time.Since(taken0); d < testStore.AckWait/2 {
		t.Fatalf("moved %v after the dead worker took it, before its AckWait (%v) ran out", d, testStore.AckWait)
	}
}
