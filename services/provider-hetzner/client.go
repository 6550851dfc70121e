package hetzner

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// client is the provider.Client of one account. It holds no secret: every
// call resolves the token and builds its own hcloud client (see open).
type client struct {
	set      *settings
	labels   labels
	location string
	// servers and actions batch the account's concurrent gets and action
	// polls (nil when batching is off: options.batchWindow 0).
	servers *provider.Batcher[serverRef, *hcloud.Server]
	actions *provider.Batcher[int64, *hcloud.Action]
	// budget is the project's rate-limit state as the last reply said.
	budget lastRateLimit
}

// lastRateLimit is the last rate-limit state a reply of the account
// reported; safe for concurrent use.
type lastRateLimit struct {
	mu sync.Mutex
	rl api.RateLimit
	ok bool
}

func (l *lastRateLimit) set(rl api.RateLimit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rl, l.ok = rl, true
}

func (l *lastRateLimit) get() (api.RateLimit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rl, l.ok
}

// Batch windows under a spent budget (see client.batchWindow).
const (
	// batchShare is how many lookups a batch should gather when requests
	// are scarce.
	batchShare = 25
	// maxBatchWindow caps a batch's wait.
	maxBatchWindow = 10 * time.Second
)

// batchWindow is how long a batch opened now waits for more lookups: the
// configured window (WithBatchWindow) while the project's budget is
// plentiful; once the last reply said less than half of it remains, long
// enough for batchShare requests to refill (at most maxBatchWindow). A
// budget-bound fleet's time is its request count over the refill rate,
// so a look then waits for its batch rather than spend a request alone:
// at Hetzner's 1 per second, creates come one a second and a 200 ms
// window would share nothing.
func (c *client) batchWindow() time.Duration {
	rl, ok := c.budget.get()
	if !ok || rl.Remaining*2 >= rl.Limit || rl.RefillPerSecond <= 0 {
		return c.set.batchWindow
	}
	scarce := time.Duration(batchShare / rl.RefillPerSecond * float64(time.Second))
	return min(max(c.set.batchWindow, scarce), maxBatchWindow)
}

// serverRef is a server a get asks for: its id and the idempotency key it
// must carry.
type serverRef struct {
	id  int64
	key string
}

// accountConfig is the decoded account config (the token stays a reference).
type accountConfig struct {
	Location string `json:"location"`
}

// newClient builds the client of an account whose config Serve validated.
// Errors: INVALID_CONFIG for unusable options or config.
func newClient(s *settings, acct api.ProviderAccount) (*client, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	var cfg accountConfig
	if err := provider.DecodeConfig(acct.Config, &cfg); err != nil {
		return nil, err
	}
	if cfg.Location == "" {
		cfg.Location = DefaultLocation
	}
	c := &client{set: s, labels: newLabels(s.labelPrefix), location: cfg.Location}
	if s.batchWindow > 0 {
		c.servers = &provider.Batcher[serverRef, *hcloud.Server]{Window: c.batchWindow, Size: listPageSize, Fetch: c.fetchServers}
		c.actions = &provider.Batcher[int64, *hcloud.Action]{Window: c.batchWindow, Size: maxActionIDs, Fetch: c.fetchActions}
	}
	return c, nil
}

// Get returns the server with id, or nil, nil when it does not exist.
//
// A get for an idempotency key (call.IdempotencyKey, as the reconciler
// sends it) joins the account's batch of concurrent gets (see provider.Batcher
// and fetchServers): one GET /servers?label_selector=…,<prefix>/idempotency-key
// in (…) answers up to 50 of them. A server the list leaves out is asked
// for alone (GET /servers/{id}): a list may lag the truth, so only the
// server's own 404 says it is absent. A get without a key, or with
// batching off, is GET /servers/{id}, one request.
//
// Errors: INVALID_INPUT (id not a server id), RATE_LIMITED,
// PROVIDER_ERROR, UNAVAILABLE.
func (c *client) Get(ctx context.Context, call *provider.Call, id string) (m *api.ExternalMachine, err error) {
	if c.servers != nil && call.IdempotencyKey != "" {
		sid, err := parseServerID(id)
		if err != nil {
			return nil, err
		}
		srv, found, err := c.servers.Lookup(ctx, call, serverRef{id: sid, key: call.IdempotencyKey})
		if err != nil || found {
			if err == nil {
				m = c.toMachine(srv, call.IdempotencyKey)
			}
			call.CallLog(err).Str("op", provider.VerbGet).Str("server_id", id).Bool("batched", true).Msg("hetzner-cloud call")
			return m, err
		}
	}
	s, sid, err := c.openServer(ctx, call, provider.VerbGet, id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err = s.done(ctx, err); api.IsCode(err, api.CodeNotFound) {
			m, err = nil, nil // a 404 without a JSON body: absent all the same
		}
	}()
	srv, _, err := s.api.Server.GetByID(ctx, sid)
	if err != nil || srv == nil {
		return nil, err
	}
	return c.toMachine(srv, call.IdempotencyKey), nil
}

// Delete deletes the server (DELETE /servers/{id}, one request) and
// returns once the API accepted it; the server shows "deleting" until the
// action ends. Errors: INVALID_INPUT, NOT_FOUND (absent), RATE_LIMITED,
// PROVIDER_ERROR, UNAVAILABLE.
func (c *client) Delete(ctx context.Context, call *provider.Call, id string) (err error) {
	s, sid, err := c.openServer(ctx, call, provider.VerbDelete, id)
	if err != nil {
		return err
	}
	defer func() { err = s.done(ctx, err) }()
	_, _, err = s.api.Server.DeleteWithResult(ctx, &hcloud.Server{ID: sid})
	return err
}

// DeleteByKey deletes every server carrying the idempotency key (GET
// /servers?label_selector=<prefix>/managed=true,<prefix>/idempotency-key=<v>,
// as Create looks the key up, then DELETE /servers/{id} for each one not
// already deleting): a create that may have committed a POST whose reply
// was lost leaves at most such a server, labelled from the start, so the
// selector finds finished and starting servers alike. It returns once the
// deletes are accepted; servers already deleting count as requested.
// Errors: NOT_FOUND when no server carries the key, RATE_LIMITED,
// PROVIDER_ERROR, UNAVAILABLE.
func (c *client) DeleteByKey(ctx context.Context, call *provider.Call, key string) (err error) {
	s, err := c.open(ctx, call, provider.VerbDelete)
	if err != nil {
		return err
	}
	defer func() { err = s.done(ctx, err) }()
	found, err := s.api.Server.AllWithOpts(ctx, hcloud.ServerListOpts{
		ListOpts: hcloud.ListOpts{LabelSelector: c.labels.keySelector(key)},
		Sort:     []string{"id:asc"},
	})
	if err != nil {
		return err
	}
	if len(found) == 0 {
		ce := api.NotFound("server", key)
		ce.Details.Reason = "no server carries the idempotency key"
		return ce
	}
	for _, srv := range found {
		if srv.Status == hcloud.ServerStatusDeleting {
			continue
		}
		s.serverID = strconv.FormatInt(srv.ID, 10)
		if _, _, err := s.api.Server.DeleteWithResult(ctx, srv); err != nil && !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
			return err
		}
	}
	return nil
}

// fetchServers answers a batch of gets with one request: GET
// /servers?label_selector=<prefix>/managed=true,<prefix>/idempotency-key
// in (<the keys' label values>)&per_page=50 (a batch holds at most 50).
// A server answers a get when it has the get's id and carries its key.
func (c *client) fetchServers(ctx context.Context, call *provider.Call, refs []serverRef) (out map[serverRef]*hcloud.Server, err error) {
	s, err := c.open(ctx, call, provider.VerbGet)
	if err != nil {
		return nil, err
	}
	s.batched = len(refs)
	defer func() { err = s.done(ctx, err) }()
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		keys = append(keys, r.key)
	}
	servers, _, err := s.api.Server.List(ctx, hcloud.ServerListOpts{
		ListOpts: hcloud.ListOpts{LabelSelector: c.labels.keysSelector(keys), PerPage: listPageSize},
		Sort:     []string{"id:asc"},
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*hcloud.Server, len(servers))
	for _, srv := range servers {
		byID[srv.ID] = srv
	}
	out = make(map[serverRef]*hcloud.Server, len(refs))
	for _, r := range refs {
		if srv := byID[r.id]; srv != nil && c.labels.hasKey(srv.Labels, r.key) {
			out[r] = srv
		}
	}
	return out, nil
}

// maxActionIDs is how many action ids one GET /actions asks for: 25, as
// hcloud-go's action waiter, since the API documents no maximum and may
// leave extra ids out.
const maxActionIDs = 25

// opActions is the operation a batched action poll reports (CallCounter,
// log lines): it serves the waits of power and reinstall calls alike.
const opActions = "actions"

// fetchActions answers a batch of action polls with one request: GET
// /actions?id=…&id=… (at most maxActionIDs ids).
func (c *client) fetchActions(ctx context.Context, call *provider.Call, ids []int64) (out map[int64]*hcloud.Action, err error) {
	s, err := c.open(ctx, call, opActions)
	if err != nil {
		return nil, err
	}
	s.batched = len(ids)
	defer func() { err = s.done(ctx, err) }()
	got, _, err := s.api.Action.List(ctx, hcloud.ActionListOpts{ID: ids})
	if err != nil {
		return nil, err
	}
	out = make(map[int64]*hcloud.Action, len(got))
	for _, a := range got {
		out[a.ID] = a
	}
	return out, nil
}
