package console

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"better-compute.io/compute/client"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/natsauth"
)

// DialNATS is the Dialer of a console in front of the NATS server(s) at
// servers (comma-separated URLs): one connection per session, with the
// tenant's credential (a user of the tenant's NATS account), replies on the tenant's inbox prefix (_INBOX_<tenant>, the only
// inbox deploy/nats.conf lets a tenant read); extra options (TLS) are
// added to every connection. Servers that CheckNATSURL refuses fails every
// dial with its error.
func DialNATS(servers string, extra ...nats.Option) Dialer {
	urlErr := CheckNATSURL(servers)
	return func(ctx context.Context, c Credentials) (Tenant, error) {
		if urlErr != nil {
			return nil, urlErr
		}
		opts := []nats.Option{
			nats.Name("compute-console-" + c.Tenant),
			nats.CustomInboxPrefix(client.TenantInbox(c.Tenant)),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(250 * time.Millisecond),
		}
		opts = append(opts, extra...)
		if strings.TrimSpace(c.Creds) != "" {
			auth, err := credsAuth(c.Creds)
			if err != nil {
				return nil, err
			}
			opts = append(opts, auth)
		}
		if dl, ok := ctx.Deadline(); ok {
			opts = append(opts, nats.Timeout(time.Until(dl)))
		}
		denied := make(chan struct{}, 1)
		// every page's request answers ACCESS_DENIED at once for a verb
		// the credential's scopes leave out (natsauth.Denials)
		denials := &natsauth.Denials{}
		opts = append(opts, nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			denials.Handler(nc, sub, err)
			if errors.Is(err, nats.ErrPermissionViolation) {
				select {
				case denied <- struct{}{}:
				default:
				}
			}
		}))
		nc, err := nats.Connect(servers, opts...)
		switch {
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			return nil, api.Errorf(api.CodeAccessDenied, "the NATS server refused these credentials")
		case err != nil:
			return nil, api.Errorf(api.CodeUnavailable, "no NATS server answers: %v", err)
		}
		t := natsTenant{c: client.New(nc, c.Tenant, 0).WithCaller(denials.Call)}
		if err := probe(ctx, t, denied); err != nil {
			nc.Close()
			return nil, err
		}
		return t, nil
	}
}

// probe lists one instance of the tenant (the least the console reads):
// credentials of another tenant's user connect, but nats-server refuses
// them the tenant's subjects (a permission violation, reported on denied,
// while the request waits in vain). Errors: ACCESS_DENIED then, else the
// list's.
func probe(ctx context.Context, t natsTenant, denied <-chan struct{}) error {
	done := make(chan error, 1)
	go func() {
		_, err := t.c.Instances.List(ctx, api.InstanceListRequest{ListRequest: api.ListRequest{Limit: 1}})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-denied:
		return api.Errorf(api.CodeAccessDenied, "these credentials may not act as tenant %s", t.ID())
	}
}

// CheckNATSURL refuses NATS URLs (comma-separated) that carry credentials
// (nats://user:password@host): every session would connect as that user,
// a shared identity for every tenant's data. Errors: INVALID_CONFIG
// naming --nats, without the credentials.
func CheckNATSURL(urls string) error {
	for _, raw := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return api.InvalidConfig("--nats", "--nats: a URL does not parse")
		}
		if u.User != nil {
			return api.InvalidConfig("--nats", "--nats: the console connects as each signed-in tenant, "+
				"so its NATS URLs must carry no credentials (%s)", u.Redacted())
		}
	}
	return nil
}

// credsAuth reads the user JWT and nkey seed of a .creds text. Errors:
// INVALID_INPUT naming "creds" (the text is never echoed).
func credsAuth(creds string) (nats.Option, error) {
	jwt, err := nkeys.ParseDecoratedJWT([]byte(creds))
	if err != nil || jwt == "" {
		return nil, api.InvalidInput("creds", "creds: not a NATS creds file (no user JWT)")
	}
	kp, err := nkeys.ParseDecoratedUserNKey([]byte(creds))
	if err != nil {
		return nil, api.InvalidInput("creds", "creds: not a NATS creds file (no user nkey seed)")
	}
	return nats.UserJWT(func() (string, error) { return jwt, nil }, kp.Sign), nil
}

// natsTenant is a Tenant over one NATS connection, through the client
// library.
type natsTenant struct{ c *client.Client }

func (t natsTenant) ID() string { return t.c.Tenant() }

func (t natsTenant) Pools(ctx context.Context) ([]api.Pool, error) { return t.c.Pools.All(ctx) }

func (t natsTenant) Accounts(ctx context.Context) ([]api.Account, error) {
	return t.c.Accounts.All(ctx)
}

func (t natsTenant) Instances(ctx context.Context) ([]api.Instance, error) {
	return t.c.Instances.All(ctx, api.InstanceListRequest{})
}

func (t natsTenant) Instance(ctx context.Context, id string) (*api.Instance, error) {
	inst, err := t.c.Instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &inst, nil
}

func (t natsTenant) Metrics(ctx context.Context, id string, w api.MetricsWindow) (api.Metrics, error) {
	return t.c.Instances.Metrics(ctx, api.InstanceMetricsRequest{ID: id, MetricsWindow: w})
}

func (t natsTenant) Offers(ctx context.Context, accountID string) ([]api.Offer, error) {
	return t.c.Accounts.Offers(ctx, accountID, api.OfferQuery{})
}

// WatchEvents follows the tenant's instance events (client Watch; the
// only events the system publishes), subscribed at the server on return.
func (t natsTenant) WatchEvents(f func(api.Event)) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	events, err := t.c.Instances.Watch(ctx, "")
	if err == nil {
		err = t.c.Conn().Flush()
	}
	if err != nil {
		cancel()
		return nil, api.Errorf(api.CodeUnavailable, "follow the events of tenant %s: %v", t.c.Tenant(), err)
	}
	go func() {
		for ev := range events {
			f(ev)
		}
	}()
	return cancel, nil
}

// Close closes the session's connection (client.New does not own it).
func (t natsTenant) Close() { t.c.Conn().Close() }
