package bus

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// bucket is a KeyValue bound to its stream, so that listKeys can check what a
// replica lists against the stream's leader, and, when the stream allows
// atomic batches, to its group commit.
type bucket struct {
	jetstream.KeyValue
	stream jetstream.Stream
	// group commits the creates (groupcommit.go); nil: each alone.
	group *groupCommit
}

// Create is KeyValue.Create, through the bucket's group commit when it has
// one (and no option is given): it returns the key's new revision.
// Errors: those of KeyValue.Create (jetstream.ErrKeyExists for a key that
// exists), ctx's, and a batch commit left unanswered (groupCommit.create).
func (b *bucket) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if b.group == nil || len(opts) > 0 {
		return b.KeyValue.Create(ctx, key, value, opts...)
	}
	return b.group.create(ctx, key, value)
}

// listKeys retries a listing that missed keys every listRetry, for listWait.
const (
	listWait  = 5 * time.Second
	listRetry = 100 * time.Millisecond
)

// leaderKeys returns every key under prefix the stream leader holds a
// message for, deleted keys (a delete marker) included.
func (b *bucket) leaderKeys(ctx context.Context, prefix string) (map[string]bool, error) {
	subjects := "$KV." + b.Bucket() + "."
	info, err := b.stream.Info(ctx, jetstream.WithSubjectFilter(subjects+prefix+">"))
	if err != nil {
		return nil, err
	}
	keys := make(map[string]bool, len(info.State.Subjects))
	for s := range info.State.Subjects {
		keys[strings.TrimPrefix(s, subjects)] = true
	}
	return keys, nil
}

// replicaKeys lists keys under prefix through a watcher, which reads one
// replica: the live keys, and every key it holds a message for.
func replicaKeys(ctx context.Context, kv jetstream.KeyValue, prefix string) ([]string, map[string]bool, error) {
	w, err := kv.WatchFiltered(ctx, []string{prefix + ">"}, jetstream.MetaOnly())
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = w.Stop() }()
	var live []string
	seen := map[string]bool{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, fmt.Errorf("watcher closed")
			}
			if e == nil { // every current value was delivered
				return live, seen, nil
			}
			seen[e.Key()] = true
			if e.Operation() == jetstream.KeyValuePut {
				live = append(live, e.Key())
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// missingKeys counts the keys of want that seen lacks.
func missingKeys(want, seen map[string]bool) int {
	n := 0
	for k := range want {
		if !seen[k] {
			n++
		}
	}
	return n
}

// consistentKeys lists the live keys under prefix. On a bucket of
// OpenStores the listing must hold every key the stream leader held just
// before: a replica restarted moments ago, or one that has not applied the
// latest writes yet, lists only part of them, so the listing is retried
// (on another replica, as placement allows). A ctx without a deadline
// gets DefaultTimeout: a watcher that never delivers its end-of-values
// marker must not hang the caller. Errors: UNAVAILABLE.
func consistentKeys(ctx context.Context, kv jetstream.KeyValue, prefix string) ([]string, error) {
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	b, verify := kv.(*bucket)
	deadline := time.Now().Add(listWait)
	for {
		var want map[string]bool
		if verify {
			var err error
			if want, err = b.leaderKeys(ctx, prefix); err != nil {
				return nil, kvError("list", prefix, err)
			}
		}
		live, seen, err := replicaKeys(ctx, kv, prefix)
		if err != nil {
			return nil, kvError("list", prefix, err)
		}
		missing := missingKeys(want, seen)
		if missing == 0 {
			return live, nil
		}
		if time.Now().After(deadline) {
			return nil, api.Errorf(api.CodeUnavailable, "state store list %s: a replica of %s still lacks %d keys after %s; retry", prefix,
				kv.Bucket(), missing, listWait)
		}
		select {
		case <-ctx.Done():
			return nil, kvError("list", prefix, ctx.Err())
		case <-time.After(listRetry):
		}
	}
}
