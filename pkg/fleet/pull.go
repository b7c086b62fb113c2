package fleet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The worker's pull requests. The worker sends each pull request
// ($JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>) itself, with its reply
// subject one of a wildcard it subscribed to once, for its life: a pull
// then costs the request and its answers, where nats.go's Fetch also
// subscribes (a SUB the server indexes) and unsubscribes an inbox of its
// own and starts a goroutine to forward the answers, for every pull.
//
// The server answers a pull with the messages it delivers (reply subject
// $JS.ACK...) and, unless it delivered the whole batch, a status message
// that ends it: 404 No Messages or 408 Request Timeout when it ran out,
// 409 when it could not serve it (the consumer deleted, a leadership
// change, too many pulls waiting...), 503 when no consumer took the
// request. A server that restarts, or a connection that reconnects,
// forgets the pulls it held: a pull whose answer does not come within its
// expiry and pullMargin ends at the client. A message that comes for a
// pull that already ended is still the worker's to run (strayPull).

// pullMargin is how long after its expiry the answer that ends a pull is
// waited for (nats.go's Fetch waits as long).
const pullMargin = time.Second

// pullNextPrefix is the subject prefix of a consumer's pull requests in
// the default JetStream API prefix (the one the worker's jetstream context
// uses).
const pullNextPrefix = "$JS.API.CONSUMER.MSG.NEXT."

// pullSubject is the subject of pull requests to consumer c.
func pullSubject(c jetstream.Consumer) string {
	ci := c.CachedInfo()
	if ci == nil {
		return ""
	}
	return pullNextPrefix + ci.Stream + "." + ci.Name
}

// pullAnswers is how many answers the pulls' subscription holds for the
// goroutines that read them: nats.go drops one that finds it full (a slow
// consumer), and the server redelivers its mission after AckWait. The
// worker's pulls ask for at most its free slots, and a no-wait pull for at
// most maxPullBatch, so that the answers of a whole pull and of every
// lane's long poll of one fit in it however many slots are free.
const pullAnswers = 1024

// maxPullBatch bounds the messages one no-wait pull asks for (a worker
// with more free slots pulls again once it has them).
const maxPullBatch = pullAnswers / 2

// pulls sends a worker's pull requests and routes their answers, which
// come on one subscription, to the pull they answer.
//
// The subscription is a channel that the goroutines waiting for a pull
// read (a poll's runner, the loop in a no-wait fetch or waiting for
// something to do): an answer for the pull of the goroutine that reads
// it reaches it with one hand-off from nats.go's read loop, where a
// subscription with a handler adds its own goroutine between the two. An
// answer for another pull is passed on to that pull's channel, and one
// for no open pull goes to stray.
type pulls struct {
	nc     *nats.Conn
	prefix string // the reply subjects are prefix.<token>
	next   atomic.Uint64
	// ch is the subscription's channel (pullAnswers).
	ch chan *nats.Msg
	// stray takes the messages that came for no open pull (or more than
	// a pull asked for).
	stray func(*nats.Msg)
	// publish, when set, sends a pull request in place of the
	// connection's PublishRequest (tests lose or delay requests with it).
	publish func(subject, reply string, req []byte) error

	mu   sync.Mutex
	open map[uint64]*pull // by token
	// byConsumer holds the open pulls by their consumer (pull.consumer):
	// the loop keeps at most one pull open on a consumer.
	byConsumer map[string]*pull
}

// pull is one open pull request.
type pull struct {
	token uint64
	// consumer is "<stream>.<consumer>", as the acknowledgement subjects
	// of the consumer's deliveries spell it (ackConsumer).
	consumer string
	// ch carries the pull's answers that another goroutine read: up to
	// its batch of messages and the status that ends it.
	ch chan *nats.Msg
}

// subscribe subscribes to the reply subjects of the worker's pulls.
func (p *pulls) subscribe() (*nats.Subscription, error) {
	p.prefix = p.nc.NewInbox()
	p.open = map[uint64]*pull{}
	p.byConsumer = map[string]*pull{}
	p.ch = make(chan *nats.Msg, pullAnswers)
	return p.nc.ChanSubscribe(p.prefix+".*", p.ch)
}

// take routes msg, an answer read from the subscription by the goroutine
// waiting for pull own (nil: none), and reports whether it is own's: an
// answer to another pull goes to that pull's channel, one to no open pull
// (or beyond what the pull's channel holds) to stray. A status message
// comes on the pull's reply subject, which names it; a delivered message
// keeps the subject it was stored on, and goes to the pull open on the
// consumer its acknowledgement subject names (one that a pull given up on
// brings is so taken as the open pull's own, and that pull's own, if it
// comes after the pull ended, as a stray).
func (p *pulls) take(msg *nats.Msg, own *pull) bool {
	token, byToken := uint64(0), false
	var consumer string
	if strings.HasPrefix(msg.Subject, p.prefix) && len(msg.Subject) > len(p.prefix)+1 && msg.Subject[len(p.prefix)] == '.' {
		token, byToken = parseReplyToken(msg.Subject[len(p.prefix)+1:])
		if !byToken {
			p.stray(msg)
			return false
		}
	} else if c, ok := ackConsumer(msg.Reply); ok {
		consumer = c
	} else {
		p.stray(msg)
		return false
	}
	// The pull is looked up and handed msg under the lock that end takes
	// to close it: what reaches its channel before, end finds.
	p.mu.Lock()
	var pl *pull
	if byToken {
		pl = p.open[token]
	} else {
		pl = p.byConsumer[consumer]
	}
	sent := false
	if pl != nil {
		if pl == own {
			p.mu.Unlock()
			return true
		}
		select {
		case pl.ch <- msg:
			sent = true
		default:
		}
	}
	p.mu.Unlock()
	if !sent {
		p.stray(msg)
	}
	return false
}

// ackConsumer returns "<stream>.<consumer>" of a delivery's
// acknowledgement subject (parseAckMetadata), a part of it.
func ackConsumer(reply string) (string, bool) {
	rest, _, err := ackFields(reply)
	if err != nil {
		return "", false
	}
	i := strings.IndexByte(rest, '.')
	j := strings.IndexByte(rest[i+1:], '.')
	if i <= 0 || j <= 0 {
		return "", false
	}
	return rest[:i+1+j], true
}

// send sends a pull request for up to batch messages to subject (a
// consumer's, pullSubject) that waits up to expires for them, or with
// expires 0 takes only those the consumer has now (no_wait).
func (p *pulls) send(subject string, batch int, expires time.Duration) (*pull, error) {
	if subject == "" {
		return nil, jetstream.ErrConsumerNotFound
	}
	pl := &pull{token: p.next.Add(1), consumer: strings.TrimPrefix(subject, pullNextPrefix), ch: make(chan *nats.Msg, batch+1)}
	var rb [96]byte
	reply := append(append(rb[:0], p.prefix...), '.')
	reply = strconv.AppendUint(reply, pl.token, 36)
	var qb [64]byte
	req := append(qb[:0], `{"batch":`...)
	req = strconv.AppendInt(req, int64(batch), 10)
	if expires > 0 {
		req = append(req, `,"expires":`...)
		req = strconv.AppendInt(req, expires.Nanoseconds(), 10)
	} else {
		req = append(req, `,"no_wait":true`...)
	}
	req = append(req, '}')
	p.mu.Lock()
	p.open[pl.token] = pl
	p.byConsumer[pl.consumer] = pl
	p.mu.Unlock()
	var err error
	if p.publish != nil {
		err = p.publish(subject, string(reply), req)
	} else {
		err = p.nc.PublishRequest(subject, string(reply), req)
	}
	if err != nil {
		p.forget(pl)
		return nil, fmt.Errorf("fleet: pull request: %w", err)
	}
	return pl, nil
}

// recv returns pl's next message, or nil once the pull ended: with the
// error that ended it, nil when it ran out of messages or time (a status
// 404 or 408, or lost when timeout fires first).
func (p *pulls) recv(pl *pull, timeout <-chan time.Time) (*nats.Msg, error) {
	for {
		var msg *nats.Msg
		select {
		case msg = <-pl.ch:
		case msg = <-p.ch:
			if !p.take(msg, pl) {
				continue
			}
		case <-timeout:
			return nil, nil
		}
		status, end, err := pullStatus(msg)
		if !status {
			return msg, nil
		}
		if end {
			return nil, err
		}
	}
}

// end closes pl: its answers still to come go to stray, and the
// messages it received and no recv returned go to left.
func (p *pulls) end(pl *pull, left func(*nats.Msg)) {
	p.forget(pl)
	for {
		select {
		case msg := <-pl.ch:
			if status, _, _ := pullStatus(msg); !status {
				left(msg)
			}
		default:
			return
		}
	}
}

// pullStatus says whether msg is a status message rather than a
// delivered message (the rule nats.go applies: no data, and a Status
// header), and if so whether it ends its pull and with which error: nil
// when the pull ran out of messages or time.
func pullStatus(msg *nats.Msg) (status, end bool, err error) {
	if len(msg.Data) > 0 || len(msg.Header) == 0 {
		return false, false, nil
	}
	code := msg.Header.Get("Status")
	if code == "" {
		return false, false, nil
	}
	descr := msg.Header.Get("Description")
	switch code {
	case "100": // an idle heartbeat or flow control
		return true, false, nil
	case "404", "408":
		return true, true, nil
	case "400":
		return true, true, jetstream.ErrBadRequest
	case "503":
		return true, true, nats.ErrNoResponders
	case "409":
		d := strings.ToLower(descr)
		switch {
		case strings.Contains(d, "consumer deleted"):
			return true, true, jetstream.ErrConsumerDeleted
		case strings.Contains(d, "leadership change"):
			return true, true, jetstream.ErrConsumerLeadershipChanged
		case strings.Contains(d, "server shutdown"):
			return true, true, jetstream.ErrServerShutdown
		}
	}
	return true, true, fmt.Errorf("%w: %s %s", errPullEnded, code, descr)
}

// errPullEnded is the error of a pull the server ended with a status
// the worker has no more specific error for.
var errPullEnded = errors.New("fleet: pull ended")

// forget unregisters pl.
func (p *pulls) forget(pl *pull) {
	p.mu.Lock()
	delete(p.open, pl.token)
	if p.byConsumer[pl.consumer] == pl {
		delete(p.byConsumer, pl.consumer)
	}
	p.mu.Unlock()
}
