package secrets

import (
	"context"
	"crypto/subtle"
	"regexp"
	"unicode/utf8"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// Limits of secrets.put.
const (
	// MaxNameLength bounds a secret's name (characters of [A-Za-z0-9._-]).
	MaxNameLength = 128
	// MaxValueBytes bounds a secret's value in bytes (64 KiB).
	MaxValueBytes = 64 << 10
	// MaxIdempotencyKeyLength bounds an idempotency key in characters.
	MaxIdempotencyKeyLength = 255
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// validatePut checks a put request before anything is written. Messages
// never quote the value (nor the name or key: a pasted credential may land
// in any field).
func validatePut(in *api.SecretPutRequest) error {
	switch {
	case in.Name == "":
		return api.InvalidInput("name", "name is required")
	case !namePattern.MatchString(in.Name):
		return api.InvalidInput("name", "name must be 1-%d characters of A-Z a-z 0-9 . _ -", MaxNameLength)
	case in.Value == "":
		return api.InvalidInput("value", "value is required")
	case len(in.Value) > MaxValueBytes:
		return api.InvalidInput("value", "value is %d bytes, at most %d are allowed", len(in.Value), MaxValueBytes)
	case utf8.RuneCountInString(in.IdempotencyKey) > MaxIdempotencyKeyLength:
		return api.InvalidInput("idempotencyKey", "idempotencyKey is longer than %d characters", MaxIdempotencyKeyLength)
	}
	return nil
}

// idempotencyRecord is what compute_idempotency keeps for a put: the id
// reserved for the secret, nothing about the value.
type idempotencyRecord struct {
	SecretID string `json:"secretId"`
}

// idempotencyOp names a put's records in compute_idempotency
// (bus.IdempotencyID).
var idempotencyOp = bus.EndpointName(bus.ResourceSecrets, "put")

// put stores a secret (secrets.put). Errors: UNSUPPORTED when the store
// configuration leaves secret:// out, INVALID_INPUT naming the field,
// ACCESS_DENIED (tenantId of another tenant), CONFLICT (idempotency key used
// with another value, or its secret kept being deleted under a retry),
// UNAVAILABLE, INTERNAL; never NOT_FOUND (a retry whose secret is deleted
// meanwhile writes it again).
//
// With an idempotency key the order is: reserve a secret id in
// compute_idempotency (create-only), then create the sealed secret under
// that id (create-only), then reply. Crash windows:
//   - after the reservation, before the secret: nothing is visible to the
//     tenant; a retry with the same key finds the reservation and writes the
//     secret under the reserved id, so the caller gets the reference it would
//     have got. Without a retry the reservation expires with the bucket's TTL.
//   - after the secret, before the reply: a retry finds both, unseals the
//     stored value, compares it in constant time and answers the same secret.
//
// Concurrent puts with one key agree on the reservation (the first create
// wins) and on the value (the first secret create wins; a different value
// gets CONFLICT). After the TTL the key is forgotten and a put makes a new
// secret. A retry after the secret was deleted (within the TTL) writes it
// again under the same id: the caller sent the value again and is owed the
// reference it was promised.
func (s *service) put(ctx context.Context, req *bus.Request) (any, error) {
	if _, ok := s.broker[api.SchemeSecret]; !ok {
		return nil, api.Errorf(api.CodeUnsupported, "no secret:// store is configured (this service serves %s): secrets.put stores nothing here",
			s.broker.schemes())
	}
	var in api.SecretPutRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := validatePut(&in); err != nil {
		return nil, err
	}
	id := api.NewID(api.PrefixSecret)
	if in.IdempotencyKey != "" {
		var err error
		if id, err = s.reserve(ctx, req.Tenant, in.IdempotencyKey); err != nil {
			return nil, err
		}
	}
	meta, err := s.local.create(ctx, req.Tenant, id, in.Name, in.Value)
	for attempt := 1; in.IdempotencyKey != "" && api.IsCode(err, api.CodeAlreadyExists); attempt++ {
		out, rerr := s.repeated(ctx, req, id, in.Value)
		if !api.IsCode(rerr, api.CodeNotFound) {
			return out, rerr
		}
		// Deleted between the create and the read: write it again, as a
		// retry after the delete would.
		if attempt == bus.CASAttempts {
			return nil, api.Errorf(api.CodeConflict, "secret %s kept being written and deleted (%d attempts); retry", id, attempt)
		}
		meta, err = s.local.create(ctx, req.Tenant, id, in.Name, in.Value)
	}
	if err != nil {
		return nil, err
	}
	req.Log.Info().Str("secret_id", id).Str("key_id", s.local.keys.Current()).Msg("secret stored")
	return meta, nil
}

// reserve returns the secret id recorded for the tenant's idempotency key,
// recording a new one if there is none. Errors: UNAVAILABLE (also when the
// record keeps vanishing under a race), INTERNAL (corrupt record).
func (s *service) reserve(ctx context.Context, tenant, key string) (string, error) {
	id := bus.IdempotencyID(idempotencyOp, key)
	// A concurrent put may reserve first: GetOrCreate then reads its reservation.
	rec, _, _, err := s.idempotency.GetOrCreate(ctx, tenant, id, idempotencyRecord{SecretID: api.NewID(api.PrefixSecret)})
	if err != nil {
		return "", err
	}
	if !api.ValidID(api.PrefixSecret, rec.SecretID) {
		return "", api.Errorf(api.CodeInternal, "idempotency record %s of tenant %s is corrupt", id, tenant)
	}
	return rec.SecretID, nil
}

// repeated answers a put whose reserved secret already exists: the same
// secret when the stored value equals value (constant-time compare), else
// CONFLICT.
func (s *service) repeated(ctx context.Context, req *bus.Request, id, value string) (any, error) {
	meta, stored, err := s.local.open(ctx, req.Tenant, id)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(stored, []byte(value)) != 1 {
		return nil, api.Errorf(api.CodeConflict, "idempotencyKey was already used to store a different value").WithPath("idempotencyKey")
	}
	req.Log.Info().Str("secret_id", id).Msg("secret put repeated")
	return meta, nil
}
