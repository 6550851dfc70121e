package secrets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/services/secrets/seal"
)

// ServiceName is the micro service name (`nats micro ls`).
const ServiceName = "secrets"

// Version is the micro service version.
const Version = "0.1.0"

// startTimeout bounds the key checks Start runs.
const startTimeout = 30 * time.Second

// Options configures Start.
type Options struct {
	// Keyring seals and opens secret:// values (required): see
	// seal.LoadKeyring, seal.EnsureKeyFile and seal.KeyringFromEnv.
	Keyring *seal.Keyring
	// Stores are the schemes that resolve (ParseStores reads them from
	// --secret-store values). Empty means DefaultStores, secret:// only; a
	// list replaces the default. A reference of a scheme not listed is
	// INVALID_INPUT at check and UNSUPPORTED at resolve; without secret,
	// secrets.put is UNSUPPORTED.
	Stores []StoreConfig
	// Vault is the vault:// store (NewVaultStore): required when Stores
	// lists vault, unused otherwise.
	Vault Store
	// EnvPrefixes are the name prefixes of the environment variables
	// env:// resolves (nil: [EnvSecretPrefix]; "" admits every variable
	// but the service's own COMPUTE_* configuration).
	EnvPrefixes []string
	// Logger receives one line per event; never a secret value.
	Logger zerolog.Logger
	// Workers bounds concurrent requests (default 64).
	Workers int
}

// service holds what the handlers share.
type service struct {
	local  *localStore
	broker broker
	// metadata is the list index of compute_secrets' records read as
	// api.Secret (no value): a page of secrets.list costs its own records.
	metadata *bus.Index[api.Secret]
	// holders are read for references to a secret being deleted.
	holders     holders
	idempotency *bus.Table[idempotencyRecord]
}

// Start checks the keyring against the key check records of the secrets
// bucket and serves the micro service "secrets": compute.v1.*.secrets.{put,
// list,delete} and compute.internal.secrets.{resolve,check,rekey}.
//
// Errors (plain, at start-up): no keyring; a store configuration
// ParseStores would refuse; vault listed without Options.Vault; the keyring
// lacks a key id that sealed stored values (and was not retired by a
// rekey), or holds other material under that id (wrong key file or
// COMPUTE_SEAL_KEY); the current key was retired by a rekey; the store
// cannot be read.
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*bus.Service, error) {
	if o.Keyring == nil {
		return nil, errors.New("secrets: Options.Keyring is required")
	}
	if len(o.Stores) == 0 {
		o.Stores = DefaultStores
	}
	if o.EnvPrefixes == nil {
		o.EnvPrefixes = []string{EnvSecretPrefix}
	}
	local := newLocalStore(st.Secrets, o.Keyring)
	env := envStore{prefixes: o.EnvPrefixes}
	b, err := newBroker(o.Stores, map[string]Store{api.SchemeSecret: local, api.SchemeEnv: env, api.SchemeVault: o.Vault})
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := local.verifyKeys(ctx); err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	quotas, err := st.Quotas(o.Logger)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	metadata, err := bus.NewListIndex(bus.NewTable[api.Secret](st.Secrets, "secret"), o.Logger)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	s := &service{local: local, broker: b, metadata: metadata,
		holders:     holders{accounts: st.AccountTable().Reader(), pools: st.PoolTable().Reader()},
		idempotency: bus.NewTable[idempotencyRecord](st.Idempotency, "idempotency record")}
	svc, err := bus.StartService(nc, bus.ServiceConfig{
		Name: ServiceName, Version: Version, Description: "secret store and broker",
		Workers: o.Workers, Logger: o.Logger, Quotas: quotas, OnStop: metadata.Stop,
		Endpoints: []bus.Endpoint{
			bus.CommandEndpoint(bus.ResourceSecrets, "put", s.put),
			bus.CommandEndpoint(bus.ResourceSecrets, "list", s.list),
			bus.CommandEndpoint(bus.ResourceSecrets, "delete", s.delete),
			{Name: bus.EndpointName(bus.ResourceSecrets, "resolve"), Subject: bus.SecretsResolve, Handler: s.resolve},
			{Name: bus.EndpointName(bus.ResourceSecrets, "check"), Subject: bus.SecretsCheck, Handler: s.check},
			{Name: bus.EndpointName(bus.ResourceSecrets, "rekey"), Subject: RekeySubject, Handler: s.rekey},
		},
	})
	if err != nil {
		metadata.Stop()
		return nil, err
	}
	stores := make([]string, len(o.Stores))
	for i, c := range o.Stores {
		stores[i] = c.String()
	}
	o.Logger.Info().Str("service", ServiceName).Str("key_id", o.Keyring.Current()).Strs("stores", stores).Msg("secrets service started")
	return svc, nil
}
