package secrets

import (
	"context"
	"fmt"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// keyCheckTenant is the tenant token of the key check records in the
// secrets bucket (keys _keycheck.<keyId>). It starts with
// bus.InternalTenantPrefix, so no tenant listing sees them.
const keyCheckTenant = bus.InternalTenantPrefix + "keycheck"

// keyCheckRecord remembers which key material a key id named when it first
// sealed a value: the keyring's KeyCheck (an HMAC, not the key).
type keyCheckRecord struct {
	KeyID     string    `json:"keyId"`
	Check     []byte    `json:"check"`
	CreatedAt time.Time `json:"createdAt"`
	// RetiredAt is set by a rekey that found no value sealed with the key any
	// more: from then on the key may leave the keyring, and no replica seals
	// with it again.
	RetiredAt *time.Time `json:"retiredAt,omitempty"`
}

// verifyKeys compares every key check record with the keyring, so a wrong
// key (same id, other material) or a missing one (values sealed with an id
// the keyring lacks and not retired) fails at start-up, reading one small
// record per key id instead of decrypting every secret. A retired current key
// fails too: the key file is older than the last rekey. Errors: plain errors
// naming the key id; UNAVAILABLE from the store.
func (s *localStore) verifyKeys(ctx context.Context) error {
	return s.checks.Each(ctx, keyCheckTenant, func(_, id string, rec keyCheckRecord, _ uint64) error {
		_, inKeyring := s.keys.KeyCheck(id)
		switch {
		case rec.RetiredAt != nil && id == s.keys.Current():
			return fmt.Errorf("current seal key %s was retired by a rekey: the key file is outdated (make a new key, with a new id, the last line)",
				id)
		case rec.RetiredAt != nil && !inKeyring:
			return nil
		}
		if err := s.keys.VerifyKeyCheck(id, rec.Check); err != nil {
			return fmt.Errorf("stored secrets cannot be opened with this keyring: %w", err)
		}
		return nil
	})
}

// ensureKeyCheck runs before every seal: it writes the current key's check
// record when there is none, and otherwise makes sure the stored one names
// this key material and is not retired (a replica still running with an
// older key file must not seal with a key a rekey retired). One KV read per
// seal. Errors: INTERNAL (refusing to seal), UNAVAILABLE.
func (s *localStore) ensureKeyCheck(ctx context.Context) error {
	id := s.keys.Current()
	check, _ := s.keys.KeyCheck(id)
	// Another replica may write it first: GetOrCreate then reads its record.
	rec, _, created, err := s.checks.GetOrCreate(ctx, keyCheckTenant, id, keyCheckRecord{KeyID: id, Check: check, CreatedAt: time.Now().UTC()})
	if created {
		return nil
	}
	if err != nil {
		return api.Errorf(api.CodeUnavailable, "read key check of seal key %s: %v", id, err)
	}
	if rec.RetiredAt != nil {
		return api.Errorf(api.CodeInternal, "refusing to seal: seal key %s was retired by a rekey; restart with the current key file", id)
	}
	if err := s.keys.VerifyKeyCheck(id, rec.Check); err != nil {
		return api.Errorf(api.CodeInternal, "refusing to seal: %v", err)
	}
	return nil
}

// retireKeys marks the check record of every key but the current one
// retired (Table.MutateAt) and returns the ids of all retired keys other
// than the current one: those may be removed from the key file. Callers make sure no stored
// value is sealed with them. Errors: UNAVAILABLE, INTERNAL.
func (s *localStore) retireKeys(ctx context.Context) ([]string, error) {
	retired := []string{}
	now := time.Now().UTC()
	err := s.checks.Each(ctx, keyCheckTenant, func(_, id string, rec keyCheckRecord, rev uint64) error {
		if id == s.keys.Current() {
			return nil
		}
		if rec.RetiredAt == nil {
			_, _, err := s.checks.MutateAt(ctx, keyCheckTenant, id, rec, rev, func(r *keyCheckRecord) error {
				if r.RetiredAt == nil {
					r.RetiredAt = &now
				}
				return nil
			})
			if api.IsCode(err, api.CodeNotFound) {
				return nil // deleted meanwhile: nothing to retire
			}
			if err != nil {
				return err
			}
		}
		retired = append(retired, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return retired, nil
}
