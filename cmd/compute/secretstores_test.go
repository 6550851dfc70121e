package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/secrets"
)

// A bad --secret-store stops serve and up before they connect, with
// INVALID_CONFIG naming the flag and the value.
func TestSecretStoreFlag(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "secrets", "--nats", "nats://127.0.0.1:1"},
		{"up", "--data", t.TempDir()},
	} {
		root := newRootWith(io.Discard)
		root.SetArgs(append(args, "--secret-store", "secret", "--secret-store", "env:Root"))
		err := root.Execute()
		ce := api.AsComputeError(err)
		if err == nil || ce.Code != api.CodeInvalidConfig || ce.Path() != "--secret-store" || !strings.Contains(ce.Message, `tenant "Root"`) {
			t.Errorf("%s with an invalid env tenant: %v", args[0], err)
		}
	}
}

// COMPUTE_SECRETS_STORES is the flag's default, space-separated.
func TestSecretStoresFromEnv(t *testing.T) {
	t.Setenv("COMPUTE_SECRETS_STORES", "secret  env:root,ops")
	c := &serviceConfig{}
	serviceFlags(&cobra.Command{}, c)
	if err := c.parseSecretStores(); err != nil {
		t.Fatal(err)
	}
	want := []secrets.StoreConfig{{Scheme: "secret"}, {Scheme: "env", Tenants: []string{"root", "ops"}}}
	if !reflect.DeepEqual(c.stores, want) {
		t.Fatalf("stores %v, want %v", c.stores, want)
	}
}

// vault listed without an address fails the start naming the flags; vault
// not listed builds no store, whatever --vault-addr says.
func TestVaultStoreOnlyWhenListed(t *testing.T) {
	c := &serviceConfig{stores: []secrets.StoreConfig{{Scheme: "vault"}}, log: zerolog.Nop()}
	_, err := c.vaultStore()
	if ce := api.AsComputeError(err); err == nil || ce.Code != api.CodeInvalidConfig || ce.Path() != "--secret-store" || !strings.Contains(ce.Message, "--vault-addr") {
		t.Fatalf("vault without an address: %v", err)
	}
	c = &serviceConfig{stores: secrets.DefaultStores, vaultAddr: "http://127.0.0.1:1", log: zerolog.Nop()}
	if vs, err := c.vaultStore(); vs != nil || err != nil {
		t.Fatalf("vault not listed: %v, %v", vs, err)
	}
}

// An empty --env-secret-prefix is refused at start: env:// would resolve
// every variable of the secrets service, VAULT_TOKEN too.
func TestEmptyEnvSecretPrefixRefused(t *testing.T) {
	for _, prefix := range []string{"", " "} {
		root := newRootWith(io.Discard)
		root.SetArgs([]string{"serve", "secrets", "--nats", "nats://127.0.0.1:1", "--env-secret-prefix", prefix})
		err := root.Execute()
		if ce := api.AsComputeError(err); err == nil || ce.Code != api.CodeInvalidConfig || ce.Path() != "--env-secret-prefix" {
			t.Errorf("--env-secret-prefix %q: %v", prefix, err)
		}
	}
}
