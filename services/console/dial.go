package console

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// DialNATS is the Dialer of a console in front of the NATS server(s) at
// url (comma-separated): one connection per session, as the tenant's
// user, replies on the tenant's inbox prefix (_INBOX_<tenant>, the only
// inbox deploy/nats.conf lets a tenant read); extra options (TLS) are
// added to every connection.
func DialNATS(url string, extra ...nats.Option) Dialer {
	return func(ctx context.Context, c Credentials) (Tenant, error) {
		opts := []nats.Option{
			nats.Name("compute-console-" + c.Tenant),
			nats.CustomInboxPrefix(bus.InboxRoot + "_" + c.Tenant),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(250 * time.Millisecond),
		}
		opts = append(opts, extra...)
		switch {
		case strings.TrimSpace(c.Creds) != "":
			auth, err := credsAuth(c.Creds)
			if err != nil {
				return nil, err
			}
			opts = append(opts, auth)
		case c.User != "":
			opts = append(opts, nats.UserInfo(c.User, c.Password))
		}
		if dl, ok := ctx.Deadline(); ok {
			opts = append(opts, nats.Timeout(time.Until(dl)))
		}
		nc, err := nats.Connect(url, opts...)
		switch {
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			return nil, api.Errorf(api.CodeAccessDenied, "the NATS server refused these credentials")
		case err != nil:
			return nil, api.Errorf(api.CodeUnavailable, "no NATS server answers: %v", err)
		}
		return &natsTenant{id: c.Tenant, nc: nc}, nil
	}
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

// natsTenant is a Tenant over one NATS connection.
type natsTenant struct {
	id string
	nc *nats.Conn
}

func (t *natsTenant) ID() string { return t.id }

func (t *natsTenant) call(ctx context.Context, resource, verb string, in, out any) error {
	return bus.Call(ctx, t.nc, bus.Command(t.id, resource, verb), in, out)
}

// listAll pages through a list verb with req (whose Cursor it sets).
func listAll[T any](ctx context.Context, t *natsTenant, resource string, req any, cursor *string) ([]T, error) {
	var all []T
	for {
		var page api.List[T]
		if err := t.call(ctx, resource, "list", req, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all, nil
		}
		*cursor = page.NextCursor
	}
}

func (t *natsTenant) Pools(ctx context.Context) ([]api.Pool, error) {
	req := api.ListRequest{Limit: 1000}
	return listAll[api.Pool](ctx, t, bus.ResourcePools, &req, &req.Cursor)
}

func (t *natsTenant) Accounts(ctx context.Context) ([]api.Account, error) {
	req := api.ListRequest{Limit: 1000}
	return listAll[api.Account](ctx, t, bus.ResourceAccounts, &req, &req.Cursor)
}

func (t *natsTenant) Instances(ctx context.Context) ([]api.Instance, error) {
	req := api.InstanceListRequest{ListRequest: api.ListRequest{Limit: 1000}}
	return listAll[api.Instance](ctx, t, bus.ResourceInstances, &req, &req.Cursor)
}

func (t *natsTenant) Instance(ctx context.Context, id string) (*api.Instance, error) {
	var inst api.Instance
	if err := t.call(ctx, bus.ResourceInstances, "get", api.IDRequest{ID: id}, &inst); err != nil {
		return nil, err
	}
	return &inst, nil
}

func (t *natsTenant) Offers(ctx context.Context, accountID string) ([]api.Offer, error) {
	var offers api.List[api.Offer]
	if err := t.call(ctx, bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: accountID}, &offers); err != nil {
		return nil, err
	}
	return offers.Items, nil
}

func (t *natsTenant) WatchEvents(f func(api.Event)) (func(), error) {
	sub, err := t.nc.Subscribe(bus.EventsOf(t.id), func(m *nats.Msg) {
		var ev api.Event
		if json.Unmarshal(m.Data, &ev) == nil {
			f(ev)
		}
	})
	if err != nil {
		return nil, api.Errorf(api.CodeAccessDenied, "subscribe to the events of tenant %s: %v", t.id, err)
	}
	if err := t.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, api.Errorf(api.CodeUnavailable, "subscribe to the events of tenant %s: %v", t.id, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

func (t *natsTenant) Close() { t.nc.Close() }
