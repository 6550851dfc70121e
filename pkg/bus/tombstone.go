package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Deleted reports whether record id of tenant was deleted: the latest
// message of its key in the bucket is a delete marker (Delete, Remove), so
// the record existed once. A key never written, and one holding a record,
// is not deleted. Buckets keep a key's delete marker until the key is
// written again (History 1, no purge of markers), so this holds for as
// long as the bucket keeps messages (compute_instances: for ever).
// Errors: UNAVAILABLE.
func (t *Table[T]) Deleted(ctx context.Context, tenant, id string) (bool, error) {
	key := RecordKey(tenant, id)
	entries, err := t.kv.History(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, kvError("read history of", key, err)
	}
	last := entries[len(entries)-1]
	return last.Operation() != jetstream.KeyValuePut, nil
}
