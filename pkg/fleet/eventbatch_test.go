package fleet_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// storedEventSubjects returns the subjects EVENTS holds for mission id,
// each with its message count.
func storedEventSubjects(t *testing.T, c *fleet.Client, id string) map[string]uint64 {
	t.Helper()
	info, err := c.Stores().Events.Info(testCtx(t), jetstream.WithSubjectFilter(messages.EventFilter(c.Submitter(), id)))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

// storedEventCount returns how many events EVENTS holds for mission id,
// failing when two messages carry the same number or a number is missing.
func storedEventCount(t *testing.T, c *fleet.Client, id string) int {
	t.Helper()
	var numbers []uint64
	for subj, msgs := range storedEventSubjects(t, c, id) {
		_, _, first, count, ok := messages.ParseEventSubject(subj)
		if !ok || msgs != 1 {
			t.Fatalf("%s: %d messages (an event subject: %v)", subj, msgs, ok)
		}
		for n := first; n < first+count; n++ {
			numbers = append(numbers, n)
		}
	}
	slices.Sort(numbers)
	for i, n := range numbers {
		if n != uint64(i+1) {
			t.Fatalf("stored event numbers %v: not 1 to %d", numbers, len(numbers))
		}
	}
	return len(numbers)
}

// watchAll returns every event Watch hands over for mission id, as
// "<kind> <turn>".
func watchAll(t *testing.T, c *fleet.Client, id string) []string {
	t.Helper()
	var got []string
	if err := c.Watch(testCtx(t), id, func(ev *messages.Event) error {
		got = append(got, fmt.Sprintf("%s %d", ev.Kind, ev.Turn))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// A quick mission's events are one message on EVENTS, stored where its
// first event is numbered and naming how many it carries; a watcher sees
// each of them once, in order. With a negative EventDelay each event is a
// message of its own, numbered the same.
func TestEventsOfAQuickMissionAreOneMessage(t *testing.T) {
	for _, delay := range []time.Duration{time.Minute, -1} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			_, nc := runJetStream(t)
			startTools(t, nc)
			startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				for i := 1; i <= 10; i++ {
					env.Events.Emit(&messages.Event{Kind: messages.EventEmit, Turn: i})
				}
				r, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
				return &messages.Step{Return: r}, err
			}), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = delay })
			c := newClient(t, nc)
			m := newMission("search")
			if st, err := c.Run(testCtx(t), m); err != nil || st.Fail != nil {
				t.Fatalf("mission: %v %+v", err, st)
			}
			want := []string{"started 0"}
			for i := 1; i <= 10; i++ {
				want = append(want, fmt.Sprintf("emit %d", i))
			}
			want = append(want, "tool_call 0", "tool_result 0", "final 0")
			if got := watchAll(t, c, m.ID); !slices.Equal(got, want) {
				t.Fatalf("watched %v, want %v", got, want)
			}
			stored := storedEventSubjects(t, c, m.ID)
			wantStored := map[string]uint64{messages.EventBatchSubject(messages.DefaultSubmitter, m.ID, 1, len(want)): 1}
			if delay < 0 {
				wantStored = map[string]uint64{}
				for i, w := range want {
					wantStored[messages.EventSubject(messages.DefaultSubmitter, m.ID, uint64(i+1), strings.Fields(w)[0])] = 1
				}
			}
			if !maps.Equal(stored, wantStored) {
				t.Fatalf("stored %v, want %v", stored, wantStored)
			}
		})
	}
}

// A mission waiting on something outside (here a channel) has its events
// stored within EventDelay: a watcher sees its progress while it runs, not
// only at its end, each event once and in order.
func TestEventsOfAWaitingMissionReachAWatcher(t *testing.T) {
	_, nc := runJetStream(t)
	const delay = 50 * time.Millisecond
	release := make(chan struct{})
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		for i := 1; i <= 3; i++ {
			env.Events.Emit(&messages.Event{Kind: messages.EventTurnStarted, Turn: i})
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = delay })
	c := newClient(t, nc)
	m := newMission()
	if _, err := c.Submit(testCtx(t), m); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		got  []string
		seen = make(chan string, 16)
	)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(testCtx(t), m.ID, func(ev *messages.Event) error {
			s := fmt.Sprintf("%s %d", ev.Kind, ev.Turn)
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
			seen <- s
			return nil
		})
	}()
	wait := func(want string) {
		t.Helper()
		select {
		case s := <-seen:
			if s != want {
				t.Fatalf("watcher saw %q, want %q", s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watcher did not see %q while the mission waited", want)
		}
	}
	wait("started 0")
	for i := 1; i <= 3; i++ {
		start := time.Now()
		wait(fmt.Sprintf("turn_started %d", i))
		// the event waits EventDelay, then a watcher reads it as soon as
		// it is stored: well before Watch's one-second poll
		if d := time.Since(start); d > delay+400*time.Millisecond {
			t.Errorf("turn %d seen %v after it was emitted, want about %v", i, d, delay)
		}
		release <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"started 0", "turn_started 1", "turn_started 2", "turn_started 3", "final 0"}; !slices.Equal(got, want) {
		t.Fatalf("watched %v, want %v", got, want)
	}
	if n := len(storedEventSubjects(t, c, m.ID)); n < 2 {
		t.Fatalf("%d messages stored: a waiting mission's events were held to its end", n)
	}
}

// A batch holds at most MaxEventBatch events and MaxEventBatchBytes of
// them; each event is still cut to MaxEventBytes on its own.
func TestEventBatchesAreBounded(t *testing.T) {
	_, nc := runJetStream(t)
	big := strings.Repeat("p", 5000)
	huge := strings.Repeat("h", 20000)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if m.Context["n"] == int64(1) {
			for i := 1; i <= 300; i++ {
				env.Events.Emit(&messages.Event{Kind: messages.EventEmit, Turn: i})
			}
		} else {
			for i := 1; i <= 20; i++ {
				env.Events.Emit(&messages.Event{Kind: messages.EventProgram, Turn: i, Program: big})
			}
			env.Events.Emit(&messages.Event{Kind: messages.EventProgram, Turn: 21, Program: huge})
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = time.Minute })
	c := newClient(t, nc)
	for _, n := range []int64{1, 2} {
		m := newMission()
		m.Context = map[string]any{"n": n}
		if st, err := c.Run(testCtx(t), m); err != nil || st.Fail != nil {
			t.Fatalf("mission: %v %+v", err, st)
		}
		evs, err := c.Events(testCtx(t), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]int{1: 302, 2: 23}[n]
		if len(evs) != want {
			t.Fatalf("mission %d: %d events, want %d", n, len(evs), want)
		}
		for i, ev := range evs[1 : len(evs)-1] {
			if ev.Turn != i+1 {
				t.Fatalf("mission %d: event %d is turn %d", n, i+2, ev.Turn)
			}
			if b, _ := messages.Marshal(ev); len(b) > fleet.MaxEventBytes {
				t.Errorf("mission %d: event %d is %d bytes", n, i+2, len(b))
			}
		}
		if last := evs[len(evs)-2]; n == 2 && (len(last.Program) > 1100 || last.Data["cut"] == nil) {
			t.Errorf("the 20,000-byte program was not cut: %d bytes", len(last.Program))
		}
		stored := storedEventSubjects(t, c, m.ID)
		if len(stored) < 2 {
			t.Fatalf("mission %d: %d messages stored, want the events split", n, len(stored))
		}
		next := uint64(1)
		for len(stored) > 0 {
			var subj string
			for s := range stored {
				if _, _, first, _, ok := messages.ParseEventSubject(s); ok && first == next {
					subj = s
				}
			}
			if subj == "" {
				t.Fatalf("mission %d: no message stored for event %d; left %v", n, next, stored)
			}
			delete(stored, subj)
			_, _, _, count, _ := messages.ParseEventSubject(subj)
			msg, err := c.Stores().Events.GetLastMsgForSubject(testCtx(t), subj)
			if err != nil {
				t.Fatal(err)
			}
			if count > messages.MaxEventBatch || len(msg.Data) > fleet.MaxEventBatchBytes+5 {
				t.Errorf("mission %d: %s carries %d events in %d bytes", n, subj, count, len(msg.Data))
			}
			next += count
		}
		if next != uint64(want)+1 {
			t.Errorf("mission %d: stored messages number %d events, want %d", n, next-1, want)
		}
	}
}

// Readers take the events as stored by any writer: one event per message
// (the layout before batches, and a client's approval_decided), batches,
// a batch that does not decode (its numbers skipped) and a number lost
// on its way (skipped once a later one is stored).
func TestEventReaderReadsSinglesAndBatches(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	id := messages.NewMissionID()
	sub := messages.DefaultSubmitter
	enc := func(kind string, turn int) []byte {
		ev := &messages.Event{Version: messages.EventVersion, MissionID: id, Kind: kind, Turn: turn, Time: time.Now().UTC()}
		if kind == messages.EventFinal {
			ev.Step = &messages.Step{Version: messages.StepVersion}
		}
		b, err := messages.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	publish := func(subject string, data []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
	}
	publish(messages.EventSubject(sub, id, 1, messages.EventStarted), enc(messages.EventStarted, 0))
	publish(messages.EventBatchSubject(sub, id, 2, 3), messages.EncodeEventBatch([][]byte{
		enc(messages.EventTurnStarted, 1), enc(messages.EventProgram, 1), enc(messages.EventTurnFinished, 1)}))
	// a batch whose subject says 2 events and which holds 3
	publish(messages.EventBatchSubject(sub, id, 5, 2), messages.EncodeEventBatch([][]byte{
		enc(messages.EventTurnStarted, 9), enc(messages.EventTurnStarted, 9), enc(messages.EventTurnStarted, 9)}))
	// a batch holding another mission's event and one that is no event
	other := enc(messages.EventTurnStarted, 9)
	other = []byte(strings.Replace(string(other), id, messages.NewMissionID(), 1))
	publish(messages.EventBatchSubject(sub, id, 7, 3), messages.EncodeEventBatch([][]byte{
		other, enc(messages.EventTurnStarted, 2), {0x05}}))
	// 10 is lost
	publish(messages.EventSubject(sub, id, 11, messages.EventApprovalDecided), enc(messages.EventApprovalDecided, 2))
	publish(messages.EventBatchSubject(sub, id, 12, 2), messages.EncodeEventBatch([][]byte{
		enc(messages.EventTurnFinished, 2), enc(messages.EventFinal, 0)}))
	want := []string{"started 0", "turn_started 1", "program 1", "turn_finished 1", "turn_started 2", "approval_decided 2", "turn_finished 2", "final 0"}
	if got := watchAll(t, c, id); !slices.Equal(got, want) {
		t.Fatalf("watched %v, want %v", got, want)
	}
	evs, err := c.Events(ctx, id)
	if err != nil || len(evs) != len(want) {
		t.Fatalf("events: %d, %v; want %d", len(evs), err, len(want))
	}
}

// Every message the worker publishes on a mission's event subjects is
// exactly the events' Marshal encoding: an event alone as Marshal gives
// it, a batch as EncodeEventBatch of those, split where a batch is full;
// an event whose value has no plain form goes without its values, one
// over MaxEventBytes cut. Both with events waiting for a batch and with
// each published at once.
func TestEmittedEventBytes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	const turns = messages.MaxEventBatch + 7 // one full batch and more
	for _, delay := range []time.Duration{time.Minute, -1} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			_, nc := runJetStream(t)
			startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				for i := 1; i <= turns; i++ {
					ev := &messages.Event{Kind: messages.EventEmit, Turn: i, Time: at, Data: map[string]any{"i": int64(i), "s": "x"}}
					switch i {
					case 3:
						ev.Data["f"] = func() {} // no plain form
					case 5:
						ev.Data["big"] = strings.Repeat("b", fleet.MaxEventBytes)
					}
					env.Events.Emit(ev)
				}
				return &messages.Step{Return: "ok"}, nil
			}), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = delay })
			c := newClient(t, nc)
			m := newMission()
			sub, err := nc.SubscribeSync(messages.EventFilter(c.Submitter(), m.ID))
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			if st, err := c.Run(testCtx(t), m); err != nil || st.Fail != nil {
				t.Fatalf("mission: %v %+v", err, st)
			}
			var got []*messages.Event
			batches := 0
			for len(got) < turns+2 { // started, the turns, final
				msg, err := sub.NextMsg(5 * time.Second)
				if err != nil {
					t.Fatalf("after %d events: %v", len(got), err)
				}
				_, _, first, count, ok := messages.ParseEventSubject(msg.Subject)
				if !ok || first != uint64(len(got)+1) {
					t.Fatalf("subject %s after %d events", msg.Subject, len(got))
				}
				if _, err := strconv.Atoi(msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]); err != nil { // ends in its kind
					var ev messages.Event
					if err := messages.Unmarshal(msg.Data, &ev); err != nil {
						t.Fatal(err)
					}
					if want, _ := messages.Marshal(&ev); !slices.Equal(msg.Data, want) {
						t.Fatalf("%s: payload is not the event's encoding", msg.Subject)
					}
					got = append(got, &ev)
					continue
				}
				batches++
				evs, err := messages.DecodeEventBatch(msg.Data, int(count))
				if err != nil {
					t.Fatal(err)
				}
				enc := make([][]byte, len(evs))
				for i, ev := range evs {
					if ev == nil {
						t.Fatalf("%s: element %d does not decode", msg.Subject, i)
					}
					enc[i], _ = messages.Marshal(ev)
				}
				if !slices.Equal(msg.Data, messages.EncodeEventBatch(enc)) {
					t.Fatalf("%s: payload is not EncodeEventBatch of its events' encodings", msg.Subject)
				}
				got = append(got, evs...)
			}
			if (delay > 0) != (batches >= 2) {
				t.Errorf("delay %v: %d batches", delay, batches)
			}
			if got[0].Kind != messages.EventStarted || got[len(got)-1].Kind != messages.EventFinal {
				t.Errorf("first %s, last %s", got[0].Kind, got[len(got)-1].Kind)
			}
			for i, ev := range got[1 : len(got)-1] {
				turn := i + 1
				if ev.Turn != turn || !ev.Time.Equal(at) || ev.MissionID != m.ID || ev.Attempt != 1 || ev.Worker == "" {
					t.Fatalf("event of turn %d: %+v", turn, ev)
				}
				switch turn {
				case 3:
					if ev.Data != nil {
						t.Errorf("turn 3 kept its values: %v", ev.Data)
					}
				case 5:
					if ev.Data["cut"] == nil {
						t.Errorf("turn 5 not cut: %v", ev.Data)
					}
				default:
					if ev.Data["i"] != int64(turn) || ev.Data["s"] != "x" {
						t.Errorf("turn %d: data %v", turn, ev.Data)
					}
				}
			}
		})
	}
}
