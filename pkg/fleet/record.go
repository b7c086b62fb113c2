package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// missionRecord is what a mission's record (messages.MissionRecord: the
// mission as it ran and its tools' schemas as box discovered them) is made
// of when its run ends; first says no earlier attempt ran (the claim wrote
// the mission's first status), so no object of the mission exists yet.
type missionRecord struct {
	m     *messages.Mission
	box   *Toolbox
	first bool
}

// encodeRecord encodes rec's record into buf. The tools' schemas are
// those the run's discovery found (a tool it never looked up has none):
// no discovery is made here (the mission is no longer heartbeated).
func encodeRecord(buf *bytes.Buffer, rec *missionRecord) error {
	mr := &messages.MissionRecord{Version: messages.MissionRecordVersion, Mission: rec.m}
	known, _ := rec.box.reg.snapshot()
	for _, name := range rec.m.Tools {
		t := &remoteTool{box: rec.box, name: name, info: known[name]}
		mr.Tools = append(mr.Tools, messages.ToolSchema{Name: name, Signature: t.Signature(), Description: t.Description()})
	}
	if err := messages.MarshalTo(buf, mr); err != nil {
		return err
	}
	if n := buf.Len(); int64(n) > maxStoredStep {
		return fmt.Errorf("it is %d bytes encoded, more than the %d a record may hold", n, maxStoredStep)
	}
	return nil
}

// storeRecord keeps rec's record, so that the mission can be replayed
// from it and its Step's trace in any process, and returns its reference
// for its result. It is written before the result, so a caller that reads
// the result finds the record; a failure is logged and the mission goes
// on (only its replay is lost). data is the record encodeRecord wrote,
// or encErr why it could not (nil: encodeRecord is called here).
//
// A record of at most maxInlineRecord bytes is one message on its
// RecordSubject in RESULTS, which only what reads its submitter's results
// may read (not sealed): a first attempt's, and a later run's whose
// earlier runs stored none (a mission resumed after a suspension; only a
// run that ends stores a record). A larger record, or one RESULTS
// refuses (it keeps the first message of a subject: an earlier attempt
// stored its record and died before its result), is kept in the
// mission_results object store instead: the bucket's chunks are read by
// sequence, which permissions cannot hold to one submitter, so it is
// sealed like a large Step (sealStep) and its key travels only in the
// result. A first attempt's object is written without looking for an
// earlier one (putNew).
func (w *Worker) storeRecord(ctx context.Context, k missionKey, rec *missionRecord, data []byte, encErr error, log *zerolog.Logger) *messages.ObjectRef {
	if w.st.ResultObjects == nil {
		return nil
	}
	err := encErr
	if data == nil && err == nil {
		// the encoding is read (published, digested, sealed) before this
		// returns
		buf := getPublishBuffer()
		defer putPublishBuffer(buf)
		err = encodeRecord(buf, rec)
		data = buf.Bytes()
	}
	if err == nil && len(data) <= maxInlineRecord {
		ref, perr := publishRecord(ctx, w.js, w.replies, k, data)
		if perr == nil {
			return ref
		}
		log.Debug().Err(perr).Msg("mission record not stored next to the result; storing it in the object store")
	}
	var ref *messages.ObjectRef
	if err == nil {
		name := messages.MissionRecordName(rec.m.ID)
		put := func(ctx context.Context, sealed []byte) (*jetstream.ObjectInfo, error) {
			if rec.first && len(sealed) <= maxOneChunk {
				if info, err := putNew(ctx, w.js, messages.BucketResults, name, sealed); err == nil {
					return info, nil
				}
			}
			return putRetrying(ctx, w.st.ResultObjects, name, sealed)
		}
		ref, err = putSealed(ctx, data, put)
	}
	if err != nil {
		log.Warn().Err(err).Msg("mission record not stored: the mission cannot be replayed")
	}
	return ref
}

// maxInlineRecord is the largest record kept as one message in RESULTS.
const maxInlineRecord = maxOneChunk

// publishRecord stores the encoded record data of mission k on its
// RecordSubject, acknowledged, and returns its reference. The
// acknowledgement is asked for on replies when it is js's connection's
// reply mux (a worker's), where the fence check sent with the record is
// answered too.
func publishRecord(ctx context.Context, js jetstream.JetStream, replies *replyMux, k missionKey, data []byte) (*messages.ObjectRef, error) {
	subject := messages.RecordSubject(k.sub, k.id)
	if _, err := publishAckedBy(ctx, js.Conn(), replies, &nats.Msg{Subject: subject, Data: data}, time.Now().Add(recordWriteWait)); err != nil {
		return nil, err
	}
	return inlineRecordRef(subject, data), nil
}

// inlineRecordRef is the reference of a record, data, stored on subject,
// its mission's RecordSubject.
func inlineRecordRef(subject string, data []byte) *messages.ObjectRef {
	return &messages.ObjectRef{Bucket: messages.StreamResults, Name: subject, Size: int64(len(data)), Digest: digestOf(data)}
}

// digestPrefix starts a digest as the object store writes it
// (jetstream.GetObjectDigestValue): the hash's name, then its sum in
// URL-safe base64.
const digestPrefix = "SHA-256="

// digestOf is data's digest as the object store writes it
// (jetstream.GetObjectDigestValue), made on the stack but for the string
// returned.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	var buf [len(digestPrefix) + 44]byte // 44: base64 of 32 bytes, padded
	out := append(buf[:0], digestPrefix...)
	out = base64.URLEncoding.AppendEncode(out, sum[:])
	return string(out)
}

// putSealed seals data (sealStep) and puts it with put, returning the
// object's reference with the key.
func putSealed(ctx context.Context, data []byte, put func(context.Context, []byte) (*jetstream.ObjectInfo, error)) (*messages.ObjectRef, error) {
	sealed, key, err := sealStep(data)
	if err != nil {
		return nil, err
	}
	info, err := put(ctx, sealed)
	if err != nil {
		return nil, err
	}
	return &messages.ObjectRef{Bucket: messages.BucketResults, Name: info.Name, Size: int64(info.Size), Digest: info.Digest, Key: key}, nil
}

// recordWriteWait bounds the retries of a record's write (a cluster
// electing a leader answers no request for a few seconds).
const recordWriteWait = 10 * time.Second

// putRetrying puts data under name in obs, retrying with backoff for up
// to recordWriteWait and never past ctx.
func putRetrying(ctx context.Context, obs jetstream.ObjectStore, name string, data []byte) (*jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, recordWriteWait)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		info, err := obs.Put(ctx, smallObjectMeta(name, len(data)), bytes.NewReader(data))
		if err == nil {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// maxOneChunk is the largest object putNew writes: one chunk of the
// object store's default size.
const maxOneChunk = 128 << 10

// putNew writes data as the object name of bucket, which must not exist
// yet, as ObjectStore.Put writes it (one chunk of its own length, then
// the meta that rolls up the name's subject), without Put's read of an
// earlier object of the name, whose chunks Put would remove: its chunk
// is published without waiting, then its meta, both acknowledged. An
// error leaves at most an unreferenced chunk, which expires with the
// bucket's TTL.
func putNew(ctx context.Context, js jetstream.JetStream, bucket, name string, data []byte) (*jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, recordWriteWait)
	defer cancel()
	info := &jetstream.ObjectInfo{ObjectMeta: smallObjectMeta(name, len(data)), Bucket: bucket,
		NUID: messages.NewMissionID(), Size: uint64(len(data)), Chunks: 1, Digest: digestOf(data)}
	meta, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	chunk, err := js.PublishMsgAsync(&nats.Msg{Subject: "$O." + bucket + ".C." + info.NUID, Data: data})
	if err != nil {
		return nil, err
	}
	mm := &nats.Msg{Subject: "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name)), Data: meta, Header: nats.Header{}}
	mm.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if _, err := js.PublishMsg(ctx, mm); err != nil {
		return nil, err
	}
	select {
	case <-chunk.Ok():
	case err := <-chunk.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	info.ModTime = time.Now().UTC()
	return info, nil
}

// smallObjectMeta names an object of size bytes whose chunks are at most
// that size: a put allocates one buffer of the chunk size (128 KiB by
// default), which for a record of a few KB written by every mission is
// most of the mission's allocation.
func smallObjectMeta(name string, size int) jetstream.ObjectMeta {
	return jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: uint32(min(max(size, 1), maxOneChunk))}}
}

// Record returns the record a worker kept of mission id when it finished
// it (messages.MissionRecord), found through the mission's result
// (Step.Record, which holds its key) and read with direct gets.
// ErrNotFound (wrapped) means there is none: the mission has not finished,
// ran on a worker that keeps none, or its record expired with the
// results.
func (c *Client) Record(ctx context.Context, id string) (*messages.MissionRecord, error) {
	if err := checkID("record", id); err != nil {
		return nil, err
	}
	if c.st.ResultObjects == nil || c.st.resultStream == nil {
		return nil, fmt.Errorf("fleet: record %s: the %s object store is not set up", id, messages.BucketResults)
	}
	step, err := readResult(ctx, c.st, c.key(id))
	if err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	ref := step.Record
	if ref == nil {
		return nil, fmt.Errorf("fleet: record %s: %w: its result names no record", id, ErrNotFound)
	}
	if ref.Bucket == messages.StreamResults {
		return c.recordNextToResult(ctx, id, ref)
	}
	if ref.Bucket != messages.BucketResults || ref.Name != messages.MissionRecordName(id) || ref.Size > maxStoredStep+sealOverhead {
		return nil, fmt.Errorf("fleet: record %s: %s cannot be read (want %s in %s of at most %d bytes)", id, ref, messages.MissionRecordName(id), messages.BucketResults, maxStoredStep)
	}
	data, err := readObjectDirect(ctx, c.st.nc, c.st.resultStream, ref)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("fleet: record %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	if data, err = openStep(data, ref.Key); err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	return decodeRecord(id, data)
}

// recordNextToResult reads the record of mission id that ref names on its
// RecordSubject in RESULTS: read by the subject the client may read, it
// must be the message ref names, of its size and digest.
func (c *Client) recordNextToResult(ctx context.Context, id string, ref *messages.ObjectRef) (*messages.MissionRecord, error) {
	if ref.Size > maxInlineRecord {
		return nil, fmt.Errorf("fleet: record %s: %s is larger than the %d bytes a record next to its result holds", id, ref, maxInlineRecord)
	}
	k := c.key(id)
	msg, err := getMsg(ctx, c.st.nc, c.st.Results, lastOn(messages.RecordSubject(k.sub, k.id)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("fleet: record %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	if msg.Subject != ref.Name || int64(len(msg.Data)) != ref.Size || digestOf(msg.Data) != ref.Digest {
		return nil, fmt.Errorf("fleet: record %s: the message on %s (%d bytes) is not the %s its result names", id, msg.Subject, len(msg.Data), ref)
	}
	return decodeRecord(id, msg.Data)
}

// decodeRecord decodes and checks the encoded record of mission id.
func decodeRecord(id string, data []byte) (*messages.MissionRecord, error) {
	if err := messages.CheckBounds(data); err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	var rec messages.MissionRecord
	if err := messages.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	if err := rec.Validate(); err != nil {
		return nil, fmt.Errorf("fleet: record %s: %w", id, err)
	}
	if rec.Mission.ID != id {
		return nil, fmt.Errorf("fleet: record %s: it is the record of mission %s", id, rec.Mission.ID)
	}
	return &rec, nil
}
