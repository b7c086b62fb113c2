package fleet

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// StoreConfig configures the fleet's streams, consumers and buckets. The zero
// value gives the local (R1) layout with the defaults below.
type StoreConfig struct {
	// Replicas of every stream and bucket: 1 locally, 3 in production.
	// Default 1.
	Replicas int
	// DuplicateWindow is the MISSIONS dedupe window (Msg-Id = mission id).
	// Default 15m.
	DuplicateWindow time.Duration
	// MaxMissionBytes bounds one mission message. Default
	// messages.MaxMissionBytes (256 KiB).
	MaxMissionBytes int32
	// MaxContextBytes is the operator's ceiling on one mission context
	// stored aside in the mission_ctx object store. A context is bounded
	// by its mission's data limit (limits.max_data, default
	// messages.DefaultMaxData) and by this ceiling, whichever is smaller:
	// a client refuses to store a larger one and a worker refuses to read
	// one (the mission fails with invalid_mission). Default
	// messages.DefaultMaxData.
	MaxContextBytes int64
	// ContextStoreBytes bounds the whole mission_ctx object store (its
	// stream's MaxBytes); a context stored beyond it is refused. Default
	// 1 GiB.
	ContextStoreBytes int64
	// ResultStoreBytes bounds the whole mission_results object store of
	// Steps too large for one message. Default 2 GiB.
	ResultStoreBytes int64
	// MaxQueued bounds queued missions; publishers get an error beyond it
	// (Discard: New). Default 1,000,000.
	MaxQueued int64
	// ResultTTL is how long results are kept. Default 72h.
	ResultTTL time.Duration
	// EventTTL is how long progress events are kept. Default 1h.
	EventTTL time.Duration
	// DeadTTL is how long dead letters are kept. Default 30 days.
	DeadTTL time.Duration
	// StatusTTL is how long mission status is kept. Default 72h.
	StatusTTL time.Duration
	// AckWait of the mission consumers; workers heartbeat every AckWait/3,
	// so a killed worker's missions are redelivered at most AckWait after
	// its last heartbeat. Default DefaultAckWait.
	AckWait time.Duration
	// MaxDeliver of the mission consumers. Default 5.
	MaxDeliver int
	// MaxAckPending of each mission consumer: how many missions of a
	// lane of a priority the fleet's workers hold at once, so at least the
	// sum of their slots. 0 (the default) asks for DefaultMaxAckPending and keeps
	// an existing consumer's higher value; a value above 0 sets exactly it
	// (the administrator's setup, which may also lower it). A worker that
	// sets the layout up raises it to at least its WorkerConfig.Slots.
	MaxAckPending int
	// minAckPending is a floor of MaxAckPending: a worker's slots.
	minAckPending int
	// ToolServices names the tool services whose results buckets
	// (messages.ToolResultBucket; large results travel through them) the
	// setup creates, with the TTL DefaultToolResultTTL. Where a tool
	// service's NATS user may create streams it creates its own bucket on
	// first use; the shipped permissions do not allow that, because
	// creating a stream chooses its subjects.
	ToolServices []string
	// VerifyOnly makes EnsureStores wait for the layout to exist instead
	// of creating or updating it: for deployments where workers may not
	// create streams and an administrator sets the layout up.
	VerifyOnly bool
	// OnRetry, if set, is told about each transient setup failure before
	// EnsureStores waits and tries again (e.g. to log it).
	OnRetry func(what string, err error, wait time.Duration)
}

// contextLimit is the most bytes mission m's context may take encoded:
// the mission's data limit under the MaxContextBytes ceiling.
func (c StoreConfig) contextLimit(m *messages.Mission) int64 {
	limit := c.withDefaults().MaxContextBytes
	if d := missionMaxData(m); d > 0 && d < limit {
		limit = d
	}
	return limit
}

func (c StoreConfig) withDefaults() StoreConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	def(&c.DuplicateWindow, 15*time.Minute)
	def(&c.ResultTTL, 72*time.Hour)
	def(&c.EventTTL, time.Hour)
	def(&c.DeadTTL, 30*24*time.Hour)
	def(&c.StatusTTL, 72*time.Hour)
	def(&c.AckWait, DefaultAckWait)
	if c.MaxMissionBytes <= 0 {
		c.MaxMissionBytes = messages.MaxMissionBytes
	}
	if c.MaxContextBytes <= 0 {
		c.MaxContextBytes = messages.DefaultMaxData
	}
	if c.ContextStoreBytes <= 0 {
		c.ContextStoreBytes = 1 << 30
	}
	if c.ResultStoreBytes <= 0 {
		c.ResultStoreBytes = 2 << 30
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 1_000_000
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	return c
}

// DefaultMaxAckPending is the mission consumers' MaxAckPending when
// StoreConfig.MaxAckPending is 0 and no worker's slots ask for more.
const DefaultMaxAckPending = 1000

// ackPending is the consumers' wanted MaxAckPending and whether an
// existing consumer's higher value is kept (StoreConfig.MaxAckPending 0).
func (c StoreConfig) ackPending() (n int, keepHigher bool) {
	if c.MaxAckPending > 0 {
		return max(c.MaxAckPending, c.minAckPending), false
	}
	return max(DefaultMaxAckPending, c.minAckPending), true
}

// DefaultAckWait is the mission consumers' default AckWait: short enough
// that another worker takes over a killed worker's missions within
// seconds, long enough that a live worker's heartbeat (every third of it)
// survives a NATS reconnect.
const DefaultAckWait = 6 * time.Second

// BudgetSpendTTL is how long a budget's spend in a period is kept after
// its last change: two months, so a month's spend outlives the month.
const BudgetSpendTTL = 62 * 24 * time.Hour

// ConsumerName is the durable pull consumer of the missions of a priority
// stored with no lane (queued before the layout had lanes).
func ConsumerName(priority string) string { return "workers-" + priority }

// LaneConsumerName is the durable pull consumer of the missions of a
// priority in lane l (messages.MissionLanes).
func LaneConsumerName(priority string, l int) string {
	return "workers-" + priority + "-" + strconv.Itoa(l)
}

// WakeConsumerName is the durable pull consumer of PARKED's wakes
// (messages.WakeWildcard), from which workers move each wake into
// MISSIONS (wakeMover.move).
const WakeConsumerName = "wake-movers"

// Stores holds the handles EnsureStores created or updated.
type Stores struct {
	Missions jetstream.Stream
	// Parked holds suspended missions and their schedules.
	Parked  jetstream.Stream
	Results jetstream.Stream
	Events  jetstream.Stream
	Dead    jetstream.Stream
	Journal jetstream.Stream
	Status  jetstream.KeyValue
	// Approvals holds the tool calls that needed approval.
	Approvals jetstream.KeyValue
	Context   jetstream.ObjectStore
	// ResultObjects holds Steps too large for one message.
	ResultObjects jetstream.ObjectStore
	// BudgetLimits and BudgetSpend hold the fleet-wide budgets and what
	// each spent (set up by EnsureStores; nil in a client's bound layout).
	BudgetLimits, BudgetSpend jetstream.KeyValue
	// QuotaLimits and QuotaLeases hold the per-submitter quotas and the
	// leases of the missions running under them (set up by
	// EnsureStores; nil in a client's bound layout).
	QuotaLimits, QuotaLeases jetstream.KeyValue
	// resultStream is ResultObjects' stream, read with direct gets.
	resultStream jetstream.Stream
	// statusStream is Status' stream, read with direct gets where a
	// reader looks a mission up by id alone (messages.AllSubmitters).
	statusStream jetstream.Stream
	// nc is the connection the handles were made on: casStatus publishes
	// a status on it (publishAcked) and getStatus reads one with a direct
	// get (directLast); nil: through Status.
	nc *nats.Conn
	// replies, when set, is nc's reply mux of the worker or client that
	// owns these Stores: the direct gets of a mission's status and
	// result and the publishes of its status and result send their
	// requests on it (requestOn); nil: through nats.go's request path.
	replies *replyMux
	// batchResults says a mission's record and result are published in
	// one atomic batch (publishWithRecord): Results allows it and stages
	// a batch in memory (batchesResults).
	batchResults bool
	// claimMarkers says Results holds claim markers
	// (messages.ClaimSubject): a run that takes a mission from another
	// stores one, and runs publish their results under a claimFence
	// (resultsHoldClaims). A layout set up before it holds none: there
	// the last fence check before a result is the status read alone.
	claimMarkers bool
	// Consumers by priority: the missions stored with no lane, queued
	// before the layout had lanes.
	Consumers map[string]jetstream.Consumer
	// Lanes holds each priority's lane consumers, by lane
	// (messages.MissionLanes); nil in a client's bound layout.
	Lanes map[string][]jetstream.Consumer
	// Wakes is PARKED's consumer of wakes (WakeConsumerName); nil in a
	// client's bound layout.
	Wakes jetstream.Consumer
}

// EnsureStores makes the fleet layout (docs/fleet.md) exist as cfg says and
// returns handles to it. It is safe to call from every worker and client at
// once, on a single server or a cluster in any state:
//
//   - each stream, consumer and bucket is read first; one that exists with
//     the wanted settings is left alone (no write), one that differs is
//     updated with only the fleet's fields changed, a missing one is created;
//   - a peer creating the same store at the same moment is not an error
//     (the create is followed by another read);
//   - transient failures (no JetStream leader, 503, API timeouts, lost
//     responses) are retried with capped exponential backoff until ctx ends;
//     only errors no retry can fix (an invalid or conflicting
//     configuration) return early.
//
// With cfg.VerifyOnly it never creates or updates anything: it waits, with
// the same backoff, until every store exists (for deployments where only an
// administrator may create streams). Concurrent calls with different
// configurations leave the last one written.
func EnsureStores(ctx context.Context, js jetstream.JetStream, cfg StoreConfig) (*Stores, error) {
	cfg = cfg.withDefaults()
	st := &Stores{Consumers: map[string]jetstream.Consumer{}, Lanes: map[string][]jetstream.Consumer{}, nc: js.Conn()}
	for _, s := range layoutStreams(cfg) {
		str, err := retrySetup(ctx, cfg, "stream "+s.cfg.Name, func(ctx context.Context) (jetstream.Stream, error) {
			return ensureStream(ctx, js, s.cfg, cfg.VerifyOnly)
		})
		if err != nil {
			return nil, err
		}
		*s.dst(st) = str
	}
	st.batchResults = batchesResults(st.Results)
	st.claimMarkers = resultsHoldClaims(st.Results)
	ackPending, keepHigher := cfg.ackPending()
	consumer := func(name, filter string) (jetstream.Consumer, error) {
		want := jetstream.ConsumerConfig{
			Durable:       name,
			FilterSubject: filter,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			MaxDeliver:    cfg.MaxDeliver,
			MaxAckPending: ackPending,
			MaxWaiting:    4096,
		}
		return retrySetup(ctx, cfg, "consumer "+want.Durable, func(ctx context.Context) (jetstream.Consumer, error) {
			return ensureConsumer(ctx, st.Missions, want, keepHigher, cfg.VerifyOnly)
		})
	}
	for _, p := range messages.Priorities() {
		c, err := consumer(ConsumerName(p), messages.SubmitFilter(p))
		if err != nil {
			return nil, err
		}
		st.Consumers[p] = c
		for l := range messages.MissionLanes {
			c, err := consumer(LaneConsumerName(p, l), messages.LaneFilter(p, l))
			if err != nil {
				return nil, err
			}
			st.Lanes[p] = append(st.Lanes[p], c)
		}
	}
	// every wake is moved, however often its move fails (MISSIONS
	// full, no leader): MaxDeliver unlimited
	wakes := jetstream.ConsumerConfig{
		Durable:       WakeConsumerName,
		FilterSubject: messages.WakeWildcard,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: wakeAckPending,
		MaxWaiting:    4096,
	}
	var err error
	if st.Wakes, err = retrySetup(ctx, cfg, "consumer "+wakes.Durable, func(ctx context.Context) (jetstream.Consumer, error) {
		return ensureConsumer(ctx, st.Parked, wakes, false, cfg.VerifyOnly)
	}); err != nil {
		return nil, err
	}
	kvCfg := jetstream.KeyValueConfig{
		Bucket: messages.BucketStatus, History: 1, TTL: cfg.StatusTTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
	}
	st.Status, err = retrySetup(ctx, cfg, "kv "+kvCfg.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return ensureKV(ctx, js, kvCfg, cfg.VerifyOnly)
	})
	if err != nil {
		return nil, err
	}
	apCfg := jetstream.KeyValueConfig{
		Bucket: messages.BucketApprovals, History: 1, TTL: cfg.ResultTTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
	}
	st.Approvals, err = retrySetup(ctx, cfg, "kv "+apCfg.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		return ensureKV(ctx, js, apCfg, cfg.VerifyOnly)
	})
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&st.BudgetLimits, jetstream.KeyValueConfig{Bucket: messages.BucketBudgetLimits, History: 1,
			Description: "fleet-wide budgets by scope and window"}},
		// a month's spend is read until the month ends: keep two
		{&st.BudgetSpend, jetstream.KeyValueConfig{Bucket: messages.BucketBudgetSpend, History: 1, TTL: BudgetSpendTTL,
			Description: "what each fleet-wide budget spent, by period"}},
		{&st.QuotaLimits, jetstream.KeyValueConfig{Bucket: messages.BucketQuotaLimits, History: 1,
			Description: "per-submitter quotas"}},
		{&st.QuotaLeases, jetstream.KeyValueConfig{Bucket: messages.BucketQuotaLeases, History: 1,
			Description: "the leases of the missions running under a per-submitter quota, by submitter"}},
	} {
		want := b.cfg
		want.Storage, want.Replicas = jetstream.FileStorage, cfg.Replicas
		if *b.dst, err = retrySetup(ctx, cfg, "kv "+want.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
			return ensureKV(ctx, js, want, cfg.VerifyOnly)
		}); err != nil {
			return nil, err
		}
	}
	objects := func(want jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
		want.Storage, want.Replicas = jetstream.FileStorage, cfg.Replicas
		return retrySetup(ctx, cfg, "object store "+want.Bucket, func(ctx context.Context) (jetstream.ObjectStore, error) {
			return ensureObjectStore(ctx, js, want, cfg.VerifyOnly)
		})
	}
	if st.Context, err = objects(jetstream.ObjectStoreConfig{
		Bucket: messages.BucketContext, TTL: cfg.ResultTTL, MaxBytes: cfg.ContextStoreBytes}); err != nil {
		return nil, err
	}
	if st.ResultObjects, err = objects(jetstream.ObjectStoreConfig{
		Bucket: messages.BucketResults, TTL: cfg.ResultTTL, MaxBytes: cfg.ResultStoreBytes}); err != nil {
		return nil, err
	}
	for _, svc := range cfg.ToolServices {
		if _, err := objects(jetstream.ObjectStoreConfig{Bucket: messages.ToolResultBucket(svc),
			Description: "large results of tool service " + svc, TTL: DefaultToolResultTTL}); err != nil {
			return nil, err
		}
	}
	st.resultStream, err = retrySetup(ctx, cfg, "stream "+resultObjectStream, func(ctx context.Context) (jetstream.Stream, error) {
		return js.Stream(ctx, resultObjectStream)
	})
	if err != nil {
		return nil, err
	}
	st.statusStream, err = retrySetup(ctx, cfg, "stream "+statusStream, func(ctx context.Context) (jetstream.Stream, error) {
		return js.Stream(ctx, statusStream)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// batchesResults reports whether a worker publishes a mission's record
// and result to results stream s in one atomic batch: s allows atomic
// publishes and is replicated. A replicated stream stages a batch in
// memory and stores it with one proposal, where the two publishes wait
// for two; a stream of one replica on file stages each batch in a file
// store of its own, created, synced and removed per batch (nats-server
// v2.15), which costs milliseconds where two publishes cost about 0.1 ms
// (docs/performance.md, "Idle latency"). A stream that does not allow
// them yet (a layout set up before it did) gets the two publishes.
func batchesResults(s jetstream.Stream) bool {
	if s == nil || s.CachedInfo() == nil {
		return false
	}
	c := s.CachedInfo().Config
	return c.AllowAtomicPublish && c.Replicas > 1
}

// resultObjectStream is the stream behind the mission_results object
// store.
const resultObjectStream = "OBJ_" + messages.BucketResults

// statusStream is the stream behind the mission_status bucket.
const statusStream = "KV_" + messages.BucketStatus

// layoutStream is one stream of the layout and where its handle goes.
type layoutStream struct {
	dst func(*Stores) *jetstream.Stream
	cfg jetstream.StreamConfig
}

// layoutStreams lists the fleet's streams as cfg configures them.
func layoutStreams(cfg StoreConfig) []layoutStream {
	return []layoutStream{
		{func(s *Stores) *jetstream.Stream { return &s.Parked }, jetstream.StreamConfig{
			Name: messages.StreamParked,
			// suspended missions wait on mission.park.<id>, each message
			// the schedule that publishes it on
			// mission.wake.<submitter>.<priority>.<id> at its deadline
			// (a quota's lease given back copies it there too), which
			// workers move into MISSIONS (WakeConsumerName,
			// docs/approvals.md); a decision publishes its copy into
			// MISSIONS directly (mission.woken.*.*.*), here only where
			// MISSIONS does not hold that subject or refuses it;
			// mission.parked.<id> holds those an earlier release parked
			Subjects: []string{messages.SubjectParkPrefix + "*", messages.SubjectParkedPrefix + "*",
				messages.WakeWildcard},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.ResultTTL, MaxMsgSize: cfg.MaxMissionBytes, Duplicates: 2 * time.Minute,
			AllowRollup: true, AllowMsgTTL: true, AllowMsgSchedules: true, AllowDirect: true,
		}},
		{func(s *Stores) *jetstream.Stream { return &s.Missions }, jetstream.StreamConfig{
			Name: messages.StreamMissions,
			// missions as submitted, and wakes published into it
			// directly: decisions' and those workers move from PARKED
			// (docs/approvals.md)
			Subjects: []string{messages.SubmitWildcard, messages.WokenWildcard},
			// each mission is stored in its submitter's lane (fair share),
			// on its submit subject whether submitted or woken
			SubjectTransform: &jetstream.SubjectTransformConfig{
				Source: messages.QueueSource, Destination: messages.QueueTransform()},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			// a queued mission's submitter reads it by its subject (Status)
			AllowDirect: true,
			Duplicates:  cfg.DuplicateWindow, MaxMsgSize: cfg.MaxMissionBytes, MaxMsgs: cfg.MaxQueued,
			Discard: jetstream.DiscardNew,
			// no source: a stream's source of PARKED was seen to stall
			// under node restarts while reporting no lag, and the
			// setup removes one an earlier layout had (overlayStream)
			// each mission stored (submitted or woken), to the workers:
			// the lane to fetch from, once a fetch finds it
			RePublish: missionRepublish(),
		}},
		{func(s *Stores) *jetstream.Stream { return &s.Results }, jetstream.StreamConfig{
			Name: messages.StreamResults, Subjects: []string{messages.SubjectResultPrefix + "*.*", messages.RecordSubject("*", "*"), messages.ClaimSubject("*", "*", "*")},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			MaxAge: cfg.ResultTTL, AllowDirect: true, Duplicates: 2 * time.Minute,
			// a result, once stored, to those awaiting it: no read after
			// the message
			RePublish: resultRepublish(),
			// a worker stores a mission's record and its result in one
			// atomic batch where the stream is replicated
			// (Stores.batchesResults)
			AllowAtomicPublish: true,
		}},
		{func(s *Stores) *jetstream.Stream { return &s.Events }, jetstream.StreamConfig{
			Name: messages.StreamEvents, Subjects: []string{messages.SubjectEventPrefix + "*.*.*.*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.EventTTL, Discard: jetstream.DiscardOld,
			// watchers read a mission's events one by one by subject
			AllowDirect: true,
		}},
		{func(s *Stores) *jetstream.Stream { return &s.Dead }, jetstream.StreamConfig{
			Name: messages.StreamDead, Subjects: []string{messages.SubjectDeadPrefix + "*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.DeadTTL, MaxMsgSize: cfg.MaxMissionBytes + 4096,
		}},
		{func(s *Stores) *jetstream.Stream { return &s.Journal }, jetstream.StreamConfig{
			Name: messages.StreamJournal, Subjects: []string{messages.SubjectJournalPrefix + "*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.ResultTTL, Duplicates: 2 * time.Minute,
			// a finished mission's journal is rolled up into one empty
			// marker (Worker.purgeJournal)
			AllowRollup: true,
			// a resumed mission's run reads the messages its status
			// names with direct gets (openJournalOn)
			AllowDirect: true,
		}},
	}
}

// missionRepublish republishes the headers of each mission
// StreamMissions stores in a lane on its messages.QueuedSubject.
func missionRepublish() *jetstream.RePublish {
	return &jetstream.RePublish{Source: messages.LanedWildcard, Destination: messages.QueuedTransform(), HeadersOnly: true}
}

// missionsRepublished reports whether missions stream s republishes what
// it stores as missionRepublish does (a layout set up before it did not).
func missionsRepublished(s jetstream.Stream) bool {
	if s == nil || s.CachedInfo() == nil {
		return false
	}
	r, want := s.CachedInfo().Config.RePublish, missionRepublish()
	return r != nil && *r == *want
}

// resultsHoldClaims reports whether results stream s stores claim
// markers (messages.ClaimSubject).
func resultsHoldClaims(s jetstream.Stream) bool {
	if s == nil || s.CachedInfo() == nil {
		return false
	}
	return slices.Contains(s.CachedInfo().Config.Subjects, messages.ClaimSubject("*", "*", "*"))
}

// resultRepublish republishes each result StreamResults stores (not the
// records next to them) on its StoredResultSubject.
func resultRepublish() *jetstream.RePublish {
	return &jetstream.RePublish{Source: messages.ResultSubject("*", "*"), Destination: messages.StoredResultTransform()}
}

// resultsRepublished reports whether results stream s republishes what it
// stores as resultRepublish does (a layout set up before it did not).
func resultsRepublished(s jetstream.Stream) bool {
	if s == nil || s.CachedInfo() == nil {
		return false
	}
	r, want := s.CachedInfo().Config.RePublish, resultRepublish()
	return r != nil && r.Source == want.Source && r.Destination == want.Destination && !r.HeadersOnly
}

// setupOpTimeout bounds one JetStream API call of the setup; a call that
// times out is retried.
const setupOpTimeout = 5 * time.Second

// errLayoutMissing is what VerifyOnly waits out.
var errLayoutMissing = errors.New("not created yet")

// retrySetup runs op until it succeeds, fails permanently or ctx ends,
// backing off from 50ms to 2s (with jitter) between transient failures.
func retrySetup[T any](ctx context.Context, cfg StoreConfig, what string, op func(context.Context) (T, error)) (T, error) {
	backoff := 50 * time.Millisecond
	for try := 1; ; try++ {
		octx, cancel := context.WithTimeout(ctx, setupOpTimeout)
		v, err := op(octx)
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil || !transientSetupError(err) {
			var zero T
			if ctx.Err() != nil {
				return zero, fmt.Errorf("fleet: %s: %w (gave up after %d tries: %w)", what, err, try, context.Cause(ctx))
			}
			if isInsufficientStorage(err) {
				return zero, fmt.Errorf("fleet: %s: %w: the JetStream server (max_file_store) or the account has less storage than the layout reserves "+
					"(the %s object store reserves StoreConfig.ContextStoreBytes, %d bytes, on top of what is stored): give JetStream more storage or reserve less",
					what, err, messages.BucketContext, cfg.ContextStoreBytes)
			}
			return zero, fmt.Errorf("fleet: %s: %w", what, err)
		}
		wait := backoff/2 + time.Duration(mrand.Int64N(int64(backoff/2)+1))
		if cfg.OnRetry != nil {
			cfg.OnRetry(what, err, wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// errCodeInsufficientStorage is the JetStream error of a stream whose
// reservation (MaxBytes) does not fit in the server's or the account's
// storage: it does not go away by itself.
const errCodeInsufficientStorage = 10047

func isInsufficientStorage(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeInsufficientStorage
}

// errCodeNoPeers is the JetStream error of a replicated stream the
// cluster finds no peers to place on; its description gives the reasons.
const errCodeNoPeers = 10005

// transientSetupError reports whether a setup failure may go away by
// itself: everything except a request the server rejects as bad (HTTP-like
// code 400, e.g. an invalid configuration or one that cannot be changed),
// a reservation larger than the server's storage, and the missing layout
// VerifyOnly waits for. A stream with no peers to place on because a peer
// is offline (a node of the cluster restarting, or not started yet) waits
// for it, as a worker started with the cluster does.
func transientSetupError(err error) bool {
	if errors.Is(err, errLayoutMissing) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeInsufficientStorage:
			return false
		case errCodeNoPeers:
			return strings.Contains(apiErr.Description, "peer offline")
		}
		return apiErr.Code != 400 || apiErr.ErrorCode == jetstream.JSErrCodeStreamNameInUse
	}
	return !errors.Is(err, jetstream.ErrInvalidStreamName) && !errors.Is(err, jetstream.ErrInvalidBucketName) &&
		!errors.Is(err, jetstream.ErrInvalidStoreName)
}

// ensureStream reads the stream and creates or updates it when needed.
func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, verify bool) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if verify {
			return nil, errLayoutMissing
		}
		// A peer creating it now makes this fail with "name already in
		// use" (or time out on a cluster): both are retried, and the next
		// try reads what the peer created.
		return js.CreateStream(ctx, want)
	}
	if err != nil || verify {
		return s, err
	}
	have := s.CachedInfo().Config
	next := have
	overlayStream(&next, want)
	if reflect.DeepEqual(next, have) {
		return s, nil
	}
	return js.UpdateStream(ctx, next)
}

// overlayStream sets the fields the fleet decides on dst (every field the
// layout sets, zero or not); the rest keep the server's values.
func overlayStream(dst *jetstream.StreamConfig, w jetstream.StreamConfig) {
	dst.Subjects, dst.Retention, dst.Storage, dst.Replicas = w.Subjects, w.Retention, w.Storage, w.Replicas
	dst.Discard, dst.DiscardNewPerSubject, dst.AllowDirect, dst.MaxAge = w.Discard, w.DiscardNewPerSubject, w.AllowDirect, w.MaxAge
	dst.AllowRollup, dst.AllowMsgTTL, dst.AllowMsgSchedules = w.AllowRollup, w.AllowMsgTTL, w.AllowMsgSchedules
	dst.AllowAtomicPublish = w.AllowAtomicPublish
	if w.SubjectTransform != nil {
		dst.SubjectTransform = w.SubjectTransform
	}
	if w.RePublish != nil {
		dst.RePublish = w.RePublish
	}
	// the layout's streams source none: one an earlier layout had is
	// removed
	dst.Sources = w.Sources
	if w.Duplicates != 0 {
		dst.Duplicates = w.Duplicates
	}
	if w.MaxMsgSize != 0 {
		dst.MaxMsgSize = w.MaxMsgSize
	}
	if w.MaxMsgs != 0 {
		dst.MaxMsgs = w.MaxMsgs
	}
	if w.MaxMsgsPerSubject != 0 {
		dst.MaxMsgsPerSubject = w.MaxMsgsPerSubject
	}
}

// ensureConsumer reads the durable consumer and creates or updates it when
// needed; with keepHigher an existing MaxAckPending above want's (or
// unlimited) is kept,
// so workers of different sizes sharing the layout never lower it for each
// other.
func ensureConsumer(ctx context.Context, s jetstream.Stream, want jetstream.ConsumerConfig, keepHigher, verify bool) (jetstream.Consumer, error) {
	c, err := s.Consumer(ctx, want.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		if verify {
			return nil, errLayoutMissing
		}
		return s.CreateOrUpdateConsumer(ctx, want)
	}
	if err != nil || verify {
		return c, err
	}
	have := c.CachedInfo().Config
	next := have
	next.FilterSubject, next.AckPolicy, next.AckWait = want.FilterSubject, want.AckPolicy, want.AckWait
	next.MaxDeliver, next.MaxAckPending, next.MaxWaiting = want.MaxDeliver, want.MaxAckPending, want.MaxWaiting
	if keepHigher && (have.MaxAckPending < 0 || have.MaxAckPending > want.MaxAckPending) {
		next.MaxAckPending = have.MaxAckPending // negative: unlimited
	}
	if reflect.DeepEqual(next, have) {
		return c, nil
	}
	return s.UpdateConsumer(ctx, next)
}

// ensureKV reads the bucket's stream and creates or updates the bucket when
// needed.
func ensureKV(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig, verify bool) (jetstream.KeyValue, error) {
	s, err := js.Stream(ctx, "KV_"+want.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && verify:
		return nil, errLayoutMissing
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return js.CreateKeyValue(ctx, want)
	case err != nil:
		return nil, err
	}
	have := s.CachedInfo().Config
	if verify || (have.MaxAge == want.TTL && have.Replicas == want.Replicas &&
		have.MaxMsgsPerSubject == int64(want.History) && have.Storage == want.Storage) {
		return js.KeyValue(ctx, want.Bucket)
	}
	return js.UpdateKeyValue(ctx, want)
}

// ensureObjectStore reads the store's stream and creates or updates the
// store when needed.
func ensureObjectStore(ctx context.Context, js jetstream.JetStream, want jetstream.ObjectStoreConfig, verify bool) (jetstream.ObjectStore, error) {
	s, err := js.Stream(ctx, "OBJ_"+want.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && verify:
		return nil, errLayoutMissing
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return js.CreateObjectStore(ctx, want)
	case err != nil:
		return nil, err
	}
	have := s.CachedInfo().Config
	if verify || (have.MaxAge == want.TTL && have.Replicas == want.Replicas && have.Storage == want.Storage &&
		have.MaxBytes == want.MaxBytes) {
		return js.ObjectStore(ctx, want.Bucket)
	}
	return js.UpdateObjectStore(ctx, want)
}

// isWrongLastSeq reports a compare-and-set conflict on publish (10071, or
// 10164 on replicated streams).
func isWrongLastSeq(err error) bool {
	if err == nil {
		return false // before apiErr, which errors.As keeps on the heap
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// inFlightConflict reports a compare-and-set conflict with a write the
// stream has not stored yet (10164, replicated streams only).
func inFlightConflict(err error) bool {
	if err == nil {
		return false // before apiErr, which errors.As keeps on the heap
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// queuedMsg reads the message of mission id of submitter sub while it is
// queued in missions (on nc: getMsg): from its lane, or else as a layout
// set up before lanes stored it. It returns jetstream.ErrMsgNotFound when
// neither holds it.
func queuedMsg(ctx context.Context, nc *nats.Conn, missions jetstream.Stream, sub, id string) (*jetstream.RawStreamMsg, error) {
	var raw *jetstream.RawStreamMsg
	var err error
	for _, f := range messages.QueuedFilters(sub, id) {
		if raw, err = getMsg(ctx, nc, missions, lastOn(f)); !errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
	}
	return raw, err
}
