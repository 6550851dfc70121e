// Package seal encrypts secret values at rest: AES-256-GCM with a random
// 96-bit nonce per value, additional authenticated data chosen by the caller
// (the secrets service binds the secret reference, so a sealed value copied
// to another key fails to open), and a key id stored with every sealed value
// so a Keyring can hold a current key and older ones (the secrets service's
// rekey re-seals every value with the current key, after which the older
// ones can go).
//
// Keys come from a key file (LoadKeyring, EnsureKeyFile) or from the
// COMPUTE_SEAL_KEY environment variable (KeyringFromEnv).
//
// Key file format: UTF-8 text, one key per line as
//
//	<keyId>:<standard base64 of exactly 32 random bytes>
//
// keyId is 1–64 characters of A-Z a-z 0-9 _ -. Blank lines and lines starting
// with # are ignored. The LAST key line is the current key (it seals new
// values); earlier lines are older keys that only open what they sealed, so a
// rekey appends a line. Key ids are unique. The file must not be accessible
// by group or others (mode 0600 or 0400), else it is refused.
//
// Errors of this package are plain Go errors: they happen at start-up or are
// mapped to INTERNAL by the service. None quotes key material or plaintext.
package seal
