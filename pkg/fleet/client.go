package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// ClientConfig configures a Client. The zero value is ready to use.
type ClientConfig struct {
	// Store is the layout created when the fleet's streams and buckets do
	// not exist yet (see NewClient); an existing layout is never changed.
	Store StoreConfig
	// SkipSetup binds to existing streams and buckets instead of creating
	// or updating them (for callers without the permission to manage them).
	SkipSetup bool
	// InlineContextBytes is the largest encoded mission sent inline; a
	// mission above it has its context moved to the mission_ctx object
	// store. Default messages.MaxMissionBytes - 4 KiB.
	InlineContextBytes int
	// Submitter is who the client submits as: the submitter token of its
	// missions' subjects and status keys (messages.ValidSubmitter). It
	// must be what the client's NATS user may publish and read as (the
	// shipped configuration names each submitter after its user). Default:
	// the connection's user name, else messages.DefaultSubmitter.
	Submitter string
	// AllSubmitters makes the client read, watch, list and cancel every
	// submitter's missions, not only its own: for a NATS user granted that
	// (an operator, a viewer). Its own submissions are still its
	// Submitter's.
	AllSubmitters bool
	// CancelWait bounds the wait for the fleet to answer a cancel
	// request; a request that got no answer is sent again within it
	// (cancelSends). Default 10s.
	CancelWait time.Duration
}

// Client submits missions and follows them: the dispatch side of the fleet.
// It is safe for concurrent use. It does not own the connection: close nc
// yourself after the last call.
type Client struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	st  *Stores
	cfg ClientConfig
	// quotas reads the submitter's quota, bound at the first submit
	// (nil: a layout set up before quotas); quotaOnce binds it.
	quotas    *Quotas
	quotaOnce sync.Once
	// sub is the submitter the client submits as; readSub is the one it
	// reads as (sub, or messages.AllSubmitters).
	sub, readSub string
	// republished: StreamResults republishes each stored result on its
	// StoredResultSubject, where a message is the result itself.
	republished bool
	// replies receives the answers to the status reads of submissions,
	// which are sent without waiting for them, and to the client's other
	// requests of a mission (its submission's publish, its result's read,
	// its approvals' writes: Stores.replies).
	replies *replyMux
	// wokenPublish is whether the client's user may publish decisions'
	// wakes into MISSIONS (wokenAllowed, wokenRefused; 0: not asked yet).
	wokenPublish atomic.Int32
	// decidePendingListed, when set, is called by DecidePending once,
	// before its first decision, its calls listed (tests decide one
	// meanwhile).
	decidePendingListed func()
}

// NewClient binds a client to nc. When the fleet's streams, consumers and
// buckets exist it binds to them as they are: workers own the layout, and a
// client started with another StoreConfig (a dispatcher with default
// replicas, say) must not rewrite it. Only when some of them are missing does
// it create them (EnsureStores with cfg.Store), unless cfg.SkipSetup is set.
func NewClient(ctx context.Context, nc *nats.Conn, cfg ClientConfig) (*Client, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil connection", ErrInvalidConfig)
	}
	if cfg.InlineContextBytes <= 0 {
		cfg.InlineContextBytes = messages.MaxMissionBytes - 4096
	}
	if cfg.CancelWait <= 0 {
		cfg.CancelWait = 10 * time.Second
	}
	if cfg.Submitter == "" {
		cfg.Submitter = messages.DefaultSubmitter
		if u := nc.Opts.User; u != "" {
			cfg.Submitter = u
		}
	}
	if !messages.ValidSubmitter(cfg.Submitter) {
		return nil, fmt.Errorf("%w: submitter %q: want 1 to %d ASCII letters, digits, '-', '_' or '=' (set ClientConfig.Submitter when the NATS user name is not one)",
			ErrInvalidConfig, cfg.Submitter, messages.MaxSubmitterLen)
	}
	readSub := cfg.Submitter
	if cfg.AllSubmitters {
		readSub = messages.AllSubmitters
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: jetstream: %w", err)
	}
	st, err := bindStores(ctx, js)
	if err != nil && !cfg.SkipSetup && isNotFound(err) {
		st, err = EnsureStores(ctx, js, cfg.Store)
	}
	if err != nil {
		return nil, err
	}
	// the client's result reads and approval writes send their requests
	// on its reply mux, as its status reads do
	replies := newReplyMux(nc)
	st.replies = replies
	return &Client{nc: nc, js: js, st: st, cfg: cfg, sub: cfg.Submitter, readSub: readSub, republished: resultsRepublished(st.Results),
		replies: replies}, nil
}

// Submitter is the submitter the client submits as.
func (c *Client) Submitter() string { return c.sub }

// ReadsAllSubmitters reports whether the client reads every submitter's
// missions (ClientConfig.AllSubmitters), not only its own submitter's.
func (c *Client) ReadsAllSubmitters() bool { return c.readSub == messages.AllSubmitters }

// key is where the client reads mission id: its own, or any submitter's.
func (c *Client) key(id string) missionKey { return missionKey{sub: c.readSub, id: id} }

// isNotFound reports a missing stream, consumer or bucket.
func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrBucketNotFound)
}

func bindStores(ctx context.Context, js jetstream.JetStream) (*Stores, error) {
	st := &Stores{Consumers: map[string]jetstream.Consumer{}, nc: js.Conn()}
	var err error
	if st.Missions, err = js.Stream(ctx, messages.StreamMissions); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", messages.StreamMissions, err)
	}
	if st.Parked, err = js.Stream(ctx, messages.StreamParked); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", messages.StreamParked, err)
	}
	if st.Results, err = js.Stream(ctx, messages.StreamResults); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", messages.StreamResults, err)
	}
	if st.Events, err = js.Stream(ctx, messages.StreamEvents); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", messages.StreamEvents, err)
	}
	if st.Dead, err = js.Stream(ctx, messages.StreamDead); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", messages.StreamDead, err)
	}
	if st.Status, err = js.KeyValue(ctx, messages.BucketStatus); err != nil {
		return nil, fmt.Errorf("fleet: kv %s: %w", messages.BucketStatus, err)
	}
	if st.Approvals, err = js.KeyValue(ctx, messages.BucketApprovals); err != nil {
		return nil, fmt.Errorf("fleet: kv %s: %w", messages.BucketApprovals, err)
	}
	if st.Context, err = js.ObjectStore(ctx, messages.BucketContext); err != nil {
		return nil, fmt.Errorf("fleet: object store %s: %w", messages.BucketContext, err)
	}
	if st.ResultObjects, err = js.ObjectStore(ctx, messages.BucketResults); err != nil {
		return nil, fmt.Errorf("fleet: object store %s: %w", messages.BucketResults, err)
	}
	if st.resultStream, err = js.Stream(ctx, resultObjectStream); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", resultObjectStream, err)
	}
	if st.statusStream, err = js.Stream(ctx, statusStream); err != nil {
		return nil, fmt.Errorf("fleet: stream %s: %w", statusStream, err)
	}
	for _, p := range messages.Priorities() {
		c, err := st.Missions.Consumer(ctx, ConsumerName(p))
		if err != nil {
			return nil, fmt.Errorf("fleet: consumer %s: %w", ConsumerName(p), err)
		}
		st.Consumers[p] = c
	}
	return st, nil
}

// Submission reports what Submit did.
type Submission struct {
	// ID is the mission id.
	ID string
	// Duplicate is true when the mission had already been submitted (same
	// id): nothing new was queued.
	Duplicate bool
	// Sequence is the MISSIONS stream sequence (0 for a duplicate detected
	// by the status fence before publishing).
	Sequence uint64
	// unread: the mission's status was not read (Run's lazy submit), so a
	// mission a worker took before is not known to be one
	unread bool
}

// SubmitOptions are optional settings of one submission.
type SubmitOptions struct {
	// Header is copied onto the mission message (trace context:
	// messages.HeaderTraceParent, messages.HeaderTraceState). When it
	// holds no traceparent, the span context of Submit's ctx, if any, is
	// sent: the mission's spans join the submitter's trace.
	Header nats.Header
}

// Submit queues m as the client's submitter. It is idempotent by mission
// id: within the stream's duplicate window the Msg-Id dedupes; beyond it
// the worker that takes a second copy of a mission that has a status (a
// worker took it) drops it, since the status records the first copy's
// stream sequence. The status is read while m is published, and a
// mission found to have one is reported a Duplicate (its context, when
// stored aside, is stored only once the read found none). An empty m.ID is filled with a new ULID and an empty
// m.CreatedAt with the current time (m is modified). Contexts too large to
// travel inline are stored in the mission_ctx object store. Submit writes
// no status: a queued mission's status is read from the queue (Status),
// and workers write every status; it reads none either for a mission
// whose id it made.
func (c *Client) Submit(ctx context.Context, m *messages.Mission, opts ...SubmitOptions) (*Submission, error) {
	if m == nil {
		return nil, fmt.Errorf("fleet: submit: %w: nil mission", messages.ErrInvalid)
	}
	fresh := m.ID == ""
	if fresh {
		m.ID = messages.NewMissionID()
	}
	return c.submit(ctx, m, fresh, false, opts)
}

// submit is Submit of m, whose id is new when fresh: no worker can have
// taken a mission of that id. Unless fresh, it reads the mission's status
// to tell a mission a worker took from a new one, but when lazy only where
// something depends on it (a context to store aside, a submission that
// failed): Run, whose wait finds the result of a taken mission by itself
// (awaitOn). Only a submission whose status was read reports a taken
// mission a duplicate; one whose was not says so (unread).
func (c *Client) submit(ctx context.Context, m *messages.Mission, fresh, lazy bool, opts []SubmitOptions) (*Submission, error) {
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	if m.Version == 0 {
		m.Version = messages.MissionVersion
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: submit: %w", err)
	}
	sub := &Submission{ID: m.ID}
	// A mission of an id the client did not make may have been taken by a
	// worker already (submitted again past the duplicate window). Its
	// status is read while the mission is encoded and published, not
	// before: a copy queued for a mission that has a status is dropped by
	// the worker that takes it (claim), so the read only tells the caller
	// that the submission is a duplicate. What would change something
	// stored, a context to store aside, waits for the read.
	var taken func() (*Submission, error)
	var statusRead *statusRead // sent (nil: not yet)
	if !fresh {
		if !lazy {
			statusRead = c.sendStatusRead(ctx, missionKey{c.sub, m.ID})
		}
		var done bool
		var cur *statusEntry
		var readErr error
		// taken waits for the read, sending it first if it was not: the
		// submission it answers when the mission has a status, else nil
		// (and the read's error, if any)
		taken = func() (*Submission, error) {
			if !done {
				done = true
				if statusRead == nil {
					statusRead = c.sendStatusRead(ctx, missionKey{c.sub, m.ID})
				}
				cur, readErr = statusRead.wait()
			}
			if readErr == nil {
				return &Submission{ID: m.ID, Duplicate: true, Sequence: cur.st.StreamSeq}, nil
			}
			if errors.Is(readErr, ErrNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("fleet: submit %s: %w", m.ID, readErr)
		}
	}
	// fail returns err unless the mission turns out to have a status: the
	// submission is then a duplicate, as it was before anything was sent.
	fail := func(err error) (*Submission, error) {
		if taken != nil {
			if dup, _ := taken(); dup != nil {
				return dup, nil
			}
		}
		return nil, err
	}
	if err := c.checkQueued(ctx); err != nil {
		return fail(fmt.Errorf("fleet: submit %s: %w", m.ID, err))
	}
	// encoded as MarshalMission encodes it (its Version is set above)
	// into a pooled buffer: nats.go copies the message before
	// publishAcked returns
	buf := getPublishBuffer()
	defer putPublishBuffer(buf)
	if err := messages.MarshalTo(buf, m); err != nil {
		return fail(fmt.Errorf("fleet: submit %s: %w", m.ID, err))
	}
	data := buf.Bytes()
	var err error
	if len(data) > c.cfg.InlineContextBytes && len(m.Context) > 0 {
		// the context object of a mission a worker took is not replaced
		if taken != nil {
			switch dup, err := taken(); {
			case err != nil:
				return nil, err
			case dup != nil:
				return dup, nil
			}
		}
		if data, err = c.offloadContext(ctx, m); err != nil {
			return nil, err
		}
	}
	if limit := c.cfg.Store.withDefaults().MaxMissionBytes; len(data) > int(limit) {
		return fail(fmt.Errorf("fleet: submit %s: %w: mission is %d bytes, more than the %d allowed (large inputs belong in the context, which is stored aside)",
			m.ID, messages.ErrInvalid, len(data), limit))
	}
	hdr := newAckedHeader()
	msg := &nats.Msg{Subject: messages.SubmitSubject(c.sub, m.Priority, m.ID), Data: data, Header: hdr.h}
	for _, o := range opts {
		for k, v := range o.Header {
			msg.Header[k] = append([]string(nil), v...)
		}
	}
	if msg.Header.Get(messages.HeaderTraceParent) == "" {
		InjectTrace(ctx, msg.Header)
	}
	hdr.set(messages.HeaderMissionID, m.ID)
	hdr.set(jetstream.MsgIDHeader, m.ID)
	ack, err := publishAckedOn(ctx, c.nc, c.replies, msg)
	hdr.release()
	if err != nil {
		return fail(fmt.Errorf("fleet: submit %s: %w", m.ID, err))
	}
	if statusRead != nil {
		// The stream's answer says whether a copy was queued; a status
		// says the mission was taken before, whatever the answer (a copy
		// queued meanwhile is the worker's to drop). A status that cannot
		// be read changes nothing the answer says.
		if dup, _ := taken(); dup != nil && (ack.Duplicate || dup.Sequence != ack.Sequence) {
			return dup, nil
		}
	}
	sub.Duplicate = ack.Duplicate
	sub.Sequence = ack.Sequence
	sub.unread = !fresh && statusRead == nil
	if ack.Duplicate && !fresh {
		// The duplicate window is the stream's, not the submitter's: the
		// copy the queue kept is either this submitter's (submitted
		// meanwhile) or another's, which this submitter can never await.
		switch cur, err := c.status(ctx, m.ID); {
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("fleet: submit %s: %w: it was not queued; submit it under another id", m.ID, ErrIDTaken)
		case err != nil:
			return nil, fmt.Errorf("fleet: submit %s: %w", m.ID, err)
		case cur.StreamSeq != 0:
			sub.Sequence = cur.StreamSeq
		}
	}
	// The worker that claims the message records its stream sequence in the
	// status; a second copy (a resubmission beyond the dedupe window, read
	// before its first copy's status was stored) then finds another
	// sequence there and is dropped.
	return sub, nil
}

// sendStatusRead sends the direct get of mission k's status and returns
// what waits for its answer (getStatus's results). The request leaves the
// connection before anything the caller sends after it, so the server
// reads the status before it stores a submission published next. Without
// its own subscription for answers, it reads the status at once.
func (c *Client) sendStatusRead(ctx context.Context, k missionKey) *statusRead {
	return sendStatusRead(ctx, c.nc, c.st, c.replies, k)
}

// sendStatusRead sends the direct get of mission k's status on nc, its
// answer to replies, and returns what waits for that answer (its wait
// gives getStatus's results). Where st reads on another connection, or
// replies cannot subscribe, it reads the status at once. A direct get no
// replica answers (no responders, or no answer within patience) is read
// from the stream's leader then, as getStatus reads it: a later read is
// as good for both callers (a submitter tells its own copy's claim by its
// sequence, and a fence check wants the newest status anyway). The read
// and its call waiting on replies are one allocation, besides the call's
// channel and its reply subject.
func sendStatusRead(ctx context.Context, nc *nats.Conn, st *Stores, replies *replyMux, k missionKey) *statusRead {
	return sendFenceRead(ctx, nc, st, replies, k, nil)
}

// bareDirectGet is the body of a direct get that asks for the message
// without its headers (the stored ones and the server's Nats-*): the
// server writes none and nats.go parses none.
var bareDirectGet = []byte(`{"no_hdr":true}`)

// sendFenceRead is sendStatusRead for a worker's last fence check, held
// the status the worker last wrote (nil: none). An answer at held's
// revision is held, returned without decoding it (statusAtHeld). Where
// held kept the bytes it stored (casStatusKept), the read asks for the
// status without its headers, whose parsing would be most of its cost in
// the process: an answer of those very bytes is held (the status decoded
// from them would be held's), and any other answer (another writer's
// status, a delete marker) is read again with its headers and decoded,
// as sendStatusRead reads it.
func sendFenceRead(ctx context.Context, nc *nats.Conn, st *Stores, replies *replyMux, k missionKey, held *statusEntry) *statusRead {
	if st.nc != nc || replies == nil || replies.open() != nil {
		cur, err := getStatusAtHeld(ctx, st, k, held)
		return &statusRead{done: true, cur: cur, err: err}
	}
	r := &statusRead{call: liveCall{reply: make(chan *nats.Msg, 1)}, ctx: ctx, nc: nc, st: st, replies: replies, k: k, held: held}
	reply, token := replies.add(&r.call)
	request, subject := statusDirectGet(k)
	var body []byte
	if held != nil && held.data != nil {
		body = bareDirectGet
	}
	if err := nc.PublishRequest(request, reply, body); err != nil {
		replies.remove(token)
		r.done, r.err = true, fmt.Errorf("fleet: status %s: %w", k.id, err)
		return r
	}
	r.token, r.subject = token, subject
	return r
}

// statusRead is a status read sendStatusRead sent, or its answer when it
// was read at once or could not be sent (done).
type statusRead struct {
	call    liveCall // waits on replies for the direct get's answer
	ctx     context.Context
	nc      *nats.Conn
	st      *Stores
	replies *replyMux
	token   uint64
	k       missionKey
	subject string // the status's own subject
	// held, when set, is the status the reader last wrote: an answer at
	// its revision, or of the bytes it kept, is returned as held, not
	// decoded (sendFenceRead)
	held *statusEntry
	done bool
	cur  *statusEntry
	err  error
}

// wait returns the status the read gets; it is called once.
func (r *statusRead) wait() (*statusEntry, error) {
	if r.done {
		return r.cur, r.err
	}
	ctx, k := r.ctx, r.k
	// the wait is on a pooled timer rather than a context of its own
	t := getTimer()
	t.Reset(patience(ctx))
	select {
	case m := <-r.call.reply:
		r.replies.remove(r.token)
		putTimer(t)
		if r.held != nil && r.held.data != nil {
			// asked without headers (sendFenceRead)
			switch {
			case len(m.Data) > 0 && bytes.Equal(m.Data, r.held.data):
				return r.held, nil
			case len(m.Data) == 0 && m.Header.Get("Status") == "404":
				return nil, ErrNotFound
			case len(m.Data) == 0 && m.Header.Get("Status") == "503":
				// no replica answers: the leader is asked, below
			default:
				return getStatusAtHeld(ctx, r.st, k, r.held)
			}
		} else {
			data, rev, hdr, err := directAnswer(m, lastOn(r.subject))
			if !errors.Is(err, nats.ErrNoResponders) {
				return statusAtHeld(k, r.held, data, rev, hdr, err)
			}
		}
	case <-ctx.Done():
		r.replies.remove(r.token)
		putTimer(t)
		return nil, fmt.Errorf("fleet: status %s: %w", k.id, context.Cause(ctx))
	case <-t.C:
		r.replies.remove(r.token)
		putTimer(t)
	case <-r.replies.closed:
		// no answer comes: the leader's read below fails at once
		r.replies.remove(r.token)
		putTimer(t)
	}
	data, rev, hdr, _, err := leaderMsgWithin(ctx, r.nc, statusStream, lastOn(r.subject))
	return statusAtHeld(k, r.held, data, rev, hdr, err)
}

// statusDirectGetPrefix is what the subject of a direct get of a status
// holds before the status's own subject.
const statusDirectGetPrefix = "$JS.API.DIRECT.GET." + statusStream + "."

// statusDirectGet returns the subject of the direct get of mission k's
// status and, the end of it, the status's own subject
// (messages.StatusSubject): one string made, not two.
func statusDirectGet(k missionKey) (request, subject string) {
	request = statusDirectGetPrefix + "$KV." + messages.BucketStatus + "." + k.sub + "." + k.id
	return request, request[len(statusDirectGetPrefix):]
}

func (c *Client) offloadContext(ctx context.Context, m *messages.Mission) ([]byte, error) {
	blob, err := messages.Marshal(m.Context)
	if err != nil {
		return nil, fmt.Errorf("fleet: submit %s: context: %w", m.ID, err)
	}
	if limit := c.cfg.Store.contextLimit(m); int64(len(blob)) > limit {
		return nil, fmt.Errorf("fleet: submit %s: %w: context is %d bytes encoded, more than the %d allowed (the mission's limits.max_data, at most the operator's MaxContextBytes ceiling)",
			m.ID, messages.ErrInvalid, len(blob), limit)
	}
	ref := messages.ContextName(c.sub, m.ID)
	info, err := c.st.Context.Put(ctx, jetstream.ObjectMeta{Name: ref}, bytes.NewReader(blob))
	if err != nil {
		return nil, fmt.Errorf("fleet: submit %s: store context: %w", m.ID, err)
	}
	cp := *m
	cp.Context, cp.ContextRef, cp.ContextDigest = nil, ref, info.Digest
	data, err := messages.MarshalMission(&cp)
	if err != nil {
		return nil, fmt.Errorf("fleet: submit %s: %w", m.ID, err)
	}
	return data, nil
}

// Await blocks until mission id has a result and returns it. It subscribes to
// the result subject first and then reads the stored result, so a result
// published at any time is seen. It returns ctx.Err() when ctx ends first.
func (c *Client) Await(ctx context.Context, id string) (*messages.Step, error) {
	w, err := c.watchResult(id)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	return c.awaitOn(ctx, id, w, awaitUnsure, false, false)
}

// Re-reading a result: after a signal (a message on the result subject, a
// reconnection) or the subscription, the stored result is read again at
// awaitRetryFirst, doubling to awaitRetryMax. A message on the result
// subject reaches subscribers before the stream has stored it (the stream
// stores from a queue, later under load), and a result published just
// before the subscription may be stored only after the first read; so
// after a message the reads go on until the result is there, and after
// Await's subscription or a reconnection for awaitUnsure (Run subscribes
// before it submits: no result can precede its subscription). When Run
// has queued a new copy of its mission, nothing is read before a signal
// but once, at awaitUnsure (the stored result of an earlier copy whose
// status its submission missed), and, when its submission did not read
// the mission's status, once before that, at awaitUnread: the result of
// a mission a worker took before, whose copy is dropped unrun (claim),
// is read then, and a mission that ends sooner costs no read.
const (
	awaitRetryFirst = 5 * time.Millisecond
	awaitRetryMax   = time.Second
	awaitUnsure     = 5 * time.Second
	awaitUnread     = 100 * time.Millisecond
)

// resultWait is one wait for a mission's result: a subscription to its
// result subject whose messages and the connection's reconnections signal
// that the stored result is worth reading. Where the results stream
// republishes what it stores, it subscribes to the StoredResultSubject
// instead, whose one message is the stored result. The subscription
// delivers into msgs from the connection's read loop, with no goroutine
// of its own; a message that finds msgs full (more than resultSignals
// unread, from writers the stream rejected) is dropped, as the signals it
// would add are.
type resultWait struct {
	nc        *nats.Conn
	sub       *nats.Subscription
	msgs      chan *nats.Msg
	connected chan nats.Status
}

// resultSignals is how many messages on a result subject wait to be read:
// the result, and publishes of it that the stream rejects.
const resultSignals = 8

func (c *Client) watchResult(id string) (*resultWait, error) {
	if !messages.ValidMissionID(id) {
		return nil, fmt.Errorf("fleet: await: %w: mission id %q is not a ULID", messages.ErrInvalid, id)
	}
	w := &resultWait{nc: c.nc, msgs: make(chan *nats.Msg, resultSignals)}
	var subject string
	if c.republished {
		subject = messages.StoredResultSubject(c.readSub, id)
	} else {
		subject = messages.ResultSubject(c.readSub, id)
	}
	sub, err := c.nc.ChanSubscribe(subject, w.msgs)
	if err != nil {
		return nil, fmt.Errorf("fleet: await %s: %w", id, err)
	}
	w.sub = sub
	w.connected = c.nc.StatusChanged(nats.CONNECTED)
	return w, nil
}

func (w *resultWait) stop() {
	_ = w.sub.Unsubscribe()
	w.nc.RemoveStatusListener(w.connected)
}

func (c *Client) awaitOn(ctx context.Context, id string, w *resultWait, unsure time.Duration, queued, unread bool) (*messages.Step, error) {
	backoff := awaitRetryFirst
	unsureUntil := time.Now().Add(unsure)
	published := false
	var timer *time.Timer // the next read, made when one is due
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var late <-chan time.Time
	var lateTimer *time.Timer
	var lateAgain time.Duration // after the first late read, the wait for the second (0: none)
	if queued {
		// a pooled timer: every Run waits on one
		lateTimer = getTimer()
		if unread {
			lateTimer.Reset(awaitUnread)
			lateAgain = awaitUnsure - awaitUnread
		} else {
			lateTimer.Reset(awaitUnsure)
		}
		defer putTimer(lateTimer)
		late = lateTimer.C
	}
	for read := !queued; ; read = true {
		if read {
			step, err := readResult(ctx, c.st, c.key(id))
			if err == nil {
				return step, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
		}
		var retry <-chan time.Time
		if published || time.Now().Before(unsureUntil) {
			if timer == nil {
				timer = time.NewTimer(backoff)
			} else {
				timer.Reset(backoff)
			}
			retry = timer.C
			backoff = min(2*backoff, awaitRetryMax)
		}
		select {
		case <-late:
			if lateAgain > 0 {
				lateTimer.Reset(lateAgain)
				lateAgain = 0
			} else {
				late = nil
			}
		case m := <-w.msgs:
			if c.republished {
				// republished by the stream: the stored result itself
				if step, err := storedStep(ctx, c.st, id, m.Data); err == nil {
					return step, nil
				}
			}
			// Core subscribers of the result subject also see publishes
			// the stream rejected (a second writer's result), so a
			// message there is only a signal: the stored result is the
			// answer.
			published, backoff = true, awaitRetryFirst
		case <-w.connected:
			// A result published while the connection was down sent no
			// message here.
			unsureUntil, backoff = time.Now().Add(awaitUnsure), awaitRetryFirst
		case <-retry:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Run submits m and waits for its result: Submit then Await, subscribed
// before publishing.
func (c *Client) Run(ctx context.Context, m *messages.Mission, opts ...SubmitOptions) (*messages.Step, error) {
	if m == nil {
		return nil, fmt.Errorf("fleet: run: %w: nil mission", messages.ErrInvalid)
	}
	fresh := m.ID == ""
	if fresh {
		m.ID = messages.NewMissionID()
	}
	w, err := c.watchResult(m.ID)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	sub, err := c.submit(ctx, m, fresh, true, opts)
	if err != nil {
		return nil, err
	}
	// A new copy queued after the subscription: its result is signalled.
	return c.awaitOn(ctx, m.ID, w, 0, !sub.Duplicate, sub.unread)
}

// Result returns the stored result of mission id, or ErrNotFound when it
// has none yet.
func (c *Client) Result(ctx context.Context, id string) (*messages.Step, error) {
	if err := checkID("result", id); err != nil {
		return nil, err
	}
	return readResult(ctx, c.st, c.key(id))
}

// Status returns the status of mission id, or ErrNotFound. A mission no
// worker has taken yet has no stored status: it is read from the queue
// (state queued). A stored status that is not final is checked against
// the mission's stored result: a worker stores the result before it
// writes the final status, so a mission with a result is reported in
// the final state its result implies (settledStatus).
func (c *Client) Status(ctx context.Context, id string) (*messages.Status, error) {
	if err := checkID("status", id); err != nil {
		return nil, err
	}
	return c.settled(ctx, id)
}

// settled is status, with a stored status settled by the mission's
// stored result (settledStatus): what Status and List report.
func (c *Client) settled(ctx context.Context, id string) (*messages.Status, error) {
	st, stored, err := c.readStatus(ctx, id)
	if err != nil || !stored {
		return st, err
	}
	return c.settledStatus(ctx, st)
}

// status is the stored status of mission id, else its queued status, else
// ErrNotFound.
func (c *Client) status(ctx context.Context, id string) (*messages.Status, error) {
	st, _, err := c.readStatus(ctx, id)
	return st, err
}

// readStatus is status, also reporting whether the status is a stored
// one (false: read from the queue).
func (c *Client) readStatus(ctx context.Context, id string) (*messages.Status, bool, error) {
	e, err := getStatus(ctx, c.st, c.key(id))
	if err == nil {
		return &e.st, true, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	q, err := c.queued(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return q, false, err
	}
	// A worker may have taken it between the two reads.
	e, err = getStatus(ctx, c.st, c.key(id))
	if err != nil {
		return nil, false, err
	}
	return &e.st, true, nil
}

// settledStatus returns st, a stored status, as the mission's stored
// result settles it. A worker stores a mission's result and then writes
// its final status, so between the two (or for good, when the worker
// stopped between them or its write failed, until a later claim of the
// mission writes it) the status still says running, or any state before
// the result. A status that is not final therefore costs one direct get
// of the result (and, for a result too large for one message, the reads
// of its object); a final one costs none. With a result, the status is
// reported as the final write would make it: the state the result
// implies (stateOf), its failure reason and its replay counts, and
// UpdatedAt the time the result was stored (the write comes just after).
// Worker stays the one the status names: the final write names the
// worker that wrote it, which the result does not record.
func (c *Client) settledStatus(ctx context.Context, st *messages.Status) (*messages.Status, error) {
	if messages.TerminalState(st.State) {
		return st, nil
	}
	sub := st.Submitter
	if sub == "" {
		sub = c.key(st.MissionID).sub
	}
	raw, err := getMsgOn(ctx, c.st.nc, c.replies, c.st.Results, lastOn(messages.ResultSubject(sub, st.MissionID)))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("fleet: status %s: read its result: %w", st.MissionID, err)
	}
	step, err := storedStep(ctx, c.st, st.MissionID, raw.Data)
	if err != nil {
		return nil, fmt.Errorf("fleet: status %s: its stored result: %w", st.MissionID, err)
	}
	// The status was read before the result: what was written to it
	// before the result was stored (a cancel's request and reason, the
	// final state) is read again after it.
	if again, err := getStatus(ctx, c.st, missionKey{sub: sub, id: st.MissionID}); err == nil {
		if messages.TerminalState(again.st.State) {
			return &again.st, nil
		}
		st = &again.st
	}
	out := *st
	out.State, out.Replayed, out.UpdatedAt = stateOf(step), step.Replayed, raw.Time.UTC()
	if step.Fail != nil {
		out.Reason = step.Fail.Reason
	}
	return &out, nil
}

// queued returns the status of mission id while it waits in the queue
// with no status stored, from its message (a direct get of the last
// message on its submit subject), or ErrNotFound.
func (c *Client) queued(ctx context.Context, id string) (*messages.Status, error) {
	raw, err := queuedMsg(ctx, c.st.nc, c.st.Missions, c.readSub, id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", id, err)
	}
	sub, _, _, ok := messages.ParseSubmitSubject(raw.Subject)
	if !ok {
		return nil, fmt.Errorf("fleet: status %s: queued on %q, not a submit subject", id, raw.Subject)
	}
	st := &messages.Status{Version: messages.StatusVersion, MissionID: id, Submitter: sub, State: messages.StateQueued,
		StreamSeq: raw.Sequence, UpdatedAt: raw.Time.UTC()}
	if m, err := decodeMission(raw.Header.Get(messages.HeaderContentType), raw.Data); err == nil {
		st.Summary = messages.Summarize(m)
	}
	return st, nil
}

// Cancel asks the fleet to cancel mission id and waits for its answer: a
// worker marks a queued mission cancelled and stores its cancelled Step
// (a worker that fetches it later skips it); a running one gets its
// cancel flag set, and its worker stops it and stores the cancelled Step.
// Cancelling a finished mission does nothing and returns nil. A client
// stores nothing itself, so with no worker running the cancel fails
// (ErrNoWorker). With AllSubmitters it may cancel any submitter's
// mission its NATS user is granted; else only its own.
func (c *Client) Cancel(ctx context.Context, id, reason string) error {
	if err := checkID("cancel", id); err != nil {
		return err
	}
	if reason == "" {
		reason = "cancelled by caller"
	}
	// An unknown or finished mission needs no worker.
	st, err := c.status(ctx, id)
	if err != nil {
		return fmt.Errorf("fleet: cancel %s: %w", id, err)
	}
	if messages.TerminalState(st.State) {
		return nil
	}
	owner := c.sub
	if c.cfg.AllSubmitters {
		owner = st.Submitter
	}
	data, err := messages.Marshal(&messages.Cancel{Version: messages.CancelVersion, MissionID: id, Reason: reason, RequestedAt: time.Now().UTC()})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.CancelWait)
	defer cancel()
	reply, err := c.requestCancel(rctx, messages.CancelSubject(owner, id), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("fleet: cancel %s: %w", id, ErrNoWorker)
	case err != nil && ctx.Err() == nil && rctx.Err() != nil:
		return fmt.Errorf("fleet: cancel %s: no answer from the fleet within %s: %w", id, c.cfg.CancelWait, err)
	case err != nil:
		return fmt.Errorf("fleet: cancel %s: %w", id, err)
	}
	if e := reply.Header.Get(messages.HeaderError); e != "" {
		if code, msg, _ := strings.Cut(e, ": "); code == messages.ErrCodeNotFound {
			return fmt.Errorf("fleet: cancel %s: %w: %s", id, ErrNotFound, msg)
		}
		return fmt.Errorf("fleet: cancel %s: %s", id, e)
	}
	return nil
}

// cancelSends is how many times Client.Cancel sends a cancel request that
// gets no answer, spread evenly over ClientConfig.CancelWait. The server
// gives each request to one member of the queue group messages.CancelQueue,
// picked at random, and a member may be dead without the server knowing
// yet (a worker whose host lost power or its network stays a member until
// it misses the server's pings, minutes later): a request it got is never
// answered, so it is sent again. A worker that gets a cancel already
// carried out changes nothing but sends the stop again (onCancelRequest).
const cancelSends = 4

// requestCancel sends the cancel request data on subject and returns the
// first answer, sending the request again (up to cancelSends times in all)
// each CancelWait/cancelSends that none came; every request sent stays
// open until ctx ends, so a slow worker's answer counts too. Its error is
// the first request's that ended otherwise than with an answer: ctx's end,
// nats.ErrNoResponders (no worker subscribed), a closed connection.
func (c *Client) requestCancel(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	type answer struct {
		msg *nats.Msg
		err error
	}
	answers := make(chan answer, cancelSends) // every request's, so none blocks once this returns
	send := func() {
		msg, err := c.nc.RequestWithContext(ctx, subject, data)
		answers <- answer{msg, err}
	}
	go send()
	resend := time.NewTicker(max(c.cfg.CancelWait/cancelSends, time.Millisecond))
	defer resend.Stop()
	for sent := 1; ; {
		select {
		case a := <-answers:
			return a.msg, a.err
		case <-resend.C:
			if sent < cancelSends {
				sent++
				go send()
			}
		}
	}
}

// Watch calls fn with every progress event of mission id, in order, from the
// first one stored, until the final event (returns nil), fn returns an error
// (returned), or ctx ends (ctx.Err()). Events are kept for
// StoreConfig.EventTTL.
//
// Watch creates no consumer: it reads the stored events one by one
// (eventReader) and, when it has read them all, waits for the next one to
// be published on the mission's event subjects (or watchPoll, should that
// signal be lost to a reconnect). A published event reaches Watch as the
// stream stores it, maybe a little before: until the events a publish
// announced (its subject numbers them) are read, Watch reads again after
// watchReread, doubling up to watchPoll. A submitter's NATS user therefore
// needs no right to create consumers on EVENTS, which would let it make
// JetStream copy the stream into subjects it may not publish to.
func (c *Client) Watch(ctx context.Context, id string, fn func(*messages.Event) error) error {
	if !messages.ValidMissionID(id) {
		return fmt.Errorf("fleet: watch: %w: mission id %q is not a ULID", messages.ErrInvalid, id)
	}
	signal := make(chan struct{}, 1)
	// announced is the number of the last event published since Watch
	// subscribed
	var announced atomic.Uint64
	sub, err := c.nc.Subscribe(messages.EventFilter(c.readSub, id), func(msg *nats.Msg) {
		if _, _, n, count, ok := messages.ParseEventSubject(msg.Subject); ok {
			for last := n + count - 1; ; {
				cur := announced.Load()
				if last <= cur || announced.CompareAndSwap(cur, last) {
					break
				}
			}
		}
		select {
		case signal <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return fmt.Errorf("fleet: watch %s: %w", id, err)
	}
	defer sub.Unsubscribe()
	// Subscribed before the first read: an event stored after it signals.
	if err := flush(ctx, c.nc); err != nil {
		return fmt.Errorf("fleet: watch %s: %w", id, err)
	}
	poll := time.NewTicker(watchPoll)
	defer poll.Stop()
	r := newEventReader(c.st.nc, c.st.Events, c.key(id))
	reread := watchReread
	rereads := time.NewTimer(reread)
	rereads.Stop()
	defer rereads.Stop()
	for {
		for {
			ev, err := r.next(ctx)
			if errors.Is(err, ErrNotFound) {
				break
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("fleet: watch %s: %w", id, err)
			}
			if err := fn(ev); err != nil {
				return err
			}
			if ev.Kind == messages.EventFinal {
				return nil
			}
		}
		var again <-chan time.Time
		if r.n <= announced.Load() {
			// published, not stored yet (or lost: then the poll's pace)
			rereads.Reset(reread)
			again, reread = rereads.C, min(2*reread, watchPoll)
		} else {
			reread = watchReread
		}
		select {
		case <-signal:
		case <-again:
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watchPoll is how often Watch reads the stored events when no new one was
// signalled.
const watchPoll = time.Second

// watchReread is how soon Watch reads again when an event it was told of
// is not stored yet.
const watchReread = 2 * time.Millisecond

// eventReader reads the stored events of one mission in order, by number:
// the n-th is the last message on its subject (a direct get; a reader's
// NATS user may be confined to its own submitter's subjects), never through
// a consumer. A message may carry several events numbered from its own
// (messages.EventBatchSubject); the reader then goes on after its last.
// A number still missing once a later one is stored (an event lost on its
// way) is skipped.
type eventReader struct {
	nc     *nats.Conn
	events jetstream.Stream
	k      missionKey
	n      uint64 // the next number to read
	// read holds the events of the last batch read not returned yet
	read []*messages.Event
}

func newEventReader(nc *nats.Conn, events jetstream.Stream, k missionKey) *eventReader {
	return &eventReader{nc: nc, events: events, k: k, n: 1}
}

// next returns the next stored event, ErrNotFound when none is stored yet.
// Messages that are no valid event of the mission are skipped.
func (r *eventReader) next(ctx context.Context) (*messages.Event, error) {
	for {
		for len(r.read) > 0 {
			ev := r.read[0]
			r.read[0] = nil
			r.read = r.read[1:]
			if ev != nil && ev.MissionID == r.k.id {
				return ev, nil
			}
		}
		msg, err := r.get(ctx)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			last, lerr := lastEventNumber(ctx, r.nc, r.events, r.k)
			if lerr != nil {
				return nil, lerr
			}
			if last <= r.n {
				return nil, ErrNotFound
			}
			// A mission's events are stored in number order, so with a
			// later one stored this one is too unless it was lost: it may
			// have been stored between the two reads above.
			if msg, err = r.get(ctx); errors.Is(err, jetstream.ErrMsgNotFound) {
				r.n++ // lost: the mission has later events
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		_, _, n, count, ok := messages.ParseEventSubject(msg.Subject)
		if !ok || n != r.n {
			r.n++
			continue
		}
		r.n += count
		if count > 1 {
			r.read, _ = messages.DecodeEventBatch(msg.Data, int(count))
			continue
		}
		var ev messages.Event
		if messages.Unmarshal(msg.Data, &ev) != nil || ev.Validate() != nil || ev.MissionID != r.k.id {
			continue
		}
		return &ev, nil
	}
}

// get reads the message stored for event number r.n (getMsg: from the
// stream's leader when no replica answers).
func (r *eventReader) get(ctx context.Context) (*jetstream.RawStreamMsg, error) {
	return getMsg(ctx, r.nc, r.events, lastOn(messages.EventNumberFilter(r.k.sub, r.k.id, r.n)))
}

// lastEventNumber is the number of the last stored event of mission k in
// events (read on nc: getMsg), 0 when it has none.
func lastEventNumber(ctx context.Context, nc *nats.Conn, events jetstream.Stream, k missionKey) (uint64, error) {
	msg, err := getMsg(ctx, nc, events, lastOn(messages.EventFilter(k.sub, k.id)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	_, _, n, count, ok := messages.ParseEventSubject(msg.Subject)
	if !ok {
		return 0, fmt.Errorf("fleet: event of %s on %q, not an event subject", k.id, msg.Subject)
	}
	return n + count - 1, nil
}

func checkID(op, id string) error {
	if !messages.ValidMissionID(id) {
		return fmt.Errorf("fleet: %s: %w: mission id %q is not a ULID", op, messages.ErrInvalid, id)
	}
	return nil
}

// Stores returns the client's stream and bucket handles.
func (c *Client) Stores() *Stores { return c.st }
