package hetzner

import (
	"context"
	"net/http"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Create makes the server of spec for call.IdempotencyKey, idempotently,
// and returns it as soon as POST /servers is accepted (state pending); it
// does not wait for the create action.
//
//  1. GET /servers?label_selector=<prefix>/managed=true,<prefix>/idempotency-key=<v>:
//     a server made for the key earlier is returned, with no POST.
//  2. POST /servers with the hostname-safe name (ServerName), the offer as
//     server type, the image, the spec's region or else the account's
//     location, user data, SSH keys and the two labels.
//  3. If the name is taken (409 uniqueness_error), GET /servers?name=…:
//     a server carrying the same key (a concurrent create of the same key
//     won) is returned; any other is never adopted.
//
// So a create costs 2 requests (3 when it races). SSH keys must be ids of
// SSH keys stored in the Hetzner project.
//
// Errors: INVALID_INPUT (machine.sshKeys[i] not an id), PROVIDER_ERROR
// (details.status 409, code uniqueness_error, permanent when another
// machine holds the name, with details.NameHolder when that server is managed
// (see api.NameHolder): the caller can tell a name still held by one of
// its servers being deleted, which frees it when its delete action ends;
// 0/unreachable when the API cannot be reached, also when the reply of a
// committed POST is lost: the retry finds the server by key),
// RATE_LIMITED, UNAVAILABLE.
//
// Create looks the key up first (GET /servers?label_selector=…), unless the
// caller says this is the key's first attempt. Two creates of one key that
// both POST meet on the server name, unique in a project: the loser gets
// uniqueness_error and adopts the winner, which carries its key.
func (c *client) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (m *api.ExternalMachine, err error) {
	opts := c.createOpts(call.IdempotencyKey, spec)
	s, err := c.open(ctx, call, provider.VerbCreate)
	if err != nil {
		return nil, err
	}
	defer func() { err = s.done(ctx, err) }()

	if !call.FirstAttempt { // a first attempt has nothing to find: save the GET
		found, _, err := s.api.Server.List(ctx, hcloud.ServerListOpts{
			ListOpts: hcloud.ListOpts{LabelSelector: c.labels.keySelector(call.IdempotencyKey), PerPage: 1},
			Sort:     []string{"id:asc"},
		})
		if err != nil {
			return nil, err
		}
		if len(found) > 0 {
			s.serverID = strconv.FormatInt(found[0].ID, 10)
			return c.toMachine(found[0], call.IdempotencyKey), nil
		}
	}

	res, _, err := s.api.Server.Create(ctx, opts)
	if err == nil {
		s.serverID = strconv.FormatInt(res.Server.ID, 10)
		return c.toMachine(res.Server, call.IdempotencyKey), nil
	}
	if !hcloud.IsError(err, hcloud.ErrorCodeUniquenessError) {
		return nil, err
	}
	return c.adoptWinner(ctx, s, opts.Name, call.IdempotencyKey)
}

// adoptWinner resolves a taken name: the server called name is ours only
// if it carries the key. Errors: PROVIDER_ERROR 409 uniqueness_error
// (permanent), naming the holder (api.NameHolder) when it is a managed server, or a
// holder in state deleted when no server holds the name any more (its
// delete ended between the POST and the lookup).
func (c *client) adoptWinner(ctx context.Context, s *session, name, key string) (*api.ExternalMachine, error) {
	holders, _, err := s.api.Server.List(ctx, hcloud.ServerListOpts{Name: name})
	if err != nil {
		return nil, err
	}
	if len(holders) == 0 {
		return nil, providerError(http.StatusConflict, string(hcloud.ErrorCodeUniquenessError),
			"hetzner-cloud: server name %q was taken, and is free now", name).
			WithNameHolder(api.NameHolder{State: string(api.StateDeleted)})
	}
	for _, w := range holders {
		if c.labels.hasKey(w.Labels, key) {
			s.serverID = strconv.FormatInt(w.ID, 10)
			return c.toMachine(w, key), nil
		}
	}
	for _, w := range holders {
		if c.labels.isManaged(w.Labels) {
			m := c.toMachine(w, "")
			return nil, providerError(http.StatusConflict, string(hcloud.ErrorCodeUniquenessError),
				"hetzner-cloud: server name %q is used by managed server %s (%s) of another request", name, m.ID, w.Status).
				WithNameHolder(api.NameHolder{ID: m.ID, IdempotencyKey: m.IdempotencyKey, State: string(m.State)})
		}
	}
	return nil, providerError(http.StatusConflict, string(hcloud.ErrorCodeUniquenessError),
		"hetzner-cloud: server name %q is used by a server of another request", name)
}

// createOpts is the POST /servers body of spec. SSH keys (OpenSSH public
// keys) travel in the user data as cloud-init config, so no SSH key
// resources are created in the project (and none leak when a server goes).
func (c *client) createOpts(key string, spec api.MachineSpec) hcloud.ServerCreateOpts {
	location := spec.Region
	if location == "" {
		location = c.location
	}
	return hcloud.ServerCreateOpts{
		Name:             ServerName(spec.Name),
		ServerType:       &hcloud.ServerType{Name: spec.OfferID},
		Image:            imageRef(spec.Image),
		Location:         &hcloud.Location{Name: location},
		UserData:         provider.UserDataWithSSHKeys(spec.UserData, spec.SSHKeys),
		StartAfterCreate: hcloud.Ptr(true),
		Labels:           c.labels.withUser(c.labels.forKey(key), spec.Labels),
	}
}

// imageRef names an image by id when image is a number, by name otherwise.
func imageRef(image string) *hcloud.Image {
	if id, err := strconv.ParseInt(image, 10, 64); err == nil && id > 0 {
		return &hcloud.Image{ID: id}
	}
	return &hcloud.Image{Name: image}
}
