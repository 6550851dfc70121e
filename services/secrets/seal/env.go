package seal

import (
	"fmt"
	"os"
)

// EnvVar names the environment variable KeyringFromEnv reads: the standard
// base64 encoding of KeySize bytes.
const EnvVar = "COMPUTE_SEAL_KEY"

// EnvKeyID is the key id of the key KeyringFromEnv reads. Values sealed with
// it open only with a keyring holding a key of this id (the same material
// written as "env:<base64>" in a key file works too).
const EnvKeyID = "env"

// KeyringFromEnv builds a one-key keyring (id EnvKeyID) from EnvVar.
// Errors: the variable is unset or empty; it is not standard base64 of
// exactly KeySize bytes (the error never quotes it).
func KeyringFromEnv() (*Keyring, error) {
	v := os.Getenv(EnvVar)
	if v == "" {
		return nil, fmt.Errorf("%s is not set", EnvVar)
	}
	key, err := decodeKey(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvVar, err)
	}
	return NewKeyring(Key{ID: EnvKeyID, Bytes: key})
}
