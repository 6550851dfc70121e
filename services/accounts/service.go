package accounts

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// ServiceName is the micro service name (`nats micro ls`).
const ServiceName = "accounts"

// serviceVersion is the micro service version.
const serviceVersion = "0.1.0"

// DefaultDescribeTTL is how long a provider's manifest is cached when
// Options.DescribeTTL is zero.
const DefaultDescribeTTL = 30 * time.Second

// Options configures Start.
type Options struct {
	// Logger receives one line per mutation and per failed request. Config
	// values are never logged, only top-level config field names.
	Logger zerolog.Logger
	// Workers bounds the requests handled at once (default 64).
	Workers int
	// DescribeTTL is how long a provider's manifest is reused before it is
	// fetched again with describe (zero or negative: DefaultDescribeTTL).
	DescribeTTL time.Duration
	// Providers are the provider ids providers.list asks for their
	// description (empty: DefaultProviders); providers.describe answers for
	// any provider that serves.
	Providers []string
}

// service holds what every handler needs.
type service struct {
	nc        *nats.Conn
	accounts  table[api.Account]
	pools     table[api.Pool]
	instances bus.Reader[api.Instance]
	// control is the pool controller's records: a sized pool's status.
	control   bus.Reader[api.PoolControl]
	manifests *manifestCache
	// providers are the ids providers.list describes.
	providers []string
}

// Start serves the accounts and pools subjects (see the package doc) on nc
// as the micro service "accounts", with records in st. Replies and errors per
// verb are documented on the handlers; every verb answers INVALID_INPUT for a
// malformed body (details.path naming the field), ACCESS_DENIED (path
// tenantId) for a body tenantId other than the subject's, and UNAVAILABLE when
// the state store or a called service does not answer. Start fails only when
// the micro service cannot be registered.
func Start(nc *nats.Conn, st *bus.Stores, o Options) (*bus.Service, error) {
	if nc == nil || st == nil {
		return nil, errors.New("accounts: a NATS connection and the stores are required")
	}
	if o.DescribeTTL <= 0 {
		o.DescribeTTL = DefaultDescribeTTL
	}
	if len(o.Providers) == 0 {
		o.Providers = DefaultProviders
	}
	quotas, err := st.Quotas(o.Logger)
	if err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	accountList, err := bus.NewListIndex(st.AccountTable(), o.Logger)
	if err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	poolList, err := bus.NewListIndex(st.PoolTable(), o.Logger)
	if err != nil {
		accountList.Stop()
		return nil, fmt.Errorf("accounts: %w", err)
	}
	stopLists := func() { accountList.Stop(); poolList.Stop() }
	s := &service{
		nc:        nc,
		accounts:  table[api.Account]{Table: st.AccountTable(), prefix: api.PrefixAccount, list: accountList},
		pools:     table[api.Pool]{Table: st.PoolTable(), prefix: api.PrefixPool, list: poolList},
		instances: st.InstanceTable().Reader(),
		control:   st.PoolControlTable().Reader(),
		manifests: newManifestCache(nc, o.DescribeTTL, o.Providers),
		providers: o.Providers,
	}
	svc, err := bus.StartService(nc, bus.ServiceConfig{
		Name:        ServiceName,
		Version:     serviceVersion,
		Description: "provider accounts and pools",
		Endpoints:   s.endpoints(),
		Workers:     o.Workers,
		Logger:      o.Logger,
		Quotas:      quotas,
		OnStop:      stopLists,
	})
	if err != nil {
		stopLists()
		return nil, err
	}
	return svc, nil
}

func (s *service) endpoints() []bus.Endpoint {
	ep := bus.CommandEndpoint
	return []bus.Endpoint{
		ep(bus.ResourceAccounts, "create", s.createAccount),
		ep(bus.ResourceAccounts, "get", getHandler[api.Account](s.accounts)),
		ep(bus.ResourceAccounts, "list", listHandler[api.Account](s.accounts)),
		ep(bus.ResourceAccounts, "update", s.updateAccount),
		ep(bus.ResourceAccounts, "delete", deleteHandler(s.accounts, "pools", setPools, s.poolsOf)),
		ep(bus.ResourceAccounts, "offers", s.accountOffers),
		ep(bus.ResourcePools, "create", s.createPool),
		ep(bus.ResourcePools, "get", s.getPool),
		ep(bus.ResourcePools, "list", listHandler[api.Pool](s.pools)),
		ep(bus.ResourcePools, "delete", s.deletePool),
		ep(bus.ResourcePools, "update", s.updatePool),
		ep(bus.ResourcePools, "rollback", s.rollbackPool),
		ep(bus.ResourceProviders, "list", s.listProviders),
		ep(bus.ResourceProviders, "describe", s.describeProvider),
	}
}
