package fleet

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// answerDropper is a TCP proxy in front of a NATS server for a tool
// service's connection. Once armed, it swallows the next answer the
// service publishes on a reply inbox (not a progress message) and cuts
// the connection, as a NATS node dying under the service would: the
// service reconnects, the answer is lost, and the caller's connection
// never drops.
type answerDropper struct {
	ln      net.Listener
	target  string
	armed   atomic.Bool
	dropped atomic.Int64
	// hold, when set, keeps the proxy refusing connections for that long
	// after a drop (a node that takes a while to come back).
	hold      time.Duration
	downUntil atomic.Int64 // unix nanos
	wg        sync.WaitGroup
}

func newAnswerDropper(t *testing.T, target string) *answerDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &answerDropper{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// heartbeatBox is a toolbox on nc for cfg whose calls ask for progress
// every 100 ms (or cfg.Timeout / MaxToolProgress when longer) and count a
// service as silent after four missed intervals.
func heartbeatBox(t *testing.T, nc *nats.Conn, cfg ToolboxConfig) *Toolbox {
	t.Helper()
	box, err := NewToolbox(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	box.replies, box.heartbeat = newReplyMux(nc), 100*time.Millisecond
	return box
}

// dial connects through the proxy, reconnecting quickly and without end as
// a service does when its node dies; the connection closes when t ends.
func (p *answerDropper) dial(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://"+p.ln.Addr().String(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (p *answerDropper) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if time.Now().UnixNano() < p.downUntil.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					if bytes.Contains(chunk, []byte("PUB _INBOX.")) && !bytes.Contains(chunk, []byte(messages.HeaderHeartbeat)) &&
						p.armed.CompareAndSwap(true, false) {
						p.dropped.Add(1)
						p.downUntil.Store(time.Now().Add(p.hold).UnixNano())
						c.Close()
						return
					}
					if _, werr := s.Write(chunk); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// A tool's answer lost with its service's connection (the caller's
// connection stays up, so nothing tells it) is asked for again with the
// same idempotency key once the service has been silent for four
// heartbeat intervals, long before the call's deadline: a deduplicating
// tool answers from its stored outcome and runs once; a plain one runs
// again (at least once).
func TestLostToolAnswerIsAskedForAgain(t *testing.T) {
	srv := fleettest.Start(t)
	for _, c := range []struct {
		name     string
		dedup    bool
		wantRuns int64
	}{{"dedup", true, 1}, {"plain", false, 2}} {
		t.Run(c.name, func(t *testing.T) {
			proxy := newAnswerDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
			snc := proxy.dial(t)
			cfg := ToolServiceConfig{Name: "lossy" + c.name}
			if c.dedup {
				cfg.Dedup = &DedupConfig{}
			}
			svc, err := NewToolService(snc, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Stop(context.Background())
			var runs atomic.Int64
			if err := svc.Register("charge", ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
				if runs.Add(1) == 1 {
					proxy.armed.Store(true) // this answer is lost
				}
				return args["amount"], nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := snc.Flush(); err != nil { // the service's subscriptions reach the server
				t.Fatal(err)
			}
			nc := srv.For(t).Conn()
			// Every request the worker sends, as the service would see it.
			var mu sync.Mutex
			var seen []nats.Header
			sub, err := nc.Subscribe(messages.ToolSubject(cfg.Name, "charge"), func(m *nats.Msg) {
				mu.Lock()
				seen = append(seen, m.Header)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			// A 6s call asks for progress every 200ms (6s / MaxToolProgress).
			box := heartbeatBox(t, nc, ToolboxConfig{Tools: []string{"charge"}, MissionID: messages.NewMissionID(), Timeout: 6 * time.Second})
			start := time.Now()
			r, err := box.Call(WithTurn(context.Background(), 1), "charge", map[string]any{"amount": int64(42)})
			took := time.Since(start)
			if err != nil || r != int64(42) {
				t.Fatalf("call = %v, %v", r, err)
			}
			if proxy.dropped.Load() != 1 {
				t.Fatalf("%d answers dropped, want 1", proxy.dropped.Load())
			}
			if took > 5*time.Second {
				t.Errorf("the call took %v, want well within its 6s timeout", took)
			}
			if n := runs.Load(); n != c.wantRuns {
				t.Errorf("the tool ran %d times, want %d", n, c.wantRuns)
			}
			// the observer's handler runs on its own connection's
			// goroutine: it may see the resend after the call returned
			for wait := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= 2 || time.Now().After(wait) {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 2 {
				t.Fatalf("%d requests sent, want the lost one sent again", len(seen))
			}
			for i, h := range seen {
				key := h.Get(messages.HeaderIdempotencyKey)
				if key == "" || key != seen[0].Get(messages.HeaderIdempotencyKey) || h.Get(messages.HeaderHeartbeatMs) != "200" ||
					(i > 0) != (h.Get(messages.HeaderRetry) != "") {
					t.Errorf("request %d: key %q, heartbeat %q, retry %q; want the first one's key, 200 ms and a retry count on resends",
						i, key, h.Get(messages.HeaderHeartbeatMs), h.Get(messages.HeaderRetry))
				}
			}
			t.Logf("answered %v after the call: %d requests, %d runs", took.Round(time.Millisecond), len(seen), runs.Load())
		})
	}
}

// The window in which a call keeps resending to a tool with no responders
// starts at the first no-responders answer, not at the call: a service
// whose node dies after a long call and takes a while to come back is
// waited for, however long the call had run before.
func TestNoRespondersWindowStartsAtFirstMiss(t *testing.T) {
	srv := fleettest.Start(t)
	proxy := newAnswerDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	proxy.hold = 600 * time.Millisecond
	snc := proxy.dial(t)
	svc, err := NewToolService(snc, ToolServiceConfig{Name: "lateloss"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	const window = 2 * time.Second
	var runs atomic.Int64
	if err := svc.Register("report", ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		if runs.Add(1) == 1 {
			time.Sleep(window + 200*time.Millisecond) // longer than the window
			proxy.armed.Store(true)                   // this answer is lost, and the service's node is down a while
		}
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := snc.Flush(); err != nil { // the service's subscriptions reach the server
		t.Fatal(err)
	}
	nc := srv.Conn()
	box := heartbeatBox(t, nc, ToolboxConfig{Tools: []string{"report"}, Timeout: 20 * time.Second, UnavailableWait: window})
	r, err := box.Call(WithTurn(context.Background(), 1), "report", map[string]any{})
	if err != nil || r != "done" {
		t.Fatalf("call = %v, %v; want the answer once the service is back", r, err)
	}
	if proxy.dropped.Load() != 1 || runs.Load() != 2 {
		t.Fatalf("%d answers dropped, %d runs; want 1 and 2", proxy.dropped.Load(), runs.Load())
	}
}

// A call that takes many silence windows is not sent again while its
// service reports progress, and a request that asks for no progress
// messages gets none.
//
// A process the machine stops for longer than the silence window hears
// nothing in that time and rightly sends the request again: a call sent
// again is tried anew (with a service of its own) when the progress
// messages, as another subscriber of the connection heard them, came at
// least half a window late; one sent again while they came on time fails.
func TestSlowToolCallKeptAliveByProgress(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	// Every progress message the connection hears, and when.
	var mu sync.Mutex
	var beats []time.Time
	spy, err := nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if m.Header.Get(messages.HeaderHeartbeat) != "" {
			mu.Lock()
			beats = append(beats, time.Now())
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	const every = 100 * time.Millisecond // heartbeatBox's interval
	for try := 1; ; try++ {
		tool := "crunch" + strconv.Itoa(try)
		var runs atomic.Int64
		if err := svc.Register(tool, ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
			runs.Add(1)
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
			}
			return "done", nil
		}); err != nil {
			t.Fatal(err)
		}
		var retries atomic.Int64
		sub, err := nc.Subscribe(messages.ToolSubject("slow", tool), func(m *nats.Msg) {
			if m.Header.Get(messages.HeaderRetry) != "" {
				retries.Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		mu.Lock()
		beats = beats[:0]
		mu.Unlock()
		// Silence after 4 × 100ms: the call outlasts it more than three times.
		box := heartbeatBox(t, nc, ToolboxConfig{Tools: []string{tool}, MissionID: messages.NewMissionID(), Timeout: 3 * time.Second})
		start := time.Now()
		r, err := box.Call(context.Background(), tool, nil)
		end := time.Now()
		if err == nil && r == "done" && runs.Load() == 1 && retries.Load() == 0 {
			break
		}
		mu.Lock()
		late, prev := time.Duration(0), start
		for _, at := range append(beats, end) {
			late, prev = max(late, at.Sub(prev)-every), at
		}
		heard := len(beats)
		mu.Unlock()
		if late < heartbeatSilence*every/2 || try == 5 {
			t.Fatalf("try %d: call = %v, %v; %d runs, %d requests sent again; want done, 1 and 0 (%d progress messages heard, at most %v late)",
				try, r, err, runs.Load(), retries.Load(), heard, late)
		}
		t.Logf("try %d: call = %v, %v; %d runs, %d requests sent again, with progress messages %v late (the process stalled): trying again",
			try, r, err, runs.Load(), retries.Load(), late)
	}

	// A plain request (no Ptc-Heartbeat-Ms) gets its answer as the first
	// and only message.
	msg := &nats.Msg{Subject: messages.ToolSubject("slow", "crunch1"), Header: nats.Header{}}
	msg.Data, _ = messages.Marshal(&messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "1", Tool: "crunch1"})
	resp, err := nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get(messages.HeaderHeartbeat) != "" || len(resp.Data) == 0 {
		t.Fatalf("a plain request got a progress message: %v %q", resp.Header, resp.Data)
	}
}

// A tool service sends at most MaxToolProgress progress messages for a
// request, however short the interval asked, so its answer stays within
// what NATS lets its user publish on the reply subject
// (ToolReplyMessages); a worker asks for an interval that spreads them
// over the call's timeout.
func TestProgressMessagesBounded(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	// The call lasts until the test has seen MaxToolProgress progress
	// messages and then 20 intervals more, whatever the machine's load
	// does to the intervals.
	release := make(chan struct{})
	if err := svc.Register("crunch", ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) {
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: messages.ToolSubject("slow", "crunch"), Reply: inbox, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderHeartbeatMs, "50")
	msg.Data, _ = messages.Marshal(&messages.ToolRequest{Version: messages.ToolCallVersion, CallID: "1", Tool: "crunch"})
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	progress := 0
	for {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %d progress messages: %v", progress, err)
		}
		if m.Header.Get(messages.HeaderHeartbeat) == "" {
			break
		}
		if progress++; progress == MaxToolProgress {
			time.AfterFunc(20*50*time.Millisecond, func() { close(release) })
		}
	}
	if progress != MaxToolProgress || progress+1 > ToolReplyMessages {
		t.Fatalf("%d progress messages before the answer, want %d (the reply subject takes %d messages)", progress, MaxToolProgress, ToolReplyMessages)
	}

	// A worker's call with a long timeout asks for fewer, longer intervals.
	asked := make(chan string, 1)
	spy, err := nc.Subscribe(messages.ToolSubject("slow", "crunch"), func(m *nats.Msg) {
		select {
		case asked <- m.Header.Get(messages.HeaderHeartbeatMs):
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()
	box := heartbeatBox(t, nc, ToolboxConfig{Tools: []string{"crunch"}, MissionID: messages.NewMissionID(), Timeout: 60 * time.Second})
	if r, err := box.Call(context.Background(), "crunch", nil); err != nil || r != "done" {
		t.Fatalf("call = %v, %v", r, err)
	}
	if ms := <-asked; ms != "2000" {
		t.Fatalf("a 60s call asked for progress every %s ms, want 2000 (60s / %d)", ms, MaxToolProgress)
	}
}
