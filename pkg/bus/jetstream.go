package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// KV bucket names of DESIGN.md.
const (
	BucketSecrets     = "compute_secrets"
	BucketAccounts    = "compute_accounts"
	BucketPools       = "compute_pools"
	BucketInstances   = "compute_instances"
	BucketIdempotency = "compute_idempotency"
	// BucketTenants holds the tenant records of the tenants service.
	BucketTenants = "compute_tenants"
	// BucketAddresses holds the static addresses handed out from pools'
	// network.addresses, one key per address held (the reconciler's
	// addressKey: <tenant>.<poolId>.<a-b-c-d>), its value
	// the holding instance's id: creating the key is claiming it.
	BucketAddresses = "compute_addresses"
	// BucketPoolControl holds the pool controller's record of each sized
	// pool (api.PoolControl: lease, slots, status).
	BucketPoolControl = "compute_poolctl"
)

// Stream names of DESIGN.md.
const (
	// StreamWork is the reconciler's work queue (compute.work.>), deduplicated by Nats-Msg-Id.
	StreamWork = "COMPUTE_WORK"
	// StreamEvents keeps published events (compute.v1.*.events.>) for watchers.
	StreamEvents = "COMPUTE_EVENTS"
)

// IdempotencyTTL is how long a create's idempotency record is kept.
const IdempotencyTTL = 24 * time.Hour

// EventsMaxAge is how long the events stream keeps an event.
const EventsMaxAge = 7 * 24 * time.Hour

// StoreOptions configures OpenStores.
type StoreOptions struct {
	// Replicas of every bucket and stream (1 on a single server, 3 on a 3-node cluster).
	Replicas int
}

// Stores holds the JetStream context and every KV bucket.
type Stores struct {
	JS          jetstream.JetStream
	Secrets     jetstream.KeyValue
	Accounts    jetstream.KeyValue
	Pools       jetstream.KeyValue
	Instances   jetstream.KeyValue
	Idempotency jetstream.KeyValue
	Watermarks  jetstream.KeyValue
	Tenants     jetstream.KeyValue
	// Addresses is BucketAddresses.
	Addresses jetstream.KeyValue
	// PoolControl is BucketPoolControl.
	PoolControl jetstream.KeyValue
	// Usage holds each tenant's instance counts (usage.go).
	Usage jetstream.KeyValue
	// quotas is the watch of the tenants' quotas every service of these
	// stores shares (Quotas).
	quotas sharedQuotas
	// workAsync: COMPUTE_WORK has persist_mode async (WorkFlushedAsync).
	workAsync bool
	// groups are the buckets' group commits (CreateBatches).
	groups []*groupCommit
}

// CreateBatches is how many atomic batches of creates the buckets of st
// committed (groupcommit.go), for tests and benchmarks: 0 on a
// replicated store, where each create goes alone.
func (st *Stores) CreateBatches() int64 {
	var n int64
	for _, g := range st.groups {
		n += g.batches.Load()
	}
	return n
}

// OpenStores creates (or updates to this configuration) every bucket and
// stream, with file storage, and returns handles to them. It is idempotent and
// safe to call from every service at start-up.
func OpenStores(ctx context.Context, nc *nats.Conn, opts StoreOptions) (*Stores, error) {
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	st := &Stores{JS: js}
	buckets := []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&st.Secrets, jetstream.KeyValueConfig{Bucket: BucketSecrets, Description: "sealed secrets"}},
		{&st.Accounts, jetstream.KeyValueConfig{Bucket: BucketAccounts, Description: "provider accounts"}},
		{&st.Pools, jetstream.KeyValueConfig{Bucket: BucketPools, Description: "pools"}},
		{&st.Instances, jetstream.KeyValueConfig{Bucket: BucketInstances, Description: "instances"}},
		{&st.Idempotency,
			jetstream.KeyValueConfig{Bucket: BucketIdempotency, Description: "create results by idempotency key", TTL: IdempotencyTTL}},
		{&st.Watermarks, jetstream.KeyValueConfig{Bucket: BucketWatermarks, Description: "high-water marks of the buckets above"}},
		{&st.Tenants, jetstream.KeyValueConfig{Bucket: BucketTenants, Description: "tenants: NATS accounts, limits, quotas, credentials"}},
		{&st.Addresses, jetstream.KeyValueConfig{Bucket: BucketAddresses, Description: "static addresses held, by pool"}},
		{&st.PoolControl, jetstream.KeyValueConfig{Bucket: BucketPoolControl,
			Description: "pool controller: leases, slots, status of sized pools"}},
		{&st.Usage, jetstream.KeyValueConfig{Bucket: BucketUsage, Description: "tenants' instance counts, checked against their quotas"}},
	}
	for _, b := range buckets {
		b.cfg.Storage = jetstream.FileStorage
		b.cfg.Replicas = opts.Replicas
		b.cfg.History = 1
		kv, err := openBucket(ctx, js, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.kv = kv
		if g := kv.(*bucket).group; g != nil {
			st.groups = append(st.groups, g)
		}
	}
	streams := []jetstream.StreamConfig{
		// One pending message per instance: a newer one replaces it. The
		// reconciler reads the instance's latest record whatever the message
		// says, so coalescing loses nothing and bounds the queue by the fleet.
		{Name: StreamWork, Subjects: []string{WorkRoot + ".>"}, Retention: jetstream.WorkQueuePolicy,
			MaxMsgsPerSubject: 1, Discard: jetstream.DiscardOld,
			Duplicates: 2 * time.Minute, Description: "instance work for the reconciler"},
		{Name: StreamEvents, Subjects: []string{EventsOf("*")}, Retention: jetstream.LimitsPolicy,
			MaxAge: EventsMaxAge, Description: "instance and resource events"},
	}
	for _, cfg := range streams {
		cfg.Storage = jetstream.FileStorage
		cfg.Replicas = opts.Replicas
		if opts.Replicas == 1 {
			cfg.PersistMode = jetstream.AsyncPersistMode
		}
		cfg, err := keepPersistMode(ctx, js, cfg)
		if err != nil {
			return nil, err
		}
		stream, err := ensureStream(ctx, js, cfg)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
		}
		if cfg.Name == StreamWork {
			st.workAsync = stream.CachedInfo().Config.PersistMode == jetstream.AsyncPersistMode
		}
	}
	return st, nil
}

// WorkFlushedAsync reports whether COMPUTE_WORK acknowledges a message
// before it is on disk. On a single server (Replicas 1) the work and
// events streams are made with persist_mode async: nats-server writes
// them out within about 8 ms and syncs them on its sync interval, so
// only the records (the KV buckets) are synced before every
// acknowledgement, and a create stores two synced messages instead of
// four (docs/benchmarks.md, create acceptance). A server crash can then
// lose the last work messages it acknowledged; their instances are
// still recorded, and the reconciler queues every unsettled instance
// again after it reconnects (and the events lost: events are a feed for
// watchers, published without waiting, never the record). Replicated
// streams (Replicas 3) are never async: nats-server refuses it, and
// their raft log keeps what a quorum acknowledged.
func (st *Stores) WorkFlushedAsync() bool { return st.workAsync }

// keepPersistMode is cfg with the persist mode of the stream of its name
// when that stream exists already: nats-server refuses to change a
// stream's persist mode, so a stream made before keeps its own (a single
// server upgraded from a version without async streams keeps synced work
// and events streams; delete them while no service runs to have them
// made async, which loses only queued work that the resync queues again).
// An async stream cannot be replicated: asked for more replicas of one,
// it is INVALID_CONFIG at replicas at once (nats-server would refuse the
// update with a 5xx that retryTransient would retry until ctx ends).
// Errors: INVALID_CONFIG, or the stream lookup's.
func keepPersistMode(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.StreamConfig, error) {
	var existing jetstream.Stream
	err := retryTransient(ctx, func(ctx context.Context) (err error) {
		existing, err = js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		return err
	})
	if err != nil || existing == nil {
		return cfg, err
	}
	cfg.PersistMode = existing.CachedInfo().Config.PersistMode
	if cfg.PersistMode == jetstream.AsyncPersistMode && cfg.Replicas > 1 {
		return cfg, api.InvalidConfig("replicas",
			"stream %s was made on a single server (persist_mode async) and cannot be replicated: stop every service, "+
				"nats stream rm %s (queued work comes back with the resync; the stream holds no state), then start with %d replicas",
			cfg.Name, cfg.Name, cfg.Replicas)
	}
	return cfg, nil
}

// openBucket creates or updates the stream behind a KV bucket with the
// configuration jetstream.CreateOrUpdateKeyValue gives it, but with direct
// gets off, and binds to it. With direct gets every replica answers reads,
// also one that has not applied the latest write yet, so on a cluster a
// record just written may read as missing or old (a reconcile would drop
// the work of an instance just created). Without them the stream leader
// answers every read: a read sees every write acknowledged before it. The
// handle keeps the stream, for listKeys. On a single server (Replicas 1)
// the stream allows atomic batches and the handle commits concurrent
// creates in groups (groupcommit.go); replicated streams write each create
// alone, as before (group commit was measured on a single server only).
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	duplicates := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < duplicates {
		duplicates = cfg.TTL
	}
	stream, err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name: "KV_" + cfg.Bucket, Description: cfg.Description, Subjects: []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: int64(cfg.History), MaxAge: cfg.TTL, MaxBytes: -1, MaxMsgSize: -1, MaxMsgs: -1, MaxConsumers: -1,
		Storage: cfg.Storage, Replicas: cfg.Replicas, Duplicates: duplicates, Discard: jetstream.DiscardNew,
		AllowRollup: true, DenyDelete: true, AllowDirect: false, AllowAtomicPublish: cfg.Replicas == 1,
	})
	if err != nil {
		return nil, err
	}
	var kv jetstream.KeyValue
	if err := retryTransient(ctx, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		return err
	}); err != nil {
		return nil, err
	}
	b := &bucket{KeyValue: kv, stream: stream}
	if stream.CachedInfo().Config.AllowAtomicPublish { // a server before 2.12 does not echo it
		b.group = newGroupCommit(js.Conn(), kv)
	}
	return b, nil
}

// errCodeStreamInvalidConfig is nats-server's JSStreamInvalidConfigF
// (jetstream.ErrorCode has no name for it).
const errCodeStreamInvalidConfig jetstream.ErrorCode = 10052

// streamAttemptTimeout bounds one stream create or update request.
const streamAttemptTimeout = 10 * time.Second

// ensureStream is js.CreateOrUpdateStream, retried (retryTransient).
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	var stream jetstream.Stream
	err := retryTransient(ctx, func(ctx context.Context) (err error) {
		stream, err = js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	return stream, err
}

// retryTransient runs a JetStream API request (each attempt bounded by
// streamAttemptTimeout) until it succeeds, fails for good, or ctx ends,
// with backoff while its failure is transient (transientStreamError): on a
// cluster, services starting together create the same replicated stream at
// once, and nats-server leaves some of those requests unanswered, or the
// cluster is still electing its meta leader. When ctx ends, the error says
// so and carries the last attempt's failure.
func retryTransient(ctx context.Context, request func(context.Context) error) error {
	var last error
	policy := backoff.NewExponentialBackOff(backoff.WithInitialInterval(200*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(0))
	err := backoff.Retry(func() error {
		actx, cancel := context.WithTimeout(ctx, streamAttemptTimeout)
		defer cancel()
		if last = request(actx); last != nil && !transientStreamError(last) {
			return backoff.Permanent(last)
		}
		return last
	}, backoff.WithContext(policy, ctx))
	if err != nil && ctx.Err() != nil && last != nil && !errors.Is(err, last) {
		// The deadline is the error's identity; the last attempt is context.
		return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last) //nolint:errorlint // see above
	}
	return err
}

// transientStreamError reports whether a stream request of OpenStores may
// succeed when sent again: no answer in time, no responder yet, a bucket
// not found right after its stream was created (on a cluster the node
// asked may not know it yet), or a JetStream API error with a 5xx code
// (cluster not ready, no meta leader). A refused configuration is not:
// a 4xx, or nats-server's "stream configuration invalid" (err_code 10052,
// which it answers with code 500, e.g. "stream configuration update can
// not change persist mode").
func transientStreamError(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code >= 500 && apiErr.ErrorCode != errCodeStreamInvalidConfig
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrBucketNotFound)
}
