package fleet

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// publishResult stores step as mission id's one visible result. When a result
// is already stored (another worker, a retry, a cancel) it returns the stored
// one and stored=false; the caller's step is then discarded. A Step too
// large for one message (over messages.LargeResultBytes encoded) is put
// in the mission_results object store first, under a name of its own
// (a losing writer's object is left to the bucket's TTL), and the result
// message carries its reference (Step.Stored). A run publishes with its
// fence set (claimFence): a later claim's marker makes the stream refuse
// the result, and publishResult returns errClaimedSince.
func publishResult(ctx context.Context, js jetstream.JetStream, st *Stores, k missionKey, step *messages.Step, fence claimFence) (*messages.Step, bool, error) {
	id := k.id
	buf := getPublishBuffer()
	defer putPublishBuffer(buf)
	data, err := encodeResult(ctx, js, st, k, step, buf)
	if err != nil {
		return nil, false, err
	}
	hdr := resultHeader(k, fence)
	ack, err := publishAckedOn(ctx, js.Conn(), st.replies, &nats.Msg{Subject: messages.ResultSubject(k.sub, id), Data: data, Header: hdr.h})
	hdr.release()
	if err == nil && !ack.Duplicate {
		return step, true, nil
	}
	if err != nil && !resultRefused(err) {
		return nil, false, fmt.Errorf("fleet: publish result %s: %w", id, err)
	}
	return storedInstead(ctx, st, k, fence)
}

// storedInstead returns the result stored for mission k when a publish of
// its result was refused because one is stored (stored=false). Under a
// fence, a refusal with no result stored is a later claim's marker:
// errClaimedSince.
func storedInstead(ctx context.Context, st *Stores, k missionKey, fence claimFence) (*messages.Step, bool, error) {
	stored, err := readResult(ctx, st, k)
	if fence.set && errors.Is(err, ErrNotFound) {
		return nil, false, fmt.Errorf("fleet: result %s: %w", k.id, errClaimedSince)
	}
	if err != nil {
		return nil, false, fmt.Errorf("fleet: result %s exists but cannot be read: %w", k.id, err)
	}
	return stored, false, nil
}

// errClaimedSince is a run's result refused because a claim marker
// newer than the run's own is stored: another worker has taken the
// mission since, and read that no result was stored.
var errClaimedSince = errors.New("the mission was claimed again since this run took it")

// resultRefused reports a result publish the stream refused for what it
// holds: a result on the subject (DiscardNewPerSubject, errCodeStoreFailed,
// or the empty-subject check), or a fence's newer claim marker.
func resultRefused(err error) bool {
	if isWrongLastSeq(err) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStoreFailed
}

// claimFence makes a run's result conditional on its mission's claim
// markers (messages.ClaimSubject): with set, the stream stores the result
// only while the mission's last marker is at seq (0: none is stored).
// The zero claimFence is no fence: the result is stored on an empty
// subject, whoever publishes it (a cancel, a dead letter).
type claimFence struct {
	set bool
	seq uint64
}

// resultHeader is the header of mission k's result message: the stream
// stores it only on an empty subject (MaxMsgsPerSubject 1 and
// DiscardNewPerSubject make that hold under a fence too), and a retried
// publish is known by its id. Under fence, the expected last sequence is
// that of the mission's claim markers instead of the result's subject.
// The caller releases it once published.
func resultHeader(k missionKey, fence claimFence) *ackedHeader {
	hdr := newAckedHeader()
	hdr.set(messages.HeaderMissionID, k.id)
	// the zero fence's seq is 0: the result's subject empty
	hdr.set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(fence.seq, 10))
	if fence.set {
		hdr.set(jetstream.ExpectedLastSubjSeqSubjHeader, messages.ClaimFilter(k.sub, k.id))
	}
	// the status key and "/final", made in one concatenation
	hdr.set(jetstream.MsgIDHeader, k.sub+"."+k.id+"/final")
	return hdr
}

// claimMarkWait bounds the wait for a claim marker's acknowledgement: a
// claim goes on without its marker after it (a RESULTS without a leader
// stores no result either).
const claimMarkWait = 2 * time.Second

// markClaim publishes a claim marker of mission k (messages.ClaimSubject,
// under a token of its own, carrying worker, the claiming worker's id)
// and returns its StreamResults sequence. Its Msg-Id is its subject: a
// retried publish whose first landed gets the first one's sequence.
func markClaim(ctx context.Context, nc *nats.Conn, st *Stores, k missionKey, worker string) (uint64, error) {
	subject := messages.ClaimSubject(k.sub, k.id, messages.NewMissionID())
	hdr := newAckedHeader()
	hdr.set(jetstream.MsgIDHeader, subject)
	ack, err := publishAckedBy(ctx, nc, st.replies, &nats.Msg{Subject: subject, Data: []byte(worker), Header: hdr.h}, time.Now().Add(claimMarkWait))
	hdr.release()
	if err != nil {
		return 0, fmt.Errorf("fleet: claim marker of mission %s: %w", k.id, err)
	}
	return ack.Sequence, nil
}

// encodeResult encodes step, mission k's result, into buf as its result
// message carries it and returns the encoding (buf's bytes): a Step too
// large for one message is put in the object store first (storeStep) and
// the message carries its reference. What its readers could not decode,
// or a message could not carry, is errUnreadableResult.
func encodeResult(ctx context.Context, js jetstream.JetStream, st *Stores, k missionKey, step *messages.Step, buf *bytes.Buffer) ([]byte, error) {
	id := k.id
	if err := messages.MarshalStepTo(buf, step); err != nil {
		return nil, fmt.Errorf("fleet: result %s: %w: %w", id, errUnreadableResult, err)
	}
	data := buf.Bytes()
	// What a reader could not decode is not stored (decodeStep checks the
	// same bounds).
	if err := messages.CheckBounds(data); err != nil {
		return nil, fmt.Errorf("fleet: result %s: %w: %w", id, errUnreadableResult, err)
	}
	if int64(len(data)) > maxStoredStep {
		return nil, fmt.Errorf("fleet: result %s: %w: it is %d bytes encoded, more than the %d a result may hold",
			id, errUnreadableResult, len(data), maxStoredStep)
	}
	if len(data) > messages.LargeResultBytes {
		ref, err := storeStep(ctx, st, id, data)
		if err != nil {
			return nil, err
		}
		buf.Reset()
		if err := messages.MarshalStepTo(buf, &messages.Step{Stored: ref}); err != nil {
			return nil, fmt.Errorf("fleet: result %s: %w", id, err)
		}
		data = buf.Bytes()
	}
	if limit := js.Conn().MaxPayload(); limit > 0 && int64(len(data)) > limit-resultHeaderRoom {
		return nil, fmt.Errorf("fleet: result %s: %w: it is %d bytes encoded, more than the %d a message may carry",
			id, errUnreadableResult, len(data), limit-resultHeaderRoom)
	}
	return data, nil
}

// errBatchRefused is a batch of a record and a result that RESULTS is not
// known to have stored (a refused batch stores neither message): the
// caller publishes them one after the other (publishResult).
var errBatchRefused = errors.New("record and result batch refused")

// publishWithRecord stores step as mission k's one visible result, as
// publishResult does, together with the mission's record, encoded in
// record (at most maxInlineRecord bytes), on its RecordSubject: one atomic
// batch of the record and the result (nats-server's atomic publish, which
// RESULTS allows), stored all or nothing with one acknowledgement, the
// record first. step.Record is set to the record's reference.
//
// A batch refused because a result is stored (the result's expected
// subject sequence, its message id seen, or under a fence the result
// subject's one message) returns the stored result and stored=false, as
// publishResult does. A result that cannot be encoded or
// stored, and any other refusal (the record's
// subject holds an earlier attempt's record, the stream's limit of
// batches in flight, a stream that does not allow atomic publishes, a
// leader change between the two messages, no answer) wraps
// errBatchRefused: nothing of the batch is known stored, step.Record is
// cleared, and the caller stores the record and the result one after the
// other. A batch whose answer was lost may be stored: the result's
// publish is then refused as a duplicate, and the stored one is read.
func publishWithRecord(ctx context.Context, js jetstream.JetStream, st *Stores, k missionKey, step *messages.Step, record []byte, fence claimFence) (*messages.Step, bool, error) {
	recordSubject := messages.RecordSubject(k.sub, k.id)
	step.Record = inlineRecordRef(recordSubject, record)
	buf := getPublishBuffer()
	defer putPublishBuffer(buf)
	data, err := encodeResult(ctx, js, st, k, step, buf)
	if err != nil {
		// publishResult meets the same and goes on from there, with the
		// record stored first
		step.Record = nil
		return nil, false, fmt.Errorf("%w: %w", errBatchRefused, err)
	}
	nc := js.Conn()
	batch := messages.NewMissionID()
	first := newAckedHeader()
	first.set(batchIDHeader, batch)
	first.set(batchSeqHeader, "1")
	// the first message gets no answer: the commit's tells whether the
	// batch was stored
	err = nc.PublishMsg(&nats.Msg{Subject: recordSubject, Data: record, Header: first.h})
	first.release()
	if err != nil {
		step.Record = nil
		return nil, false, fmt.Errorf("fleet: result %s: %w: %w", k.id, errBatchRefused, err)
	}
	hdr := resultHeader(k, fence)
	hdr.set(batchIDHeader, batch)
	hdr.set(batchSeqHeader, "2")
	hdr.set(batchCommitHeader, "1")
	ack, err := publishAckedOn(ctx, nc, st.replies, &nats.Msg{Subject: messages.ResultSubject(k.sub, k.id), Data: data, Header: hdr.h})
	hdr.release()
	switch {
	case err == nil && !ack.Duplicate:
		return step, true, nil
	case err == nil || isWrongLastSeq(err) || isDuplicateInBatch(err):
		step.Record = nil
		return storedInstead(ctx, st, k, fence)
	case resultRefused(err):
		// One message per subject, the result's or the record's: under a
		// fence the result's expected sequence is the claim markers', and
		// a stored result refuses the batch this way. A stored result is
		// kept; without one it was the record's subject (an earlier
		// attempt's record), and the two are stored one after the other.
		step.Record = nil
		if stored := resultAfterRefusal(ctx, st, k); stored != nil {
			return stored, false, nil
		}
	}
	step.Record = nil
	return nil, false, fmt.Errorf("fleet: result %s: %w: %w", k.id, errBatchRefused, err)
}

// resultAfterRefusal reads mission k's result after a batch was refused
// for a subject holding its one message, or returns nil when none is
// stored. A replica that has not applied a result stored a moment ago
// answers none: the read is made again twice, 20 and then 40 ms later,
// before the refusal is taken for the record subject's.
func resultAfterRefusal(ctx context.Context, st *Stores, k missionKey) *messages.Step {
	for wait := 20 * time.Millisecond; ; wait *= 2 {
		stored, err := readResult(ctx, st, k)
		if err == nil {
			return stored
		}
		if !errors.Is(err, ErrNotFound) || wait > 40*time.Millisecond {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// The headers of a message of an atomic batch publish (nats-server
// v2.12 and later): the batch's id, the message's place in it from 1, and
// on the last message, the commit.
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// errCodeBatchDuplicate is nats-server's refusal of an atomic batch that
// holds a message whose Nats-Msg-Id the stream has seen.
const errCodeBatchDuplicate jetstream.ErrorCode = 10201

// isDuplicateInBatch reports a batch refused because one of its messages
// is a duplicate (errCodeBatchDuplicate).
func isDuplicateInBatch(err error) bool {
	if err == nil {
		return false // before apiErr, which errors.As keeps on the heap
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeBatchDuplicate
}

// maxStoredStep bounds one stored Step's encoding.
const maxStoredStep = messages.DefaultMaxData

// storeStep puts a large Step's encoding in the mission_results object
// store and returns its reference.
func storeStep(ctx context.Context, st *Stores, id string, data []byte) (*messages.ObjectRef, error) {
	if st.ResultObjects == nil {
		return nil, fmt.Errorf("fleet: result %s: %w: it is %d bytes encoded and the %s object store is not set up",
			id, errUnreadableResult, len(data), messages.BucketResults)
	}
	sealed, key, err := sealStep(data)
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: %w", id, err)
	}
	name := id + "." + messages.NewMissionID()
	info, err := st.ResultObjects.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(sealed))
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: store %d bytes in %s: %w", id, len(sealed), messages.BucketResults, err)
	}
	return &messages.ObjectRef{Bucket: messages.BucketResults, Name: info.Name, Size: int64(info.Size), Digest: info.Digest, Key: key}, nil
}

// A Step stored in mission_results is sealed (AES-256-GCM) under a key of
// its own that only its result message, on its submitter's subject,
// carries: the bucket's chunks are read by sequence, which NATS permissions
// cannot hold to one submitter, so another submitter reading them gets
// ciphertext only.
const (
	stepKeyBytes  = 32
	sealOverhead  = 12 + 16 // nonce and tag
	stepNonceSize = 12
)

// sealStep seals data under a new random key; the result is the nonce
// followed by the sealed bytes.
func sealStep(data []byte) (sealed []byte, key string, err error) {
	raw := make([]byte, stepKeyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("seal: %w", err)
	}
	aead, err := stepAEAD(raw)
	if err != nil {
		return nil, "", err
	}
	out := make([]byte, stepNonceSize, stepNonceSize+len(data)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, "", fmt.Errorf("seal: %w", err)
	}
	return aead.Seal(out, out, data, nil), base64.URLEncoding.EncodeToString(raw), nil
}

// openStep opens what sealStep sealed under key.
func openStep(sealed []byte, key string) ([]byte, error) {
	raw, err := base64.URLEncoding.DecodeString(key)
	if err != nil || len(raw) != stepKeyBytes {
		return nil, fmt.Errorf("the reference's key is not %d bytes in base64url", stepKeyBytes)
	}
	aead, err := stepAEAD(raw)
	if err != nil {
		return nil, err
	}
	if len(sealed) < stepNonceSize+aead.Overhead() {
		return nil, errors.New("the object is shorter than a sealed Step")
	}
	data, err := aead.Open(nil, sealed[:stepNonceSize], sealed[stepNonceSize:], nil)
	if err != nil {
		return nil, errors.New("the object does not open with the reference's key")
	}
	return data, nil
}

func stepAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return cipher.NewGCM(block)
}

// errUnreadableResult: a Step that could not be stored so that every
// reader decodes it (nested deeper than messages.MaxNesting, more values
// than messages.MaxValuesFor its size, larger than maxStoredStep).
var errUnreadableResult = errors.New("the result cannot be stored so that its readers can decode it")

// resultHeaderRoom is what a result message's headers may take of the
// server's maximum payload.
const resultHeaderRoom = 1024

// unreadableStep is the failure stored in place of step, which could not
// be stored (errUnreadableResult): it keeps step's usage and attempts.
func unreadableStep(step *messages.Step, cause error) *messages.Step {
	f := failStep(ReasonUnreadableResult, "%v; return a smaller or flatter value", cause)
	f.Signature, f.Usage, f.Attempts, f.Replayed, f.Record = step.Signature, step.Usage, step.Attempts, step.Replayed, step.Record
	return f
}

// withoutTrace is step without its trace, which made it unreadable
// (errUnreadableResult), with a warning saying why the trace is missing.
func withoutTrace(step *messages.Step, cause error) *messages.Step {
	s := *step
	s.Trace = nil
	s.Warnings = append(slices.Clip(step.Warnings), fmt.Sprintf("the trace is not stored: %v", cause))
	return &s
}

// readResult reads the stored result of mission k (direct get; k.sub may be
// messages.AllSubmitters), and the Step it refers to when it was too large
// for one message.
func readResult(ctx context.Context, st *Stores, k missionKey) (*messages.Step, error) {
	id := k.id
	var data []byte
	var err error
	if st.nc != nil {
		// the result's data alone, without its headers; a direct get no
		// replica answers is read from the leader
		data, err = directLastData(ctx, st.nc, st.replies, messages.StreamResults, messages.ResultSubject(k.sub, id))
	} else {
		var raw *jetstream.RawStreamMsg
		if raw, err = st.Results.GetLastMsgForSubject(ctx, messages.ResultSubject(k.sub, id)); err == nil {
			data = raw.Data
		}
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("fleet: read result %s: %w", id, err)
	}
	return storedStep(ctx, st, id, data)
}

// storedStep decodes the stored result of mission id, data, reading it
// from mission_results when it is stored there.
func storedStep(ctx context.Context, st *Stores, id string, data []byte) (*messages.Step, error) {
	step, err := decodeStep(data)
	if err != nil || step.Stored == nil {
		return step, err
	}
	return readStoredStep(ctx, st, id, step.Stored)
}

// readStoredStep reads a Step stored in the mission_results object store.
func readStoredStep(ctx context.Context, st *Stores, id string, ref *messages.ObjectRef) (*messages.Step, error) {
	if ref.Bucket != messages.BucketResults || ref.Size > maxStoredStep+sealOverhead || st.ResultObjects == nil || st.resultStream == nil {
		return nil, fmt.Errorf("fleet: result %s: %s cannot be read (want one in %s of at most %d bytes)", id, ref, messages.BucketResults, maxStoredStep)
	}
	data, err := readObjectDirect(ctx, st.nc, st.resultStream, ref)
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: %w", id, err)
	}
	if len(ref.Key) > 0 {
		if data, err = openStep(data, ref.Key); err != nil {
			return nil, fmt.Errorf("fleet: result %s: %s: %w", id, ref, err)
		}
	}
	step, err := decodeStep(data)
	if err == nil && step.Stored != nil {
		err = errors.New("a stored Step refers to another")
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: %s: %w", id, ref, err)
	}
	return step, nil
}

// readObjectDirect reads the object ref names from str, its bucket's
// stream, whole: its metadata (objectInfo), then its chunks one after the
// other, each with a direct get on nc (getMsg: from the stream's leader
// when no replica answers); it checks the object's size and digest.
// Unlike ObjectStore.Get it creates no consumer, so a reader needs no
// right to create consumers (which would let it make JetStream deliver a
// stream into any subject).
func readObjectDirect(ctx context.Context, nc *nats.Conn, str jetstream.Stream, ref *messages.ObjectRef) ([]byte, error) {
	info, err := objectInfo(ctx, nc, str, ref.Bucket, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	if int64(info.Size) != ref.Size || info.Digest != ref.Digest {
		return nil, fmt.Errorf("%s: the object has %d bytes with digest %s, not the reference's", ref, info.Size, info.Digest)
	}
	chunks := "$O." + ref.Bucket + ".C." + info.NUID
	data := make([]byte, 0, ref.Size)
	h := sha256.New()
	// once no replica answered a chunk's direct get, the rest are read
	// from the stream's leader at once: a silent replica would otherwise
	// make each chunk wait its patience
	viaLeader := false
	for seq := uint64(1); int64(len(data)) < ref.Size; {
		q := atSeq(seq, chunks)
		q.leader = viaLeader
		m, leader, err := getMsgVia(ctx, nc, nil, str, q)
		if err != nil {
			return nil, fmt.Errorf("%s: chunk at %d: %w", ref, seq, err)
		}
		viaLeader = leader
		if int64(len(data)+len(m.Data)) > ref.Size {
			return nil, fmt.Errorf("%s: holds more bytes than its reference says", ref)
		}
		data = append(data, m.Data...)
		h.Write(m.Data)
		seq = m.Sequence + 1
	}
	if got := jetstream.GetObjectDigestValue(h); got != ref.Digest {
		return nil, fmt.Errorf("%s: digest %s, not the reference's", ref, got)
	}
	return data, nil
}

// objectInfo reads the metadata of object name in bucket from str, the
// bucket's stream, as ObjectStore.GetInfo does (the last message on the
// name's metadata subject) but with getMsg on nc. An object deleted or
// never stored is jetstream.ErrObjectNotFound.
func objectInfo(ctx context.Context, nc *nats.Conn, str jetstream.Stream, bucket, name string) (*jetstream.ObjectInfo, error) {
	m, err := getMsg(ctx, nc, str, lastOn("$O."+bucket+".M."+base64.URLEncoding.EncodeToString([]byte(name))))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, jetstream.ErrObjectNotFound
	}
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, fmt.Errorf("%w: %w", jetstream.ErrBadObjectMeta, err)
	}
	if info.Deleted {
		return nil, jetstream.ErrObjectNotFound
	}
	info.ModTime = m.Time
	return &info, nil
}

func decodeStep(data []byte) (*messages.Step, error) {
	if err := messages.CheckBounds(data); err != nil {
		return nil, err
	}
	return messages.UnmarshalStep(data)
}

// kvDeleted reports whether a key-value entry read with its headers is a
// delete or purge marker (an operation header, or a marker the server
// wrote when the key's message expired or was removed), which
// KeyValue.Get answers with jetstream.ErrKeyDeleted (an ErrKeyNotFound).
func kvDeleted(h nats.Header) bool {
	if len(h) == 0 {
		return false
	}
	if op := h.Get("KV-Operation"); op != "" {
		return op == "DEL" || op == "PURGE"
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge", "Remove":
		return true
	}
	return false
}

// statusEntry is a decoded status with the KV revision it was read at.
type statusEntry struct {
	st  messages.Status
	rev uint64
	// data, on the entry of a worker's own write that kept them
	// (casStatusKept), are the bytes stored at rev: the last fence check
	// asks for the status without its headers and compares
	// (sendFenceRead)
	data []byte
	// journalUpTo, on the entry a claim wrote, is the JournalSeq of the
	// awaiting_approval status it took the mission from: the run reads
	// the journal up to that message (openJournal).
	journalUpTo uint64
	// reads, on the entry a claim wrote taking the mission from
	// awaiting_approval, are the journal's and the approval records'
	// reads the claim started before its write (resumeReads).
	reads *resumeReads
	// drops, on the entry of a worker's claim or heartbeat, is the
	// worker's connection drop signal taken before the status was
	// written or read as the run's. Fired (or nil: not known), the status
	// may have changed unseen since (a restarted server hands the message
	// to another worker at once): the run confirms it before a model or
	// tool request (beats.owned), and finish reads it before the result.
	drops *dropSignal
}

// missionKey names one mission of one submitter: where its status, result
// and events are. A reader's sub may be messages.AllSubmitters.
type missionKey struct{ sub, id string }

func (k missionKey) String() string { return k.sub + "/" + k.id }

// getStatus reads mission k's status: a direct get of the last message on
// its key's subject in the bucket's stream (directLast: the key's own, or,
// for messages.AllSubmitters, any submitter's), or, on Stores without
// their connection, a KV get of its key or a direct get through the
// stream handle.
func getStatus(ctx context.Context, st *Stores, k missionKey) (*statusEntry, error) {
	if st.nc != nil {
		// the direct get Status.Get makes, read here: a mission's status
		// is read at least twice per mission (the submission and the
		// end of its run); one no replica answers is read from the
		// stream's leader
		data, rev, hdr, err := directLast(ctx, st.nc, st.replies, statusStream, messages.StatusSubject(k.sub, k.id))
		return directStatus(k, data, rev, hdr, err)
	}
	var data []byte
	var rev uint64
	if k.sub == messages.AllSubmitters {
		if st.statusStream == nil {
			return nil, fmt.Errorf("fleet: status %s: the status bucket's stream is not bound", k.id)
		}
		raw, err := st.statusStream.GetLastMsgForSubject(ctx, messages.StatusSubject(k.sub, k.id))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: status %s: %w", k.id, err)
		}
		if op := raw.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, ErrNotFound
		}
		data, rev = raw.Data, raw.Sequence
	} else {
		e, err := st.Status.Get(ctx, messages.StatusKey(k.sub, k.id))
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return nil, ErrNotFound
			}
			return nil, fmt.Errorf("fleet: status %s: %w", k.id, err)
		}
		data, rev = e.Value(), e.Revision()
	}
	return decodeStatus(k, data, rev)
}

// directStatus reads mission k's status from the answer to a direct get
// of its key's subject (directLast's results), as getStatus returns it.
func directStatus(k missionKey, data []byte, rev uint64, hdr nats.Header, err error) (*statusEntry, error) {
	if errors.Is(err, jetstream.ErrMsgNotFound) || err == nil && kvDeleted(hdr) {
		return nil, ErrNotFound // as Status.Get's ErrKeyDeleted is ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", k.id, err)
	}
	return decodeStatus(k, data, rev)
}

// statusAtHeld is directStatus for a reader that holds the status it last
// wrote (held, at revision held.rev; nil: none): an answer at that
// revision is that status, returned as held without decoding the
// answer. A KV revision is the stream sequence of the key's one message,
// so the answer is the very message held was written as; a
// compare-and-set write at held.rev relies on the same identity.
func statusAtHeld(k missionKey, held *statusEntry, data []byte, rev uint64, hdr nats.Header, err error) (*statusEntry, error) {
	if held != nil && err == nil && rev == held.rev && !kvDeleted(hdr) {
		return held, nil
	}
	return directStatus(k, data, rev, hdr, err)
}

// getStatusAtHeld is getStatus for a reader that holds the status it last
// wrote (statusAtHeld).
func getStatusAtHeld(ctx context.Context, st *Stores, k missionKey, held *statusEntry) (*statusEntry, error) {
	if st.nc == nil {
		return getStatus(ctx, st, k)
	}
	data, rev, hdr, err := directLast(ctx, st.nc, st.replies, statusStream, messages.StatusSubject(k.sub, k.id))
	return statusAtHeld(k, held, data, rev, hdr, err)
}

// decodeStatus decodes mission k's status stored at revision rev, into
// the entry it returns (not into a status of its own, then copied).
func decodeStatus(k missionKey, data []byte, rev uint64) (*statusEntry, error) {
	e := &statusEntry{rev: rev}
	if err := messages.Unmarshal(data, &e.st); err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", k.id, err)
	}
	if err := e.st.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", k.id, err)
	}
	return e, nil
}

// casStatus writes s (under the key of s.Submitter and s.MissionID) in
// st.Status if the key is still at rev; jetstream.ErrKeyRevisionMismatch
// (wrapped) means another writer won. A write at a revision is the
// publish Status.Update makes (the key's subject, expecting rev as the
// subject's last sequence), made with publishAcked, and refused as
// Update refuses it.
func casStatus(ctx context.Context, st *Stores, s messages.Status, rev uint64) (uint64, error) {
	rev, _, err := writeStatus(ctx, st, s, rev, false)
	return rev, err
}

// casStatusKept is casStatus that also returns the bytes it stored (a
// copy), which the entry of a worker's own status keeps for its last
// fence check (sendFenceRead).
func casStatusKept(ctx context.Context, st *Stores, s messages.Status, rev uint64) (uint64, []byte, error) {
	return writeStatus(ctx, st, s, rev, true)
}

// writeStatus is casStatus, returning a copy of the bytes stored when
// keep is set.
func writeStatus(ctx context.Context, st *Stores, s messages.Status, rev uint64, keep bool) (uint64, []byte, error) {
	buf := getPublishBuffer()
	defer putPublishBuffer(buf)
	if err := encodeStatus(buf, s); err != nil {
		return 0, nil, err
	}
	data := buf.Bytes()
	var err error
	switch {
	case rev == 0:
		rev, err = st.Status.Create(ctx, messages.StatusKey(s.Submitter, s.MissionID), data)
	case st.nc == nil:
		rev, err = st.Status.Update(ctx, messages.StatusKey(s.Submitter, s.MissionID), data, rev)
	default:
		rev, err = casPublish(ctx, st.nc, st.replies, messages.StatusSubject(s.Submitter, s.MissionID), data, rev)
	}
	if err != nil || !keep {
		return rev, nil, err
	}
	return rev, bytes.Clone(data), nil
}

// createFirstStatus writes st as the first status of its mission id, in one
// publish and with no read before it: the stream stores it only while no
// submitter's status (nor a delete marker) holds the id, and refuses it
// otherwise as a compare-and-set conflict (isWrongLastSeq). It returns the
// status's revision.
func createFirstStatus(ctx context.Context, js jetstream.JetStream, st messages.Status) (uint64, error) {
	rev, _, err := writeFirstStatus(ctx, js, nil, st, false)
	return rev, err
}

// writeFirstStatus is createFirstStatus, returning a copy of the bytes
// stored when keep is set (casStatusKept), with the publish's request on
// replies when it is js's connection's reply mux (publishAckedOn).
func writeFirstStatus(ctx context.Context, js jetstream.JetStream, replies *replyMux, st messages.Status, keep bool) (uint64, []byte, error) {
	buf := getPublishBuffer()
	defer putPublishBuffer(buf)
	if err := encodeStatus(buf, st); err != nil {
		return 0, nil, err
	}
	data := buf.Bytes()
	hdr := newAckedHeader()
	hdr.set(jetstream.ExpectedLastSubjSeqHeader, "0")
	hdr.set(jetstream.ExpectedLastSubjSeqSubjHeader, messages.StatusSubject(messages.AllSubmitters, st.MissionID))
	ack, err := publishAckedOn(ctx, js.Conn(), replies, &nats.Msg{Subject: messages.StatusSubject(st.Submitter, st.MissionID), Data: data, Header: hdr.h})
	hdr.release()
	if err != nil {
		return 0, nil, err
	}
	if !keep {
		return ack.Sequence, nil, nil
	}
	return ack.Sequence, bytes.Clone(data), nil
}

// encodeStatus appends st's encoding as it is stored (the current
// version, stamped now) to buf. The stamped copy is a pooled one: the
// encoder keeps nothing of it.
func encodeStatus(buf *bytes.Buffer, st messages.Status) error {
	out := encodedStatuses.Get().(*messages.Status)
	*out = st
	out.Version = messages.StatusVersion
	out.UpdatedAt = time.Now().UTC()
	err := messages.MarshalTo(buf, out)
	*out = messages.Status{}
	encodedStatuses.Put(out)
	return err
}

// encodedStatuses holds the stamped copies encodeStatus encodes.
var encodedStatuses = sync.Pool{New: func() any { return new(messages.Status) }}

// updateStatus applies edit to the current status with compare-and-set,
// retrying on conflicts up to a few times. edit returns false to leave the
// status unchanged.
func updateStatus(ctx context.Context, st *Stores, k missionKey, edit func(*messages.Status) bool) (*statusEntry, error) {
	id := k.id
	for range 8 {
		cur, err := getStatus(ctx, st, k)
		if err != nil {
			return nil, err
		}
		s := cur.st
		if !edit(&s) {
			return cur, nil
		}
		rev, err := casStatus(ctx, st, s, cur.rev)
		if err == nil {
			return &statusEntry{st: s, rev: rev}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("fleet: update status %s: %w", id, err)
		}
	}
	return nil, fmt.Errorf("fleet: update status %s: too many concurrent writers", id)
}

func failStep(reason, format string, args ...any) *messages.Step {
	return &messages.Step{Fail: &messages.Fail{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

func stateOf(step *messages.Step) string {
	if step.Ok() {
		return messages.StateSucceeded
	}
	switch step.Fail.Reason {
	case ReasonCancelled:
		return messages.StateCancelled
	case ReasonMaxDeliveries, ReasonInvalid:
		return messages.StateDead
	}
	return messages.StateFailed
}

// flush flushes nc, bounding the wait by 10s when ctx has no deadline (nats
// requires one). A flush the connection drops while it waits (nats.go
// answers it as nats.ErrConnectionClosed, though the connection is only
// reconnecting: a NATS node restarting) is made again once reconnected,
// until ctx ends: only a closed connection fails it.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	for {
		err := nc.FlushWithContext(ctx)
		if !errors.Is(err, nats.ErrConnectionClosed) || nc.IsClosed() {
			return err
		}
		t := time.NewTimer(flushRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (the connection dropped the flush and did not reconnect in time)", ctx.Err())
		case <-t.C:
		}
	}
}

// flushRetry is the pause before a flush the connection dropped is made
// again (flush).
const flushRetry = 20 * time.Millisecond
