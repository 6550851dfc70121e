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

// ErrNotFound is returned (wrapped) by GetJSON for a missing key; callers turn
// it into api.NotFound with the record's kind.
var ErrNotFound = jetstream.ErrKeyNotFound

// GetJSON reads key into v and returns its revision. Errors: ErrNotFound
// (missing or deleted key), UNAVAILABLE (JetStream trouble), INTERNAL
// (undecodable value).
func GetJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return 0, ErrNotFound
		}
		return 0, kvError("read", key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, api.Errorf(api.CodeInternal, "record %s/%s is corrupt: %v", kv.Bucket(), key, err)
	}
	return e.Revision(), nil
}

// CreateJSON writes v under key only if the key does not exist (or was
// deleted). Errors: ALREADY_EXISTS, UNAVAILABLE.
func CreateJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, api.Errorf(api.CodeInternal, "encode %s: %v", key, err)
	}
	rev, err := kv.Create(ctx, key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, api.Errorf(api.CodeAlreadyExists, "%s already exists", key)
	}
	if err != nil {
		return 0, kvError("create", key, err)
	}
	return rev, nil
}

// UpdateJSON writes v under key only if its revision is still rev (compare
// and set). Errors: CONFLICT (someone else wrote it first), UNAVAILABLE.
func UpdateJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any, rev uint64) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, api.Errorf(api.CodeInternal, "encode %s: %v", key, err)
	}
	newRev, err := kv.Update(ctx, key, data, rev)
	if err != nil {
		if isWrongSequence(err) {
			return 0, api.Errorf(api.CodeConflict, "%s changed since revision %d", key, rev)
		}
		return 0, kvError("update", key, err)
	}
	return newRev, nil
}

// DeleteKey deletes key only if its revision is still rev. Errors: CONFLICT, UNAVAILABLE.
func DeleteKey(ctx context.Context, kv jetstream.KeyValue, key string, rev uint64) error {
	err := kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if err != nil {
		if isWrongSequence(err) {
			return api.Errorf(api.CodeConflict, "%s changed since revision %d", key, rev)
		}
		return kvError("delete", key, err)
	}
	return nil
}

// isWrongSequence reports a compare-and-set conflict: code 10071 on a
// single server, 10164 (ErrKeyRevisionMismatch) on a replicated stream.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

func kvError(op, key string, err error) error {
	return api.Errorf(api.CodeUnavailable, "state store %s %s: %v", op, key, err)
}

// Keys returns the sorted keys of kv under prefix (keys "<prefix>…"; prefix
// ends with "."). On a bucket of OpenStores the list holds every key
// written before the call, also on a replicated bucket (see
// consistentKeys). Errors: UNAVAILABLE.
func Keys(ctx context.Context, kv jetstream.KeyValue, prefix string) ([]string, error) {
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

// Page limits.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ListJSON returns one page of the records under prefix in key order, each
// decoded with decode, skipping keys deleted between listing and reading and
// those keep rejects (keep may be nil). limit is clamped to [1, MaxPageSize]
// (0 means DefaultPageSize); cursor is the last key of the previous page.
// Errors: INVALID_INPUT (limit out of range), UNAVAILABLE, INTERNAL.
func ListJSON[T any](ctx context.Context, kv jetstream.KeyValue, prefix string, limit int, cursor string, keep func(*T) bool) (api.List[T], error) {
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return api.List[T]{}, api.InvalidInput("limit", "limit must be between 1 and %d", MaxPageSize)
	}
	keys, err := Keys(ctx, kv, prefix)
	if err != nil {
		return api.List[T]{}, err
	}
	page := api.List[T]{Items: []T{}}
	lastKey := ""
	for _, k := range keys {
		if cursor != "" && k <= prefix+cursor {
			continue
		}
		var v T
		if _, err := GetJSON(ctx, kv, k, &v); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return api.List[T]{}, err
		}
		if keep != nil && !keep(&v) {
			continue
		}
		if len(page.Items) == limit {
			page.NextCursor = strings.TrimPrefix(lastKey, prefix)
			break
		}
		page.Items = append(page.Items, v)
		lastKey = k
	}
	return page, nil
}
