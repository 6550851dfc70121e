package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	hetzner "better-compute.io/compute/services/provider-hetzner"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// Emulator settings of the hetzner-cloud fake.
const (
	// hetznerActionDuration is how long every emulated action runs, and
	// hetznerPoll how often the provider polls it.
	hetznerActionDuration = 100 * time.Millisecond
	hetznerPoll           = 25 * time.Millisecond
	// The rate budget: a tiny bucket refilled so fast it never limits,
	// until RateLimit empties it with a refill that ends at the reset
	// (the emulator refills linearly to full at the reset, so only a
	// small bucket stays empty until then).
	hetznerRateSize   = 4
	hetznerRateRefill = 1e9
)

// hetznerRoutes are the API routes (emulator call keys) of each op: for
// create, the request that makes the server.
var hetznerRoutes = map[string]string{
	provider.VerbCreate: "POST /servers",
	provider.VerbGet:    "GET /servers/{id}",
	provider.VerbList:   "GET /servers",
	provider.VerbDelete: "DELETE /servers/{id}",
	provider.VerbOffers: "GET /server_types",
}

// hetznerCommands are the action commands of each power action.
var hetznerCommands = map[api.PowerAction]string{
	api.ActionOn: "start_server", api.ActionOff: "stop_server", api.ActionGracefulOff: "shutdown_server",
	api.ActionReset: "reset_server", api.ActionCycle: "reset_server", api.ActionGracefulRestart: "reboot_server",
	api.ActionReinstall: "rebuild_server",
}

// hetznerManagedLabel marks the servers the provider manages.
const hetznerManagedLabel = hetzner.DefaultLabelPrefix + "/managed"

// hetznerBackend is the hetzner-cloud provider against the Hetzner Cloud
// API emulator, which accepts only token.
func hetznerBackend(token, addr string, log zerolog.Logger) (*backend, error) {
	fs, err := newFleetSSH(log)
	if err != nil {
		return nil, err
	}
	srv, err := emulator.Start(emulator.Options{
		Tokens: []string{token}, ActionDuration: hetznerActionDuration,
		RateLimitSize: hetznerRateSize, RateLimitRefillPerSecond: hetznerRateRefill, Logger: log, SSH: fs.fleet,
	}, addr)
	if err != nil {
		fs.fleet.Close()
		return nil, err
	}
	h := hetznerHooks{emu: srv.Emulator()}
	return &backend{
		def:      hetzner.Definition(hetzner.WithEndpoint(srv.URL()), hetzner.WithPollInterval(hetznerPoll)),
		endpoint: srv.URL(),
		// every profile but metal (Hetzner Cloud creates its machines)
		profiles: slices.DeleteFunc(slices.Clone(conformance.Profiles), func(p string) bool { return p == conformance.ProfileMetal }),
		offerID:  "cx23", image: "ubuntu-24.04",
		config:    func(ref string) map[string]any { return map[string]any{hetzner.FieldToken: ref} },
		faults:    h,
		inventory: h,
		network:   &hetznerNetwork{emu: srv.Emulator()},
		ssh:       fs,
		close:     func() { _ = srv.Close(); fs.fleet.Close() },
	}, nil
}

// hetznerHooks implement conformance.Faults and conformance.Inventory on
// the emulator's Go fault API.
type hetznerHooks struct{ emu *emulator.Emulator }

var (
	_ conformance.Faults    = hetznerHooks{}
	_ conformance.Inventory = hetznerHooks{}
)

// route is the emulator route of op (ErrNotSupported for other ops).
func route(op string) (string, error) {
	r, ok := hetznerRoutes[op]
	if !ok {
		return "", conformance.ErrNotSupported
	}
	return r, nil
}

// FailNext arms emulator.FailNext on op's route.
func (h hetznerHooks) FailNext(_ context.Context, op string, n, status int) error {
	r, err := route(op)
	if err == nil {
		code := "service_error"
		if status == 429 {
			code = "rate_limit_exceeded"
		}
		h.emu.FailNext(r, n, status, code, "injected by the conformance program")
	}
	return err
}

// DropResponseNext arms emulator.DropResponseNext on op's route.
func (h hetznerHooks) DropResponseNext(_ context.Context, op string, n int) error {
	r, err := route(op)
	if err == nil {
		h.emu.DropResponseNext(r, n)
	}
	return err
}

// HangNext arms emulator.HangNext on op's route.
func (h hetznerHooks) HangNext(_ context.Context, op string, n int) error {
	r, err := route(op)
	if err == nil {
		h.emu.HangNext(r, n)
	}
	return err
}

// SetLatency arms emulator.SetLatency on op's route.
func (h hetznerHooks) SetLatency(_ context.Context, op string, d time.Duration) error {
	r, err := route(op)
	if err == nil {
		h.emu.SetLatency(r, d)
	}
	return err
}

// FailNextAction arms emulator.FailNextAction on the action's command.
func (h hetznerHooks) FailNextAction(_ context.Context, action api.PowerAction) error {
	cmd, ok := hetznerCommands[action]
	if !ok {
		return conformance.ErrNotSupported
	}
	h.emu.FailNextAction(cmd, "action_failed", "injected by the conformance program")
	return nil
}

// RateLimit empties the bucket until resetAt (zero: fills it).
func (h hetznerHooks) RateLimit(_ context.Context, resetAt time.Time) error {
	if resetAt.IsZero() {
		h.emu.SetRateLimit(hetznerRateSize, time.Time{})
		return nil
	}
	h.emu.SetRateLimit(0, resetAt)
	return nil
}

// APICalls sums the emulator's call counters.
func (h hetznerHooks) APICalls(context.Context) (int, error) {
	n := 0
	for _, c := range h.emu.CallCounts() {
		n += c
	}
	return n, nil
}

// Machines lists the emulator's servers; managed ones carry the label.
func (h hetznerHooks) Machines(context.Context) ([]conformance.InventoryMachine, error) {
	var out []conformance.InventoryMachine
	for _, s := range h.emu.Servers() {
		out = append(out,
			conformance.InventoryMachine{ID: strconv.FormatInt(s.ID, 10), Name: s.Name, Managed: s.Labels[hetznerManagedLabel] == "true"})
	}
	return out, nil
}

// Seed adds running servers, labelled managed or made "in the console".
func (h hetznerHooks) Seed(_ context.Context, n int, managed bool, namePrefix string) ([]string, error) {
	labels := map[string]string{"origin": "console"}
	if managed {
		labels = map[string]string{hetznerManagedLabel: "true"}
	}
	var ids []string
	for _, id := range h.emu.SeedServers(n, namePrefix, labels) {
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	return ids, nil
}

// Remove deletes servers out of band.
func (h hetznerHooks) Remove(_ context.Context, ids []string) error {
	for _, id := range ids {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			h.emu.DeleteServerOutOfBand(n)
		}
	}
	return nil
}

// hetznerNetwork implements conformance.Network on the emulator: one
// network (10.0.0.0/16, subnet 10.0.1.0/24 in eu-central) and one
// firewall, made on first use; fsn1 and nbg1 as locations.
type hetznerNetwork struct {
	emu  *emulator.Emulator
	once sync.Once
	pool api.PoolNetwork
}

var _ conformance.Network = (*hetznerNetwork)(nil)

// Pool makes the network and firewall once and names them by name.
func (h *hetznerNetwork) Pool(context.Context) (*api.PoolNetwork, error) {
	h.once.Do(func() {
		h.emu.AddNetwork("conformance-net", "10.0.0.0/16", "10.0.1.0/24@eu-central")
		h.emu.AddFirewall("conformance-fw")
		off := false
		h.pool = api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "conformance-net"}},
			Firewalls: []string{"conformance-fw"}, PublicIPv4: &off}
	})
	p := h.pool
	return &p, nil
}

// Machine reads the server's network part from the emulator's state.
func (h *hetznerNetwork) Machine(_ context.Context, id string) (conformance.NetworkMachine, error) {
	for _, s := range h.emu.Servers() {
		if strconv.FormatInt(s.ID, 10) != id {
			continue
		}
		m := conformance.NetworkMachine{PublicIPv4: s.PublicIPv4, Location: s.Location}
		for _, ip := range s.PrivateIPs {
			m.PrivateIPs = append(m.PrivateIPs, ip)
		}
		for _, f := range s.Firewalls {
			m.Firewalls = append(m.Firewalls, strconv.FormatInt(f, 10))
		}
		if s.PlacementGroup != 0 {
			m.PlacementGroup = strconv.FormatInt(s.PlacementGroup, 10)
		}
		return m, nil
	}
	return conformance.NetworkMachine{}, fmt.Errorf("the emulator has no server %s", id)
}

// Locations are fsn1 and nbg1 (both sell the subject's cx23).
func (h *hetznerNetwork) Locations(context.Context) ([]string, error) {
	return []string{"fsn1", "nbg1"}, nil
}

// SetFull is emulator.SetLocationFull.
func (h *hetznerNetwork) SetFull(_ context.Context, location string, full bool) error {
	h.emu.SetLocationFull(location, full)
	return nil
}
