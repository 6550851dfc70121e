// Package memory is a small example provider ("memory") over an in-memory
// machine API. It shows the whole provider contract in one file, backs the
// reconciler's tests (with fault injection and call counters) and is what
// docs/writing-a-provider.md walks through.
package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/sshemu"
)

// ProviderID is the id the memory provider serves under.
const ProviderID = "memory"

// Cloud is the in-memory "API" behind the provider: machines by id, an
// idempotency index, injectable failures and call counters. Safe for
// concurrent use.
type Cloud struct {
	mu       sync.Mutex
	next     int
	machines map[string]*machine
	byKey    map[string]string
	failures map[string][]error
	calls    map[string]int
	log      []CallRecord
	outage   error
	hung     map[string]bool
	holds    map[string]*Hold
	// BootPolls is how many gets a new machine stays pending (default 1).
	BootPolls int
	// AsyncShutdown makes graceful-off only ask the guest to shut down: the
	// machine keeps running until SetState stops it.
	AsyncShutdown bool
	// ssh gives machines SSH endpoints (SetSSH).
	ssh *sshemu.Fleet
	// addressesPending makes Get report running machines without
	// addresses (SetAddressesPending).
	addressesPending bool
}

// SetAddressesPending makes Get report every running machine with no
// addresses and ExternalMachine.AddressesPending (pending true), as a
// Proxmox VE VM whose guest agent is not up yet, or as it is (false).
func (c *Cloud) SetAddressesPending(pending bool) {
	c.mu.Lock()
	c.addressesPending = pending
	c.mu.Unlock()
}

// SetSSH gives every machine created from now on an SSH endpoint on
// loopback from f (fleet key: the machine id) until it is deleted,
// reported as ExternalMachine.SSHEndpoint.
func (c *Cloud) SetSSH(f *sshemu.Fleet) {
	c.mu.Lock()
	c.ssh = f
	c.mu.Unlock()
}

// Hold is a call held by HoldNext.
type Hold struct {
	// Held is closed when the call arrived and is held.
	Held chan struct{}
	// Release lets the held call go on.
	Release chan struct{}
}

type machine struct {
	api.ExternalMachine
	polls int
	// diskGiB is the machine's disk (0: its offer's; see diskOf).
	diskGiB float64
}

// NewCloud returns an empty cloud.
func NewCloud() *Cloud {
	return &Cloud{machines: map[string]*machine{}, byKey: map[string]string{}, failures: map[string][]error{}, calls: map[string]int{},
		hung: map[string]bool{}, holds: map[string]*Hold{}, BootPolls: 1}
}

// FailNext makes the next calls of verb (provider.Verb*) fail with errs, in order.
func (c *Cloud) FailNext(verb string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures[verb] = append(c.failures[verb], errs...)
}

// Calls is how many calls of verb reached the cloud (failed ones included).
func (c *Cloud) Calls(verb string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[verb]
}

// Machines returns a snapshot of every machine, by id order.
func (c *Cloud) Machines() []api.ExternalMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]api.ExternalMachine, 0, len(c.machines))
	for _, m := range c.machines {
		out = append(out, m.ExternalMachine)
	}
	slices.SortFunc(out, func(a, b api.ExternalMachine) int { return compareIDs(a.ID, b.ID) })
	return out
}

// SetState changes a machine's state out of band (drift).
func (c *Cloud) SetState(id string, state api.MachineState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.machines[id]; ok {
		m.State = state
	}
}

// Remove deletes a machine out of band (drift).
func (c *Cloud) Remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.machines[id]; ok {
		delete(c.byKey, m.IdempotencyKey)
		c.forget(id)
	}
}

// forget deletes machine id and ends its SSH endpoint. Callers hold c.mu.
func (c *Cloud) forget(id string) {
	delete(c.machines, id)
	if c.ssh != nil {
		c.ssh.Stop(id)
	}
}

// ReuseID hands machine id to a new running machine made for key, as a
// cloud that reuses freed ids (Proxmox VMIDs) would after the first
// machine was deleted out of band.
func (c *Cloud) ReuseID(id, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.machines[id]; ok {
		delete(c.byKey, m.IdempotencyKey)
	}
	c.machines[id] = &machine{ExternalMachine: api.ExternalMachine{ID: id, IdempotencyKey: key, Name: "reused-" + id,
		State: api.StateRunning, OfferID: Offers[0].ID, Region: "mem1", Addresses: []string{}}}
	c.byKey[key] = id
}

// CallRecord is one call that reached the cloud: its verb, the idempotency
// key (create) or machine id (others; "" for offers and list), when, and the
// injected error it failed with (nil when it went through).
type CallRecord struct {
	Verb   string
	Target string
	At     time.Time
	Err    error
}

// Log returns every call that reached the cloud, in order.
func (c *Cloud) Log() []CallRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

func compareIDs(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x - y
}

// SetHung makes calls of verb hang (counted, never answered) until their
// context ends, like an API that accepts connections and never replies.
func (c *Cloud) SetHung(verb string, hung bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hung[verb] = hung
}

// HoldNext holds the next call of verb before it reaches the cloud, until
// the returned Hold is released (or the call's context ends), like a slow
// API: a pass caught there resumes later with what it read before.
func (c *Cloud) HoldNext(verb string) *Hold {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := &Hold{Held: make(chan struct{}), Release: make(chan struct{})}
	c.holds[verb] = h
	return h
}

// SetOutage makes every call fail with err until SetOutage(nil).
func (c *Cloud) SetOutage(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outage = err
}

// ByKey returns every machine by the idempotency key that made it.
func (c *Cloud) ByKey() map[string]api.ExternalMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]api.ExternalMachine, len(c.byKey))
	for key, id := range c.byKey {
		out[key] = c.machines[id].ExternalMachine
	}
	return out
}

// enter counts a call on target and returns the outage error or the verb's
// next injected failure, if any. Callers hold mu.
func (c *Cloud) enter(verb, target string) error {
	c.calls[verb]++
	err := c.outage
	if q := c.failures[verb]; err == nil && len(q) > 0 {
		c.failures[verb], err = q[1:], q[0]
	}
	c.log = append(c.log, CallRecord{Verb: verb, Target: target, At: time.Now(), Err: err})
	return err
}

// Offers of the memory provider: two on-demand sizes and a spot one in one
// region.
var Offers = []api.Offer{
	{ID: "small", Kind: api.KindVPS, Region: "mem1", Vcpu: 1, MemoryGiB: 1, DiskGiB: 10, Available: true,
		CapacityType: api.CapacityOnDemand},
	{ID: "large", Kind: api.KindVPS, Region: "mem1", Vcpu: 8, MemoryGiB: 32, DiskGiB: 200, Available: true,
		CapacityType: api.CapacityOnDemand},
	{ID: "small-spot", Kind: api.KindVPS, Region: "mem1", Vcpu: 1, MemoryGiB: 1, DiskGiB: 10, Available: true,
		CapacityType: api.CapacitySpot, InterruptionProbability: 0.05},
}

// Definition is the memory provider over cloud: provides vps, claims power,
// reinstall, list, delete.byKey, labels, spot, resize and metrics, and ssh when the cloud has an
// SSH fleet (SetSSH before Definition); its manifest has a required token
// (secret) that every call resolves, as a real provider would.
func Definition(cloud *Cloud) *provider.Defined {
	capabilities := []string{provider.CapabilityPower, provider.CapabilityReinstall, provider.CapabilityList, provider.CapabilityDeleteByKey,
		provider.CapabilitySpot, provider.CapabilityLabels, provider.CapabilityResize, provider.CapabilityMetrics}
	cloud.mu.Lock()
	if cloud.ssh != nil {
		capabilities = append(capabilities, provider.CapabilitySSH)
	}
	cloud.mu.Unlock()
	return provider.MustDefine(provider.Definition{
		ID: ProviderID, Version: "1.0.0", Provides: []string{api.KindVPS},
		Capabilities: capabilities,
		Manifest: []api.ManifestField{
			{Name: "token", Type: provider.TypeSecret, Required: true, Description: "API token"},
			{Name: "region", Type: provider.TypeOption, Options: []string{"mem1"}, Default: "mem1", Description: "region"},
		},
		New: func(provider.BuildContext) (provider.Client, error) { return &client{cloud: cloud}, nil },
	})
}

type client struct{ cloud *Cloud }

// begin resolves the account token for this call, as a real API client
// would, then locks the cloud and counts the call. On success the caller
// holds c.mu and must unlock it.
func (cl *client) begin(ctx context.Context, call *provider.Call, verb, target string) (*Cloud, error) {
	if _, err := call.Secret(ctx, "token"); err != nil {
		return nil, err
	}
	c := cl.cloud
	c.mu.Lock()
	if h := c.holds[verb]; h != nil {
		delete(c.holds, verb)
		c.mu.Unlock()
		close(h.Held)
		select {
		case <-h.Release:
		case <-ctx.Done():
		}
		c.mu.Lock()
	}
	if c.hung[verb] {
		c.calls[verb]++
		c.mu.Unlock()
		<-ctx.Done()
		return nil, api.Errorf(api.CodeUnavailable, "memory: %s hung until the call ended", verb)
	}
	if err := c.enter(verb, target); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	return c, nil
}

// beginMachine is begin for a call about machine id: NOT_FOUND (with the
// cloud unlocked again) when there is none, or when it carries another key
// than call.IdempotencyKey (when set). On success the caller holds c.mu and
// must unlock it.
func (cl *client) beginMachine(ctx context.Context, call *provider.Call, verb, id string) (*Cloud, *machine, error) {
	c, err := cl.begin(ctx, call, verb, id)
	if err != nil {
		return nil, nil, err
	}
	m, ok := c.machines[id]
	if !ok || call.IdempotencyKey != "" && m.IdempotencyKey != call.IdempotencyKey {
		c.mu.Unlock()
		return nil, nil, api.NotFound("machine", id)
	}
	return c, m, nil
}

func (cl *client) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	c, err := cl.begin(ctx, call, provider.VerbOffers, "")
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	var out []api.Offer
	for _, o := range Offers {
		if q.Matches(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (cl *client) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	c, err := cl.begin(ctx, call, provider.VerbCreate, call.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if id, ok := c.byKey[call.IdempotencyKey]; ok {
		m := c.machines[id].ExternalMachine
		return &m, nil
	}
	if !slices.ContainsFunc(Offers, func(o api.Offer) bool { return o.ID == spec.OfferID }) {
		return nil, api.Errorf(api.CodeInvalidConfig, "unknown offer %q", spec.OfferID).WithPath("machine.offerId")
	}
	var endpoint string
	if c.ssh != nil {
		sm, err := c.ssh.Start(strconv.Itoa(c.next + 1))
		if err != nil {
			return nil, api.Errorf(api.CodeInternal, "ssh endpoint: %v", err)
		}
		endpoint = sm.Endpoint()
	}
	m := c.addLocked(call.IdempotencyKey, spec.Name, spec.OfferID, api.StatePending)
	m.SSHEndpoint = endpoint
	m.Labels = userLabels(spec.Labels)
	out := m.ExternalMachine
	return &out, nil
}

// addLocked makes the next machine for key. Callers hold c.mu.
func (c *Cloud) addLocked(key, name, offerID string, state api.MachineState) *machine {
	c.next++
	id := strconv.Itoa(c.next)
	m := &machine{ExternalMachine: api.ExternalMachine{ID: id, IdempotencyKey: key, Name: name, State: state,
		OfferID: offerID, Region: "mem1", Addresses: []string{fmt.Sprintf("192.0.2.%d", c.next%250+1)}}}
	c.machines[id] = m
	c.byKey[key] = id
	return m
}

// Seed makes a running machine for key out of band, as an inventory
// seeds one (the key's machine when it has one): no call is counted, and
// it gets no SSH endpoint (a large inventory would hold a port each).
func (c *Cloud) Seed(key, name string) api.ExternalMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.byKey[key]; ok {
		return c.machines[id].ExternalMachine
	}
	return c.addLocked(key, name, Offers[0].ID, api.StateRunning).ExternalMachine
}

func (cl *client) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	c, err := cl.begin(ctx, call, provider.VerbGet, id)
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	m, ok := c.machines[id]
	if !ok {
		return nil, nil
	}
	if m.State == api.StatePending {
		if m.polls++; m.polls >= c.BootPolls {
			m.State = api.StateRunning
		}
	}
	out := m.ExternalMachine
	if c.addressesPending && out.State == api.StateRunning {
		out.Addresses, out.SSHEndpoint, out.AddressesPending = []string{}, "", true
	}
	return &out, nil
}

func (cl *client) Delete(ctx context.Context, call *provider.Call, id string) error {
	c, m, err := cl.beginMachine(ctx, call, provider.VerbDelete, id)
	if err != nil {
		return err
	}
	defer c.mu.Unlock()
	delete(c.byKey, m.IdempotencyKey)
	c.forget(id)
	return nil
}

// DeleteByKey deletes the machine its byKey index names for key (one
// machine a key: creates are atomic here, so none is ever half-made).
// Errors: NOT_FOUND when no machine carries key.
func (cl *client) DeleteByKey(ctx context.Context, call *provider.Call, key string) error {
	c, err := cl.begin(ctx, call, provider.VerbDelete, key)
	if err != nil {
		return err
	}
	defer c.mu.Unlock()
	id, ok := c.byKey[key]
	if !ok {
		ce := api.NotFound("machine", key)
		ce.Details.Reason = "no machine carries the idempotency key"
		return ce
	}
	delete(c.byKey, key)
	c.forget(id)
	return nil
}

func (cl *client) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) error {
	c, m, err := cl.beginMachine(ctx, call, provider.VerbPower, id)
	if err != nil {
		return err
	}
	defer c.mu.Unlock()
	switch action {
	case api.ActionOn, api.ActionReset, api.ActionCycle, api.ActionGracefulRestart:
		m.State = api.StateRunning
	case api.ActionGracefulOff:
		if !c.AsyncShutdown {
			m.State = api.StateStopped
		}
	case api.ActionOff:
		m.State = api.StateStopped
	default:
		return api.Errorf(api.CodeUnsupported, "action %q is not supported", action)
	}
	return nil
}

func (cl *client) Reinstall(ctx context.Context, call *provider.Call, id, image string) (*api.ExternalMachine, error) {
	c, m, err := cl.beginMachine(ctx, call, provider.VerbReinstall, id)
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	m.State = api.StateRunning
	out := m.ExternalMachine
	return &out, nil
}

// Relabel replaces the machine's labels (the memory cloud has no system
// labels: the idempotency key is its own field).
func (cl *client) Relabel(ctx context.Context, call *provider.Call, id string, labels map[string]string) (*api.ExternalMachine, error) {
	c, m, err := cl.beginMachine(ctx, call, provider.VerbRelabel, id)
	if err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	m.Labels = userLabels(labels)
	out := m.ExternalMachine
	return &out, nil
}

// userLabels is a copy of labels, nil when there are none (a machine
// without labels reports none).
func userLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	return maps.Clone(labels)
}

func (cl *client) List(ctx context.Context, call *provider.Call, cursor string, limit int) ([]api.ExternalMachine, string, error) {
	c, err := cl.begin(ctx, call, provider.VerbList, "")
	if err != nil {
		return nil, "", err
	}
	c.mu.Unlock()
	all := c.Machines()
	start := 0
	if cursor != "" {
		start = slices.IndexFunc(all, func(m api.ExternalMachine) bool { return compareIDs(m.ID, cursor) > 0 })
		if start < 0 {
			return nil, "", nil
		}
	}
	end := min(start+limit, len(all))
	next := ""
	if end < len(all) {
		next = all[end-1].ID
	}
	return all[start:end], next, nil
}
