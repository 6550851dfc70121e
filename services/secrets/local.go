package secrets

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/secrets/seal"
)

// record is a stored secret: its metadata (decoding a record as api.Secret
// is the metadata view) and the sealed value. Nonce and Ciphertext travel as
// base64 strings.
type record struct {
	api.Secret
	KeyID      string `json:"keyId"`
	Nonce      []byte `json:"nonce"`
	Ciphertext []byte `json:"ciphertext"`
	// DeletingAt, when set, is when a secrets.delete marked the secret
	// (UTC, nanoseconds): until deleteLease has passed, check refuses it
	// (NOT_FOUND) while resolve still answers its value; see delete.
	DeletingAt *time.Time `json:"deletingAt,omitempty"`
}

// deleteLease is how long a delete's mark holds: check ignores an older
// mark (one left by a delete that crashed), and a delete that took longer
// than this from its mark to its removal gives up (UNAVAILABLE) instead of
// removing.
const deleteLease = time.Minute

// beingDeleted is NOT_FOUND when rec carries a delete's mark younger than
// deleteLease, nil otherwise.
func beingDeleted(rec *record, now time.Time) error {
	if rec.DeletingAt == nil || now.Sub(*rec.DeletingAt) >= deleteLease {
		return nil
	}
	return api.Errorf(api.CodeNotFound, "secret %s is being deleted", rec.ID)
}

// localStore is the sealed store of secret:// references in the
// compute_secrets bucket (owner: this service): the sealed records of
// tenants, and the key check records under keyCheckTenant.
type localStore struct {
	secrets *bus.Table[record]
	checks  *bus.Table[keyCheckRecord]
	keys    *seal.Keyring
}

// newLocalStore keeps secrets sealed with keys in kv (compute_secrets).
func newLocalStore(kv jetstream.KeyValue, keys *seal.Keyring) *localStore {
	return &localStore{secrets: bus.NewTable[record](kv, "secret"), checks: bus.NewTable[keyCheckRecord](kv, "key check"), keys: keys}
}

func secretRef(tenant, id string) string {
	return api.SecretRef{Scheme: api.SchemeSecret, Tenant: tenant, ID: id}.String()
}

// create seals value under tenant and id with the current key, the
// reference as additional data. Errors: ALREADY_EXISTS (the key holds a
// secret), UNAVAILABLE, INTERNAL.
func (s *localStore) create(ctx context.Context, tenant, id, name, value string) (api.Secret, error) {
	if err := s.ensureKeyCheck(ctx); err != nil {
		return api.Secret{}, err
	}
	meta := api.Secret{ID: id, TenantID: tenant, Name: name, Ref: secretRef(tenant, id), CreatedAt: time.Now().UTC()}
	rec := record{Secret: meta}
	s.sealInto(&rec, tenant, id, []byte(value))
	if _, err := s.secrets.Create(ctx, tenant, id, rec); err != nil {
		return api.Secret{}, err
	}
	return meta, nil
}

// open reads and unseals the secret id of tenant. Errors: those of read
// and unseal.
func (s *localStore) open(ctx context.Context, tenant, id string) (api.Secret, []byte, error) {
	rec, _, err := s.read(ctx, tenant, id)
	if err != nil {
		return api.Secret{}, nil, err
	}
	plain, err := s.unseal(tenant, id, rec)
	if err != nil {
		return api.Secret{}, nil, err
	}
	return rec.Secret, plain, nil
}

// read returns the stored record of tenant's secret id and its revision.
// Errors: NOT_FOUND, UNAVAILABLE, INTERNAL (corrupt record).
func (s *localStore) read(ctx context.Context, tenant, id string) (record, uint64, error) {
	return s.secrets.Get(ctx, tenant, id)
}

// unseal opens rec, stored under tenant and id. The additional data is the
// reference of the key read, not anything in the record, so a record copied
// under another key does not open. Errors: INTERNAL (unknown key id, wrong
// key, moved or tampered record).
func (s *localStore) unseal(tenant, id string, rec record) ([]byte, error) {
	ref := secretRef(tenant, id)
	plain, err := s.keys.Open(seal.Sealed{KeyID: rec.KeyID, Nonce: rec.Nonce, Ciphertext: rec.Ciphertext}, []byte(ref))
	if err != nil {
		return nil, api.Errorf(api.CodeInternal, "secret %s cannot be opened: %v", ref, err)
	}
	return plain, nil
}

// sealInto replaces rec's sealed value with plain sealed by the current key,
// bound to the reference of tenant and id.
func (s *localStore) sealInto(rec *record, tenant, id string, plain []byte) {
	sealed := s.keys.Seal(plain, []byte(secretRef(tenant, id)))
	rec.KeyID, rec.Nonce, rec.Ciphertext = sealed.KeyID, sealed.Nonce, sealed.Ciphertext
}

// Resolve answers the value of secret://<tenant>/<id>. Errors: ACCESS_DENIED
// when the reference names another tenant (checked before any read), and
// those of open.
func (s *localStore) Resolve(ctx context.Context, tenant string, ref api.SecretRef) (string, error) {
	if ref.Tenant != tenant {
		return "", api.Errorf(api.CodeAccessDenied, "tenant %q may not read secrets of another tenant", tenant)
	}
	_, plain, err := s.open(ctx, tenant, ref.ID)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}
