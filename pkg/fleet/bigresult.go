package fleet

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DefaultToolResultTTL is how long a tool service's results bucket keeps a
// large result when ToolServiceConfig.ResultTTL is not set: long enough
// for a mission redelivered to another worker to read it again.
const DefaultToolResultTTL = 24 * time.Hour

// resultBucketBind bounds one attempt to bind (or create) a tool
// service's results bucket. A user without the rights gets no answer at
// all from JetStream, only a permissions error on the connection, so an
// unbounded attempt would stall the call until its deadline.
const resultBucketBind = 2 * time.Second

// resultBucketRetry is how long a failed bind is remembered: calls in
// between do not try again (each would stall for resultBucketBind).
const resultBucketRetry = time.Minute

// resultStore is a tool service's results bucket, bound on first use.
type resultStore struct {
	nc      *nats.Conn
	service string
	ttl     time.Duration

	mu       sync.Mutex
	obs      jetstream.ObjectStore
	failed   error     // the last bind's error
	failedAt time.Time // when it failed
}

// bucket returns the service's results bucket, creating it (or updating
// its settings) the first time. A failure is remembered for
// resultBucketRetry, so a service whose user may not use the bucket
// answers at once (its large results then go inline where they fit).
func (r *resultStore) bucket(ctx context.Context) (jetstream.ObjectStore, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.obs != nil {
		return r.obs, nil
	}
	if r.failed != nil && time.Since(r.failedAt) < resultBucketRetry {
		return nil, r.failed
	}
	obs, err := r.bind(ctx)
	if err != nil {
		r.failed, r.failedAt = err, time.Now()
		return nil, err
	}
	r.obs, r.failed = obs, nil
	return obs, nil
}

func (r *resultStore) bind(ctx context.Context) (jetstream.ObjectStore, error) {
	ctx, cancel := context.WithTimeout(ctx, resultBucketBind)
	defer cancel()
	js, err := jetstream.New(r.nc)
	if err != nil {
		return nil, err
	}
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      messages.ToolResultBucket(r.service),
		Description: "large results of tool service " + r.service,
		TTL:         r.ttl, Storage: jetstream.FileStorage,
	}
	obs, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateOrUpdateObjectStore(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", cfg.Bucket, err)
	}
	return obs, nil
}

// put stores one encoded result (msgpack) of the call ci and returns its
// reference.
func (r *resultStore) put(ctx context.Context, ci CallInfo, enc []byte) (*messages.ObjectRef, error) {
	obs, err := r.bucket(ctx)
	if err != nil {
		return nil, err
	}
	mission := ci.MissionID
	if mission == "" {
		mission = "none"
	}
	name := mission + "." + ci.Tool + "." + messages.NewMissionID()
	info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name,
		Headers: nats.Header{messages.HeaderMissionID: {ci.MissionID}, messages.HeaderCallID: {ci.CallID}}},
		bytes.NewReader(enc))
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", name, err)
	}
	return &messages.ObjectRef{Bucket: info.Bucket, Name: info.Name, Size: int64(info.Size), Digest: info.Digest}, nil
}

// refReader reads the object a reference names: exactly Size bytes whose
// digest the object store checks at the end.
type refReader struct {
	obj  jetstream.ObjectResult
	ref  *messages.ObjectRef
	left int64
}

func (r *refReader) Read(p []byte) (int, error) {
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1] // one more: an object longer than its reference is noticed
	}
	n, err := r.obj.Read(p)
	r.left -= int64(n)
	switch {
	case r.left < 0:
		return n, fmt.Errorf("%s holds more bytes than its reference says", r.ref)
	case err == io.EOF && r.left > 0:
		return n, fmt.Errorf("%s ends %d bytes early", r.ref, r.left)
	case err != nil && err != io.EOF:
		return n, fmt.Errorf("%s: %w", r.ref, err)
	}
	return n, err
}

func (r *refReader) Close() error { return r.obj.Close() }

// refStores opens the objects tool results refer to, keeping one handle
// per bucket, and remembers the references it was given (seen) so that a
// finished mission's objects can be deleted.
type refStores struct {
	nc   *nats.Conn
	mu   sync.Mutex
	js   jetstream.JetStream
	by   map[string]jetstream.ObjectStore
	seen map[messages.ObjectRef]bool
}

// note records a reference a tool reply carried (answered live or from
// the journal).
func (s *refStores) note(ref *messages.ObjectRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[messages.ObjectRef]bool{}
	}
	s.seen[*ref] = true
}

// deleteMission deletes the tool-result objects of mission id among the
// references noted: those in a tool results bucket whose name starts with
// "<id>." (the name the tool-service SDK gives them). A reference to any
// other object (another mission's, a foreign bucket's) is left alone,
// whatever a tool service replied. It returns how many it deleted.
func (s *refStores) deleteMission(ctx context.Context, id string) (int, error) {
	s.mu.Lock()
	refs := s.seen
	s.seen = nil
	s.mu.Unlock()
	n := 0
	var errs []error
	for ref := range refs {
		if id == "" || !strings.HasPrefix(ref.Name, id+".") || !strings.HasPrefix(ref.Bucket, messages.ToolResultBucketPrefix) {
			continue
		}
		deleted, err := s.deleteObject(ctx, ref)
		if err != nil {
			errs = append(errs, err)
		}
		if deleted {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// deleteObject removes the object ref names by purging its metadata and
// its chunks from the bucket's stream. Unlike ObjectStore.Delete, which
// publishes a delete marker on the metadata subject, it needs no right to
// write into the bucket, only to purge it: a worker may delete a tool
// service's results without being able to forge one. An object already
// gone (expired, deleted by another attempt) is not an error.
func (s *refStores) deleteObject(ctx context.Context, ref messages.ObjectRef) (bool, error) {
	obs, err := s.bucket(ctx, ref.Bucket)
	if err != nil {
		return false, err
	}
	info, err := obs.GetInfo(ctx, ref.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete %s: %w", &ref, err)
	}
	s.mu.Lock()
	js := s.js
	s.mu.Unlock()
	str, err := js.Stream(ctx, "OBJ_"+ref.Bucket)
	if err != nil {
		return false, fmt.Errorf("delete %s: %w", &ref, err)
	}
	// The metadata first: once it is gone the object is, and chunks left
	// behind by a failure expire with the bucket's TTL.
	meta := "$O." + ref.Bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(ref.Name))
	if err := str.Purge(ctx, jetstream.WithPurgeSubject(meta)); err != nil {
		return false, fmt.Errorf("delete %s: metadata: %w", &ref, err)
	}
	if err := str.Purge(ctx, jetstream.WithPurgeSubject("$O."+ref.Bucket+".C."+info.NUID)); err != nil {
		return true, fmt.Errorf("delete %s: chunks: %w", &ref, err)
	}
	return true, nil
}

// open returns a reader of the object ref names, after checking that the
// object is in a tool results bucket and has the reference's size and
// digest. limit bounds the size (≤ 0: none): a larger result is refused
// before a byte of it is read.
func (s *refStores) open(ctx context.Context, ref *messages.ObjectRef, limit int64) (io.ReadCloser, error) {
	if !strings.HasPrefix(ref.Bucket, messages.ToolResultBucketPrefix) {
		return nil, fmt.Errorf("%s is not in a tool results bucket (%s<service>)", ref, messages.ToolResultBucketPrefix)
	}
	if limit > 0 && ref.Size > limit {
		return nil, &DataLimitError{Size: ref.Size, Limit: limit, What: ref.String()}
	}
	obs, err := s.bucket(ctx, ref.Bucket)
	if err != nil {
		return nil, err
	}
	obj, err := obs.Get(ctx, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	info, err := obj.Info()
	if err == nil && (int64(info.Size) != ref.Size || info.Digest != ref.Digest) {
		err = fmt.Errorf("%s: the object has %d bytes with digest %s, not the reference's %s", ref, info.Size, info.Digest, ref.Digest)
	}
	if err != nil {
		_ = obj.Close()
		return nil, err
	}
	return &refReader{obj: obj, ref: ref, left: ref.Size}, nil
}

func (s *refStores) bucket(ctx context.Context, name string) (jetstream.ObjectStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if obs, ok := s.by[name]; ok {
		return obs, nil
	}
	if s.js == nil {
		js, err := jetstream.New(s.nc)
		if err != nil {
			return nil, err
		}
		s.js, s.by = js, map[string]jetstream.ObjectStore{}
	}
	obs, err := s.js.ObjectStore(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", name, err)
	}
	s.by[name] = obs
	return obs, nil
}

// DataLimitError reports data over a mission's data limit, refused before
// it was read.
type DataLimitError struct {
	// What names the data (a tool result's object).
	What string
	// Size and Limit are in bytes.
	Size, Limit int64
}

func (e *DataLimitError) Error() string {
	return fmt.Sprintf("%s is over the mission's data limit of %d bytes; ask the tool for less (filter, page or limit the call) or raise limits.max_data (up to the worker's ceiling)", e.What, e.Limit)
}

// readRef reads the whole object ref names (a Go caller's result).
func (b *Toolbox) readRef(ctx context.Context, ref *messages.ObjectRef) ([]byte, error) {
	rc, err := b.refs.open(ctx, ref, b.maxData)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, ref.Size))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// missionMaxData is the data limit of mission m (limits.max_data of the
// mission over its top-level agent's; ≤ 0: none).
func missionMaxData(m *messages.Mission) int64 {
	l := m.EffectiveLimits()
	limit, ok := messages.LimitOr(l.MaxData, messages.DefaultMaxData)
	if !ok {
		return -1
	}
	return limit
}
