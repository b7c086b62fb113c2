package fleet

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Tool call liveness. A tool service that offers it (endpoint metadata
// MetaHeartbeat, set by ToolService) answers a request carrying
// Ptc-Heartbeat-Ms with, besides its answer, an empty progress message
// (header Ptc-Heartbeat) on the reply subject every that many
// milliseconds for as long as the call is in its hands. A worker's call to
// such a tool that hears nothing — no progress, no answer — for
// heartbeatSilence intervals sends the request again with the same
// idempotency key: the request or its answer was lost (the service's
// NATS node died, say), which a worker whose own connection stayed up
// cannot otherwise tell from a slow tool.

// MetaHeartbeat is the endpoint metadata key by which a tool service says
// it sends progress messages to requests that ask for them ("1").
const MetaHeartbeat = "ptc.heartbeat"

// heartbeatSilence is how many heartbeat intervals without a message a
// call waits before it sends its request again.
const heartbeatSilence = 4

// minHeartbeat is the shortest interval a tool service honours.
const minHeartbeat = 50 * time.Millisecond

// defaultToolHeartbeat is WorkerConfig.ToolHeartbeat's default.
const defaultToolHeartbeat = 500 * time.Millisecond

// MaxToolProgress is the most progress messages a tool service sends for
// one request. A worker asks for an interval of at least the call's
// timeout divided by it, so a call that runs its whole timeout still hears
// from the service to the end.
const MaxToolProgress = 30

// ToolReplyMessages is how many messages a tool service may publish on the
// reply subject of one request: the progress messages and the answer of
// the request and of one resend of it served at the same time. It is the
// allow_responses max of the tool services' NATS users
// (deploy/k8s/natsauth): NATS lets a user that may only answer publish
// that many messages to a request's reply subject.
const ToolReplyMessages = 2 * (MaxToolProgress + 1)

// DefaultToolTimeout bounds one remote tool call when WorkerConfig.ToolTimeout
// or ToolboxConfig.Timeout is not set.
const DefaultToolTimeout = 10 * time.Second

// MaxToolTimeout bounds WorkerConfig.ToolTimeout: a tool service's NATS
// user may answer a request for ToolReplyWindow, and an answer later than
// that would be refused.
const MaxToolTimeout = 2 * time.Minute

// ToolReplyWindow is how long after a request a tool service's NATS user
// may publish on its reply subject (allow_responses expires): a call's
// timeout and the time its request waits for a free slot in the service.
const ToolReplyWindow = MaxToolTimeout + 30*time.Second

// progressInterval is the progress interval a worker asks for on a call
// with the given timeout: every, or longer when the call could otherwise
// outlast MaxToolProgress messages.
func progressInterval(every, timeout time.Duration) time.Duration {
	return max(every, minHeartbeat, timeout/MaxToolProgress)
}

// replyMux receives the messages sent to reply subjects of a connection's
// inbox on one wildcard subscription, each subject's to the handler added
// for it: the answers and progress messages of live tool calls, a
// submission's status read and the answers of batch direct gets. nats.go's
// request mux keeps only the first message of a request, and a
// subscription per request would cost a subscribe and an unsubscribe
// (each changing the server's subject index) and a goroutine.
type replyMux struct {
	nc     *nats.Conn
	once   sync.Once
	prefix string
	err    error
	next   atomic.Uint64

	mu       sync.Mutex
	handlers map[uint64]replyHandler // by the token ending the subject
	// subjects are the reply subjects of the replySubjectBlock tokens
	// from subjectsFrom on, one after another in one string, each ending
	// at its subjectEnds; add makes them together, when it reaches a
	// token past them ("" until the first add)
	subjects     string
	subjectsFrom uint64
	subjectEnds  [replySubjectBlock]int
	// closed is closed once the subscription is (its connection closed):
	// no answer comes after it, and requests waiting for one return
	closed chan struct{}
}

// replySubjectBlock is how many reply subjects a replyMux makes at once:
// one string for as many requests. A subject held keeps its block's
// string (about 35 bytes a subject) reachable, and requests hold theirs
// for as long as they wait for the answer.
const replySubjectBlock = 16

// replyHandler takes the messages to one reply subject of a replyMux.
type replyHandler interface {
	handle(msg *nats.Msg)
}

// replyFunc is a func as a replyHandler.
type replyFunc func(*nats.Msg)

func (f replyFunc) handle(msg *nats.Msg) { f(msg) }

// liveCall is one call waiting on a replyMux (its handle).
type liveCall struct {
	reply chan *nats.Msg // the answer; later copies are dropped
	beat  chan struct{}  // a progress message came (nil: not listened for)
}

// handle takes one message to the call's reply subject: a progress
// message or its answer.
func (c *liveCall) handle(msg *nats.Msg) {
	if msg.Header.Get(messages.HeaderHeartbeat) != "" {
		select {
		case c.beat <- struct{}{}:
		default:
		}
		return
	}
	select {
	case c.reply <- msg:
	default:
	}
}

func newReplyMux(nc *nats.Conn) *replyMux {
	return &replyMux{nc: nc, handlers: map[uint64]replyHandler{}, closed: make(chan struct{})}
}

// open subscribes once, on first use.
func (m *replyMux) open() error {
	m.once.Do(func() {
		m.prefix = m.nc.NewInbox()
		var sub *nats.Subscription
		if sub, m.err = m.nc.Subscribe(m.prefix+".*", m.deliver); m.err == nil {
			// called once, when the subscription's delivery ends
			sub.SetClosedHandler(func(string) { close(m.closed) })
		}
	})
	return m.err
}

func (m *replyMux) deliver(msg *nats.Msg) {
	if len(msg.Subject) <= len(m.prefix)+1 {
		return
	}
	token, ok := parseReplyToken(msg.Subject[len(m.prefix)+1:])
	if !ok {
		return
	}
	m.mu.Lock()
	h := m.handlers[token]
	if w, ok := h.(*replyWaiter); ok {
		// handed over under the lock: a request's waiter serves the next
		// request once remove returned (replyWaiter)
		w.handle(msg)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	if h != nil {
		h.handle(msg)
	}
}

// parseReplyToken reads a reply subject's token as add writes it: base
// 36 in lower case, no leading zero. Any other spelling names no token.
func parseReplyToken(s string) (uint64, bool) {
	if s == "" || len(s) > 13 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'z':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if n > (math.MaxUint64-d)/36 {
			return 0, false
		}
		n = n*36 + d
	}
	return n, true
}

// add registers h for the messages to a new reply subject (after open)
// and returns the subject and its token, which remove takes to unregister
// it; a message being handed to h then may still reach it. The messages
// reach h one at a time, in the order they came. The subject is the one
// string add makes.
func (m *replyMux) add(h replyHandler) (string, uint64) {
	m.mu.Lock()
	token := m.next.Add(1) // under mu: the tokens of one block come in order
	m.handlers[token] = h
	subject := m.subjectLocked(token)
	m.mu.Unlock()
	return subject, token
}

// subjectLocked returns the reply subject of token, the prefix and the
// token in base 36, from the block of subjects that holds it, made when
// none does. m.mu is held.
func (m *replyMux) subjectLocked(token uint64) string {
	i := token - m.subjectsFrom
	if m.subjects == "" || i >= replySubjectBlock {
		var b strings.Builder
		b.Grow(replySubjectBlock * (len(m.prefix) + 1 + 13)) // 13: a uint64 in base 36
		var digits [13]byte
		for k := range uint64(replySubjectBlock) {
			b.WriteString(m.prefix)
			b.WriteByte('.')
			b.Write(strconv.AppendUint(digits[:0], token+k, 36))
			m.subjectEnds[k] = b.Len()
		}
		m.subjects, m.subjectsFrom, i = b.String(), token, 0
	}
	start := 0
	if i > 0 {
		start = m.subjectEnds[i-1]
	}
	return m.subjects[start:m.subjectEnds[i]]
}

// remove unregisters the handler add returned token for.
func (m *replyMux) remove(token uint64) {
	m.mu.Lock()
	delete(m.handlers, token)
	m.mu.Unlock()
}

// beatMsText is a heartbeat interval in milliseconds and its decimal form.
type beatMsText struct {
	ms   int64
	text string
}

// beatMsText returns ms in decimal: the Toolbox's last one when it is
// the same, else made and kept as the last.
func (b *Toolbox) beatMsText(ms int64) string {
	if last := b.beatMs.Load(); last != nil && last.ms == ms {
		return last.text
	}
	t := &beatMsText{ms: ms, text: strconv.FormatInt(ms, 10)}
	b.beatMs.Store(t)
	return t.text
}

// errSilent: a live call heard nothing for heartbeatSilence intervals.
var errSilent = errors.New("no answer and no progress from the tool service")

// sendLive sends a request to a tool that reports progress and waits for
// its answer within ctx. Every send uses the same reply subject, so an
// answer to any of them ends the call. The request is sent again, with a
// Ptc-Retry count, when nothing (answer or progress) came for
// heartbeatSilence intervals (at once), when the connection drops, and on
// no responders (after a backoff from 25ms doubling to 500ms) until the
// service has had no responders for retryWait in a row: the window starts
// at the first no-responders answer, not at the call, so a service that
// restarts late in a long call gets the whole window to come back.
//
// The call ends with context.DeadlineExceeded at deadline (as a context
// with that deadline would end it), waited for on the timer that waits
// for the silence, so that a call makes no context of its own.
func (b *Toolbox) sendLive(ctx context.Context, deadline time.Time, msg *nats.Msg, hs *headerSetter) (*nats.Msg, error) {
	if err := b.replies.open(); err != nil {
		return nil, err
	}
	c := &liveCall{reply: make(chan *nats.Msg, 1), beat: make(chan struct{}, 1)}
	reply, token := b.replies.add(c)
	defer b.replies.remove(token)
	msg.Reply = reply
	every := progressInterval(b.heartbeat, time.Until(deadline)).Round(time.Millisecond)
	hs.set(messages.HeaderHeartbeatMs, b.beatMsText(every.Milliseconds()))
	silence := heartbeatSilence * every
	// A drop of the connection: heard through the worker's one listener
	// (dropped), or, in a Toolbox of no worker, through a listener of the
	// call's own (status).
	var dropped <-chan struct{}
	var status chan nats.Status
	if b.drops != nil {
		dropped = b.drops.since()
	} else {
		status = b.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING)
		defer b.nc.RemoveStatusListener(status)
	}
	var noResp time.Time // first of the current run of no-responders answers
	backoff := 25 * time.Millisecond
	timer := getTimer()
	defer putTimer(timer)
	// wait arms the timer for d or until the deadline, whichever is
	// sooner
	wait := func(d time.Duration) { timer.Reset(max(min(d, time.Until(deadline)), 0)) }
	var last error
	for retry := 0; ; retry++ {
		if retry > 0 {
			hs.set(messages.HeaderRetry, strconv.Itoa(retry))
			if b.drops != nil {
				dropped = b.drops.since()
			}
			// One disconnection reports several statuses: one resend.
			for drained := status == nil; !drained; {
				select {
				case <-status:
				default:
					drained = true
				}
			}
		}
		pause := backoff
		err := b.nc.PublishMsg(msg)
		if err != nil {
			last = err // the connection is closed or refuses: wait and resend
		} else {
			last = errSilent
			wait(silence)
		}
	waiting:
		for err == nil {
			select {
			case r := <-c.reply:
				if len(r.Data) == 0 && r.Header.Get("Status") == "503" {
					if noResp.IsZero() {
						noResp = time.Now()
					} else if time.Since(noResp) >= b.retryWait {
						return nil, nats.ErrNoResponders
					}
					last = nats.ErrNoResponders
					break waiting
				}
				return r, nil
			case <-c.beat:
				noResp = time.Time{}
				wait(silence)
			case _, ok := <-status:
				if !ok {
					return nil, errConnLost
				}
				last = errConnLost
				break waiting
			case <-dropped:
				last = errConnLost
				break waiting
			case <-timer.C:
				if !time.Now().Before(deadline) {
					return nil, context.DeadlineExceeded
				}
				pause = 0
				break waiting
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if pause > 0 {
			wait(pause)
			select {
			case <-ctx.Done():
				return nil, errors.Join(ctx.Err(), last)
			case <-timer.C:
				if !time.Now().Before(deadline) {
					return nil, errors.Join(context.DeadlineExceeded, last)
				}
			}
			backoff = min(2*backoff, 500*time.Millisecond)
		}
	}
}

// timers holds stopped timers for the waits of live tool calls and of
// journal acks: a cache of memory, not state (a timer is stopped before
// it goes back, and a stopped timer's channel holds no value, as Go 1.23
// timers behave).
var timers sync.Pool

// getTimer returns a stopped timer.
func getTimer() *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		return t
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// putTimer stops t and keeps it for getTimer.
func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// heartbeat sends progress messages on reply every interval the request
// asks for (Ptc-Heartbeat-Ms, at least minHeartbeat), at most
// MaxToolProgress of them, until its stop is called, which the service
// does once it has answered (a late progress message finds no one
// waiting). A request that asks for none gets none: nil, whose stop does
// nothing.
func (s *ToolService) heartbeat(reply string, hdr micro.Headers) *toolBeat {
	ms, err := strconv.ParseInt(hdr.Get(messages.HeaderHeartbeatMs), 10, 64)
	if reply == "" || err != nil || ms <= 0 {
		return nil
	}
	every := max(time.Duration(ms)*time.Millisecond, minHeartbeat)
	b, _ := s.beats.Get().(*toolBeat)
	if b == nil {
		b = &toolBeat{s: s}
	}
	b.mu.Lock() // the first beat waits until b is set
	defer b.mu.Unlock()
	b.reply, b.every, b.stopped, b.sent = reply, every, false, 0
	if b.t == nil {
		b.t = time.AfterFunc(every, b.beat)
	} else {
		b.t.Reset(every)
	}
	return b
}

// toolBeat is the progress messages of one call (ToolService.heartbeat).
// A beat whose stop stopped its timer before it fired (the usual call,
// which is answered before its first progress message is due) is kept by
// its service for another call, with its timer and the timer's func: as
// the timer was pending when stopped, no firing of it is left to reach
// the next call. One whose timer fired is not kept.
type toolBeat struct {
	s       *ToolService
	reply   string
	every   time.Duration
	mu      sync.Mutex
	stopped bool
	sent    int
	t       *time.Timer
}

func (b *toolBeat) beat() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	if err := b.s.nc.PublishMsg(&nats.Msg{Subject: b.reply, Header: nats.Header{messages.HeaderHeartbeat: {"1"}}}); err != nil {
		b.s.log.Debug().Err(err).Msg("progress message not sent")
	}
	// The answer must still fit in what NATS lets the service's user
	// publish on the reply subject (ToolReplyMessages).
	if b.sent++; b.sent < MaxToolProgress {
		b.t.Reset(b.every)
	}
}

// stop ends b's progress messages; nil's does nothing.
func (b *toolBeat) stop() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.stopped = true
	pending := b.t.Stop()
	b.reply = ""
	b.mu.Unlock()
	if pending {
		b.s.beats.Put(b)
	}
}
