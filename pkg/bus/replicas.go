package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// replicaWait bounds how long Keys waits for the replicas of a bucket to
// catch up with its leader.
const replicaWait = 5 * time.Second

// replicaPoll is how often awaitReplicas asks the leader again.
const replicaPoll = 100 * time.Millisecond

// awaitReplicas returns once every online replica of kv's stream holds
// every write its leader committed (the leader's stream info reports no
// lag), polling every replicaPoll. Offline replicas are skipped: nothing is
// placed on them. Errors: UNAVAILABLE (the leader does not answer, or a
// replica still lags after replicaWait).
func awaitReplicas(ctx context.Context, kv jetstream.KeyValue) error {
	deadline := time.Now().Add(replicaWait)
	for {
		status, err := kv.Status(ctx)
		if err != nil {
			return kvError("status", kv.Bucket(), err)
		}
		bs, ok := status.(*jetstream.KeyValueBucketStatus)
		if !ok || replicasCaughtUp(bs.StreamInfo().Cluster) {
			return nil
		}
		if time.Now().After(deadline) {
			return api.Errorf(api.CodeUnavailable, "state store %s: a replica is still catching up after %s; retry", kv.Bucket(), replicaWait)
		}
		select {
		case <-ctx.Done():
			return kvError("status", kv.Bucket(), ctx.Err())
		case <-time.After(replicaPoll):
		}
	}
}

// replicasCaughtUp reports whether every online replica in c (the leader's
// view; nil on a single server) is current with no lag.
func replicasCaughtUp(c *jetstream.ClusterInfo) bool {
	if c == nil {
		return true
	}
	for _, r := range c.Replicas {
		if !r.Offline && (!r.Current || r.Lag > 0) {
			return false
		}
	}
	return true
}
