package hetzner

import (
	"context"
	"strconv"

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
	return &client{set: s, labels: newLabels(s.labelPrefix), location: cfg.Location}, nil
}

// Get returns the server with id (GET /servers/{id}, one request), or nil,
// nil when it does not exist. Errors: INVALID_INPUT (id not a server id),
// RATE_LIMITED, PROVIDER_ERROR, UNAVAILABLE.
func (c *client) Get(ctx context.Context, call *provider.Call, id string) (m *api.ExternalMachine, err error) {
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
