package secrets

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/secrets/seal"
)

func TestStartChecksTheKeyring(t *testing.T) {
	h := startHarness(t)
	s := h.put(t, "acme", api.SecretPutRequest{Name: "tok", Value: "keyring-value-1"})
	if err := h.svc.Stop(); err != nil {
		t.Fatal(err)
	}
	key := func(id string, fill byte) seal.Key {
		return seal.Key{ID: id, Bytes: bytes.Repeat([]byte{fill}, seal.KeySize)}
	}
	start := func(keys ...seal.Key) error {
		kr, err := seal.NewKeyring(keys...)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := Start(h.env.NC, h.env.Stores, h.options(kr))
		if err == nil {
			t.Cleanup(func() { _ = svc.Stop() })
		}
		return err
	}
	for _, tc := range []struct {
		name string
		keys []seal.Key
		want string
	}{
		{"same id, other material", []seal.Key{key("k1", 2)}, "key k1 of the keyring differs from the key k1 that sealed the stored values"},
		{"other id only", []seal.Key{key("k9", 1)}, "key k1 is not in the keyring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := start(tc.keys...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v; want an error containing %q", err, tc.want)
			}
		})
	}

	// Rekeyed keyring: k1 kept for old values, k2 current.
	if err := start(key("k1", 1), key("k2", 2)); err != nil {
		t.Fatalf("Start with k1 and a new current key: %v", err)
	}
	if v, err := h.resolve(t, "acme", s.Ref); err != nil || v != "keyring-value-1" {
		t.Fatalf("value sealed with k1 does not resolve after rekey: %v", err)
	}
	h.put(t, "acme", api.SecretPutRequest{Name: "tok2", Value: "keyring-value-2"})
	if err := start(key("k1", 1)); err == nil || !strings.Contains(err.Error(), "key k2 is not in the keyring") {
		t.Fatalf("Start without k2 after k2 sealed a value: %v; want refused", err)
	}
}

func TestStartRefusesBadOptions(t *testing.T) {
	h := startHarness(t)
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no keyring", func(o *Options) { o.Keyring = nil }, "Keyring is required"},
		{"bad env tenant", func(o *Options) { o.Stores = []StoreConfig{{Scheme: "env", Tenants: []string{"Root"}}} }, `tenant "Root"`},
		{"no env tenant", func(o *Options) { o.Stores = []StoreConfig{{Scheme: "env", Tenants: []string{}}} }, "tenant list is empty"},
		{"scheme listed twice", func(o *Options) { o.Stores = []StoreConfig{{Scheme: "env"}, {Scheme: "env"}} }, "env is listed twice"},
		{"unknown scheme", func(o *Options) { o.Stores = []StoreConfig{{Scheme: "ftp"}} }, `"ftp": unknown scheme`},
		{"vault without a store", func(o *Options) { o.Stores = []StoreConfig{{Scheme: "vault"}} }, "no vault store is configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := h.options(testKeyring(t, "k1", 1))
			tc.edit(&o)
			if _, err := Start(h.env.NC, h.env.Stores, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// fakeStore answers a fixed value for every vault:// reference.
type fakeStore struct{}

func (fakeStore) Resolve(_ context.Context, _ string, ref api.SecretRef) (string, error) {
	return "store-value-for-" + ref.Field, nil
}

// Options.Vault serves vault://, for the tenants its StoreConfig lists.
func TestVaultOptionServesItsScheme(t *testing.T) {
	h := startHarness(t, func(o *Options) {
		o.Stores, o.Vault = []StoreConfig{{Scheme: api.SchemeVault, Tenants: []string{"acme"}}}, fakeStore{}
	})
	v, err := h.resolve(t, "acme", "vault://kv/team/hetzner#token")
	if err != nil || v != "store-value-for-token" {
		t.Fatalf("vault:// through the configured store: err %v, value matches %v", err, v == "store-value-for-token")
	}
	_, err = h.resolve(t, "other", "vault://kv/team/hetzner#token")
	wantError(t, err, api.CodeAccessDenied, "")
}

// Two replicas whose current keys share an id but not the material: the
// second one to seal finds the first one's key check and refuses.
func TestReplicaWithOtherKeyRefusesToSeal(t *testing.T) {
	h := startHarness(t)
	ctx := context.Background()
	a := newLocalStore(h.env.Stores.Secrets, testKeyring(t, "k7", 1))
	b := newLocalStore(h.env.Stores.Secrets, testKeyring(t, "k7", 2))
	if _, err := a.create(ctx, "acme", api.NewID(api.PrefixSecret), "n", "replica-value"); err != nil {
		t.Fatalf("first replica: %v", err)
	}
	_, err := b.create(ctx, "acme", api.NewID(api.PrefixSecret), "n", "replica-value")
	ce := wantError(t, err, api.CodeInternal, "", "replica-value")
	if !strings.Contains(ce.Message, "refusing to seal") {
		t.Fatalf("second replica: %s; want a refusal to seal", ce.Message)
	}
}
