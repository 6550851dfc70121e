package hetzner

import (
	"context"
	"maps"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Instance labels on Hetzner servers (capability labels). Hetzner's label
// rules are Kubernetes' (api.ValidateLabels), so a user label is a server
// label as it is:
//
//	instance label        server label
//	env=prod              env=prod                      (as is)
//	example.com/team=web  example.com/team=web          (as is)
//	(system)              <prefix>/managed=true         (kept by every write)
//	(system)              <prefix>/idempotency-key=<v>  (kept by every write)
//	(emulator only)       emulator-ssh-port=<port>      (kept by every write)
//
// A system label is any label under the label prefix (WithLabelPrefix,
// DefaultLabelPrefix = api.SystemLabelPrefix, which api.ValidateLabels
// refuses in user labels) or an api.ReservedLabelKeys key: it is never
// reported as a user label and never replaced by one.

// withUser is the server labels system (forKey's) and the user labels
// beside them: a user label can never replace a system one.
func (l labels) withUser(system, user map[string]string) map[string]string {
	out := maps.Clone(system)
	for k, v := range user {
		if !api.IsSystemLabel(l.prefix, k) {
			out[k] = v
		}
	}
	return out
}

// user are the user labels among server labels: all but the system
// ones (nil when there are none).
func (l labels) user(serverLabels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range serverLabels {
		if api.IsSystemLabel(l.prefix, k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// system are the system labels among server labels.
func (l labels) system(serverLabels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range serverLabels {
		if api.IsSystemLabel(l.prefix, k) {
			out[k] = v
		}
	}
	return out
}

// Relabel replaces the server's user labels: GET /servers/{id}, then
// PUT /servers/{id} {labels} with its system labels as they are and
// userLabels beside them (2 requests; labels are replaced whole by the
// API). A server not carrying call.IdempotencyKey (when set) is not the
// caller's: NOT_FOUND, nothing written.
//
// Errors: INVALID_INPUT (id), NOT_FOUND (absent), PROVIDER_ERROR (422
// invalid_input for labels the API refuses), RATE_LIMITED, UNAVAILABLE.
func (c *client) Relabel(ctx context.Context, call *provider.Call, id string,
	userLabels map[string]string) (m *api.ExternalMachine, err error) {
	s, sid, err := c.openServer(ctx, call, provider.VerbRelabel, id)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.done(ctx, err) }()
	srv, _, err := s.api.Server.GetByID(ctx, sid)
	if err != nil {
		return nil, err
	}
	if srv == nil || call.IdempotencyKey != "" && !c.labels.hasKey(srv.Labels, call.IdempotencyKey) {
		return nil, api.NotFound("server", id)
	}
	updated, _, err := s.api.Server.Update(ctx, srv, hcloud.ServerUpdateOpts{
		Labels: c.labels.withUser(c.labels.system(srv.Labels), userLabels)})
	if err != nil {
		return nil, err
	}
	return c.toMachine(updated, call.IdempotencyKey), nil
}
