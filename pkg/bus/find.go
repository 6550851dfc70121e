package bus

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// Find returns a record of tenant (a tenant id, not "") for which match
// holds, and whether there is one. It reads the tenant's records as one
// stream (a KV watch of "<tenant>.>" delivering the last value of each
// key) instead of listing the keys and getting each, so a scan of a
// thousand records costs one request rather than a thousand. Which record
// it returns when several match is unspecified.
//
// Unlike List it does not wait for a replica that lags the stream leader
// (see consistentKeys): a record written moments ago may be missed. It
// suits best-effort checks (a name already taken), not decisions that
// must see every write. Errors: UNAVAILABLE, INTERNAL for a corrupt record.
func (r Reader[T]) Find(ctx context.Context, tenant string, match func(*T) bool) (T, bool, error) {
	var zero T
	ctx, cancel := withDefaultDeadline(ctx)
	defer cancel()
	prefix := RecordKey(tenant, "")
	w, err := r.t.kv.Watch(ctx, prefix+">", jetstream.IgnoreDeletes())
	if err != nil {
		return zero, false, kvError("scan", prefix, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return zero, false, kvError("scan", prefix, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return zero, false, kvError("scan", prefix, context.Canceled)
			}
			if e == nil { // the end of the current values
				return zero, false, nil
			}
			var v T
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				return zero, false, api.Errorf(api.CodeInternal, "record %s/%s is corrupt: %v", r.t.kv.Bucket(), e.Key(), err)
			}
			if match(&v) {
				return v, true, nil
			}
		}
	}
}
