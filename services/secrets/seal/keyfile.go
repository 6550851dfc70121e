package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"better-compute.io/compute/pkg/api"
)

// KeyFileMode is the mode EnsureKeyFile creates key files with.
const KeyFileMode fs.FileMode = 0o600

// LoadKeyring reads the key file at path (format in the package doc).
// Errors: the file is missing or unreadable; it is accessible by group or
// others (mode & 0077 != 0); a line is malformed (reported by line number,
// never quoting key material); it holds no key.
func LoadKeyring(path string) (*Keyring, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("seal key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("seal key file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("seal key file %s has mode %04o: it must not be accessible by group or others (chmod 600)", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal key file: %w", err)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("seal key file %s: %w", path, err)
	}
	return NewKeyring(keys...)
}

// EnsureKeyFile loads the key file at path, first creating it (and its
// directory, mode 0700) with one new random key and mode 0600 when it does not
// exist. created reports whether this call created it. Two processes racing
// to create the file end up with the same key (the file appears atomically,
// complete, and only once). Errors: those of LoadKeyring, and file system
// errors while creating.
func EnsureKeyFile(path string) (kr *Keyring, created bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if created, err = createKeyFile(path); err != nil {
			return nil, false, err
		}
	}
	kr, err = LoadKeyring(path)
	return kr, created, err
}

// createKeyFile writes a new key to a temporary file and links it to path,
// which fails if path appeared meanwhile (then the other file wins).
func createKeyFile(path string) (bool, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("seal key file directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".sealkey-*")
	if err != nil {
		return false, fmt.Errorf("seal key file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := writeNewKey(tmp); err != nil {
		_ = tmp.Close()
		return false, fmt.Errorf("seal key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("seal key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("seal key file: %w", err)
	}
	return true, nil
}

func writeNewKey(f *os.File) error {
	if err := f.Chmod(KeyFileMode); err != nil {
		return err
	}
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	id := api.NewID("key_")
	content := "# better-compute seal keys: <keyId>:<base64 of 32 bytes>; the last line is the current key.\n" +
		id + ":" + base64.StdEncoding.EncodeToString(key) + "\n"
	if _, err := f.WriteString(content); err != nil {
		return err
	}
	return f.Sync()
}

// parseKeys reads key lines (format in the package doc).
func parseKeys(data []byte) ([]Key, error) {
	var keys []Key
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, err := parseKeyLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key lines (want <keyId>:<base64 of 32 bytes>)")
	}
	return keys, nil
}

func parseKeyLine(line string) (Key, error) {
	id, b64, ok := strings.Cut(line, ":")
	if !ok || !ValidKeyID(id) {
		return Key{}, errors.New("want <keyId>:<base64 of 32 bytes>, keyId of 1-64 characters A-Z a-z 0-9 _ -")
	}
	key, err := decodeKey(b64)
	if err != nil {
		return Key{}, fmt.Errorf("key %s: %w", id, err)
	}
	return Key{ID: id, Bytes: key}, nil
}

// decodeKey decodes standard base64 key material of exactly KeySize bytes.
// The error never quotes the input.
func decodeKey(b64 string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("key material is not standard base64")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key material is %d bytes, want %d", len(key), KeySize)
	}
	return key, nil
}
