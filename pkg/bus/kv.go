package bus

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// errNotFound is getJSON's error for a missing key (Table.Get turns it
// into NOT_FOUND).
var errNotFound = jetstream.ErrKeyNotFound

// getJSON reads key into v and returns its revision and its size in bytes
// as stored (encoded). Errors: errNotFound (missing or deleted key),
// UNAVAILABLE, INTERNAL (undecodable value).
func getJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) (rev uint64, size int, err error) {
	raw, rev, err := getRaw(ctx, kv, key, v)
	return rev, len(raw), err
}

// getRaw is getJSON returning the stored JSON itself instead of its size.
func getRaw(ctx context.Context, kv jetstream.KeyValue, key string, v any) (raw []byte, rev uint64, err error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, 0, errNotFound
		}
		return nil, 0, kvError("read", key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, 0, api.Errorf(api.CodeInternal, "record %s/%s is corrupt: %v", kv.Bucket(), key, err)
	}
	return e.Value(), e.Revision(), nil
}

// writeJSON writes v under key: with create (prev nil), only if the key
// does not exist (or was deleted); else only if its revision is still rev
// (compare and set), prev being the record as read at rev; room is the
// table's GrowthRoom (0 for none, see checkRecordSize). Errors:
// INVALID_INPUT naming the largest field of a record larger than
// MaxRecordBytes (checkRecordSize), ALREADY_EXISTS (create) or CONFLICT
// (update) for a lost race (conflictError), UNAVAILABLE, INTERNAL
// (unencodable value).
func writeJSON(ctx context.Context, kv jetstream.KeyValue, key string, v, prev any, rev uint64, create bool, room int) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, api.Errorf(api.CodeInternal, "encode %s: %v", key, err)
	}
	if err := checkRecordSize(data, prev, room); err != nil {
		return 0, err
	}
	if create {
		newRev, err := kv.Create(ctx, key, data)
		return newRev, conflictError("create", key, 0, err)
	}
	newRev, err := kv.Update(ctx, key, data, rev)
	return newRev, conflictError("update", key, rev, err)
}

// deleteKey deletes key only if its revision is still rev. Errors:
// CONFLICT, UNAVAILABLE.
func deleteKey(ctx context.Context, kv jetstream.KeyValue, key string, rev uint64) error {
	return conflictError("delete", key, rev, kv.Delete(ctx, key, jetstream.LastRevision(rev)))
}

// conflictError is the one place that turns a failed KV write (op
// "create", "update" or "delete" of key, expecting revision rev) into a
// ComputeError. A lost compare-and-set is ALREADY_EXISTS for a create and
// CONFLICT otherwise, however JetStream reports it:
//   - API error code 10071 (JSErrCodeStreamWrongLastSequence), a single server;
//   - code 10164 (JSErrCodeStreamWrongLastSequenceConstant), a replicated
//     stream; nats.go returns it unwrapped from a Create that retries at the
//     revision of a delete marker and loses to another create;
//   - jetstream.ErrKeyExists (Create) and jetstream.ErrKeyRevisionMismatch
//     (Update, Delete), the errors nats.go wraps them in.
//
// Any other failure is UNAVAILABLE; nil stays nil.
func conflictError(op, key string, rev uint64, err error) error {
	var apiErr *jetstream.APIError
	lost := errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
	switch {
	case err == nil:
		return nil
	case lost && op == "create":
		return api.Errorf(api.CodeAlreadyExists, "%s already exists", key)
	case lost:
		return api.Errorf(api.CodeConflict, "%s changed since revision %d", key, rev)
	}
	return kvError(op, key, err)
}

func kvError(op, key string, err error) error {
	return api.Errorf(api.CodeUnavailable, "state store %s %s: %v", op, key, err)
}

// listKeys returns the sorted keys of kv under prefix (keys "<prefix>…";
// prefix ends with "." or is empty). On a bucket of OpenStores the list
// holds every key written before the call, also on a replicated bucket
// (see consistentKeys). Errors: UNAVAILABLE.
func listKeys(ctx context.Context, kv jetstream.KeyValue, prefix string) ([]string, error) {
	all, err := consistentKeys(ctx, kv, prefix)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range all {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}
