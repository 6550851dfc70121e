package proxmox

import (
	"context"
	"iter"
	"net/http"
	"sort"
	"strconv"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// maxClaimRounds bounds how often a create starts over after another call
// took the slot it was about to clone into.
const maxClaimRounds = 8

// Create makes the VM of spec for call.IdempotencyKey, idempotently, and
// returns it once it is configured and its start task has ended: a DHCP
// VM with the guest agent running, with the agent's addresses (or none
// yet and addresses pending), as get would (see created); any other VM
// pending, which get then reports running.
//
// The key hashes to a VMID slot (see probeSlots). One GET
// /cluster/resources (unfiltered, shared by the account's concurrent
// creates: see session.view) shows which of the key's slots are taken,
// where each VM is, and the nodes and storages placement picks from; who owns a VM is read from its config (one GET per QEMU
// guest in the key's slots), never taken from the list, whose names,
// template flags and statuses lag by up to ~10 s (a VMID reused moments
// ago still shows its old occupant). A clone in progress in any of the
// key's slots is waited for, since it may be the key's VM: made by a
// concurrent create of the key, or re-cloned by a reinstall in a slot
// after one freed since. A VM whose description holds the key is finished
// (configure) and returned, unless it is a half-made clone of another
// template than spec.Image that no clone task was filling when probed: then
// it is destroyed and spec.Image cloned anew (halfMadeOfAnotherImage), so
// the machine runs the image the caller asked for, never a failed
// reinstall's. Else the template (spec.Image: a template's
// VMID or name, confirmed by its config, or by the account's cached one:
// templateCache) is full-cloned
// (POST /nodes/{node}/qemu/{template}/clone: newid = the first free slot,
// the machine's name, a description with the key, offer and, until the
// tag is set, the template's VMID (a clone-of line), storage (the
// flavor's, machine.storage, else the account's), and target = the node
// place picks: the allowed node with the most headroom, see placement.go)
// and its task waited for; the clone's config is then known without a
// read (clonedConfig). PVE lets one clone
// into a VMID through; a create that loses ("config file already exists")
// starts over, finds the winner's clone and, when it carries the key,
// finishes it too. Then configure (which tags the VM last: until then
// list and get do not show it, and only the key in its description makes
// it this key's), which waits for the start task so that
// a start still in flight never reads as stopped (PVE shows no lock during
// qmstart, and the reconciler would answer "stopped" with a power-on that
// collides with it); this costs a few task polls and makes a failed start
// an error of create, retried with the same key. A VM of the key found
// finished is started unless its node (GET …/status/current, asked only
// when the list says running) reports it running.
//
// Slots held by other VMs cost a GET each at every create: give the
// account a VMID range that other users of the cluster leave alone.
//
// Configure also sets net0's bridge and VLAN tag (machine.network) and
// ipconfig0 and nameserver (machine.address, else DHCP).
//
// Errors: INVALID_INPUT (machine.offerId not a configured size,
// machine.region not the account's, machine.image not one template,
// machine.storage, machine.network.bridge, machine.network.vlan,
// machine.address.*, placement.nodes[i] not a node of the cluster),
// INVALID_CONFIG (options.snippetWriter: user data or SSH keys without a
// snippet writer), CAPACITY_UNAVAILABLE (every probed slot holds another
// VM, none of them the key's; details.path placement.nodes: no allowed
// node can hold it; nothing was made), PROVIDER_ERROR (a failed
// task, with its exit status as details.code; an API error; code
// slot_contention after maxClaimRounds lost races; code
// stale_cluster_list when the list named a template that is not one),
// UNAVAILABLE.
func (c *client) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (m *api.ExternalMachine, err error) {
	size, ok := c.cfg.size(spec.OfferID)
	if !ok {
		return nil, api.InvalidInput("machine.offerId", "offer %q is not one of the account's sizes", spec.OfferID)
	}
	if spec.Region != "" && spec.Region != c.cfg.region() {
		return nil, api.InvalidInput("machine.region", "the account's only region is %q", c.cfg.region())
	}
	net, err := machineNet(spec, c.cfg.Bridge)
	if err != nil {
		return nil, err
	}
	pl := placement{storage: c.cfg.Storage, vcpu: size.Vcpu, memoryMiB: size.MemoryGiB * 1024}
	if spec.Storage != "" {
		if !storagePattern.MatchString(spec.Storage) {
			return nil, api.InvalidInput("machine.storage", "storage must be a storage id such as %s", DefaultStorage)
		}
		pl.storage, pl.required = spec.Storage, true
	}
	if spec.Placement != nil {
		pl.nodes = spec.Placement.Nodes
	}
	want := vmSpec{
		key: call.IdempotencyKey, name: vmName(spec.Name), offer: size.Name,
		cores: size.Vcpu, memoryMiB: size.MemoryGiB * 1024, diskGiB: size.DiskGiB,
		userData: provider.UserDataWithSSHKeys(spec.UserData, spec.SSHKeys), net: net,
		labels: spec.Labels, setLabels: true,
	}
	if want.userData != "" && c.set.snippets == nil {
		return nil, api.InvalidConfig("options.snippetWriter",
			"user data and SSH keys reach a Proxmox VM as a cloud-init snippet: the provider needs WithSnippetWriter")
	}
	s, err := c.open(ctx, call, provider.VerbCreate)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.create(ctx, want, spec.Image, pl)
	if err != nil {
		return nil, err
	}
	return s.created(ctx, vm), nil
}

// created is the machine Create answers for vm, configured and started
// (vm.cfg as configure wrote it). A DHCP VM with the guest agent enabled
// is answered running, as a get would say right after the start task
// ended, with one request to its agent (GET
// …/agent/network-get-interfaces, as get asks it): its addresses, or none
// and addresses pending when the agent does not answer yet or reports no
// address (the reconciler then looks again as after such a get). So the
// reconciler, which takes a created machine as its create answered, needs
// no get right after. Any other VM (a static address, no agent), and one
// whose agent request fails otherwise, is answered pending, as before,
// and the reconciler's get (config and status) reports it: it reads the
// config, which is where the emulator's SSH endpoint is (on a real
// cluster answering those running would be as right). So is a VM whose
// agent answers that none is configured (the config the create worked
// from, a cached template config, said otherwise: the template's agent
// was turned off since): the template's cache entry is dropped, and the
// next create reads its config.
func (s *session) created(ctx context.Context, vm located) *api.ExternalMachine {
	m := s.c.toMachine(vm.vmid, vm.cfg, api.StatePending)
	if _, static := vm.cfg.staticAddress(); static || !vm.cfg.agentEnabled() {
		return m
	}
	addrs, pending, ssh, err := s.askAgent(ctx, &vm)
	switch {
	case agentNotConfigured(err):
		if vm.assumed {
			s.c.templates.forget(vm.tpl)
		}
		return m
	case isKind(err, kindNoAgent):
		addrs, pending = []string{}, true
	case err != nil:
		return m
	}
	switch {
	case pending:
		m.AddressesPending, m.SSHEndpoint = true, "" // the emulator's stand-in for an address: none is known yet
	default:
		m.Addresses = addrs
		if ssh != "" {
			m.SSHEndpoint = ssh // emulator-only
		}
	}
	m.State = api.StateRunning
	return m
}

// create claims the key's VMID (see Create), clones image into it on the
// node place picks for pl, and configures the VM; it returns the VM with
// its config as configured.
func (s *session) create(ctx context.Context, want vmSpec, image string, pl placement) (located, error) {
	cfg := s.c.cfg
	for range maxClaimRounds {
		view, err := s.view(ctx)
		if err != nil {
			return located{}, err
		}
		guests := view.guests
		p, err := s.probe(ctx, guests, want)
		if err != nil {
			return located{}, err
		}
		if p.ours != nil {
			s.vmid = p.ours.vmid
			other, err := s.halfMadeOfAnotherImage(ctx, guests, p, image)
			if err != nil {
				return located{}, err
			}
			if other {
				if err := s.destroy(ctx, p.ours); err != nil {
					return located{}, err
				}
				continue // the slot is free now: clone image into it
			}
			running, err := s.runningNow(ctx, *p.ours, guests[p.ours.vmid])
			if err != nil {
				return located{}, err
			}
			vm := *p.ours
			vm.cfg, err = s.configure(ctx, vm, want, running)
			return vm, err
		}
		if p.free == 0 {
			return located{}, api.Errorf(api.CodeCapacityUnavailable, "proxmox: all %d VMID slots of this key in [%d, %d] hold other VMs",
				len(probeSlots(want.key, cfg.VMIDMin, cfg.VMIDMax)), cfg.VMIDMin, cfg.VMIDMax)
		}
		tpl, tplCfg, cached, err := s.template(ctx, guests, image, "machine.image", &want.net)
		if err != nil {
			return located{}, err
		}
		target, storage, err := s.place(view, tpl, tplCfg, pl)
		if err != nil {
			return located{}, err
		}
		s.vmid = p.free
		desc := withCloneOf(ManagedDescription(want.key, want.offer), int(tpl.VMID))
		node, err := s.clone(ctx, tpl, p.free, want.name, desc, target, storage)
		if isKind(err, kindExists) {
			continue // another call cloned into the slot first: look again
		}
		if err != nil {
			if cached {
				s.c.templates.forget(tpl) // the next create reads the template again
			}
			return located{}, err
		}
		// The clone's config is known without reading it (clonedConfig);
		// from a cached template config it is assumed (located.assumed).
		vm := located{vmid: p.free, node: node, cfg: clonedConfig(tplCfg, want.name, desc), assumed: cached, tpl: tpl}
		vm.cfg, err = s.configure(ctx, vm, want, false)
		if err != nil && cached {
			s.c.templates.forget(tpl)
		}
		return vm, err
	}
	return located{}, api.ProviderError(0, "slot_contention",
		"proxmox: other creates took this key's VMID slots %d times in a row; retry", maxClaimRounds)
}

// halfMadeOfAnotherImage reports whether p.ours, the key's VM, is a
// half-made clone (its description has a clone-of line: a create or
// reinstall stopped before configure's last step) of another template
// than image resolves to (GET …/config of that template), e.g. the clone
// of a failed reinstall's new image: create replaces such a clone instead
// of finishing it (see Create). A finished VM, and one a clone task was
// still filling when probed (a reinstall or create of the key at work on
// it, which create waits for and finishes), are never replaced.
func (s *session) halfMadeOfAnotherImage(ctx context.Context, guests map[int]vmResource, p probeResult, image string) (bool, error) {
	from, ok := p.ours.cfg.cloneOf()
	if !ok || p.cloning {
		return false, nil
	}
	tpl, _, _, err := s.template(ctx, guests, image, "machine.image", nil)
	return err == nil && int(tpl.VMID) != from, err
}

// probeResult is what the key's slots hold: the key's VM, or else the
// first free slot (0 when none is).
type probeResult struct {
	ours *located
	free int
	// cloning is set when a clone into ours was in progress when probed.
	cloning bool
}

// probe walks the key's slots in order (see Create): a slot missing from
// the list is free, a container's is taken, and every QEMU guest's config
// is read (settled) to see whose it is.
func (s *session) probe(ctx context.Context, guests map[int]vmResource, want vmSpec) (probeResult, error) {
	var p probeResult
	for vmid, r := range s.keySlots(guests, want.key) {
		var vm *located
		if r != nil {
			var err error
			if vm, p.cloning, err = s.settled(ctx, r.Node, vmid); err != nil {
				return p, err
			}
		}
		if vm == nil {
			if p.free == 0 {
				p.free = vmid
			}
			continue
		}
		if k, ok := vm.cfg.key(); ok && k == want.key {
			p.ours = vm
			return p, nil
		}
	}
	return p, nil
}

// keySlots walks key's VMID slots in order (probeSlots), yielding each
// slot's VMID with its QEMU guest in guests, nil when the slot is free; a
// slot holding a container (taken, never a machine) is skipped.
func (s *session) keySlots(guests map[int]vmResource, key string) iter.Seq2[int, *vmResource] {
	return func(yield func(int, *vmResource) bool) {
		for _, vmid := range probeSlots(key, s.c.cfg.VMIDMin, s.c.cfg.VMIDMax) {
			r, taken := guests[vmid]
			switch {
			case !taken:
				if !yield(vmid, nil) {
					return
				}
			case r.Type == guestQemu:
				if !yield(vmid, &r) {
					return
				}
			}
		}
	}
}

// runningNow reports whether vm, listed as r, runs: false when the list
// says anything but running (a start then finds out: "already running" is
// success), else what its node says now, since the list's status may be
// an earlier occupant's of the VMID.
func (s *session) runningNow(ctx context.Context, vm located, r vmResource) (bool, error) {
	if r.Status != statusRunning {
		return false, nil
	}
	status, err := s.status(ctx, vm)
	return status == statusRunning, err
}

// settled reads VM vmid's config; while a clone into it is in progress, it
// polls every poll interval until the clone ends (at most the task
// timeout), and cloning says it did. nil when there is no such VM (a
// failed clone is removed).
func (s *session) settled(ctx context.Context, node string, vmid int) (vm *located, cloning bool, err error) {
	timing := s.c.timing
	deadline := s.call.Clock.Now().Add(timing.timeout)
	for range timing.maxPolls() {
		cfg, err := s.readConfig(ctx, node, vmid)
		if isKind(err, kindNoSuchVM) {
			return nil, cloning, nil
		}
		if err != nil {
			return nil, cloning, err
		}
		if cfg.lock() != "clone" {
			return &located{vmid: vmid, node: node, cfg: cfg}, cloning, nil
		}
		cloning = true
		if !s.call.Clock.Now().Before(deadline) {
			break
		}
		if err := provider.Sleep(ctx, s.call.Clock, timing.poll); err != nil {
			return nil, cloning, err
		}
	}
	return nil, cloning, api.ProviderError(http.StatusOK, codeTaskTimeout,
		"proxmox: VM %d is still being cloned after %s", vmid, timing.timeout)
}

// findTemplate resolves an image, a template's VMID or name, among guests:
// a VMID names the QEMU guest there (whether it is a template is left to
// its config: the list's flag may be stale), a name the one guest the
// list calls a template of that name. Errors: INVALID_INPUT naming path
// when it names none, or when several templates have that name.
func findTemplate(guests map[int]vmResource, image, path string) (vmResource, error) {
	if id, err := strconv.Atoi(image); err == nil {
		r, ok := guests[id]
		if !ok || r.Type != guestQemu {
			return vmResource{}, api.InvalidInput(path, "VMID %d is not a template of the cluster", id)
		}
		return r, nil
	}
	var found []vmResource
	for _, r := range guests {
		if r.Type == guestQemu && r.Template == 1 && r.Name == image {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return vmResource{}, api.InvalidInput(path, "no template of the cluster is called %q", image)
	case 1:
		return found[0], nil
	}
	ids := make([]int, len(found))
	for i, r := range found {
		ids[i] = int(r.VMID)
	}
	sort.Ints(ids)
	return vmResource{}, api.InvalidInput(path, "templates %v are all called %q: name one by its VMID", ids, image)
}

// template is findTemplate confirmed by the template's config (GET
// …/config), since the list's names and template flags may be stale; it
// returns that config too, and cached when it is the account's cached one
// (templateCache: a template this account confirmed before, listed as it
// was then; no request), which serves only when net is nil (any config
// will do: only the template is wanted) or net.cacheable says a clone
// configured to net needs no net0 change by the cached config; else the
// config is read (and cached anew). Errors: findTemplate's; INVALID_INPUT naming path when image is a VMID
// whose config is no template's; PROVIDER_ERROR code stale_cluster_list
// (retry) when the VM the list calls image is not (or no longer) that
// template.
func (s *session) template(ctx context.Context, guests map[int]vmResource, image, path string, net *netSpec) (
	tpl vmResource, cfg vmConfig, cached bool, err error,
) {
	tpl, err = findTemplate(guests, image, path)
	if api.IsCode(err, api.CodeInvalidInput) {
		if fresh, cfg, ok, ferr := s.unreportedTemplate(ctx, guests, image); ferr != nil || ok {
			return fresh, cfg, false, ferr
		}
	}
	if err != nil {
		return vmResource{}, nil, false, err
	}
	_, byID := strconv.Atoi(image)
	cfg, ok := s.c.templates.get(tpl, s.call.Clock.Now())
	if ok && (byID == nil || cfg["name"] == image) && (net == nil || net.cacheable(cfg)) {
		return tpl, cfg, true, nil
	}
	readAt := s.call.Clock.Now()
	cfg, err = s.readConfig(ctx, tpl.Node, int(tpl.VMID))
	if err != nil && !isKind(err, kindNoSuchVM) {
		return vmResource{}, nil, false, err
	}
	switch {
	case err == nil && cfg.isTemplate() && (byID == nil || cfg["name"] == image):
		s.c.templates.put(tpl, cfg, readAt)
		return tpl, cfg, false, nil
	case byID == nil:
		s.c.templates.forget(tpl)
		return vmResource{}, nil, false, api.InvalidInput(path, "VMID %s is not a template of the cluster", image)
	}
	s.c.templates.forget(tpl)
	return vmResource{}, nil, false, api.ProviderError(0, codeStaleClusterList,
		"proxmox: the cluster list calls VM %d template %q, but its config says otherwise (the list lags changes by up to ~10 s); retry",
		int(tpl.VMID), image)
}

// unreportedTemplate finds template image (a name) among the guests the
// cluster list has not reported yet (no name, status unknown: made within
// pvestatd's last ~10 s), by their config (GET …/config): a template made
// moments ago is found, not refused for good. It reads at most
// maxUnreportedReads configs; ok is false when none is image. It returns
// the template's config too.
func (s *session) unreportedTemplate(ctx context.Context, guests map[int]vmResource, image string) (vmResource, vmConfig, bool, error) {
	if _, err := strconv.Atoi(image); err == nil {
		return vmResource{}, nil, false, nil
	}
	ids := make([]int, 0)
	for id, r := range guests {
		if r.Type == guestQemu && r.Name == "" && len(ids) < maxUnreportedReads {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		r := guests[id]
		cfg, err := s.readConfig(ctx, r.Node, id)
		if isKind(err, kindNoSuchVM) {
			continue
		}
		if err != nil {
			return vmResource{}, nil, false, err
		}
		if cfg.isTemplate() && cfg["name"] == image {
			r.Name, r.Template = image, 1
			return r, cfg, true, nil
		}
	}
	return vmResource{}, nil, false, nil
}

// maxUnreportedReads bounds the config reads of unreported guests one
// template look-up may make.
const maxUnreportedReads = 16

// clone full-clones template tpl into vmid (called name, with desc as
// description, disks on storage, "" for the template's) and waits for
// the task. The clone lands on node when it is set and not the
// template's node (PVE then needs the template on shared storage), else
// on the template's node, which it returns. Errors: a *pveError of kind
// vm_exists when another call cloned into vmid first.
func (s *session) clone(ctx context.Context, tpl vmResource, vmid int, name, desc, node, storage string) (string, error) {
	params := map[string]any{"newid": vmid, "name": name, "description": desc, "full": 1}
	if storage != "" {
		params["storage"] = storage
	}
	target := tpl.Node
	if node != "" && node != tpl.Node {
		params["target"], target = node, node
	}
	if err := s.startTask(ctx, http.MethodPost, qemuPath(tpl.Node, int(tpl.VMID))+"/clone", params); err != nil {
		return "", err
	}
	s.c.nodes.remember(vmid, target)
	return target, nil
}
