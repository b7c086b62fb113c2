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
// the claim expires with TTL. A request whose key names a different call
// (the same key with other arguments) runs without deduplication.
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
}

// create claims key with rec: kv.Create, its first write made with
// casPublish. A refusal is left to kv.Create, which also claims a key
// whose last entry is a delete marker.
func (d *dedupStore) create(ctx context.Context, key string, rec []byte) (uint64, error) {
	if d.prefix == "" || !kvKeyValid(key) {
		return d.kv.Create(ctx, key, rec)
	}
	rev, err := casPublish(ctx, d.nc, nil, d.prefix+key, rec, 0)
	if isWrongLastSeq(err) {
		return d.kv.Create(ctx, key, rec)
	}
	return rev, err
}

// update writes rec over revision rev of key: kv.Update, made with
// casPublish.
func (d *dedupStore) update(ctx context.Context, key string, rec []byte, rev uint64) (uint64, error) {
	if d.prefix == "" || !kvKeyValid(key) {
		return d.kv.Update(ctx, key, rec, rev)
	}
	return casPublish(ctx, d.nc, nil, d.prefix+key, rec, rev)
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
	for {
		var err error
		if claim {
			rec, _ := messages.Marshal(&dedupRecord{Digest: digest, Owner: owner, Started: time.Now().UTC(), Timeout: timeout})
			rev, cerr := s.dedup.create(ctx, key, rec)
			if cerr == nil {
				return run(rev)
			}
			err = cerr
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
		}
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			log.Debug().Err(err).Msg("dedup store")
		}
		select {
		case <-ctx.Done():
			return errorOutcome(req.CallID, messages.ToolErrTimeout,
				fmt.Sprintf("no answer within %s (waiting for another attempt of the same call)", timeout.Round(time.Millisecond)))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
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
