package proxmox

import (
	"context"
	"net/http"
	"net/url"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// powerEndpoints maps every supported power action to the VM status
// endpoints (POST /nodes/{node}/qemu/{vmid}/status/<endpoint>) it calls, in
// order. nmi is absent: PVE's API cannot send one.
var powerEndpoints = map[api.PowerAction][]string{
	api.ActionOn:              {"start"},
	api.ActionOff:             {"stop"},
	api.ActionGracefulOff:     {"shutdown"},
	api.ActionReset:           {"reset"},
	api.ActionGracefulRestart: {"reboot"},
	api.ActionCycle:           {"stop", "start"},
}

// Power applies action to a VM of this system: GET …/config (ownership),
// then each of its status endpoints (see powerEndpoints), waiting for each
// task. No request is ever repeated, so a reset or reboot whose reply is
// lost is not sent twice. on is level: a VM already running is success;
// stopping a stopped VM is success in PVE.
//
// Errors: UNSUPPORTED (nmi, or an unknown action; no request sent),
// INVALID_INPUT (id), NOT_FOUND (no such VM, or a template), ACCESS_DENIED
// (a VM this system does not manage), INVALID_STATE (reset or
// graceful-restart of a VM that is not running), PROVIDER_ERROR (a failed
// task, with its exit status as details.code; an API error), UNAVAILABLE.
func (c *client) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) (err error) {
	endpoints, ok := powerEndpoints[action]
	if !ok {
		return api.Errorf(api.CodeUnsupported, "proxmox cannot do power action %q", action)
	}
	s, vmid, err := c.openVM(ctx, call, provider.VerbPower, id)
	if err != nil {
		return err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return err
	}
	for _, ep := range endpoints {
		err := s.startTask(ctx, http.MethodPost, qemuPath(vm.node, vmid)+"/status/"+ep, nil)
		if err != nil && !(ep == "start" && isKind(err, kindAlreadyRunning)) {
			return err
		}
	}
	return nil
}

// Delete destroys a VM of this system and its disks: GET …/config
// (ownership), DELETE /nodes/{node}/qemu/{vmid}?purge=1&
// destroy-unreferenced-disks=1, and a wait for the task. A running VM is
// refused by that DELETE at once (nothing done); it is then stopped
// (POST …/status/stop, waited for) and deleted again. That costs a request
// more for a running VM than asking its status first, and one less for a
// stopped one. The cloud-init snippet stays (the writer has no delete);
// its name is unique to the VMID and key.
//
// Errors: INVALID_INPUT (id), NOT_FOUND (no such VM, or a template),
// ACCESS_DENIED (a VM this system does not manage), PROVIDER_ERROR (a
// failed task; vm_locked while a backup or clone holds the VM),
// UNAVAILABLE.
func (c *client) Delete(ctx context.Context, call *provider.Call, id string) (err error) {
	s, vmid, err := c.openVM(ctx, call, provider.VerbDelete, id)
	if err != nil {
		return err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return err
	}
	return s.destroy(ctx, vm)
}

// DeleteByKey destroys every VM carrying the idempotency key, finished or
// half-made (a create that stopped after the clone leaves a VM whose
// description holds the key but which has no tag yet, so list and get do
// not show it): one GET /cluster/resources says where the guests of the
// key's VMID slots are (see probeSlots; only vmid, node and type are read
// from it), and each QEMU guest's config (GET …/config) says whose it is,
// as Create reads them. Each VM of the key is destroyed as Delete does
// (stopped first when it runs), waiting for the tasks.
//
// Errors: NOT_FOUND when no VM in the key's slots carries the key;
// PROVIDER_ERROR code vm_locked (retry) when a slot's VM is being cloned:
// its config does not say whose it is until the clone ends, and it may be
// a create of the key still making it (nothing is deleted then); a failed
// task; an API error; UNAVAILABLE.
func (c *client) DeleteByKey(ctx context.Context, call *provider.Call, key string) (err error) {
	s, err := c.open(ctx, call, provider.VerbDelete)
	if err != nil {
		return err
	}
	defer s.end(ctx, &err)
	guests, err := s.listGuests(ctx)
	if err != nil {
		return err
	}
	var ours []*located
	for vmid, r := range s.keySlots(guests, key) {
		if r == nil {
			continue
		}
		cfg, err := s.readConfig(ctx, r.Node, vmid)
		if isKind(err, kindNoSuchVM) {
			continue // removed since the list was made
		}
		if err != nil {
			return err
		}
		if cfg.lock() == "clone" {
			return api.ProviderError(0, string(kindLocked),
				"proxmox: VM %d, in a VMID slot of this key, is being cloned and may be this key's VM; retry once the clone ends", vmid)
		}
		if k, ok := cfg.key(); ok && k == key && !cfg.isTemplate() {
			ours = append(ours, &located{vmid: vmid, node: r.Node, cfg: cfg})
		}
	}
	if len(ours) == 0 {
		ce := api.NotFound("vm", key)
		ce.Details.Reason = "no VM in the VMID slots of this key carries the idempotency key"
		return ce
	}
	for _, vm := range ours {
		s.vmid = vm.vmid
		if err := s.destroy(ctx, vm); err != nil {
			return err
		}
	}
	return nil
}

// destroy deletes vm with its disks, stopping it first when it runs.
func (s *session) destroy(ctx context.Context, vm *located) error {
	err := s.deleteOnce(ctx, vm)
	if !isKind(err, kindRunning) {
		return err
	}
	if err := s.startTask(ctx, http.MethodPost, qemuPath(vm.node, vm.vmid)+"/status/stop", nil); err != nil {
		return err
	}
	return s.deleteOnce(ctx, vm)
}

// deleteOnce sends the DELETE and waits for its task.
func (s *session) deleteOnce(ctx context.Context, vm *located) error {
	path := qemuPath(vm.node, vm.vmid)
	data, err := s.del(ctx, path, url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}})
	if err != nil {
		return err
	}
	if err := s.waitReply(ctx, "DELETE "+path, data); err != nil {
		return err
	}
	s.c.nodes.forget(vm.vmid)
	return nil
}
