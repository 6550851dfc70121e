package seal

import (
	"bytes"
	"strings"
	"testing"
)

func testKey(id string, fill byte) Key {
	return Key{ID: id, Bytes: bytes.Repeat([]byte{fill}, KeySize)}
}

func mustKeyring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	kr, err := NewKeyring(keys...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return kr
}

func TestSealOpenRoundTrip(t *testing.T) {
	kr := mustKeyring(t, testKey("k1", 1))
	plain, aad := []byte("plain-value-123"), []byte("secret://acme/sec_x")
	a, b := kr.Seal(plain, aad), kr.Seal(plain, aad)
	if a.KeyID != "k1" || len(a.Nonce) != NonceSize {
		t.Fatalf("sealed with key %q and a %d-byte nonce, want k1 and %d", a.KeyID, len(a.Nonce), NonceSize)
	}
	if bytes.Equal(a.Nonce, b.Nonce) || bytes.Equal(a.Ciphertext, b.Ciphertext) {
		t.Fatal("two seals share a nonce or ciphertext")
	}
	if bytes.Contains(a.Ciphertext, plain) {
		t.Fatal("ciphertext contains the plaintext")
	}
	got, err := kr.Open(a, aad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open: err %v, plaintext equal %v", err, bytes.Equal(got, plain))
	}
}

func TestOpenRefuses(t *testing.T) {
	kr := mustKeyring(t, testKey("k1", 1))
	aad := []byte("secret://acme/sec_x")
	good := kr.Seal([]byte("v"), aad)
	tampered := good
	tampered.Ciphertext = append([]byte{}, good.Ciphertext...)
	tampered.Ciphertext[0] ^= 1
	for _, tc := range []struct {
		name   string
		kr     *Keyring
		sealed Sealed
		aad    string
		want   string
	}{
		{"other aad", kr, good, "secret://acme/sec_y", "does not open"},
		{"wrong key same id", mustKeyring(t, testKey("k1", 2)), good, string(aad), "does not open"},
		{"unknown key id", mustKeyring(t, testKey("k2", 1)), good, string(aad), "not in the keyring"},
		{"short nonce", kr, Sealed{KeyID: "k1", Nonce: good.Nonce[:4], Ciphertext: good.Ciphertext}, string(aad), "nonce"},
		{"tampered", kr, tampered, string(aad), "does not open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.kr.Open(tc.sealed, []byte(tc.aad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestOlderKeyStillOpens(t *testing.T) {
	old := mustKeyring(t, testKey("k1", 1))
	sealed := old.Seal([]byte("v"), nil)
	both := mustKeyring(t, testKey("k1", 1), testKey("k2", 2))
	if both.Current() != "k2" {
		t.Fatalf("current key %q, want the last one k2", both.Current())
	}
	if got, err := both.Open(sealed, nil); err != nil || string(got) != "v" {
		t.Fatalf("older key does not open its value: %v", err)
	}
	if s := both.Seal([]byte("v"), nil); s.KeyID != "k2" {
		t.Fatalf("sealed with %q, want the current key k2", s.KeyID)
	}
}

func TestNewKeyringRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []Key
		want string
	}{
		{"no keys", nil, "no keys"},
		{"bad id", []Key{testKey("k.1", 1)}, "key id"},
		{"empty id", []Key{testKey("", 1)}, "key id"},
		{"duplicate id", []Key{testKey("k1", 1), testKey("k1", 2)}, "twice"},
		{"short key", []Key{{ID: "k1", Bytes: make([]byte, 16)}}, "16 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewKeyring(tc.keys...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestKeyCheck(t *testing.T) {
	a := mustKeyring(t, testKey("k1", 1))
	check, ok := a.KeyCheck("k1")
	if !ok || len(check) != 32 {
		t.Fatalf("KeyCheck: ok %v, %d bytes; want a 32-byte HMAC", ok, len(check))
	}
	if bytes.Contains(check, bytes.Repeat([]byte{1}, 8)) {
		t.Fatal("key check contains key material")
	}
	if err := mustKeyring(t, testKey("k1", 1)).VerifyKeyCheck("k1", check); err != nil {
		t.Fatalf("same key refused: %v", err)
	}
	if err := mustKeyring(t, testKey("k1", 2)).VerifyKeyCheck("k1", check); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("other material under k1: error %v, want 'differs'", err)
	}
	if err := mustKeyring(t, testKey("k2", 1)).VerifyKeyCheck("k1", check); err == nil || !strings.Contains(err.Error(), "not in the keyring") {
		t.Fatalf("keyring without k1: error %v, want 'not in the keyring'", err)
	}
	if _, ok := a.KeyCheck("k9"); ok {
		t.Fatal("KeyCheck of an absent key id reported ok")
	}
}
