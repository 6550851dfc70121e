package seal

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	b64One = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, KeySize))
	b64Two = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, KeySize))
)

func TestParseKeys(t *testing.T) {
	keys, err := parseKeys([]byte("# comment\n\n  old:" + b64One + "  \r\nnew:" + b64Two + "\n"))
	if err != nil {
		t.Fatalf("parseKeys: %v", err)
	}
	if len(keys) != 2 || keys[0].ID != "old" || keys[1].ID != "new" || keys[1].Bytes[0] != 2 {
		t.Fatalf("parsed %d keys, want old then new", len(keys))
	}
}

func TestParseKeysRefuses(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		name, file, want string
	}{
		{"empty", "", "no key lines"},
		{"comments only", "# nothing\n", "no key lines"},
		{"no colon", b64One, "line 1: want <keyId>"},
		{"bad id", "k 1:" + b64One, "line 1: want <keyId>"},
		{"bad base64", "# c\nk1:" + b64One[:10] + "!!", "line 2: key k1: key material is not standard base64"},
		{"short key", "k1:" + short, "line 1: key k1: key material is 16 bytes, want 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseKeys([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), b64One[:10]) {
				t.Fatal("error quotes key material")
			}
		})
	}
}

func TestParseKeysDuplicateIDRefusedByLoad(t *testing.T) {
	path := writeKeyFile(t, "k1:"+b64One+"\nk1:"+b64Two+"\n", 0o600)
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("error %v, want duplicate key id refused", err)
	}
}

func writeKeyFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seal.keys")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKeyring(t *testing.T) {
	kr, err := LoadKeyring(writeKeyFile(t, "a:"+b64One+"\nb:"+b64Two+"\n", 0o400))
	if err != nil || kr.Current() != "b" {
		t.Fatalf("LoadKeyring: err %v; want current key b", err)
	}
	if _, err := LoadKeyring(writeKeyFile(t, "a:"+b64One+"\n", 0o640)); err == nil || !strings.Contains(err.Error(), "mode 0640") {
		t.Fatalf("group-readable file: error %v, want refused naming mode 0640", err)
	}
	if _, err := LoadKeyring(filepath.Join(t.TempDir(), "absent")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: error %v, want 'no such file'", err)
	}
	if _, err := LoadKeyring(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: error %v, want 'not a regular file'", err)
	}
}

func TestEnsureKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "seal.keys")
	first, created, err := EnsureKeyFile(path)
	if err != nil || !created {
		t.Fatalf("EnsureKeyFile: created %v, err %v; want a new file", created, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != KeyFileMode {
		t.Fatalf("key file mode %v (err %v), want %v", info.Mode().Perm(), err, KeyFileMode)
	}
	if !strings.HasPrefix(first.Current(), "key_") {
		t.Fatalf("new key id %q, want key_<ulid>", first.Current())
	}
	again, created, err := EnsureKeyFile(path)
	if err != nil || created {
		t.Fatalf("second EnsureKeyFile: created %v, err %v; want the existing file", created, err)
	}
	c1, _ := first.KeyCheck(first.Current())
	if err := again.VerifyKeyCheck(first.Current(), c1); err != nil {
		t.Fatalf("second load has another key: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("%d files next to the key file, want none (temporary file left behind)", len(entries)-1)
	}
}

func TestKeyringFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"unset", "", "COMPUTE_SEAL_KEY is not set"},
		{"not base64", "not base64 at all!", "not standard base64"},
		{"short", base64.StdEncoding.EncodeToString(make([]byte, 31)), "31 bytes, want 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvVar, tc.value)
			_, err := KeyringFromEnv()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.value != "" && strings.Contains(err.Error(), tc.value) {
				t.Fatal("error quotes the variable's value")
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		t.Setenv(EnvVar, b64One)
		kr, err := KeyringFromEnv()
		if err != nil || kr.Current() != EnvKeyID {
			t.Fatalf("KeyringFromEnv: err %v; want key id %q", err, EnvKeyID)
		}
		fromFile := mustKeyring(t, Key{ID: EnvKeyID, Bytes: bytes.Repeat([]byte{1}, KeySize)})
		if got, err := fromFile.Open(kr.Seal([]byte("v"), nil), nil); err != nil || string(got) != "v" {
			t.Fatalf("env key and the same key from a file disagree: %v", err)
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("k1:" + b64One + "\n"))
	f.Add([]byte("# c\n\na:" + b64One + "\nb:" + b64Two))
	f.Add([]byte("k1:" + b64One[:20]))
	f.Add([]byte(":::\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseKeys(data)
		if err != nil {
			return
		}
		for _, k := range keys {
			if !ValidKeyID(k.ID) || len(k.Bytes) != KeySize {
				t.Fatalf("parsed key id %q with %d bytes", k.ID, len(k.Bytes))
			}
		}
	})
}
