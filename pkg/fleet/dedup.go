package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DedupConfig turns on deduplication of tool calls by idempotency key in
// a ToolService. The first request with a key claims it in a JetStream KV
// bucket before the tool runs and stores the outcome after; a request with
// the same key and the same call (tool and arguments) gets the stored
// outcome without running the tool, or waits for the run that holds the
// claim. The tool thus runs at most once per key: when the run holding a
// claim never finishes (its process died), later requests are answered
// with a tool_error saying the outcome is unknown, not run again, until
// the claim expires with TTL. A request that gives up before running the
// tool (its claim's acknowledgement did not come back in time) deletes its
// claim if it was written, so that a retry runs the tool. A request whose
// key names a different call (the same key with other arguments) runs
// without deduplication.
type DedupConfig struct {
	// Bucket is the KV bucket of claims and outcomes, created when
	// missing. Default "tool_dedup".
	Bucket string
	// TTL is how long a claim and its outcome are kept; the same key after
	// it runs again. Default 72h (the fleet's result lifetime).
	TTL time.Duration
	// Replicas of the bucket when it is created. Default 1.
	Replicas int
}

// dedupStore is a ToolService's idempotency-key store.
type dedupStore struct {
	kv      jetstream.KeyValue
	service string
	// nc and prefix, when prefix is set (a bucket of its own, not a
	// mirror), write a key's claim and outcome on its subject, prefix
	// and the key, with casPublish; else through kv.
	nc     *nats.Conn
	prefix string
	// writeHook, when set, makes create's and update's writes: it is
	// given the operation ("create" or "update") and the write, and
	// answers for it (tests lose a written claim's acknowledgement or
	// fail an outcome's write).
	writeHook func(ctx context.Context, op string, write func(context.Context) (uint64, error)) (uint64, error)
}

// create claims key with rec: kv.Create, its first write made with
// casPublish. A refusal is left to kv.Create, which also claims a key
// whose last entry is a delete marker.
func (d *dedupStore) create(ctx context.Context, key string, rec []byte) (uint64, error) {
	return d.hooked(ctx, "create", key, rec, 0)
}

// update writes rec over revision rev of key: kv.Update, made with
// casPublish.
func (d *dedupStore) update(ctx context.Context, key string, rec []byte, rev uint64) (uint64, error) {
	return d.hooked(ctx, "update", key, rec, rev)
}

// hooked makes write, through writeHook (op naming it) when one is set.
func (d *dedupStore) hooked(ctx context.Context, op, key string, rec []byte, rev uint64) (uint64, error) {
	if d.writeHook == nil {
		return d.write(ctx, key, rec, rev)
	}
	return d.writeHook(ctx, op, func(ctx context.Context) (uint64, error) { return d.write(ctx, key, rec, rev) })
}

// write claims key with rec when rev is 0 (create), else writes rec over
// revision rev (update).
func (d *dedupStore) write(ctx context.Context, key string, rec []byte, rev uint64) (uint64, error) {
	if rev != 0 {
		if d.prefix == "" || !kvKeyValid(key) {
			return d.kv.Update(ctx, key, rec, rev)
		}
		return casPublish(ctx, d.nc, nil, d.prefix+key, rec, rev)
	}
	if d.prefix == "" || !kvKeyValid(key) {
		return d.kv.Create(ctx, key, rec)
	}
	rev, err := casPublish(ctx, d.nc, nil, d.prefix+key, rec, 0)
	if isWrongLastSeq(err) {
		return d.kv.Create(ctx, key, rec)
	}
	return rev, err
}

func openDedup(nc *nats.Conn, service string, cfg DedupConfig) (*dedupStore, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = "tool_dedup"
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 72 * time.Hour
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: tool service %s: dedup: %w", service, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := jetstream.KeyValueConfig{Bucket: cfg.Bucket, History: 1, TTL: cfg.TTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas}
	kv, err := retrySetup(ctx, StoreConfig{}, "kv "+cfg.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return js.CreateKeyValue(ctx, want)
		}
		return kv, err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: tool service %s: dedup: %w", service, err)
	}
	d := &dedupStore{kv: kv, service: service, nc: nc}
	// a bucket that mirrors another is written on the other's subjects:
	// through kv
	if st, err := kv.Status(ctx); err == nil {
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo().Config.Mirror == nil {
			d.prefix = kvSubject(cfg.Bucket, "")
		}
	}
	return d, nil
}

// validDedupKey reports whether idempotency key k fits in a KV key: 1 to
// 200 of the characters - / _ = . and ASCII letters and digits. Keys of
// other shapes run without deduplication.
func validDedupKey(k string) bool {
	if k == "" || len(k) > 200 {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '-' || c == '/' || c == '_' || c == '=' || c == '.',
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// dedupRecord is a key's claim (Done false) or outcome.
type dedupRecord struct {
	Digest string `msgpack:"digest"`
	// Owner identifies the request that made the claim, so that a request
	// whose claim was written but whose acknowledgement was lost finds
	// it is its own.
	Owner   string        `msgpack:"owner"`
	Done    bool          `msgpack:"done"`
	Started time.Time     `msgpack:"started"`
	Timeout time.Duration `msgpack:"timeout"`
	Out     toolOutcome   `msgpack:"out"`
}

// dedupPoll is how often a request waiting for another run's outcome
// looks again.
const dedupPoll = 25 * time.Millisecond

// once answers a call with an idempotency key: the stored outcome, the
// outcome of the run holding the key, or a new run claimed first.
func (s *ToolService) once(name string, fn ToolFunc, req *messages.ToolRequest, ci CallInfo, timeout time.Duration, log *zerolog.Logger) toolOutcome {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	key := s.dedup.service + "/" + name + "/" + ci.IdempotencyKey
	digest := callDigest(name, req.Args)
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	owner := hex.EncodeToString(nonce[:])
	run := func(rev uint64) toolOutcome {
		out := s.execute(name, fn, req, ci, timeout, log)
		done, _ := messages.Marshal(&dedupRecord{Digest: digest, Owner: owner, Done: true, Started: time.Now().UTC(), Out: out})
		if _, perr := s.dedup.update(context.WithoutCancel(ctx), key, done, rev); perr != nil {
			// The store is busy (a leader moving): keep trying in the
			// background so later requests find the outcome instead of an
			// orphaned claim.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.dedup.storeOutcome(key, done, rev, log)
			}()
		}
		return out
	}
	backoff := dedupPoll
	// A key is most often new (a call's first request): it is claimed at
	// once, with one write and no read; the key is read when the claim
	// is refused (another request claimed it first, or holds the outcome)
	// or its answer was lost.
	claim := true
	// written: a claim of this request may have been written though its
	// create failed (the write landed, or may still land, and its
	// acknowledgement was lost): not a refusal
	written := false
	// held: another request's claim was seen holding the key
	held := false
	for {
		var err error
		if claim {
			rec, _ := messages.Marshal(&dedupRecord{Digest: digest, Owner: owner, Started: time.Now().UTC(), Timeout: timeout})
			rev, cerr := s.dedup.create(ctx, key, rec)
			if cerr == nil {
				return run(rev)
			}
			err = cerr
			written = written || !errors.Is(cerr, jetstream.ErrKeyExists)
		}
		e, gerr := s.dedup.kv.Get(ctx, key)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			// no claim stored (the write failed): claim it again, after
			// a wait if this round's claim was refused
			if !claim {
				claim = true
				continue
			}
		case gerr != nil:
			err = gerr
			claim = false
		default:
			claim = false
			var rec dedupRecord
			if messages.Unmarshal(e.Value(), &rec) != nil || rec.Digest != digest {
				// The key names another call: no deduplication for it.
				return s.execute(name, fn, req, ci, timeout, log)
			}
			if !rec.Done && rec.Owner == owner {
				return run(e.Revision()) // our claim; its acknowledgement was lost
			}
			if rec.Done {
				log.Debug().Str("key", ci.IdempotencyKey).Msg("duplicate call answered from the stored outcome")
				return rec.Out
			}
			if time.Since(rec.Started) > rec.Timeout+5*time.Second {
				return errorOutcome(req.CallID, messages.ToolErrFailed,
					"an earlier attempt of this call started but never finished; its outcome is unknown and the tool is not run twice")
			}
			// Another run holds the claim: wait for its outcome.
			held = true
		}
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			log.Debug().Err(err).Msg("dedup store")
		}
		select {
		case <-ctx.Done():
			if written {
				// This request gives up without running the tool: a claim
				// of its own that was written, now or a little later,
				// would hold the key against every retry until its TTL.
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.dedup.releaseClaim(s.ctx.Done(), key, owner, log)
				}()
			}
			return errorOutcome(req.CallID, messages.ToolErrTimeout, dedupTimeoutMessage(timeout, held))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// claimReleaseWait bounds how long a request that gave up without running
// the tool looks for its claim to release it (releaseClaim): a claim whose
// acknowledgement was lost may land a little after the give-up (a slow
// store, a leader moving, a NATS restart).
const claimReleaseWait = 30 * time.Second

// releaseClaim deletes key's claim when it is the unrun claim of owner, a
// request that gave up without running the tool (once), so that a retry
// of the call claims the key and runs it instead of waiting for an outcome
// that never comes. It reads the key until it holds a record, the service
// stops (stop closes) or claimReleaseWait has passed, and deletes only a
// record that is owner's claim and not an outcome, with the revision it
// read. Each race leaves the tool run at most once:
//
//   - the claim lands after a read found the key empty: the claim's write
//     is conditional on the key being unclaimed (no revision, or a delete
//     marker's), so it lands only while the key holds no other record,
//     and a later read finds it;
//   - a retry claims the key first: the retry's record is not owner's, so
//     it is left, and owner's late write is refused (the key is claimed);
//   - a retry reads owner's claim and waits: it claims the key once the
//     claim is deleted and runs the tool, which owner never ran;
//   - the key changes between the read and the delete (its TTL ended and
//     another request claimed it): the delete names the revision read and
//     is refused; the next read finds the other's record and leaves it.
//
// A claim of owner's is unrun because owner gives up only before running
// the tool (a run stores its outcome over the claim, or keeps trying to,
// storeOutcome, and is never released). A release that cannot tell (the
// store does not answer, or the claim lands after claimReleaseWait)
// leaves the claim, which then holds the key until its TTL.
func (d *dedupStore) releaseClaim(stop <-chan struct{}, key, owner string, log *zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), claimReleaseWait)
	defer cancel()
	backoff := dedupPoll
	// seen: owner's claim was read, so the key is left empty only by its
	// deletion (a delete whose acknowledgement was lost) or its TTL
	seen := false
	for {
		e, err := d.kv.Get(ctx, key)
		switch {
		case err == nil:
			var rec dedupRecord
			if messages.Unmarshal(e.Value(), &rec) != nil || rec.Owner != owner || rec.Done {
				return // another request's record, or an outcome
			}
			seen = true
			err = d.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
			if err == nil {
				log.Debug().Str("key", key).Msg("claim of a call that gave up before running released")
				return
			}
		case errors.Is(err, jetstream.ErrKeyNotFound):
			if seen {
				return
			}
		}
		select {
		case <-ctx.Done():
			if seen || err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				log.Warn().Err(err).Str("key", key).Msg("claim of a call that gave up before running not released; the key stays claimed until its TTL")
			}
			return
		case <-stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// dedupTimeoutMessage is the error of a deduplicated call that got no
// answer within timeout: held says it waited for another request's
// run of the call, else its own claim was never confirmed.
func dedupTimeoutMessage(timeout time.Duration, held bool) string {
	why := "the idempotency store did not confirm this call's claim; the tool did not run"
	if held {
		why = "waiting for another attempt of the same call"
	}
	return fmt.Sprintf("no answer within %s (%s)", timeout.Round(time.Millisecond), why)
}

// outcomeStoreWait bounds the retries of storing an outcome.
const outcomeStoreWait = time.Minute

// storeOutcome retries writing a run's outcome over its claim (revision
// rev) until it lands, the key holds an outcome already (a lost
// acknowledgement), or outcomeStoreWait has passed.
func (d *dedupStore) storeOutcome(key string, done []byte, rev uint64, log *zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), outcomeStoreWait)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			log.Warn().Str("key", key).Msg("tool outcome not stored for deduplication; the key stays claimed until its TTL")
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		_, err := d.update(ctx, key, done, rev)
		if err == nil {
			return
		}
		if e, gerr := d.kv.Get(ctx, key); gerr == nil {
			var rec dedupRecord
			if messages.Unmarshal(e.Value(), &rec) == nil && rec.Done {
				return
			}
		}
	}
}
