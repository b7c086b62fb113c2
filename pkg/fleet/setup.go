package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// AckWait of the mission consumers; workers heartbeat every AckWait/3.
	// Default 60s.
	AckWait time.Duration
	// MaxDeliver of the mission consumers. Default 5.
	MaxDeliver int
	// MaxAckPending of each consumer: the fleet's total mission slots.
	// Default 1000.
	MaxAckPending int
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
	def(&c.AckWait, 60*time.Second)
	if c.MaxMissionBytes <= 0 {
		c.MaxMissionBytes = messages.MaxMissionBytes
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 1_000_000
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 1000
	}
	return c
}

// ConsumerName is the durable pull consumer of missions of a priority.
func ConsumerName(priority string) string { return "workers-" + priority }

// Stores holds the handles EnsureStores created or updated.
type Stores struct {
	Missions jetstream.Stream
	Results  jetstream.Stream
	Events   jetstream.Stream
	Dead     jetstream.Stream
	Status   jetstream.KeyValue
	Context  jetstream.ObjectStore
	// Consumers by priority.
	Consumers map[string]jetstream.Consumer
}

// EnsureStores creates or updates every stream, consumer and bucket of the
// fleet layout (docs/fleet.md). It is idempotent and safe to call from every
// worker and client at start; concurrent calls with different configurations
// leave the last one written.
func EnsureStores(ctx context.Context, js jetstream.JetStream, cfg StoreConfig) (*Stores, error) {
	cfg = cfg.withDefaults()
	st := &Stores{Consumers: map[string]jetstream.Consumer{}}
	var err error
	streams := []struct {
		dst *jetstream.Stream
		cfg jetstream.StreamConfig
	}{
		{&st.Missions, jetstream.StreamConfig{
			Name: messages.StreamMissions, Subjects: []string{messages.SubjectSubmitPrefix + "*"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			Duplicates: cfg.DuplicateWindow, MaxMsgSize: cfg.MaxMissionBytes, MaxMsgs: cfg.MaxQueued,
			Discard: jetstream.DiscardNew,
		}},
		{&st.Results, jetstream.StreamConfig{
			Name: messages.StreamResults, Subjects: []string{messages.SubjectResultPrefix + "*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			MaxAge: cfg.ResultTTL, AllowDirect: true, Duplicates: 2 * time.Minute,
		}},
		{&st.Events, jetstream.StreamConfig{
			Name: messages.StreamEvents, Subjects: []string{messages.SubjectEventPrefix + "*.*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.EventTTL, Discard: jetstream.DiscardOld,
		}},
		{&st.Dead, jetstream.StreamConfig{
			Name: messages.StreamDead, Subjects: []string{messages.SubjectDeadPrefix + "*"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
			MaxAge: cfg.DeadTTL, MaxMsgSize: cfg.MaxMissionBytes + 4096,
		}},
	}
	for _, s := range streams {
		if *s.dst, err = js.CreateOrUpdateStream(ctx, s.cfg); err != nil {
			return nil, fmt.Errorf("fleet: stream %s: %w", s.cfg.Name, err)
		}
	}
	for _, p := range messages.Priorities() {
		c, err := st.Missions.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       ConsumerName(p),
			FilterSubject: messages.SubmitSubject(p),
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			MaxDeliver:    cfg.MaxDeliver,
			MaxAckPending: cfg.MaxAckPending,
			MaxWaiting:    4096,
		})
		if err != nil {
			return nil, fmt.Errorf("fleet: consumer %s: %w", ConsumerName(p), err)
		}
		st.Consumers[p] = c
	}
	if st.Status, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: messages.BucketStatus, History: 1, TTL: cfg.StatusTTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("fleet: kv %s: %w", messages.BucketStatus, err)
	}
	if st.Context, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: messages.BucketContext, TTL: cfg.ResultTTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("fleet: object store %s: %w", messages.BucketContext, err)
	}
	return st, nil
}

// isWrongLastSeq reports a compare-and-set conflict on publish (10071, or
// 10164 on replicated streams).
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
