package authtest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/deploy/stacktest"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/secrets"
)

// Hetzner API tokens of the two tenants: the emulator accepts only these,
// so a call succeeds only with the token resolved from the right secret.
const (
	acmeToken   = "hcloud-acme-token-4f7a1c9e"
	globexToken = "hcloud-globex-token-8d2b6e0f"
)

// stack is the operator-mode stack of deploy/stacktest (tenants acme and
// globex, each with a compute:admin credential) with the emulator's
// servers' SSH endpoints, whose secrets service also has env://
// configured explicitly (for root, as before stores became
// configuration), so the tests show a tenant refused the platform's
// environment by the store's tenant list.
type stack struct{ *stacktest.Stack }

func startStack(t testing.TB) *stack {
	t.Helper()
	return &stack{stacktest.Start(t, stacktest.Options{Tokens: []string{acmeToken, globexToken}, SSH: true,
		SecretStores: []secrets.StoreConfig{{Scheme: api.SchemeSecret}, {Scheme: api.SchemeEnv}}})}
}

// violations collects the errors the server reports to one connection
// (permission violations, exceeded limits).
type violations struct {
	mu   sync.Mutex
	seen []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	v.seen = append(v.seen, err.Error())
	v.mu.Unlock()
}

// wait fails t unless the server reports an error containing want
// (e.g. `Publish to "compute.v1.b.secrets.list"`) within 30 s.
func (v *violations) wait(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v.mu.Lock()
		for _, s := range v.seen {
			if strings.Contains(s, want) {
				v.mu.Unlock()
				return
			}
		}
		v.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no permission violation %s reported", want)
		}
	}
}

// client is a connection as one user, recording every reply body and error
// text it receives.
type client struct {
	t       testing.TB
	tenant  string
	nc      *nats.Conn
	denied  *violations
	mu      sync.Mutex
	replies []string
}

// connect connects with the credentials file creds (a tenant's or a
// service user's) as tenant (its subjects' tenant token) with inbox prefix
// inbox, the way the compute CLI does for a tenant (_INBOX_<tenant>).
func (s *stack) connect(t testing.TB, tenant, creds, inbox string) *client {
	t.Helper()
	c, err := s.dial(t, tenant, creds, inbox)
	if err != nil {
		t.Fatalf("connect as %s: %v", tenant, err)
	}
	return c
}

// dial is connect returning the error of a refused connection.
func (s *stack) dial(t testing.TB, tenant, creds, inbox string) (*client, error) {
	t.Helper()
	c := &client{t: t, tenant: tenant, denied: &violations{}}
	var err error
	c.nc, err = nats.Connect(s.URL, nats.Name(tenant), nats.UserCredentials(creds), nats.NoReconnect(),
		nats.CustomInboxPrefix(inbox), nats.ErrorHandler(c.denied.handler), nats.PermissionErrOnSubscribe(true))
	if err != nil {
		return nil, err
	}
	t.Cleanup(c.nc.Close)
	return c, nil
}

// tenantClient connects with tenant's credential of scope compute:admin
// and the tenant's inbox prefix.
func (s *stack) tenantClient(t testing.TB, tenant string) *client {
	return s.connect(t, tenant, s.Creds[tenant], "_INBOX_"+tenant)
}

// request sends in on subject (with a 10 s deadline, or timeout when
// shorter) and decodes the reply into out (may be nil).
func (c *client) request(subject string, in, out any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var raw json.RawMessage
	err := bus.Call(ctx, c.nc, subject, in, &raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.replies = append(c.replies, err.Error())
		return err
	}
	c.replies = append(c.replies, string(raw))
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// call sends a command of the client's tenant.
func (c *client) call(resource, verb string, in, out any) error {
	return c.request(bus.Command(c.tenant, resource, verb), in, out, 10*time.Second)
}

// must sends a command that must succeed.
func (c *client) must(resource, verb string, in, out any) {
	c.t.Helper()
	if err := c.call(resource, verb, in, out); err != nil {
		c.t.Fatalf("%s %s.%s: %v", c.tenant, resource, verb, err)
	}
}

// wantCode fails unless err is a ComputeError of code with details.path path.
func wantCode(t *testing.T, what string, err error, code api.Code, path string) {
	t.Helper()
	ce := api.AsComputeError(err)
	if ce == nil || ce.Code != code || ce.Path() != path {
		t.Fatalf("%s: %v; want %s (path %q)", what, err, code, path)
	}
}

// eventually polls f every 20 ms for up to 30 s.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// tenantWorld is what a tenant's walkthrough made.
type tenantWorld struct {
	secret   api.Secret
	account  api.Account
	pool     api.Pool
	instance api.Instance
	events   *nats.Subscription
}

// walkthrough runs the README walkthrough as c's tenant up to a running
// instance: store the token, register a hetzner-cloud account, list its
// offers, create a pool and an instance, and see the instance's running
// event on the tenant's own event subject.
func walkthrough(t *testing.T, c *client, token string) *tenantWorld {
	t.Helper()
	w := &tenantWorld{}
	c.must(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "hcloud", Value: token, IdempotencyKey: "hcloud-1"}, &w.secret)
	c.must(bus.ResourceAccounts, "create", api.AccountCreateRequest{Provider: hetzner.ProviderID, Name: "prod",
		Config: map[string]any{"token": w.secret.Ref}}, &w.account)
	var offers api.List[api.Offer]
	c.must(bus.ResourceAccounts, "offers", api.AccountOffersRequest{ID: w.account.ID, Query: api.OfferQuery{MinVcpu: 2}}, &offers)
	if len(offers.Items) == 0 {
		t.Fatalf("%s: no offers", c.tenant)
	}
	c.must(bus.ResourcePools, "create", api.PoolCreateRequest{Name: "web", Class: api.PoolClassProvider, Agent: api.PoolAgentNone,
		ProviderAccountID: w.account.ID, Flavors: []api.Flavor{{Name: "small", OfferID: "cx23", Image: "ubuntu-24.04"}}}, &w.pool)
	var err error
	if w.events, err = c.nc.SubscribeSync(bus.EventsOf(c.tenant)); err != nil {
		t.Fatal(err)
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.must(bus.ResourceInstances, "create", api.InstanceCreateRequest{PoolID: w.pool.ID, Flavor: "small", Name: c.tenant + "-web-1", IdempotencyKey: "web-1"}, &w.instance)
	eventually(t, c.tenant+" instance running", func() bool {
		c.must(bus.ResourceInstances, "get", api.IDRequest{ID: w.instance.ID}, &w.instance)
		return w.instance.Status.Phase == api.PhaseRunning
	})
	want := bus.Event(c.tenant, bus.ResourceInstances, w.instance.ID, "running")
	for {
		msg, err := w.events.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("%s: no running event on its own event subject: %v", c.tenant, err)
		}
		if msg.Subject == want {
			break
		}
	}
	return w
}

// finish deletes the tenant's instance and waits until it is gone.
func finish(t *testing.T, c *client, w *tenantWorld) {
	t.Helper()
	c.must(bus.ResourceInstances, "delete", api.IDRequest{ID: w.instance.ID}, nil)
	eventually(t, c.tenant+" instance deleted", func() bool {
		return api.IsCode(c.call(bus.ResourceInstances, "get", api.IDRequest{ID: w.instance.ID}, nil), api.CodeNotFound)
	})
}
