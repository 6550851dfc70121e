package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/services/console"
)

func price(p float64) *float64 { return &p }

// An instance costs while its machine exists, on or off, at its flavor's
// offer price; a month is 730 hours; unpriced and unknown offers are
// counted apart, never as free.
func TestCost(t *testing.T) {
	pools := []api.Pool{
		{ID: "pool_a", Name: "web", ProviderAccountID: "pacct_h", Flavors: []api.Flavor{{Name: "small", OfferID: "cx23"}, {Name: "big", OfferID: "cx53"}}},
		{ID: "pool_b", Name: "lab", ProviderAccountID: "pacct_p", Flavors: []api.Flavor{{Name: "vm", OfferID: "tmpl-9000"}}},
	}
	offers := map[string][]api.Offer{
		"pacct_h": {{ID: "cx23", PricePerHour: price(0.01), Currency: "EUR"}, {ID: "cx53", PricePerHour: price(0.05), Currency: "EUR"}},
		"pacct_p": {{ID: "tmpl-9000"}},
	}
	machine := func(s api.MachineState) *api.ExternalMachine { return &api.ExternalMachine{ID: "1", State: s} }
	inst := func(pool, flavor string, m *api.ExternalMachine) api.Instance {
		return api.Instance{ID: "inst_" + pool + flavor, PoolID: pool, Flavor: flavor, Status: api.InstanceStatus{Machine: m}}
	}
	r := console.Cost(pools, []api.Instance{
		inst("pool_a", "small", machine(api.StateRunning)),
		inst("pool_a", "big", machine(api.StateStopped)), // billed while off
		inst("pool_a", "small", nil),                     // no machine yet
		inst("pool_a", "small", machine(api.StateDeleted)),
		inst("pool_a", "gone", machine(api.StateRunning)), // flavor removed
		inst("pool_b", "vm", machine(api.StateRunning)),   // Proxmox: no price
	}, offers)
	require.Len(t, r.Pools, 2)
	lab, web := r.Pools[0], r.Pools[1]
	assert.Equal(t, "web", web.Name)
	assert.Equal(t, 2, web.Costing)
	assert.Equal(t, 1, web.Unknown)
	assert.InDelta(t, 0.06, web.Hourly["EUR"], 1e-12)
	assert.InDelta(t, 0.06*730, web.Monthly["EUR"], 1e-9)
	assert.Equal(t, "lab", lab.Name)
	assert.Equal(t, 0, lab.Costing)
	assert.Equal(t, 1, lab.Unpriced)
	assert.Empty(t, lab.Hourly)
	assert.Equal(t, 2, r.Total.Costing)
	assert.Equal(t, 1, r.Total.Unpriced)
	assert.Equal(t, 1, r.Total.Unknown)
	assert.Len(t, r.Total.Instances, 4)
	assert.InDelta(t, 0.06*730, r.Total.Monthly["EUR"], 1e-9)
}

// fakeTenant is a Tenant in memory.
type fakeTenant struct {
	id        string
	instances []api.Instance
	mu        sync.Mutex
	closed    bool
	emit      func(api.Event)
	// metricsCalls counts Metrics calls.
	metricsCalls int
}

func (f *fakeTenant) ID() string                                        { return f.id }
func (f *fakeTenant) Pools(context.Context) ([]api.Pool, error)         { return nil, nil }
func (f *fakeTenant) Accounts(context.Context) ([]api.Account, error)   { return nil, nil }
func (f *fakeTenant) Instances(context.Context) ([]api.Instance, error) { return f.instances, nil }
func (f *fakeTenant) Metrics(context.Context, string, api.MetricsWindow) (api.Metrics, error) {
	f.mu.Lock()
	f.metricsCalls++
	f.mu.Unlock()
	return api.Metrics{}, api.Errorf(api.CodeUnsupported, "no metrics in memory")
}
func (f *fakeTenant) Offers(context.Context, string) ([]api.Offer, error) {
	return nil, nil
}
func (f *fakeTenant) Instance(_ context.Context, id string) (*api.Instance, error) {
	for i := range f.instances {
		if f.instances[i].ID == id {
			return &f.instances[i], nil
		}
	}
	return nil, api.NotFound("instance", id)
}
func (f *fakeTenant) WatchEvents(emit func(api.Event)) (func(), error) {
	f.emit = emit
	return func() {}, nil
}
func (f *fakeTenant) Close() { f.mu.Lock(); f.closed = true; f.mu.Unlock() }
func (f *fakeTenant) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// browserless is a console over fake tenants and an HTTP client with a
// cookie jar that does not follow redirects.
type browserless struct {
	t       *testing.T
	srv     *httptest.Server
	http    *http.Client
	clock   *clock.Fake
	tenants map[string]*fakeTenant
	dialed  []console.Credentials
}

const idle = 10 * time.Minute

func newBrowserless(t *testing.T, maxSessions ...int) *browserless {
	t.Helper()
	b := &browserless{t: t, clock: clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)), tenants: map[string]*fakeTenant{}}
	dial := func(_ context.Context, c console.Credentials) (console.Tenant, error) {
		b.dialed = append(b.dialed, c)
		if c.Creds == "wrong" {
			return nil, api.Errorf(api.CodeAccessDenied, "the NATS server refused these credentials")
		}
		ft := &fakeTenant{id: c.Tenant}
		b.tenants[c.Tenant] = ft
		return ft, nil
	}
	o := console.Options{Dial: dial, IdleTimeout: idle, Clock: b.clock}
	if len(maxSessions) > 0 {
		o.MaxSessions = maxSessions[0]
	}
	s, err := console.New(o)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	b.http = newJarClient()
	return b
}

// newJarClient is an HTTP client with cookies of its own (another
// browser) that does not follow redirects.
func newJarClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// reply is a response, its body read and closed.
type reply struct {
	StatusCode int
	Header     http.Header
	cookies    []*http.Cookie
}

func (r reply) Cookies() []*http.Cookie { return r.cookies }

// do sends req, and reads and closes the response's body.
func (b *browserless) do(req *http.Request) (reply, string) {
	b.t.Helper()
	resp, err := b.http.Do(req)
	require.NoError(b.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header, cookies: resp.Cookies()}, string(body)
}

// get fetches path.
func (b *browserless) get(path string) (reply, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	require.NoError(b.t, err)
	return b.do(req)
}

// post submits form to path.
func (b *browserless) post(path string, form url.Values) (reply, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// csrf is the CSRF token of the form on path.
func (b *browserless) csrf(path string) string {
	b.t.Helper()
	_, body := b.get(path)
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no csrf field on %s:\n%s", path, body)
	return m[1]
}

func (b *browserless) signIn(tenant string) reply {
	b.t.Helper()
	resp, _ := b.post("/signin", url.Values{"csrf": {b.csrf("/signin")}, "tenant": {tenant}, "creds": {"creds-of-" + tenant}})
	return resp
}

// The session cookie is HttpOnly and SameSite=Strict and holds no
// credential; sign-out needs the session's CSRF token and closes the
// tenant's connection.
func TestSessionCookieAndSignOut(t *testing.T) {
	b := newBrowserless(t)
	resp := b.signIn("acme")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == console.SessionCookie {
			session = c
		}
	}
	require.NotNil(t, session, "no session cookie")
	assert.True(t, session.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, session.SameSite)
	assert.NotContains(t, session.Value, "creds-of-acme")
	assert.Equal(t, []console.Credentials{{Tenant: "acme", Creds: "creds-of-acme"}}, b.dialed)

	resp, body := b.get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "+
		"form-action 'self'; base-uri 'none'", resp.Header.Get("Content-Security-Policy"))

	resp, body = b.post("/signout", url.Values{"csrf": {"forged"}})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "ACCESS_DENIED")
	assert.False(t, b.tenants["acme"].isClosed(), "a forged sign-out ended the session")

	resp, _ = b.post("/signout", url.Values{"csrf": {b.csrf("/")}})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.True(t, b.tenants["acme"].isClosed(), "sign-out left the tenant's connection open")
	resp, _ = b.get("/")
	assert.Equal(t, "/signin", resp.Header.Get("Location"))
}

// The sign-in form refuses bad input naming the field, a missing CSRF
// token, and refused credentials, and never shows the creds again.
func TestSignInRefusals(t *testing.T) {
	b := newBrowserless(t)
	for _, c := range []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"bad tenant", url.Values{"tenant": {"Acme!"}}, http.StatusBadRequest, `INVALID_INPUT</code> tenant &#34;Acme!&#34; is not a tenant id`},
		{"no creds", url.Values{"tenant": {"acme"}}, http.StatusBadRequest, "INVALID_INPUT</code> creds: paste the text"},
		{"blank creds", url.Values{"tenant": {"acme"}, "creds": {" \n"}}, http.StatusBadRequest, "INVALID_INPUT</code> creds: paste the text"},
		{"too large", url.Values{"tenant": {"acme"}, "creds": {"s3cret-" + strings.Repeat("x", 16<<10)}}, http.StatusBadRequest, "INVALID_INPUT</code> creds:"},
		{"refused", url.Values{"tenant": {"acme"}, "creds": {"wrong"}}, http.StatusForbidden, "ACCESS_DENIED</code> the NATS server refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.form.Set("csrf", b.csrf("/signin"))
			resp, body := b.post("/signin", c.form)
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Contains(t, body, c.want)
			assert.NotContains(t, body, "s3cret-")
			assert.NotContains(t, body, "wrong")
		})
	}
	resp, body := b.post("/signin", url.Values{"csrf": {"forged"}, "tenant": {"acme"}})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "CSRF")
	assert.Len(t, b.dialed, 1, "only the refused credentials reached the dialer")
}

// A session idle past the timeout is over: its pages send to the sign-in
// form and its tenant's connection is closed. Live refreshes of an open
// tab are no activity.
func TestIdleSessionEnds(t *testing.T) {
	b := newBrowserless(t)
	b.signIn("acme")
	b.clock.Advance(idle - time.Second)
	resp, _ := b.get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a session active within the timeout ended")
	b.clock.Advance(idle - time.Second)
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/", nil)
	req.Header.Set("X-Console-Fragment", "1")
	resp, body := b.do(req)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a live refresh within the timeout failed")
	assert.NotContains(t, body, "<html", "a live refresh answers the main section only")
	b.clock.Advance(2 * time.Second)
	resp, _ = b.get("/")
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/signin", resp.Header.Get("Location"))
	assert.True(t, b.tenants["acme"].isClosed(), "the idle session's connection is still open")
}

// Pages validate their input and render a failure's code and message.
func TestPagesValidateInput(t *testing.T) {
	b := newBrowserless(t)
	b.signIn("acme")
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/instances/not-an-id", http.StatusBadRequest, `INVALID_INPUT</code> &#34;not-an-id&#34; is not an instance id (inst_…) <span class="path">(field id)</span>`},
		{"/instances?phase=Sleeping", http.StatusBadRequest, `(field phase)`},
		{"/instances?pool=web", http.StatusBadRequest, `(field pool)`},
		{"/instances/" + api.NewID(api.PrefixInstance), http.StatusNotFound, `NOT_FOUND</code>`},
	} {
		resp, body := b.get(c.path)
		assert.Equal(t, c.status, resp.StatusCode, c.path)
		assert.Contains(t, body, c.want, c.path)
	}
}

// The event stream sends each event of the session's tenant and ends
// with "signedout" when the session does; it needs a session.
func TestEventStream(t *testing.T) {
	b := newBrowserless(t)
	resp, _ := b.get("/events")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	b.signIn("acme")
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/events", nil)
	stream, err := b.http.Do(req)
	require.NoError(t, err)
	defer func() { _ = stream.Body.Close() }()
	require.Equal(t, "text/event-stream", stream.Header.Get("Content-Type"))
	read := func(want string) string {
		var got strings.Builder
		buf := make([]byte, 512)
		for !strings.Contains(got.String(), want) {
			n, err := stream.Body.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return got.String()
	}
	assert.Contains(t, read("retry:"), "retry: 2000")
	b.tenants["acme"].emit(api.Event{ID: "evt_0", TenantID: "globex", ResourceID: "inst_0", Type: "running"})
	b.tenants["acme"].emit(api.Event{ID: "evt_1", TenantID: "acme", ResourceID: "inst_1", Type: "running", Phase: api.PhaseRunning})
	got := read("\n\n")
	assert.Contains(t, got, `event: compute`+"\n"+`data: {"id":"evt_1"`)
	assert.NotContains(t, got, "evt_0", "another tenant's event reached the stream")
	b.post("/signout", url.Values{"csrf": {b.csrf("/")}})
	assert.Contains(t, read("signedout"), "event: signedout")
}

// A creds text is read for its user JWT and seed; anything else is
// INVALID_INPUT naming creds, without echoing it.
func TestCredsText(t *testing.T) {
	dial := console.DialNATS("nats://127.0.0.1:1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := dial(ctx, console.Credentials{Tenant: "acme", Creds: strangerCreds(t, "")})
	assert.Equal(t, api.CodeUnavailable, api.CodeOf(err), "a readable creds text gets as far as connecting: %v", err)
	_, err = dial(ctx, console.Credentials{Tenant: "acme", Creds: "SUAGARBAGE-not-creds"})
	ce := api.AsComputeError(err)
	assert.Equal(t, api.CodeInvalidInput, ce.Code)
	assert.Equal(t, "creds", ce.Path())
	assert.NotContains(t, ce.Message, "SUAGARBAGE")
}

// Signing in again ends the browser's previous session; past
// MaxSessions a sign-in is refused with UNAVAILABLE.
func TestSessionsReplacedAndBounded(t *testing.T) {
	b := newBrowserless(t, 1)
	b.signIn("acme")
	first := b.tenants["acme"]
	resp := b.signIn("acme")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.True(t, first.isClosed(), "the replaced session's connection is still open")
	assert.NotSame(t, first, b.tenants["acme"])

	b.http = newJarClient() // another browser
	resp, body := b.post("/signin", url.Values{"csrf": {b.csrf("/signin")}, "tenant": {"globex"}, "creds": {"creds-of-globex"}})
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, body, "UNAVAILABLE</code> the console holds its maximum of 1 sessions")
	assert.True(t, b.tenants["globex"].isClosed(), "the refused session's connection is still open")
}

// NATS URLs that carry credentials would give every session one shared
// identity: refused, naming --nats, without the password.
func TestCheckNATSURL(t *testing.T) {
	require.NoError(t, console.CheckNATSURL("nats://127.0.0.1:4222,tls://nats.example:4222"))
	err := console.CheckNATSURL("nats://127.0.0.1:4222,nats://admin:hunter2@nats.example:4222")
	ce := api.AsComputeError(err)
	assert.Equal(t, api.CodeInvalidConfig, ce.Code)
	assert.Equal(t, "--nats", ce.Path())
	assert.NotContains(t, ce.Message, "hunter2")
	_, err = console.DialNATS("nats://admin:hunter2@127.0.0.1:1")(context.Background(), console.Credentials{Tenant: "acme"})
	assert.Equal(t, api.CodeInvalidConfig, api.CodeOf(err))
}

// The instance page shows why there is no chart (the provider's error
// code), and a live page's refreshes reuse the chart for a minute: one
// metrics request, not one per event.
func TestInstanceChartIsReusedForAMinute(t *testing.T) {
	b := newBrowserless(t)
	b.signIn("acme")
	ft := b.tenants["acme"]
	id := api.NewID(api.PrefixInstance)
	ft.instances = []api.Instance{{ID: id, Name: "web-1", Status: api.InstanceStatus{Phase: api.PhaseRunning,
		Machine: &api.ExternalMachine{ID: "42", State: api.StateRunning}}}}
	calls := func() int { ft.mu.Lock(); defer ft.mu.Unlock(); return ft.metricsCalls }
	for range 3 {
		resp, body := b.get("/instances/" + id)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, body, `No metrics: <span class="code">UNSUPPORTED</span> no metrics in memory`)
	}
	assert.Equal(t, 1, calls(), "metrics requests for three views within a minute")
	b.clock.Advance(time.Minute)
	b.get("/instances/" + id)
	assert.Equal(t, 2, calls(), "metrics requests after a minute")
}
