package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Journal is the turn journal of one mission: every model reply and every
// tool result the mission's runs received, recorded in the JOURNAL stream
// (subject mission.journal.<id>) before any call that depends on it leaves
// the worker (Record, then Flush); the answers a stored result follows are
// dropped unwritten, since the result supersedes them. A redelivered
// mission loads the journal its earlier attempts wrote and replays it: a
// model request or tool call whose answer is recorded gets the recorded
// answer, with no model call and no tool call, so the run continues from
// where the dead worker was at no cost.
//
// Entries are keyed by content, not by position: "<kind>/<scope>/<digest>"
// plus an occurrence number, where the digest covers everything the answer
// depends on (the whole model request; the tool's name and arguments). A
// program is deterministic given its inputs and the answers it gets, so a
// replay asks the same questions in the same order; concurrent tool calls
// (pmap) may be issued in another order, which content keys make harmless.
// See docs/fleet.md for what is and is not deterministic.
//
// A nil *Journal journals nothing (every method is a no-op), which is what
// runners see when journaling is off. A Journal is safe for concurrent
// use.
type Journal struct {
	js        jetstream.JetStream
	missionID string
	subject   string

	// broken is set once a write failed for journalWriteWait: later
	// writes of this run are skipped (the run goes on unjournaled rather
	// than waiting on every answer).
	broken    atomic.Bool
	writeWait time.Duration // journalWriteWait unless a test shortens it

	linger time.Duration // journalLinger unless a test changes it

	// reuseHeaders: js has no asynchronous ack handler (it is the
	// worker's own, openJournal), which would be handed a write's message
	// after its ack; so a write's header goes back to its pool once
	// acknowledged
	reuseHeaders bool

	// replies, when set (acksOn), takes the acknowledgements of the
	// journal's writes, published on its connection with a reply subject
	// of its own (journalAck), instead of js's asynchronous publishes.
	replies *replyMux

	flushMu sync.Mutex // serializes Flush

	mu       sync.Mutex
	unsent   []journalEntry    // recorded, not yet published
	timer    *flushTimer       // publishes unsent entries after linger
	armed    bool              // timer is running
	settled  bool              // the result is stored: nothing more is written
	wrote    bool              // an entry was published
	pending  []pendingWrite    // published, not yet known acknowledged
	recorded map[string][]byte // earlier attempts' entries by full key
	// the next occurrence per base key: the first bases' in nextFew
	// (a mission's run mostly records a model reply and a tool result),
	// the others' in next
	nextFew  [2]nextOccurrence
	next     map[string]int
	replayed messages.Replayed
	lastSeq  uint64 // the highest JOURNAL sequence read or acknowledged
	// read are the JOURNAL sequences of the messages earlier runs wrote
	// that this run read, while there are at most maxJournalDeletes;
	// readMore is set when there were more
	read     []uint64
	readMore bool
}

// maxJournalDeletes bounds the messages earlier runs wrote that a finished
// mission's run removes one by one, by sequence (Worker.purgeJournal).
const maxJournalDeletes = 8

// journalEntry is one recorded answer under its full key.
type journalEntry struct {
	Key  string `msgpack:"k"`
	Data []byte `msgpack:"d"`
}

// journalLinger is how long a recorded answer waits for a Flush before it
// is published anyway: an answer followed by the mission's result within
// it is never written (the stored result makes it moot), and one the loop
// computes with for longer is durable without waiting for the next call.
const journalLinger = 50 * time.Millisecond

// journalReadWait bounds the wait for one batch of journal entries.
const journalReadWait = 5 * time.Second

// maxJournalEntries bounds the messages one mission's journal is read
// back with; entries beyond them are not replayed (their work is done
// again).
const maxJournalEntries = 100_000

// journalConsumerIdle is the inactivity threshold of the consumer a run
// reads its journal with: the server removes one its reader did not
// delete (the worker died while reading).
const journalConsumerIdle = time.Minute

// journalGets is how many messages of a mission's journal are read one
// message get each before the rest is read with a consumer: a resumed or
// redelivered run's journal is most often one or two messages, for
// which a consumer's creation, fetch and deletion cost more.
const journalGets = 4

// openJournal returns mission id's journal. With replay (a redelivery, or
// a mission resumed after a suspension) it reads the entries earlier runs
// wrote from the JOURNAL stream (journalMsg, then readFrom). upTo, when not 0, is the
// sequence of the journal's last message (the status's JournalSeq of a
// mission taken from awaiting_approval): the read stops there instead of
// asking for a message after it. Every read is answered by the
// stream's leader, so it holds every entry whose write was acknowledged.
func openJournal(ctx context.Context, js jetstream.JetStream, id string, replay bool, upTo uint64) (*Journal, error) {
	return openJournalOn(ctx, js, nil, id, replay, upTo, false)
}

// openJournalOn is openJournal reading the first messages with their
// requests on replies when it is js's connection's reply mux (journalMsg).
// With direct (JOURNAL allows direct gets) and upTo, the messages up to
// upTo are read with direct gets, which cost about half the CPU and
// less than half the allocations of the JetStream API's message get
// (BenchmarkJournalRead). Any replica may answer a direct get. A replica
// applies the stream's messages in order, so one that answers with a
// message gives the one the leader would; one behind the leader answers
// that there is no next message, and such an answer below upTo, where
// the status names one, is asked of the leader again. Without upTo (a
// redelivery, whose journal's end nobody names) every read is the
// leader's.
func openJournalOn(ctx context.Context, js jetstream.JetStream, replies *replyMux, id string, replay bool, upTo uint64, direct bool) (*Journal, error) {
	j := NewJournal(js, id)
	j.reuseHeaders = true
	if !replay {
		return j, nil
	}
	// The first messages one get each: the next message on the
	// mission's subject, until there is none.
	seq := uint64(1)
	for range journalGets {
		var hdr nats.Header
		var data []byte
		var got uint64
		var err error
		named := direct && upTo != 0 && seq <= upTo
		if named {
			data, got, hdr, err = directMsg(ctx, js.Conn(), replies, messages.StreamJournal, atSeq(seq, j.subject))
		}
		if !named || errors.Is(err, jetstream.ErrMsgNotFound) {
			hdr, data, got, err = journalMsg(ctx, js.Conn(), replies, j.subject, seq)
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return j, nil
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: journal %s: %w", id, err)
		}
		j.load(hdr, data)
		j.readSeq(got)
		if upTo != 0 && got >= upTo {
			return j, nil
		}
		seq = got + 1
	}
	return j, j.readFrom(ctx, js, seq, maxJournalEntries-journalGets)
}

// readFrom reads the rest of a long journal, from stream sequence seq on
// and at most limit messages, with one ephemeral consumer: its creation
// answers how many messages there are, fetches read them.
func (j *Journal) readFrom(ctx context.Context, js jetstream.JetStream, seq uint64, limit int) error {
	cons, err := js.CreateConsumer(ctx, messages.StreamJournal, jetstream.ConsumerConfig{
		Name:          fmt.Sprintf("journal_%016x", rand.Uint64()),
		FilterSubject: j.subject, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq,
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, Replicas: 1, InactiveThreshold: journalConsumerIdle,
	})
	if err != nil {
		return fmt.Errorf("fleet: journal %s: %w", j.missionID, err)
	}
	// The consumer is deleted once read: left to its inactivity
	// threshold, the consumers of missions resumed or redelivered at once
	// would reach the stream's consumer limit.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalReadWait)
		defer cancel()
		_ = js.DeleteConsumer(dctx, messages.StreamJournal, cons.CachedInfo().Name)
	}()
	pending := min(int(cons.CachedInfo().NumPending), limit)
	for got := 0; got < pending; {
		batch, err := cons.Fetch(min(pending-got, 512), jetstream.FetchMaxWait(journalReadWait))
		if err != nil {
			return fmt.Errorf("fleet: journal %s: %w", j.missionID, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			j.load(msg.Headers(), msg.Data())
			if meta, err := msg.Metadata(); err == nil {
				j.readSeq(meta.Sequence.Stream)
			} else {
				j.readSeq(0)
			}
		}
		if n == 0 {
			if err := batch.Error(); err != nil {
				return fmt.Errorf("fleet: journal %s: %w", j.missionID, err)
			}
			return fmt.Errorf("fleet: journal %s: %d of %d messages read", j.missionID, got, pending)
		}
		got += n
	}
	return nil
}

// saw notes seq, the JOURNAL sequence of a message of the journal read or
// written.
func (j *Journal) saw(seq uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastSeq = max(j.lastSeq, seq)
}

// readSeq notes seq, the JOURNAL sequence of a message earlier runs wrote
// that this run read (0: one whose sequence is unknown), as saw does and
// among the messages a finished mission's run removes by sequence.
func (j *Journal) readSeq(seq uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastSeq = max(j.lastSeq, seq)
	if seq == 0 || len(j.read) == maxJournalDeletes {
		j.readMore = true
		return
	}
	j.read = append(j.read, seq)
}

// earlier returns the JOURNAL sequences of the messages earlier runs
// wrote, as this run read them (the journal's own slice, complete once
// it is open); false when it read more than maxJournalDeletes or one of
// unknown sequence.
func (j *Journal) earlier() ([]uint64, bool) {
	if j == nil {
		return nil, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.read, !j.readMore
}

// wroteAny reports whether this run published a journal write.
func (j *Journal) wroteAny() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.wrote
}

// lastWritten returns the JOURNAL sequence of the journal's last message
// this run read or wrote, once every write is acknowledged (after a
// Flush): false when a write failed or is unacknowledged, or the journal
// holds no message this run knows of.
func (j *Journal) lastWritten() (uint64, bool) {
	if j == nil || j.broken.Load() {
		return 0, false
	}
	j.flushMu.Lock() // no Flush is awaiting a write
	defer j.flushMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.unsent) > 0 || len(j.pending) > 0 || j.lastSeq == 0 {
		return 0, false
	}
	return j.lastSeq, true
}

// load adds the entries of one JOURNAL message: one entry named by its
// Ptc-Journal-Key header, or a batch (Ptc-Journal-Batch) whose body lists
// its entries. An undecodable batch adds nothing: its answers are obtained
// again.
func (j *Journal) load(hdr nats.Header, data []byte) {
	if k := hdr.Get(messages.HeaderJournalKey); k != "" {
		j.record(k, data)
		return
	}
	if hdr.Get(messages.HeaderJournalBatch) == "" {
		return
	}
	var entries []journalEntry
	if messages.Unmarshal(data, &entries) != nil {
		return
	}
	for _, e := range entries {
		if e.Key != "" {
			j.record(e.Key, e.Data)
		}
	}
}

// record keeps an earlier attempt's answer under its full key; the map is
// made for the first, so that a journal with nothing to replay (every
// first attempt) holds none while its run waits.
func (j *Journal) record(key string, data []byte) {
	if j.recorded == nil {
		j.recorded = map[string][]byte{}
	}
	j.recorded[key] = data
}

// NewJournal returns an empty journal of mission id that records through
// js (on the mission's subject of the JOURNAL stream) and has nothing to
// replay: a runner run outside a worker, or its test, journals with it. A
// worker opens the journal of each run itself (RunEnv.Journal).
func NewJournal(js jetstream.JetStream, id string) *Journal {
	return &Journal{js: js, missionID: id, subject: messages.JournalSubject(id)}
}

// Entries returns the number of entries earlier attempts recorded.
func (j *Journal) Entries() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.recorded)
}

// Replay returns the recorded answer to the next occurrence of base (a
// key built with ModelKey or ToolKey), if an earlier attempt recorded it,
// and counts it as replayed. ok is false when the answer must be obtained
// (and then recorded with Record).
func (j *Journal) Replay(base string) (data []byte, ok bool) {
	if j == nil {
		return nil, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.recorded) == 0 {
		return nil, false // nothing to replay: no key to build
	}
	k := j.nextOf(base)
	data, ok = j.recorded[base+"#"+strconv.Itoa(k)]
	if !ok {
		return nil, false
	}
	j.countNext(base, k)
	if strings.HasPrefix(base, journalModel) {
		j.replayed.ModelCalls++
	} else {
		j.replayed.ToolCalls++
	}
	return data, true
}

// nextOccurrence is the next occurrence of a base key (its base "": none).
type nextOccurrence struct {
	base string
	k    int
}

// nextOf returns the next occurrence of base: 0 for one never replayed
// or recorded.
func (j *Journal) nextOf(base string) int {
	for _, o := range j.nextFew {
		if o.base == base && base != "" {
			return o.k
		}
	}
	return j.next[base]
}

// countNext notes that occurrence k of base was replayed or recorded: in
// nextFew while it has room, else in the map, made then.
func (j *Journal) countNext(base string, k int) {
	if base != "" {
		// the slots fill in order: an empty one ends those in use
		for i := range j.nextFew {
			o := &j.nextFew[i]
			if o.base == base {
				o.k = k + 1
				return
			}
			if o.base == "" {
				if _, inMap := j.next[base]; !inMap {
					o.base, o.k = base, k+1
					return
				}
				break
			}
		}
	}
	if j.next == nil {
		j.next = map[string]int{}
	}
	j.next[base] = k + 1
}

// journalWriteWait bounds the wait for and the retries of one journal
// write.
const journalWriteWait = 5 * time.Second

// journalAckWait bounds the wait for the acknowledgement of an
// asynchronous journal write before it is published again: an ack lost to
// a disconnect is not waited for until journalWriteWait.
const journalAckWait = time.Second

// pendingWrite is a journal write published asynchronously and not yet
// known to be acknowledged.
type pendingWrite struct {
	msg *nats.Msg
	fut jetstream.PubAckFuture // nil: the asynchronous publish was refused
	ack *journalAck            // the acknowledgement, published with replies (nil: with js, or refused)
	hdr *ackedHeader           // msg's header, released once the write is acknowledged
}

// journalAck takes the answer to one write a journal published on its
// replyMux's connection (acksOn): the stream's acknowledgement, or a
// no-responders status. It unregisters itself when the answer comes (a
// stream answers a publish once), and the wait for it unregisters it when
// it gives up.
type journalAck struct {
	answer  chan *nats.Msg
	replies *replyMux
	token   uint64
}

func (a *journalAck) handle(msg *nats.Msg) {
	select {
	case a.answer <- msg:
	default:
	}
	a.replies.remove(a.token)
}

// acksOn makes j publish its writes on replies' connection (which must be
// js's) and take their acknowledgements on replies: a write then costs
// its reply subject and one answer channel, where js's asynchronous
// publish made its future, its options, its reply subject and the
// future's two channels. A write whose publish fails, or whose answer is
// not an acknowledgement, is published again as before (await).
func (j *Journal) acksOn(replies *replyMux) {
	if j == nil || replies == nil || replies.open() != nil {
		return
	}
	j.mu.Lock()
	j.replies = replies
	j.mu.Unlock()
}

// Record stores data as the answer to the next occurrence of base. It
// returns at once: the entry is published by the next Flush, or after
// journalLinger if no Flush comes first, and is acknowledged only once
// Flush returns nil. The caller must call Flush before anything that
// depends on the answer leaves the process (the next model call, the next
// tool call, a hand-back); the Toolbox, the agentrun model wrapper and
// the worker do. An error means the entry will not be written (the
// journal stopped writing after an earlier failure).
func (j *Journal) Record(ctx context.Context, base string, data []byte) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	k := j.nextOf(base)
	j.countNext(base, k)
	if j.broken.Load() {
		return fmt.Errorf("fleet: journal %s: not written (an earlier write failed)", j.missionID)
	}
	if j.settled {
		return nil
	}
	j.unsent = append(j.unsent, journalEntry{Key: base + "#" + strconv.Itoa(k), Data: data})
	if !j.armed {
		j.armed = true
		linger := j.linger
		if linger <= 0 {
			linger = journalLinger
		}
		if j.timer == nil {
			j.timer = startFlushTimer(j, linger)
		} else {
			j.timer.reset(linger)
		}
	}
	return nil
}

// Push publishes the entries recorded and not yet published, as Flush
// does, without waiting for their acknowledgement: for an answer that is
// costly to lose and that an outside call nearly always follows (a model
// reply), so that its write travels while the loop computes with it.
// Flush still must be called before anything that depends on it leaves.
func (j *Journal) Push() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.publishLocked()
}

func (j *Journal) timerFired() { j.lingered() }

// lingered publishes the entries no Flush took within journalLinger.
func (j *Journal) lingered() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.armed = false
	j.publishLocked()
}

// publishLocked publishes the unsent entries asynchronously, as one
// message (a batch when there are several), and adds the write to
// pending. j.mu is held, so a Flush sees every write published before it.
func (j *Journal) publishLocked() {
	if len(j.unsent) == 0 || j.settled {
		return
	}
	// The subject names the mission; no Msg-Id: a write published again
	// after a lost ack may land twice, as identical entries under the same
	// keys, and the reader keeps one (which spares the stream a duplicate
	// check per message).
	// the header goes back to its pool once the write is known
	// acknowledged (await, with reuseHeaders); one never awaited is left
	// to the collector
	hdr := newAckedHeader()
	msg := &nats.Msg{Subject: j.subject, Header: hdr.h}
	if len(j.unsent) == 1 {
		hdr.set(messages.HeaderJournalKey, j.unsent[0].Key)
		msg.Data = j.unsent[0].Data
	} else {
		data, err := messages.Marshal(j.unsent)
		if err != nil {
			hdr.release()
			j.broken.Store(true)
			j.unsent = nil
			return
		}
		hdr.set(messages.HeaderJournalBatch, strconv.Itoa(len(j.unsent)))
		msg.Data = data
	}
	// the message holds the entries' data, not the slice: the next
	// Record reuses its array (a mission records a model reply, then a
	// tool result, each published before the next)
	clear(j.unsent)
	j.unsent = j.unsent[:0]
	j.wrote = true
	w := pendingWrite{msg: msg}
	if j.reuseHeaders {
		w.hdr = hdr
	}
	if j.replies != nil {
		a := &journalAck{answer: make(chan *nats.Msg, 1), replies: j.replies}
		msg.Reply, a.token = j.replies.add(a)
		err := j.replies.nc.PublishMsg(msg)
		msg.Reply = "" // a write published again gets an acknowledgement of its own
		if err == nil {
			w.ack = a
		} else {
			j.replies.remove(a.token)
		}
	} else if fut, err := j.js.PublishMsgAsync(msg); err == nil {
		w.fut = fut
	}
	j.pending = append(j.pending, w)
}

// settle ends the journal once the mission's result is stored: entries
// not yet published are dropped (nothing can depend on them any more) and
// nothing more is written. Writes in flight complete on their own.
func (j *Journal) settle() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.settled = true
	j.unsent = nil
	j.pending = nil
	if j.timer != nil {
		j.timer.release()
		j.timer = nil
	}
}

// holds reports whether the mission's journal may hold entries: this run
// published some, or read some an earlier attempt wrote.
func (j *Journal) holds() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.wrote || len(j.recorded) > 0
}

// rollUpJournal removes mission id's journal once its result is stored: a
// marker message with Nats-Rollup: sub replaces every message on the
// mission's journal subject (the JOURNAL stream allows rollups), so a
// finished mission's journal costs one empty marker until the stream's
// MaxAge. Entries published before it on the same connection reach the
// stream first and are removed with the rest.
func rollUpJournal(nc *nats.Conn, j *Journal, id string) error {
	subject := messages.JournalSubject(id)
	if j != nil {
		subject = j.subject // the same, made when the journal was
	}
	// nats.go encodes the header before the publish returns and keeps
	// nothing of it: a pooled one serves
	hdr := newAckedHeader()
	hdr.set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	err := nc.PublishMsg(&nats.Msg{Subject: subject, Header: hdr.h})
	hdr.release()
	return err
}

// purgeJournal removes mission id's journal once its result is stored. A
// rollup (rollUpJournal) makes the stream scan every message it stored
// between the subject's first message and the marker, in the blocks that
// hold both: for a mission resumed after others wrote much meanwhile (a
// thousand resumed at once), most of a block for each. So the messages
// earlier runs wrote, which this run read and knows the sequences of,
// are removed by sequence first, a lookup each, and a run that wrote
// nothing needs no rollup and leaves no marker. A run that wrote is
// rolled up still (its writes may be in flight: the marker is published
// after them on the same connection); where its writes share a block
// with the messages removed, the stream finds the subject's new first
// message by scanning forward from the removed one, so that rollup still
// scans what the fleet journaled meanwhile in that block. A journal
// read in more than maxJournalDeletes messages, a delete that fails other
// than for a message already gone, and no journal in hand are left to
// the rollup alone.
//
// A worker whose NATS user may not make that delete (a configuration from
// before the worker role held it) waits once for the refused request's
// answer, logs it and rolls journals up from then on.
func (w *Worker) purgeJournal(ctx context.Context, j *Journal, id string) error {
	read, ok := j.earlier()
	if !ok || w.journalDeletesRefused.Load() {
		return rollUpJournal(w.nc, j, id)
	}
	for _, seq := range read {
		if err := deleteMsgOn(ctx, w.nc, w.replies, messages.StreamJournal, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			if publishRefused(w.nc, journalDeleteSubject) && !w.journalDeletesRefused.Swap(true) {
				w.log.Warn().Err(w.nc.LastError()).Msg("this worker's NATS user may not remove journal messages by sequence (" + journalDeleteSubject + "): finished journals are rolled up only, which costs the server a scan of what other missions journaled meanwhile; give the worker role that right (the shipped NATS configuration does)")
			} else {
				w.log.Debug().Err(err).Str("mission_id", id).Msg("journal message not removed by its sequence; rolling the journal up")
			}
			return rollUpJournal(w.nc, j, id)
		}
	}
	if j.wroteAny() {
		return rollUpJournal(w.nc, j, id)
	}
	return nil
}

// journalDeleteSubject is the JetStream API subject a worker removes a
// journal message by sequence on.
const journalDeleteSubject = msgDeleteAPI + messages.StreamJournal

// publishRefused reports whether nc's last error is the server's refusal of a
// publish on subject as a permissions violation (which answers no
// request: the request runs out of time).
func publishRefused(nc *nats.Conn, subject string) bool {
	err := nc.LastError()
	return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`)
}

// Flush publishes the entries recorded and not yet published, as one
// message, and returns once every entry recorded so far is acknowledged by
// JetStream. A write that failed or whose ack does not come within
// journalAckWait is published again with backoff, for up to
// journalWriteWait in all and never past ctx; if one still fails, Flush
// returns the error and the journal stops writing for the rest of the run
// (the caller goes on: the work is only done again if this attempt dies
// too). Concurrent Flushes are serialized, so none returns while a write
// recorded before it was called is still unacknowledged.
func (j *Journal) Flush(ctx context.Context) error {
	if j == nil {
		return nil
	}
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	j.mu.Lock()
	j.publishLocked()
	pending := j.pending
	j.pending = nil
	j.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	wait := j.writeWait
	if wait <= 0 {
		wait = journalWriteWait
	}
	deadline := time.Now().Add(wait)
	var first error
	for _, w := range pending {
		if err := j.await(ctx, deadline, w); err != nil && first == nil {
			j.broken.Store(true)
			first = fmt.Errorf("fleet: journal %s: %w", j.missionID, err)
		}
	}
	return first
}

// Pending returns the number of journal writes not yet known to be
// acknowledged, counting the recorded entries not yet published as one
// (Flush publishes and waits for them).
func (j *Journal) Pending() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.pending)
	if len(j.unsent) > 0 {
		n++
	}
	return n
}

// await waits for w's ack until deadline, publishing it again
// synchronously when the asynchronous publish failed or its ack is late.
// An ack that comes in time (the common case) costs no context: only a
// write published again waits under a context with the deadline.
func (j *Journal) await(ctx context.Context, deadline time.Time, w pendingWrite) error {
	if w.ack != nil {
		t := getTimer()
		t.Reset(max(min(journalAckWait, time.Until(deadline)), 0))
		select {
		case msg := <-w.ack.answer:
			putTimer(t)
			if ack, err := publishAck(msg.Data); err == nil {
				j.saw(ack.Sequence)
				w.hdr.release()
				return nil
			}
			// a refusal or no stream: published again below
		case <-t.C:
			putTimer(t)
			w.ack.replies.remove(w.ack.token)
		case <-w.ack.replies.closed:
			// no ack comes: published again below, which fails at once
			putTimer(t)
			w.ack.replies.remove(w.ack.token)
		case <-ctx.Done():
			putTimer(t)
			w.ack.replies.remove(w.ack.token)
			return context.Cause(ctx)
		}
		if !time.Now().Before(deadline) {
			return context.DeadlineExceeded
		}
	} else if w.fut != nil {
		t := getTimer()
		t.Reset(max(min(journalAckWait, time.Until(deadline)), 0))
		select {
		case ack := <-w.fut.Ok():
			putTimer(t)
			j.saw(ack.Sequence)
			// nats.go holds an asynchronous publish until its ack,
			// not after
			w.hdr.release()
			return nil
		case <-w.fut.Err():
		case <-t.C:
		case <-ctx.Done():
			putTimer(t)
			return context.Cause(ctx)
		}
		putTimer(t)
		if !time.Now().Before(deadline) {
			return context.DeadlineExceeded
		}
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		ack, err := j.js.PublishMsg(ctx, w.msg)
		if err == nil {
			j.saw(ack.Sequence)
			if w.fut == nil {
				w.hdr.release() // no asynchronous publish holds it
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// Replayed returns what was replayed so far.
func (j *Journal) Replayed() messages.Replayed {
	if j == nil {
		return messages.Replayed{}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.replayed
}

// Unreplayed returns the recorded entries under prefix (ModelKeyPrefix
// for model replies) that no replay consumed: work an earlier attempt paid
// for that this run did not reach or asked differently.
func (j *Journal) Unreplayed(prefix string) [][]byte {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var out [][]byte
	for key, data := range j.recorded {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		i := strings.LastIndexByte(key, '#')
		k, err := strconv.Atoi(key[i+1:])
		if err == nil && k >= j.nextOf(key[:i]) {
			out = append(out, data)
		}
	}
	return out
}

// Journal key kinds.
const (
	journalModel = "m/"
	journalTool  = "t/"
)

// ModelKeyPrefix prefixes every model reply key (for Unreplayed).
const ModelKeyPrefix = journalModel

// ModelKey is the journal key of a model request: parts are everything the
// reply depends on (model name, system prompt, messages, options), in a
// fixed order.
func ModelKey(parts ...string) string {
	var k ModelKeyBuilder
	for _, p := range parts {
		k.AddString(p)
	}
	return k.Key()
}

// ModelKeyBuilder builds the key ModelKey gives, one part at a time, from
// bytes as well as strings; its zero value is empty. Kept and Reset, it
// builds the next key without allocating.
type ModelKeyBuilder struct {
	buf []byte // each part so far, after its length and a colon
}

// Add appends the part p.
func (k *ModelKeyBuilder) Add(p []byte) {
	k.buf = strconv.AppendInt(k.buf, int64(len(p)), 10)
	k.buf = append(append(k.buf, ':'), p...)
}

// AddString appends the part p.
func (k *ModelKeyBuilder) AddString(p string) {
	k.buf = strconv.AppendInt(k.buf, int64(len(p)), 10)
	k.buf = append(append(k.buf, ':'), p...)
}

// Key returns the key of the parts added.
func (k *ModelKeyBuilder) Key() string {
	sum := sha256.Sum256(k.buf)
	var key [len(journalModel) + 32]byte
	copy(key[:], journalModel)
	hex.Encode(key[len(journalModel):], sum[:16])
	return string(key[:])
}

// Reset empties k, keeping its buffer.
func (k *ModelKeyBuilder) Reset() { k.buf = k.buf[:0] }

// Cap is the room k's buffer holds.
func (k *ModelKeyBuilder) Cap() int { return cap(k.buf) }

// toolKey is the journal key of a call in turn whose content (tool and
// arguments) has the given callDigest.
func toolKey(turn int, digest string) string {
	return journalTool + strconv.Itoa(turn) + "/" + digest
}

// callDigest identifies a tool call by content: the tool's name and its
// arguments in canonical JSON (map keys sorted), as json.Marshal writes
// them. They are written after the name into a kept buffer and hashed in
// one piece, so a call's digest costs its string and the encoding's own
// allocations only.
func callDigest(tool string, args any) string {
	d := digestInputs.Get().(*digestInput)
	d.buf.Reset()
	d.buf.WriteString(tool)
	d.buf.WriteByte(0)
	if m, ok := args.(map[string]any); ok {
		// arguments of scalars, the usual ones, are written as
		// json.Marshal writes them without its reflection
		if b, ok := appendArgsJSON(d.buf.AvailableBuffer(), m); ok {
			d.buf.Write(b)
			return d.sum()
		}
	}
	if err := d.enc.Encode(args); err != nil {
		d.buf.Truncate(len(tool) + 1)
		fmt.Fprintf(&d.buf, "%#v", args)
	} else {
		d.buf.Truncate(d.buf.Len() - 1) // the newline Encode ends with and json.Marshal does not write
	}
	return d.sum()
}

// sum returns the digest of what d holds and gives d back to
// digestInputs.
func (d *digestInput) sum() string {
	sum := sha256.Sum256(d.buf.Bytes())
	if d.buf.Cap() <= maxPooledDigestInput {
		digestInputs.Put(d)
	}
	var out [24]byte
	hex.Encode(out[:], sum[:12])
	return string(out[:])
}

// digestInput is the buffer callDigest writes a call into and the JSON
// encoder writing into it (which escapes HTML as json.Marshal does).
type digestInput struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// digestInputs holds the digestInputs of finished digests: a cache of
// memory, not state (each digest resets the buffer it takes).
var digestInputs = sync.Pool{New: func() any {
	d := &digestInput{}
	d.enc = json.NewEncoder(&d.buf)
	return d
}}

// maxPooledDigestInput bounds the buffers digestInputs keeps: one grown by
// large arguments is left to the collector.
const maxPooledDigestInput = 16 << 10

// turnKey carries the mission turn a tool call belongs to.
type turnKey struct{}

// WithTurn returns ctx carrying the mission turn n: tool calls made
// through a Toolbox with it report the turn in their events and use it in
// their idempotency and journal keys. Runners set it (pkg/fleet/agentrun
// does for every turn of the top-level agent).
func WithTurn(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, turnKey{}, n)
}

// WithTurnAndCallSite returns ctx carrying the mission turn n and, when
// site is not zero, the call site of the tool calls made with it: what
// WithTurn(WithCallSite(ctx, site), n) carries, in one allocation where
// those make up to three (two contexts and the site boxed). A zero site
// leaves the one ctx carries, as WithCallSite is then not called. Runners
// set it for each tool call of a program (pkg/fleet/agentrun does).
func WithTurnAndCallSite(ctx context.Context, n int, site CallSite) context.Context {
	return &turnSiteCtx{Context: ctx, turn: n, site: site}
}

// turnSiteCtx is the context WithTurnAndCallSite returns. Value answers
// turnKey with the turn (an int, which Go boxes without allocating below
// 256) and callSiteKey with a pointer to the site, or asks the parent
// when the site is zero.
type turnSiteCtx struct {
	context.Context
	turn int
	site CallSite
}

// Value returns the turn for turnKey, &c.site for callSiteKey when the
// site is set, and asks the parent for any other key.
func (c *turnSiteCtx) Value(key any) any {
	switch key {
	case turnKey{}:
		return c.turn
	case callSiteKey{}:
		if c.site != (CallSite{}) {
			return &c.site
		}
	}
	return c.Context.Value(key)
}

// TurnFrom returns the turn WithTurn put on ctx, or 0.
func TurnFrom(ctx context.Context) int {
	n, _ := ctx.Value(turnKey{}).(int)
	return n
}
