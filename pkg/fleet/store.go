package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
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
// message carries its reference (Step.Stored).
func publishResult(ctx context.Context, js jetstream.JetStream, st *Stores, id string, step *messages.Step) (*messages.Step, bool, error) {
	data, err := messages.MarshalStep(step)
	if err != nil {
		return nil, false, fmt.Errorf("fleet: result %s: %w: %w", id, errUnreadableResult, err)
	}
	// What a reader could not decode is not stored (decodeStep checks the
	// same bounds).
	if err := messages.CheckBounds(data); err != nil {
		return nil, false, fmt.Errorf("fleet: result %s: %w: %w", id, errUnreadableResult, err)
	}
	if int64(len(data)) > maxStoredStep {
		return nil, false, fmt.Errorf("fleet: result %s: %w: it is %d bytes encoded, more than the %d a result may hold",
			id, errUnreadableResult, len(data), maxStoredStep)
	}
	if len(data) > messages.LargeResultBytes {
		ref, err := storeStep(ctx, st, id, data)
		if err != nil {
			return nil, false, err
		}
		if data, err = messages.MarshalStep(&messages.Step{Stored: ref}); err != nil {
			return nil, false, fmt.Errorf("fleet: result %s: %w", id, err)
		}
	}
	if limit := js.Conn().MaxPayload(); limit > 0 && int64(len(data)) > limit-resultHeaderRoom {
		return nil, false, fmt.Errorf("fleet: result %s: %w: it is %d bytes encoded, more than the %d a message may carry",
			id, errUnreadableResult, len(data), limit-resultHeaderRoom)
	}
	msg := &nats.Msg{Subject: messages.ResultSubject(id), Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMissionID, id)
	ack, err := js.PublishMsg(ctx, msg,
		jetstream.WithExpectLastSequencePerSubject(0),
		jetstream.WithMsgID(id+"/final"))
	if err == nil && !ack.Duplicate {
		return step, true, nil
	}
	if err != nil && !isWrongLastSeq(err) {
		return nil, false, fmt.Errorf("fleet: publish result %s: %w", id, err)
	}
	stored, rerr := readResult(ctx, st, id)
	if rerr != nil {
		return nil, false, fmt.Errorf("fleet: result %s exists but cannot be read: %w", id, rerr)
	}
	return stored, false, nil
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
	name := id + "." + messages.NewMissionID()
	info, err := st.ResultObjects.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: store %d bytes in %s: %w", id, len(data), messages.BucketResults, err)
	}
	return &messages.ObjectRef{Bucket: messages.BucketResults, Name: info.Name, Size: int64(info.Size), Digest: info.Digest}, nil
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
	f.Signature, f.Usage, f.Attempts, f.Replayed = step.Signature, step.Usage, step.Attempts, step.Replayed
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

// readResult reads the stored result of mission id (direct get), and the
// Step it refers to when it was too large for one message.
func readResult(ctx context.Context, st *Stores, id string) (*messages.Step, error) {
	raw, err := st.Results.GetLastMsgForSubject(ctx, messages.ResultSubject(id))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("fleet: read result %s: %w", id, err)
	}
	step, err := decodeStep(raw.Data)
	if err != nil || step.Stored == nil {
		return step, err
	}
	return readStoredStep(ctx, st, id, step.Stored)
}

// readStoredStep reads a Step stored in the mission_results object store.
func readStoredStep(ctx context.Context, st *Stores, id string, ref *messages.ObjectRef) (*messages.Step, error) {
	if ref.Bucket != messages.BucketResults || ref.Size > maxStoredStep || st.ResultObjects == nil || st.resultStream == nil {
		return nil, fmt.Errorf("fleet: result %s: %s cannot be read (want one in %s of at most %d bytes)", id, ref, messages.BucketResults, maxStoredStep)
	}
	data, err := readObjectDirect(ctx, st.ResultObjects, st.resultStream, ref)
	if err != nil {
		return nil, fmt.Errorf("fleet: result %s: %w", id, err)
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

// readObjectDirect reads the object ref names whole with direct gets of
// its chunks, one after the other, and checks its size and digest. Unlike
// ObjectStore.Get it creates no consumer, so a reader needs no right to
// create consumers (which would let it make JetStream deliver a stream
// into any subject).
func readObjectDirect(ctx context.Context, obs jetstream.ObjectStore, str jetstream.Stream, ref *messages.ObjectRef) ([]byte, error) {
	info, err := obs.GetInfo(ctx, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	if int64(info.Size) != ref.Size || info.Digest != ref.Digest {
		return nil, fmt.Errorf("%s: the object has %d bytes with digest %s, not the reference's", ref, info.Size, info.Digest)
	}
	chunks := "$O." + ref.Bucket + ".C." + info.NUID
	data := make([]byte, 0, ref.Size)
	h := sha256.New()
	for seq := uint64(1); int64(len(data)) < ref.Size; {
		m, err := str.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(chunks))
		if err != nil {
			return nil, fmt.Errorf("%s: chunk at %d: %w", ref, seq, err)
		}
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

func decodeStep(data []byte) (*messages.Step, error) {
	if err := messages.CheckBounds(data); err != nil {
		return nil, err
	}
	return messages.UnmarshalStep(data)
}

// statusEntry is a decoded status with the KV revision it was read at.
type statusEntry struct {
	st  messages.Status
	rev uint64
}

func getStatus(ctx context.Context, kv jetstream.KeyValue, id string) (*statusEntry, error) {
	e, err := kv.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("fleet: status %s: %w", id, err)
	}
	var st messages.Status
	if err := messages.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", id, err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: status %s: %w", id, err)
	}
	return &statusEntry{st: st, rev: e.Revision()}, nil
}

// casStatus writes st if the key is still at rev; jetstream.ErrKeyRevisionMismatch
// (wrapped) means another writer won.
func casStatus(ctx context.Context, kv jetstream.KeyValue, st messages.Status, rev uint64) (uint64, error) {
	st.Version = messages.StatusVersion
	st.UpdatedAt = time.Now().UTC()
	data, err := messages.Marshal(&st)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return kv.Create(ctx, st.MissionID, data)
	}
	return kv.Update(ctx, st.MissionID, data, rev)
}

// updateStatus applies edit to the current status with compare-and-set,
// retrying on conflicts up to a few times. edit returns false to leave the
// status unchanged.
func updateStatus(ctx context.Context, kv jetstream.KeyValue, id string, edit func(*messages.Status) bool) (*statusEntry, error) {
	for range 8 {
		cur, err := getStatus(ctx, kv, id)
		if err != nil {
			return nil, err
		}
		st := cur.st
		if !edit(&st) {
			return cur, nil
		}
		rev, err := casStatus(ctx, kv, st, cur.rev)
		if err == nil {
			return &statusEntry{st: st, rev: rev}, nil
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
// requires one).
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}
