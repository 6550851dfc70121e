package proxmox

import (
	"context"
	"slices"
	"strconv"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// List returns up to limit VMs of this system in the account's VMID range
// whose VMID is above cursor, in VMID order: GET /cluster/resources
// (one request) picks the QEMU guests that carry the better-compute tag
// (tags are current in the list; its template flags are not), and a GET
// …/config each confirms the key in the description and that the VM is no
// template (so a page costs 1 + up to limit requests, plus one per tagged
// VM without a key and per tagged template). The cursor is the last VMID of the previous
// page ("" = start); the next cursor is "" after the last VM. States come
// from the cluster list (which may lag PVE by a few seconds); addresses
// are left empty (get asks the guest agent); a VM made moments ago may
// show state unknown.
//
// Errors: INVALID_INPUT (cursor), PROVIDER_ERROR, UNAVAILABLE.
func (c *client) List(ctx context.Context, call *provider.Call,
	cursor string, limit int) (items []api.ExternalMachine, next string, err error) {
	after := 0
	if cursor != "" {
		if after, err = strconv.Atoi(cursor); err != nil || after < 0 || strconv.Itoa(after) != cursor {
			return nil, "", api.InvalidInput("cursor", "cursor must be the nextCursor of a previous page")
		}
	}
	limit = max(limit, 1)
	s, err := c.open(ctx, call, provider.VerbList)
	if err != nil {
		return nil, "", err
	}
	defer s.end(ctx, &err)
	guests, err := s.listGuests(ctx)
	if err != nil {
		return nil, "", err
	}
	var ids []int
	for vmid, r := range guests {
		if vmid > after && vmid >= c.cfg.VMIDMin && vmid <= c.cfg.VMIDMax &&
			r.Type == guestQemu && hasManagedTag(r.Tags) {
			ids = append(ids, vmid)
		}
	}
	slices.Sort(ids)
	items = []api.ExternalMachine{}
	for i, vmid := range ids {
		if len(items) == limit {
			next = strconv.Itoa(ids[i-1])
			break
		}
		r := guests[vmid]
		cfg, err := s.readConfig(ctx, r.Node, vmid)
		if isKind(err, kindNoSuchVM) {
			continue // deleted since the list was made
		}
		if err != nil {
			return nil, "", err
		}
		if !cfg.managed() || cfg.isTemplate() {
			continue
		}
		c.nodes.remember(vmid, r.Node)
		state, _ := machineState(false, cfg.lock(), r.Status)
		items = append(items, *c.toMachine(vmid, cfg, state))
	}
	return items, next, nil
}
