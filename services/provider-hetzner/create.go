package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Create makes the server of spec for call.IdempotencyKey, idempotently,
// and returns it as soon as POST /servers is accepted (state pending); it
// does not wait for the create action, unless the pool has a network with
// an ipRange: then it returns once the server is attached to it (step 4).
//
//  1. GET /servers?label_selector=<prefix>/managed=true,<prefix>/idempotency-key=<v>:
//     a server made for the key earlier is returned, with no POST.
//  2. POST /servers with the hostname-safe name (ServerName), the offer as
//     server type, the image, the first of the pool's locations (else the
//     spec's region, else the account's location), user data, SSH keys,
//     the two labels, and the pool's network (networkOpts: networks,
//     firewalls, public_net) and spread placement group (pickGroup). On
//     412 resource_unavailable the next location is tried with the same
//     request (see post); the machine's region is where it landed, and its
//     PlacementNote says why when that is not the first location.
//  3. If the name is taken (409 uniqueness_error), GET /servers?name=…:
//     a server carrying the same key (a concurrent create of the same key
//     won) is returned; any other is never adopted.
//  4. For the pool's networks with an ipRange (left out of the POST; see
//     network.go), attachRanged: once the server is unlocked, POST
//     /servers/{id}/actions/attach_to_network {network, ip_range} for each
//     it is not in yet, the action waited for; the create answers only
//     then, so the machine is recorded (and can converge) attached. A
//     server found in step 1 goes through this step too, so a retry
//     finishes what a crashed or failed attempt left.
//
// So a create costs 2 requests (3 when it races), plus one per network or
// firewall named by name, one per location without capacity, and, with
// spread placement, a GET /placement_groups (and a POST when a new group
// is needed); with an ipRange, also a GET /servers/{id} per poll interval
// until the create actions end, and per attach one POST, the polls of its
// action and a GET /servers/{id}. SSH keys must be ids of
// SSH keys stored in the Hetzner project.
//
// Errors: INVALID_INPUT (machine.sshKeys[i] not an id; machine.poolId
// missing with spread placement; a network or firewall name naming
// nothing any more), INVALID_STATE (the server's address in a network is
// outside its ipRange), PROVIDER_ERROR (412 resource_unavailable when no
// location has capacity, retryable; 422 from the network part or an
// attach; an attach action's failure)
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
	if spec.Placement != nil && spec.Placement.Spread && spec.PoolID == "" {
		return nil, api.InvalidInput("machine.poolId", "spread placement needs the machine's pool id (groups are kept per pool)")
	}
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
			srv, err := c.foundAttached(ctx, s, found[0], spec.Network)
			if err != nil {
				return nil, err
			}
			return c.placed(c.toMachine(srv, call.IdempotencyKey), spec, nil), nil
		}
	}
	ranged, err := networkOpts(ctx, s, spec.Network, &opts)
	if err != nil {
		return nil, err
	}
	srv, skipped, err := c.post(ctx, s, spec, opts, call.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if srv, err = c.attachRanged(ctx, s, srv, ranged); err != nil {
		return nil, err
	}
	return c.placed(c.toMachine(srv, call.IdempotencyKey), spec, skipped), nil
}

// foundAttached is srv, a server an earlier attempt of the key made, once
// attached to the pool's networks with an ipRange (attachRanged; nothing
// to do, and no request, without one).
func (c *client) foundAttached(ctx context.Context, s *session, srv *hcloud.Server, n *api.PoolNetwork) (*hcloud.Server, error) {
	if !hasRanges(n) {
		return srv, nil
	}
	ranged, err := privateNets(ctx, s, n, nil)
	if err != nil {
		return nil, err
	}
	return c.attachRanged(ctx, s, srv, ranged)
}

// post sends POST /servers in the spec's locations in turn (see
// locationsOf): a 412 resource_unavailable (no capacity there) made no
// server, so the same request, labels and key go to the next location;
// the last location's refusal is returned. With spread placement each
// POST carries the pool's group with room in that location (pickGroup);
// a group the API calls full (422 placement_group_member_limit_reached,
// another replica filled it) or gone is replaced by another pick, at most
// maxGroupPicks times. A taken name is resolved by adoptWinner. It
// returns the server and the locations skipped (each with the API's
// message).
func (c *client) post(ctx context.Context, s *session, spec api.MachineSpec, opts hcloud.ServerCreateOpts,
	key string) (*hcloud.Server, []string, error) {
	locations := c.locationsOf(spec)
	spread := spec.Placement != nil && spec.Placement.Spread
	var skipped []string
	var full []int64
	for i := 0; ; {
		opts.Location = &hcloud.Location{Name: locations[i]}
		release := func(int64) {}
		if spread {
			g, rel, err := c.pickGroup(ctx, s, spec.PoolID, locations[i], full)
			if err != nil {
				return nil, nil, err
			}
			opts.PlacementGroup, release = g, rel
		}
		res, _, err := s.api.Server.Create(ctx, opts)
		var made int64
		if err == nil {
			made = res.Server.ID
		}
		release(made)
		switch {
		case err == nil:
			s.serverID = strconv.FormatInt(res.Server.ID, 10)
			return res.Server, skipped, nil
		case hcloud.IsError(err, hcloud.ErrorCodeUniquenessError):
			srv, err := c.adoptWinner(ctx, s, opts.Name, key)
			return srv, skipped, err
		case spread && len(full) < maxGroupPicks && (hcloud.IsError(err, errGroupFull) || groupGone(err)):
			full = append(full, opts.PlacementGroup.ID)
		case hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable) && i+1 < len(locations):
			skipped = append(skipped, fmt.Sprintf("%s (%s)", locations[i], apiMessage(err)))
			s.call.Log.Info().Str("location", locations[i]).Str("next", locations[i+1]).Msg("no capacity: trying the next location")
			i++
		default:
			return nil, nil, err
		}
	}
}

// locationsOf are the locations a create tries, in order: the pool's
// placement.locations, else the spec's region, else the account's.
func (c *client) locationsOf(spec api.MachineSpec) []string {
	switch {
	case spec.Placement != nil && len(spec.Placement.Locations) > 0:
		return spec.Placement.Locations
	case spec.Region != "":
		return []string{spec.Region}
	}
	return []string{c.location}
}

// placed notes on m why it is not in the first of the pool's locations
// (ExternalMachine.PlacementNote): the locations skipped by this create,
// or, for a server an earlier attempt made, that one did.
func (c *client) placed(m *api.ExternalMachine, spec api.MachineSpec, skipped []string) *api.ExternalMachine {
	if spec.Placement == nil || len(spec.Placement.Locations) < 2 || m.Region == spec.Placement.Locations[0] {
		return m
	}
	if len(skipped) > 0 {
		m.PlacementNote = fmt.Sprintf("created in %s: no capacity (412 resource_unavailable) in %s",
			m.Region, strings.Join(skipped, ", "))
	} else {
		m.PlacementNote = fmt.Sprintf("created in %s, not %s (the first of placement.locations): an earlier attempt found no capacity there",
			m.Region, spec.Placement.Locations[0])
	}
	return m
}

// apiMessage is the message of an API error.
func apiMessage(err error) string {
	var he hcloud.Error
	if errors.As(err, &he) {
		return he.Message
	}
	return err.Error()
}

// groupGone reports whether a create was refused for its placement group
// not existing (a sweep of another replica deleted it as empty).
func groupGone(err error) bool {
	var he hcloud.Error
	if !errors.As(err, &he) || he.Code != hcloud.ErrorCodeInvalidInput {
		return false
	}
	d, ok := he.Details.(hcloud.ErrorDetailsInvalidInput)
	return ok && slices.ContainsFunc(d.Fields, func(f hcloud.ErrorDetailsInvalidInputField) bool { return f.Name == "placement_group" })
}

// adoptWinner resolves a taken name: the server called name is ours only
// if it carries the key. Errors: PROVIDER_ERROR 409 uniqueness_error
// (permanent), naming the holder (api.NameHolder) when it is a managed server, or a
// holder in state deleted when no server holds the name any more (its
// delete ended between the POST and the lookup).
func (c *client) adoptWinner(ctx context.Context, s *session, name, key string) (*hcloud.Server, error) {
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
			return w, nil
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
