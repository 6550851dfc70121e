package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// keyCheckPrefix prefixes the key check records in the secrets bucket. It
// starts with "_", which no tenant id does, so no tenant listing sees them.
const keyCheckPrefix = "_keycheck."

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
	keys, err := bus.Keys(ctx, s.kv, keyCheckPrefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		var rec keyCheckRecord
		if _, err := bus.GetJSON(ctx, s.kv, k, &rec); err != nil {
			if errors.Is(err, bus.ErrNotFound) {
				continue
			}
			return err
		}
		id := strings.TrimPrefix(k, keyCheckPrefix)
		_, inKeyring := s.keys.KeyCheck(id)
		switch {
		case rec.RetiredAt != nil && id == s.keys.Current():
			return fmt.Errorf("current seal key %s was retired by a rekey: the key file is outdated (make a new key, with a new id, the last line)", id)
		case rec.RetiredAt != nil && !inKeyring:
			continue
		}
		if err := s.keys.VerifyKeyCheck(id, rec.Check); err != nil {
			return fmt.Errorf("stored secrets cannot be opened with this keyring: %w", err)
		}
	}
	return nil
}

// ensureKeyCheck runs before every seal: it writes the current key's check
// record when there is none, and otherwise makes sure the stored one names
// this key material and is not retired (a replica still running with an
// older key file must not seal with a key a rekey retired). One KV read per
// seal. Errors: INTERNAL (refusing to seal), UNAVAILABLE.
func (s *localStore) ensureKeyCheck(ctx context.Context) error {
	id := s.keys.Current()
	k := keyCheckPrefix + id
	var rec keyCheckRecord
	_, err := bus.GetJSON(ctx, s.kv, k, &rec)
	if errors.Is(err, bus.ErrNotFound) {
		check, _ := s.keys.KeyCheck(id)
		_, err = bus.CreateJSON(ctx, s.kv, k, keyCheckRecord{KeyID: id, Check: check, CreatedAt: time.Now().UTC()})
		if err == nil {
			return nil
		}
		if !api.IsCode(err, api.CodeAlreadyExists) {
			return err
		}
		_, err = bus.GetJSON(ctx, s.kv, k, &rec) // another replica wrote it first
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
// retired (revision CAS; a record changed meanwhile is left for the next
// rekey) and returns the ids of all retired keys other than the current
// one: those may be removed from the key file. Callers make sure no stored
// value is sealed with them. Errors: UNAVAILABLE, INTERNAL.
func (s *localStore) retireKeys(ctx context.Context) ([]string, error) {
	keys, err := bus.Keys(ctx, s.kv, keyCheckPrefix)
	if err != nil {
		return nil, err
	}
	retired := []string{}
	for _, k := range keys {
		id := strings.TrimPrefix(k, keyCheckPrefix)
		if id == s.keys.Current() {
			continue
		}
		var rec keyCheckRecord
		rev, err := bus.GetJSON(ctx, s.kv, k, &rec)
		if errors.Is(err, bus.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rec.RetiredAt == nil {
			now := time.Now().UTC()
			rec.RetiredAt = &now
			if _, err := bus.UpdateJSON(ctx, s.kv, k, rec, rev); err != nil {
				if api.IsCode(err, api.CodeConflict) {
					continue
				}
				return nil, err
			}
		}
		retired = append(retired, id)
	}
	return retired, nil
}
