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
}

// verifyKeys compares every key check record with the keyring, so a wrong
// key (same id, other material) or a missing one (values sealed with an id
// the keyring lacks) fails at start-up, reading one small record per key id
// instead of decrypting every secret. Errors: plain errors naming the key id;
// UNAVAILABLE from the store.
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
		if err := s.keys.VerifyKeyCheck(id, rec.Check); err != nil {
			return fmt.Errorf("stored secrets cannot be opened with this keyring: %w", err)
		}
		if id == s.keys.Current() {
			s.keyChecked.Store(true)
		}
	}
	return nil
}

// ensureKeyCheck writes the current key's check record before the first
// value sealed with it (once per process). When another replica wrote it
// first, its check must match ours. Errors: INTERNAL (this replica's current
// key differs from the stored one: it refuses to seal), UNAVAILABLE.
func (s *localStore) ensureKeyCheck(ctx context.Context) error {
	if s.keyChecked.Load() {
		return nil
	}
	id := s.keys.Current()
	check, _ := s.keys.KeyCheck(id)
	_, err := bus.CreateJSON(ctx, s.kv, keyCheckPrefix+id, keyCheckRecord{KeyID: id, Check: check, CreatedAt: time.Now().UTC()})
	if api.IsCode(err, api.CodeAlreadyExists) {
		var rec keyCheckRecord
		if _, err := bus.GetJSON(ctx, s.kv, keyCheckPrefix+id, &rec); err != nil {
			return api.Errorf(api.CodeUnavailable, "read key check of seal key %s: %v", id, err)
		}
		if err := s.keys.VerifyKeyCheck(id, rec.Check); err != nil {
			return api.Errorf(api.CodeInternal, "refusing to seal: %v", err)
		}
	} else if err != nil {
		return err
	}
	s.keyChecked.Store(true)
	return nil
}
