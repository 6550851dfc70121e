package proxmox

import (
	"context"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Reinstall replaces a VM of this system with a clone of image (a
// template's VMID or name) under the same VMID: GET …/config (ownership
// and what to keep), GET /cluster/resources and the template's GET
// …/config (the template, checked before anything is destroyed; none
// when the account's templateCache has it), the VM
// destroyed as Delete does, the template full-cloned into the VMID with
// the old name and description (so the key
// and offer stay; a clone-of line names the template until the tag is
// set), then configured as create does with the old cores,
// memory, boot disk size (at least) and storage, net0's bridge and VLAN
// tag, ipconfig0 and nameserver (a static address stays the machine's),
// tags (set last, after the start) and cloud-init user-data volume, and
// started. It returns the machine (state pending). It is not idempotent:
// the reconciler never repeats it after an ambiguous outcome. If it is
// interrupted after the destroy, get answers absent (the new clone is
// untagged until configure's last step) and the reconciler's create with
// the same key makes the VM again: it replaces the clone of image by one
// of the image it asks for (the instance's, which a failed reinstall left
// unchanged), see Create; an instance
// being deleted has the clone deleted by key (DeleteByKey) instead.
//
// Errors: INVALID_INPUT (id; image not one template), NOT_FOUND, ACCESS_DENIED,
// PROVIDER_ERROR (a failed task, with its exit status; an API error; code
// stale_cluster_list, see Create),
// UNAVAILABLE.
func (c *client) Reinstall(ctx context.Context, call *provider.Call, id, image string) (m *api.ExternalMachine, err error) {
	s, vmid, err := c.openVM(ctx, call, provider.VerbReinstall, id)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return nil, err
	}
	guests, err := s.listGuests(ctx)
	if err != nil {
		return nil, err
	}
	key, _ := vm.cfg.key()
	bootKey, disk, _ := vm.cfg.bootDisk()
	want := vmSpec{
		key: key, name: vm.cfg["name"], offer: vm.cfg.offer(),
		cores: vm.cfg.cores(), memoryMiB: vm.cfg.memoryMiB(), diskGiB: int((disk + 1<<30 - 1) >> 30),
		userVolume: userVolume(vm.cfg["cicustom"]), tags: vm.cfg["tags"], net: keptNet(vm.cfg, c.cfg.Bridge),
	}
	tpl, tplCfg, cached, err := s.template(ctx, guests, image, "image", &want.net)
	if err != nil {
		return nil, err
	}
	storage, _, _ := strings.Cut(vm.cfg[bootKey], ":")
	if !storagePattern.MatchString(storage) {
		storage = c.cfg.Storage
	}
	if err := s.destroy(ctx, vm); err != nil {
		return nil, err
	}
	desc := withCloneOf(vm.cfg["description"], int(tpl.VMID))
	node, err := s.clone(ctx, tpl, vmid, want.name, desc, vm.node, storage)
	if err != nil {
		if cached {
			s.c.templates.forget(tpl)
		}
		return nil, err
	}
	clone := located{vmid: vmid, node: node, cfg: clonedConfig(tplCfg, want.name, desc), assumed: cached, tpl: tpl}
	if _, err := s.configure(ctx, clone, want, false); err != nil {
		if cached {
			s.c.templates.forget(tpl) // the next call reads the template again
		}
		return nil, err
	}
	m = c.toMachine(vmid, vm.cfg, api.StatePending)
	return m, nil
}
