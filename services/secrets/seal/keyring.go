package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
)

// KeySize is the length of a seal key in bytes (AES-256).
const KeySize = 32

// NonceSize is the length of a GCM nonce in bytes (96 bits, random per seal).
const NonceSize = 12

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidKeyID reports whether id is a valid key id: 1–64 characters of
// A-Z a-z 0-9 _ - (safe as a NATS KV key token).
func ValidKeyID(id string) bool { return keyIDPattern.MatchString(id) }

// Key is one seal key: an id and KeySize bytes of key material.
type Key struct {
	ID    string
	Bytes []byte
}

// Keyring holds the current key and older keys by id. It is safe for
// concurrent use. The key material is not kept in plain form beyond the
// AES-GCM ciphers and the key check values derived from it.
type Keyring struct {
	current string
	aeads   map[string]cipher.AEAD
	checks  map[string][]byte
}

// Sealed is one sealed value: the id of the key that sealed it, the random
// nonce (NonceSize bytes) and the GCM ciphertext with its 16-byte tag.
type Sealed struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// NewKeyring builds a keyring from keys; the last one is the current key.
// Errors: no keys, an invalid or repeated key id, key material that is not
// KeySize bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("keyring has no keys")
	}
	kr := &Keyring{aeads: map[string]cipher.AEAD{}, checks: map[string][]byte{}}
	for _, k := range keys {
		if !ValidKeyID(k.ID) {
			return nil, errors.New("key id must be 1-64 characters of A-Z a-z 0-9 _ -")
		}
		if _, dup := kr.aeads[k.ID]; dup {
			return nil, fmt.Errorf("key id %s appears twice", k.ID)
		}
		if len(k.Bytes) != KeySize {
			return nil, fmt.Errorf("key %s is %d bytes, want %d", k.ID, len(k.Bytes), KeySize)
		}
		block, err := aes.NewCipher(k.Bytes)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		kr.aeads[k.ID] = gcm
		kr.checks[k.ID] = keyCheck(k)
		kr.current = k.ID
	}
	return kr, nil
}

// Current is the id of the key that seals new values.
func (kr *Keyring) Current() string { return kr.current }

// Seal encrypts plaintext with the current key and a fresh random nonce,
// authenticating aad as well (Open needs the same aad).
func (kr *Keyring) Seal(plaintext, aad []byte) Sealed {
	nonce := make([]byte, NonceSize)
	_, _ = rand.Read(nonce) // never fails (crypto/rand, Go 1.24+)
	return Sealed{
		KeyID:      kr.current,
		Nonce:      nonce,
		Ciphertext: kr.aeads[kr.current].Seal(nil, nonce, plaintext, aad),
	}
}

// Open decrypts s, checking that it was sealed with aad. Errors: the key id
// is not in the keyring; the nonce has the wrong size; authentication fails
// (wrong key, other aad, or a tampered record).
func (kr *Keyring) Open(s Sealed, aad []byte) ([]byte, error) {
	gcm, ok := kr.aeads[s.KeyID]
	if !ok {
		return nil, fmt.Errorf("sealed with key %q, which is not in the keyring", s.KeyID)
	}
	if len(s.Nonce) != NonceSize {
		return nil, fmt.Errorf("nonce is %d bytes, want %d", len(s.Nonce), NonceSize)
	}
	plain, err := gcm.Open(nil, s.Nonce, s.Ciphertext, aad)
	if err != nil {
		return nil, fmt.Errorf("sealed with key %s but does not open: wrong key, moved or tampered record", s.KeyID)
	}
	return plain, nil
}

// KeyCheck is the key check value of key id: HMAC-SHA256 keyed with the key
// over a fixed label and the id. It identifies a key without revealing it, so
// a store can remember which key material sealed its values and a wrong key
// is detected at start-up without decrypting anything. ok is false when the
// keyring has no key id.
func (kr *Keyring) KeyCheck(id string) (check []byte, ok bool) {
	check, ok = kr.checks[id]
	return check, ok
}

// VerifyKeyCheck compares check (constant time) with the key check value of
// key id. Errors: the keyring lacks id; the key differs from the one that
// produced check.
func (kr *Keyring) VerifyKeyCheck(id string, check []byte) error {
	mine, ok := kr.checks[id]
	if !ok {
		return fmt.Errorf("key %s is not in the keyring", id)
	}
	if !hmac.Equal(mine, check) {
		return fmt.Errorf("key %s of the keyring differs from the key %s that sealed the stored values (wrong key file or %s?)", id, id, EnvVar)
	}
	return nil
}

const keyCheckLabel = "better-compute.io/compute seal key check v1:"

func keyCheck(k Key) []byte {
	m := hmac.New(sha256.New, k.Bytes)
	m.Write([]byte(keyCheckLabel + k.ID))
	return m.Sum(nil)
}
