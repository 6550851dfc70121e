package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// DefaultTimeout bounds one request when Options.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// Options says how Connect reaches NATS and as which tenant it acts.
type Options struct {
	// URLs of the NATS servers (default nats://127.0.0.1:4222); an entry may
	// itself be a comma-separated list.
	URLs []string
	// Tenant is the tenant id every verb acts for (required).
	Tenant string
	// User and Password, or Token, or CredsFile (a .creds JWT file), or
	// NkeyFile (an nkey seed file): at most one way is used, in the order
	// CredsFile, NkeyFile, Token, User.
	User, Password, Token, CredsFile, NkeyFile string
	// CAFile pins the CA of the server's TLS certificate; CertFile and
	// KeyFile present a client certificate.
	CAFile, CertFile, KeyFile string
	// InboxPrefix is the prefix of reply subjects (default "_INBOX_<tenant>",
	// the only inbox a tenant user of deploy/nats.conf may subscribe to).
	InboxPrefix string
	// Name is the connection name the server shows (default "compute-client").
	Name string
	// Timeout bounds each request (default DefaultTimeout); a context with
	// an earlier deadline ends it sooner.
	Timeout time.Duration
}

// Client acts as one tenant over one NATS connection. Its resource clients
// (Secrets, Accounts, Pools, Instances, Providers) are ready to use; a
// Client is safe for concurrent use.
type Client struct {
	nc      *nats.Conn
	own     bool
	tenant  string
	timeout time.Duration

	// Secrets stores credentials and hands out secret references.
	Secrets SecretClient
	// Accounts registers provider accounts and lists their offers.
	Accounts AccountClient
	// Pools groups instances on an account.
	Pools PoolClient
	// Instances creates, changes, waits for and watches machines.
	Instances InstanceClient
	// Providers describes the providers accounts can use.
	Providers ProviderClient
}

// Connect dials NATS with o (failing fast when no server answers) and
// returns a Client for o.Tenant that owns the connection (Close closes it).
// Errors: INVALID_INPUT (path tenant) for a malformed tenant id, UNAVAILABLE
// when no server answers, and a plain error for an unreadable nkey seed or
// creds file or a malformed option.
func Connect(o Options) (*Client, error) {
	if err := checkTenant(o.Tenant); err != nil {
		return nil, err
	}
	co := bus.ConnectOptions{
		URL: strings.Join(o.URLs, ","), Name: o.Name,
		User: o.User, Password: o.Password, Token: o.Token, CredsFile: o.CredsFile, NkeyFile: o.NkeyFile,
		CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile,
		InboxPrefix: o.InboxPrefix, FailFast: true,
	}
	if co.Name == "" {
		co.Name = "compute-client"
	}
	if co.InboxPrefix == "" {
		co.InboxPrefix = TenantInbox(o.Tenant)
	}
	nc, err := bus.Connect(co)
	if errors.Is(err, nats.ErrNoServers) {
		return nil, api.Errorf(api.CodeUnavailable, "no NATS server answers at %s: %v", displayURL(co.URL), err)
	}
	if err != nil {
		return nil, err
	}
	c := New(nc, o.Tenant, o.Timeout)
	c.own = true
	if err := nc.FlushTimeout(c.timeout); err != nil {
		nc.Close()
		return nil, api.Errorf(api.CodeUnavailable, "no NATS server answers at %s: %v", displayURL(co.URL), err)
	}
	return c, nil
}

// New returns a Client for tenant on an existing connection nc, which the
// caller keeps (Close does not close it). Replies must reach nc's inbox, so
// nc's inbox prefix must be one the tenant's NATS user may subscribe to
// (TenantInbox(tenant) with deploy/nats.conf). timeout bounds each request
// (zero: DefaultTimeout). A malformed tenant fails every call with
// INVALID_INPUT (path tenant).
func New(nc *nats.Conn, tenant string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &Client{nc: nc, tenant: tenant, timeout: timeout}
	c.Secrets = SecretClient{c}
	c.Accounts = AccountClient{c}
	c.Pools = PoolClient{c}
	c.Instances = InstanceClient{c}
	c.Providers = ProviderClient{c}
	return c
}

// TenantInbox is the inbox prefix of tenant's replies, "_INBOX_<tenant>".
func TenantInbox(tenant string) string { return bus.InboxRoot + "_" + tenant }

// Tenant is the tenant id the client acts for.
func (c *Client) Tenant() string { return c.tenant }

// Conn is the client's NATS connection.
func (c *Client) Conn() *nats.Conn { return c.nc }

// Close closes the connection if Connect opened it.
func (c *Client) Close() {
	if c.own {
		c.nc.Close()
	}
}

// checkTenant refuses a malformed tenant id: INVALID_INPUT path tenant.
func checkTenant(tenant string) error {
	if !api.ValidTenant(tenant) {
		return api.InvalidInput("tenant",
			"tenant %q is not a tenant id: 1 to 63 lower-case letters, digits and '-', starting with a letter or digit", tenant)
	}
	return nil
}

// call sends in on compute.v1.<tenant>.<resource>.<verb> and decodes the
// reply into a T, within the client's timeout.
func call[T any](ctx context.Context, c *Client, resource, verb string, in any) (T, error) {
	var out T
	if err := checkTenant(c.tenant); err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := bus.Call(ctx, c.nc, bus.Command(c.tenant, resource, verb), in, &out)
	return out, err
}

// all pages through a list verb (page size 1000) and returns every item.
func all[T any](ctx context.Context, list func(ctx context.Context, cursor string) (api.List[T], error)) ([]T, error) {
	var items []T
	cursor := ""
	for {
		page, err := list(ctx, cursor)
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			return items, nil
		}
		cursor = page.NextCursor
	}
}

// pageSize is the page size all asks for: the largest a list verb serves.
const pageSize = 1000

// displayURL is url without user information, for messages.
func displayURL(url string) string {
	parts := strings.Split(url, ",")
	for i, p := range parts {
		if scheme, rest, ok := strings.Cut(p, "://"); ok {
			if _, host, ok := strings.Cut(rest, "@"); ok {
				parts[i] = fmt.Sprintf("%s://%s", scheme, host)
			}
		}
	}
	return strings.Join(parts, ",")
}
