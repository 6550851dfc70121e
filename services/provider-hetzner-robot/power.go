package robot

import (
	"context"
	"slices"

	"github.com/syself/hrobot-go/models"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Robot reset types (GET /reset/{n} lists those a server supports).
const (
	ResetSoftware  = "sw"         // Ctrl+Alt+Del
	ResetHardware  = "hw"         // the reset button
	ResetPower     = "power"      // the power button: on, or ACPI shutdown
	ResetPowerLong = "power_long" // long press: hard off
)

// PowerResetTypes is which reset types each power action sends, in
// order: the first list whose types the server all supports is used.
// Actions absent here (graceful-off, nmi) are UNSUPPORTED: the webservice
// cannot reach the OS, and a power button press toggles, so "graceful-off"
// of a server already off would turn it on.
var PowerResetTypes = map[api.PowerAction][][]string{
	api.ActionOn:              {{ResetPower}},
	api.ActionOff:             {{ResetPowerLong}},
	api.ActionReset:           {{ResetHardware}},
	api.ActionCycle:           {{ResetPowerLong, ResetPower}, {ResetHardware}},
	api.ActionGracefulRestart: {{ResetSoftware}},
}

// Power sends the action's resets (PowerResetTypes). "on" of a server
// whose operating status is "running" sends nothing (a power press would
// shut it down). Errors: UNSUPPORTED (an action without resets, or one
// the server does not support), those of the claim check, and the
// webservice's.
func (c *client) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) error {
	plans, ok := PowerResetTypes[action]
	if !ok {
		return api.Errorf(api.CodeUnsupported, "hetzner-robot: %s is not a Robot reset (the webservice cannot reach the OS)", action)
	}
	s, err := c.newSession(ctx, call)
	if err != nil {
		return err
	}
	n, _, err := c.claimed(ctx, call, s, id)
	if err != nil {
		return err
	}
	rs, err := s.api.ResetGet(n)
	if err != nil {
		return s.classify(ctx, call, err)
	}
	if action == api.ActionOn && rs.OperatingStatus == "running" {
		return nil
	}
	for _, plan := range plans {
		if !subset(plan, rs.Type) {
			continue
		}
		for _, kind := range plan {
			if _, err := s.api.ResetSet(n, &models.ResetSetInput{Type: kind}); err != nil {
				return s.classify(ctx, call, err)
			}
		}
		return nil
	}
	return api.Errorf(api.CodeUnsupported, "hetzner-robot: server %d offers resets %v, none does %s", n, rs.Type, action)
}

func subset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Reinstall boots server id into the rescue system with the account's
// key (see the package doc); the image is installed by the bootstrap
// sequence over SSH. It returns the server, state pending (rebooting).
func (c *client) Reinstall(ctx context.Context, call *provider.Call, id, _ string) (*api.ExternalMachine, error) {
	s, err := c.newSession(ctx, call)
	if err != nil {
		return nil, err
	}
	n, srv, err := c.claimed(ctx, call, s, id)
	if err != nil {
		return nil, err
	}
	if err := c.ensureKey(ctx, call, s); err != nil {
		return nil, err
	}
	rs, err := s.api.ResetGet(n)
	if err != nil {
		return nil, s.classify(ctx, call, err)
	}
	kind := ResetHardware
	if !slices.Contains(rs.Type, kind) {
		kind = ResetSoftware
		if !slices.Contains(rs.Type, kind) {
			return nil, api.Errorf(api.CodeUnsupported, "hetzner-robot: server %d offers neither a hw nor a sw reset", n)
		}
	}
	if _, err := s.api.BootRescueDelete(n); err != nil {
		return nil, s.classify(ctx, call, err)
	}
	if _, err := s.api.BootRescueSet(n, &models.RescueSetInput{OS: "linux", AuthorizedKey: c.keyFP}); err != nil {
		return nil, s.classify(ctx, call, err)
	}
	if _, err := s.api.ResetSet(n, &models.ResetSetInput{Type: kind}); err != nil {
		return nil, s.classify(ctx, call, err)
	}
	m := machine(srv, "")
	m.State = api.StatePending
	return m, nil
}

// ensureKey stores the account's key in Robot unless it is there
// (KEY_ALREADY_EXISTS: stored before, under any name; Robot keys are
// identified by fingerprint).
func (c *client) ensureKey(ctx context.Context, call *provider.Call, s *session) error {
	_, err := s.api.KeySet(&models.KeySetInput{Name: c.keyName, Data: c.keyLine})
	if err == nil || isCode(err, models.ErrorCodeKeyAlreadyExists) {
		return nil
	}
	return s.classify(ctx, call, err)
}
