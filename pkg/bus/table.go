package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// RecordKey is the key of record id of tenant in every table:
// "<tenant>.<id>". This is the one place that builds a key. Callers check
// tenant (api.ValidTenant) and id (api.ValidID) first, so no dot or wildcard
// of theirs reaches a key; an id made by IdempotencyID holds one dot.
func RecordKey(tenant, id string) string { return tenant + "." + id }

// SplitKey splits a key of RecordKey into its tenant and id at the first
// dot; ok is false for a key without one.
func SplitKey(key string) (tenant, id string, ok bool) {
	return strings.Cut(key, ".")
}

// InternalTenantPrefix starts the tenant token of a service's internal
// records (the secrets service's "_keycheck"). No tenant id starts with it,
// so a tenant's list never sees them, and neither does a scan of every
// tenant (Keys and Each with tenant "").
const InternalTenantPrefix = "_"

// IdempotencyID is the id, in a table of compute_idempotency, of the record
// of a request's idempotency key for operation op (e.g. "instances-create"):
// "<op>.<hex SHA-256 of key>", so that any key the client chose becomes one
// NATS token. The record's key is RecordKey(tenant, IdempotencyID(op, key)).
func IdempotencyID(op, key string) string {
	sum := sha256.Sum256([]byte(key))
	return op + "." + hex.EncodeToString(sum[:])
}

// CASAttempts is the one retry budget of the compare-and-set loop (Mutate,
// MutateAt, Remove: how many times a write is tried before a record that
// keeps changing answers CONFLICT) and of GetOrCreate.
const CASAttempts = 10

// Table is one KV bucket of JSON records of type T, keyed RecordKey(tenant,
// id). It owns the key format, the CAS loop and the error codes: a missing
// record is NOT_FOUND (api.NotFound with the table's kind), a lost create
// ALREADY_EXISTS, a lost update or delete CONFLICT, whatever JetStream code
// said so (conflictError), and any other store failure UNAVAILABLE. A
// bucket's owner writes it through a Table; other services read it through
// the table's Reader (see the package doc for the owners).
type Table[T any] struct {
	kv jetstream.KeyValue
	// kind names the record in errors ("instance", "pool").
	kind string
	// room is what a create leaves below MaxRecordBytes for later growth
	// (GrowthRoom for records the system writes again; 0 for none).
	room int
}

// NewTable binds kv (a bucket of OpenStores) to records of type T named
// kind in errors.
func NewTable[T any](kv jetstream.KeyValue, kind string) *Table[T] {
	return &Table[T]{kv: kv, kind: kind}
}

// Kind names the table's records in errors ("instance").
func (t *Table[T]) Kind() string { return t.kind }

// Reader is the read-only view of t for the services that do not own it.
func (t *Table[T]) Reader() Reader[T] { return Reader[T]{t: t} }

// Get reads record id of tenant and its revision. Errors: NOT_FOUND
// (missing or deleted), UNAVAILABLE, INTERNAL (undecodable value).
func (t *Table[T]) Get(ctx context.Context, tenant, id string) (T, uint64, error) {
	var v T
	rev, _, err := getJSON(ctx, t.kv, RecordKey(tenant, id), &v)
	if errors.Is(err, errNotFound) {
		return v, 0, api.NotFound(t.kind, id)
	}
	return v, rev, err
}

// Create writes v as record id of tenant only if there is none (or it was
// deleted) and returns its revision. Errors: INVALID_INPUT (too large:
// checkRecordSize, with the table's growth room), ALREADY_EXISTS,
// UNAVAILABLE.
func (t *Table[T]) Create(ctx context.Context, tenant, id string, v T) (uint64, error) {
	return writeJSON(ctx, t.kv, RecordKey(tenant, id), v, nil, 0, true, t.room)
}

// Mutate reads record id of tenant, applies change to it and writes it back
// at the revision read, starting over from a fresh read when another write
// got in first (CASAttempts tries in all). It returns the record as written
// and its revision. An error of change ends it unwritten and is returned
// as is, with the record as read. Errors: those of Get and change,
// CONFLICT (the record kept changing), UNAVAILABLE.
func (t *Table[T]) Mutate(ctx context.Context, tenant, id string, change func(*T) error) (T, uint64, error) {
	v, rev, err := t.Get(ctx, tenant, id)
	if err != nil {
		return v, 0, err
	}
	return t.MutateAt(ctx, tenant, id, v, rev, change)
}

// MutateAt is Mutate starting from a record the caller read already (cur
// at revision rev): the first write is tried at rev, without a read.
// change gets a copy of cur; slices and maps in it are shared with cur, so
// a change that modifies them copies them first. Errors: those of Mutate.
func (t *Table[T]) MutateAt(ctx context.Context, tenant, id string, cur T, rev uint64, change func(*T) error) (T, uint64, error) {
	key := RecordKey(tenant, id)
	return t.cas(ctx, tenant, id, cur, rev, func(cur T, rev uint64) (T, uint64, bool, error) {
		next := cur
		if err := change(&next); err != nil {
			return cur, rev, false, err // change's own CONFLICT is no lost race
		}
		newRev, err := writeJSON(ctx, t.kv, key, next, cur, rev, false, t.room)
		if err != nil {
			return cur, rev, api.IsCode(err, api.CodeConflict), err
		}
		return next, newRev, false, nil
	})
}

// Delete deletes record id of tenant only if its revision is still rev.
// Errors: CONFLICT (written or deleted since), UNAVAILABLE.
func (t *Table[T]) Delete(ctx context.Context, tenant, id string, rev uint64) error {
	return deleteKey(ctx, t.kv, RecordKey(tenant, id), rev)
}

// Remove deletes record id of tenant at its latest revision: it reads the
// record, and deletes it at the revision read, starting over when it
// changed in between (CASAttempts tries in all). Errors: NOT_FOUND,
// CONFLICT (the record kept changing), UNAVAILABLE, INTERNAL.
func (t *Table[T]) Remove(ctx context.Context, tenant, id string) error {
	cur, rev, err := t.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	_, _, err = t.cas(ctx, tenant, id, cur, rev, func(cur T, rev uint64) (T, uint64, bool, error) {
		err := t.Delete(ctx, tenant, id, rev)
		return cur, rev, api.IsCode(err, api.CodeConflict), err
	})
	return err
}

// cas is the one compare-and-set loop: it runs step on the record as last
// read (cur at rev) until step does not report its write lost to another
// (lost), reading the record afresh after each loss, at most CASAttempts
// times. Errors: those of step and Get, CONFLICT (the record kept changing).
func (t *Table[T]) cas(ctx context.Context, tenant, id string, cur T,
	rev uint64, step func(cur T, rev uint64) (v T, newRev uint64, lost bool, err error)) (T, uint64, error) {
	for attempt := 1; ; attempt++ {
		v, newRev, lost, err := step(cur, rev)
		if !lost {
			return v, newRev, err
		}
		if attempt == CASAttempts {
			return cur, rev, api.Errorf(api.CodeConflict, "%s %s kept changing (%d attempts); retry", t.kind, id, CASAttempts)
		}
		// Also a re-read that finds rev unchanged tries again: under load
		// nats-server sometimes refuses a write on a replicated stream at
		// the latest revision.
		if cur, rev, err = t.Get(ctx, tenant, id); err != nil {
			return cur, rev, err
		}
	}
}

// GetOrCreate returns record id of tenant, creating it as v if there is
// none; created says which. It reads first, so a record that exists costs
// one read. A create that loses to another one reads the winner's record
// (and creates again if that was deleted meanwhile, CASAttempts tries in
// all). Errors: UNAVAILABLE (also when the record keeps appearing and
// vanishing), INTERNAL (undecodable value).
func (t *Table[T]) GetOrCreate(ctx context.Context, tenant, id string, v T) (stored T, rev uint64, created bool, err error) {
	for range CASAttempts {
		if stored, rev, err = t.Get(ctx, tenant, id); !api.IsCode(err, api.CodeNotFound) {
			return stored, rev, false, err
		}
		if rev, err = t.Create(ctx, tenant, id, v); !api.IsCode(err, api.CodeAlreadyExists) {
			return v, rev, err == nil, err
		}
	}
	return v, 0, false, api.Errorf(api.CodeUnavailable, "%s %s of tenant %s keeps being created and deleted; retry", t.kind, id, tenant)
}

// List returns one page of tenant's records in id order (see
// Reader.List). Errors: INVALID_INPUT (path limit), UNAVAILABLE, INTERNAL.
func (t *Table[T]) List(ctx context.Context, tenant string, limit int, cursor string, keep func(*T) bool) (api.List[T], error) {
	return t.Reader().List(ctx, tenant, limit, cursor, keep)
}

// Keys returns the sorted keys (RecordKey) of tenant's records, or with
// tenant "" those of every tenant (internal records left out; see
// InternalTenantPrefix). A listing holds every key written before the call
// (consistentKeys), also on a replicated bucket. Errors: UNAVAILABLE.
func (t *Table[T]) Keys(ctx context.Context, tenant string) ([]string, error) {
	return t.Reader().Keys(ctx, tenant)
}

// Each calls fn with every record of tenant (every tenant's with tenant
// "") in key order, skipping those deleted between listing and reading; an
// error of fn ends it and is returned. Errors: those of Keys and fn,
// UNAVAILABLE, INTERNAL (undecodable value).
func (t *Table[T]) Each(ctx context.Context, tenant string, fn func(tenant, id string, v T, rev uint64) error) error {
	return t.Reader().Each(ctx, tenant, fn)
}

// Reader reads a Table: what services use for buckets they do not own.
type Reader[T any] struct{ t *Table[T] }

// Get is Table.Get: NOT_FOUND, UNAVAILABLE, INTERNAL.
func (r Reader[T]) Get(ctx context.Context, tenant, id string) (T, uint64, error) {
	return r.t.Get(ctx, tenant, id)
}

// Page limits of List.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// List returns one page of tenant's records in id order, skipping records
// deleted between listing and reading and those keep rejects (keep may be
// nil). A page holds at most limit records, and ends early before the
// record that would take its records past MaxPageBytes (as stored), so its
// reply fits a NATS message; it holds at least one record. limit must be in
// [1, MaxPageSize] (0 means DefaultPageSize); cursor is the last id of the
// previous page (api.List.NextCursor).
// Errors: INVALID_INPUT (path limit), UNAVAILABLE, INTERNAL.
func (r Reader[T]) List(ctx context.Context, tenant string, limit int, cursor string, keep func(*T) bool) (api.List[T], error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return api.List[T]{}, err
	}
	page := api.List[T]{Items: []T{}}
	lastID := ""
	bytes := 0
	errFull := errors.New("page full")
	err = r.each(ctx, tenant, func(_, id string, v T, _ uint64, size int) error {
		if cursor != "" && id <= cursor || keep != nil && !keep(&v) {
			return nil
		}
		if len(page.Items) == limit || len(page.Items) > 0 && bytes+size > MaxPageBytes {
			page.NextCursor = lastID
			return errFull
		}
		page.Items = append(page.Items, v)
		lastID = id
		bytes += size
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return api.List[T]{}, err
	}
	return page, nil
}

// pageLimit is a list request's limit as a page size: 0 is
// DefaultPageSize. Errors: INVALID_INPUT (path limit) outside [0, MaxPageSize].
func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageSize, nil
	case limit < 0 || limit > MaxPageSize:
		return 0, api.InvalidInput("limit", "limit must be between 1 and %d", MaxPageSize)
	}
	return limit, nil
}

// Keys is Table.Keys: UNAVAILABLE.
func (r Reader[T]) Keys(ctx context.Context, tenant string) ([]string, error) {
	prefix := ""
	if tenant != "" {
		prefix = RecordKey(tenant, "")
	}
	keys, err := listKeys(ctx, r.t.kv, prefix)
	if err != nil || tenant != "" {
		return keys, err
	}
	tenants := keys[:0]
	for _, k := range keys {
		if !strings.HasPrefix(k, InternalTenantPrefix) {
			tenants = append(tenants, k)
		}
	}
	return tenants, nil
}

// Each is Table.Each: the errors of Keys and fn, UNAVAILABLE, INTERNAL.
func (r Reader[T]) Each(ctx context.Context, tenant string, fn func(tenant, id string, v T, rev uint64) error) error {
	return r.each(ctx, tenant, func(tenant, id string, v T, rev uint64, _ int) error {
		return fn(tenant, id, v, rev)
	})
}

// each is Each that also passes each record's size in bytes as stored.
func (r Reader[T]) each(ctx context.Context, tenant string, fn func(tenant, id string, v T, rev uint64, size int) error) error {
	keys, err := r.Keys(ctx, tenant)
	if err != nil {
		return err
	}
	for _, k := range keys {
		var v T
		rev, size, err := getJSON(ctx, r.t.kv, k, &v)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		tenant, id, _ := SplitKey(k)
		if err := fn(tenant, id, v, rev, size); err != nil {
			return err
		}
	}
	return nil
}
