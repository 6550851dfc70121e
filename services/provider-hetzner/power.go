package hetzner

import (
	"context"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// powerEndpoints maps every supported power action to the server action
// endpoint (POST /servers/{id}/actions/<endpoint>) that does it. nmi is
// absent: Hetzner Cloud cannot send one.
var powerEndpoints = map[api.PowerAction]string{
	api.ActionOn:              "poweron",
	api.ActionOff:             "poweroff",
	api.ActionGracefulOff:     "shutdown",
	api.ActionReset:           "reset",
	api.ActionCycle:           "reset",
	api.ActionGracefulRestart: "reboot",
}

// serverActionCall is an hcloud method starting a server action.
type serverActionCall func(*hcloud.ServerClient, context.Context, *hcloud.Server) (*hcloud.Action, *hcloud.Response, error)

// endpointCalls are the hcloud methods of the powerEndpoints.
var endpointCalls = map[string]serverActionCall{
	"poweron":  (*hcloud.ServerClient).Poweron,
	"poweroff": (*hcloud.ServerClient).Poweroff,
	"shutdown": (*hcloud.ServerClient).Shutdown,
	"reset":    (*hcloud.ServerClient).Reset,
	"reboot":   (*hcloud.ServerClient).Reboot,
}

// Power applies action to the server through its power endpoint (see
// powerEndpoints) and waits for the action to finish (polling
// GET /actions?id=…): 1 request plus one per poll interval the action runs,
// shared with the account's other waits (see session.wait).
//
// Errors: UNSUPPORTED (nmi, or an unknown action; no request sent),
// INVALID_INPUT (id), NOT_FOUND (absent), PROVIDER_ERROR (with the action's
// error code if it failed; 423 locked while another action runs),
// RATE_LIMITED, UNAVAILABLE.
func (c *client) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) (err error) {
	endpoint, ok := powerEndpoints[action]
	if !ok {
		return api.Errorf(api.CodeUnsupported, "hetzner-cloud cannot do power action %q", action)
	}
	s, sid, err := c.openServer(ctx, call, provider.VerbPower, id)
	if err != nil {
		return err
	}
	defer func() { err = s.done(ctx, err) }()
	a, _, err := endpointCalls[endpoint](&s.api.Server, ctx, &hcloud.Server{ID: sid})
	if err != nil {
		return err
	}
	return s.wait(ctx, c, a)
}

// Reinstall rebuilds the server from image (POST /servers/{id}/actions/rebuild,
// by id when image is a number, by name otherwise), waits for the action,
// and returns the server as it then is (GET /servers/{id}).
//
// Errors: INVALID_INPUT (id), NOT_FOUND (absent, also if it vanished during
// the rebuild), PROVIDER_ERROR (422 invalid_input for an unknown image; the
// action's error code if it failed), RATE_LIMITED, UNAVAILABLE.
func (c *client) Reinstall(ctx context.Context, call *provider.Call, id, image string) (m *api.ExternalMachine, err error) {
	s, sid, err := c.openServer(ctx, call, provider.VerbReinstall, id)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.done(ctx, err) }()
	res, _, err := s.api.Server.RebuildWithResult(ctx, &hcloud.Server{ID: sid}, hcloud.ServerRebuildOpts{Image: imageRef(image)})
	if err != nil {
		return nil, err
	}
	if err := s.wait(ctx, c, res.Action); err != nil {
		return nil, err
	}
	srv, _, err := s.api.Server.GetByID(ctx, sid)
	if err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, api.NotFound("server", id)
	}
	return c.toMachine(srv, call.IdempotencyKey), nil
}
