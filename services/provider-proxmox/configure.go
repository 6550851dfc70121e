package proxmox

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// vmSpec is what a VM of this system must look like once configured.
type vmSpec struct {
	key       string
	name      string // PVE VM name
	offer     string
	cores     int
	memoryMiB int
	diskGiB   int
	// userData is written as a snippet (when userVolume is empty).
	userData string
	// userVolume is the cloud-init user-data volume to keep ("" for none).
	userVolume string
	// tags are the tags to keep ("" keeps the clone's, the template's);
	// the better-compute tag is always added.
	tags string
	// labels, when setLabels, replace the label tags of the tags kept
	// (withLabelTags): a create's; a reinstall keeps the old VM's tags.
	labels    map[string]string
	setLabels bool
	// net is net0's bridge and tag and the cloud-init network.
	net netSpec
}

// maxConfigureRounds bounds how often configure starts over after finding
// the VM locked by another call working on it (a concurrent create of the
// same key).
const maxConfigureRounds = 8

// configure brings vm to want, starts it and then tags it. Every step is
// skipped when the config already has it, so a create interrupted at any
// point is finished by the next one with the key:
//
//  1. GET …/config (unless vm.cfg is known: just read, or a fresh
//     clone's, clonedConfig); the description must still hold want.key;
//  2. the user-data snippet is written (once per call, when there is user
//     data) and one PUT …/config (synchronous: no task to poll; nothing in
//     it allocates storage, for which PVE advises POST) sets what differs of
//     cores (sockets 1), memory (MiB), ipconfig0 (ip=dhcp, or the static
//     address: ip=<address>/<len>,gw=<gateway>) and nameserver, net0's
//     bridge and VLAN tag (want.net), and cicustom user=<volume>;
//  3. PUT …/resize grows the boot disk to want.diskGiB (absolute size;
//     skipped when the disk is already that large: never shrunk);
//  4. POST …/status/start, unless running says the VM runs; "already
//     running" is success;
//  5. PUT …/config (synchronous, one request; PVE applies tags to a
//     running VM at once) sets the tags: want.tags or the clone's (the
//     template's), plus better-compute, and drops the description's
//     clone-of line (see withCloneOf). Last, so that list and get never
//     show a VM of this system that is not configured, resized and
//     started: until then only the key in its description (written by
//     the clone itself) makes it this key's, for the create that resumes
//     it (see Create and the package doc).
//
// Each task is waited for. Lock errors (another call is configuring or
// starting the same VM) make it start over after a poll interval, at most
// maxConfigureRounds times.
//
// It returns the VM's config as configured: vm.cfg (or the one read) with
// the keys configure wrote, the boot disk's size left as it was.
func (s *session) configure(ctx context.Context, vm located, want vmSpec, running bool) (vmConfig, error) {
	for round := 1; ; round++ {
		cfg, err := s.configureOnce(ctx, vm, &want, running && round == 1)
		if !isKind(err, kindLocked) || round == maxConfigureRounds {
			return cfg, err
		}
		if err := provider.Sleep(ctx, s.call.Clock, s.c.timing.poll); err != nil {
			return nil, err
		}
		vm.cfg, vm.assumed = nil, false
	}
}

// configureOnce is one pass of configure's steps; vm.cfg is read first
// unless the caller has just read it. It returns the config as
// configured (see configure).
func (s *session) configureOnce(ctx context.Context, vm located, want *vmSpec, running bool) (vmConfig, error) {
	vmid, cfg := vm.vmid, vm.cfg
	if cfg == nil {
		var err error
		if cfg, err = s.readConfig(ctx, vm.node, vmid); err != nil {
			return nil, err
		}
	}
	if k, ok := cfg.key(); !ok || k != want.key {
		return nil, api.ProviderError(0, "slot_taken", "proxmox: VM %d no longer holds this create's idempotency key", vmid)
	}
	if want.userVolume == "" && want.userData != "" {
		var err error
		if want.userVolume, err = s.writeSnippet(ctx, vmid, want); err != nil {
			return nil, err
		}
	}
	path := qemuPath(vm.node, vmid)
	out := maps.Clone(cfg)
	if update := configUpdate(cfg, want, vm.assumed); len(update) > 0 {
		if err := s.startTask(ctx, http.MethodPut, path+"/config", update); err != nil {
			return nil, err
		}
		for k, v := range update {
			out[k] = fmt.Sprint(v)
		}
	}
	disk, size, ok := cfg.bootDisk()
	if !ok {
		return nil, api.ProviderError(0, "no_boot_disk", "proxmox: VM %d has no boot disk (scsi, virtio, sata or ide) to grow", vmid)
	}
	if size < int64(want.diskGiB)<<30 {
		resize := map[string]any{"disk": disk, "size": fmt.Sprintf("%dG", want.diskGiB)}
		if err := s.startTask(ctx, http.MethodPut, path+"/resize", resize); err != nil {
			return nil, err
		}
	}
	if !running {
		if err := s.startTask(ctx, http.MethodPost, path+"/status/start", nil); err != nil && !isKind(err, kindAlreadyRunning) {
			return nil, err
		}
	}
	tags, retag := tagUpdate(cfg, want)
	if desc := withoutCloneOf(cfg["description"]); retag || desc != cfg["description"] {
		// One request: the VM is finished (tagged) exactly when its
		// clone-of line is gone.
		if err := s.startTask(ctx, http.MethodPut, path+"/config", map[string]any{"tags": tags, "description": desc}); err != nil {
			return nil, err
		}
		out["tags"], out["description"] = tags, desc
	}
	return out, nil
}

// configUpdate is the PUT …/config body that brings cfg to want: only the
// keys that differ (empty when none does), or, when all is set (cfg is
// assumed, not read: see located.assumed), every key configure manages
// whole (cores, sockets when cfg has them, memory, ipconfig0, nameserver
// when want has one), so that the VM ends as want whatever its config
// really is. net0 is written only when it differs: a create uses a cached
// config only when net0 needs no change (netSpec.cacheable), and writing
// the cached value would undo a template edit of its other parts.
func configUpdate(cfg vmConfig, want *vmSpec, all bool) map[string]any {
	u := map[string]any{}
	if all || cfg.cores() != want.cores {
		u["cores"] = want.cores
	}
	if s := cfg["sockets"]; s != "" && s != "1" {
		u["sockets"] = 1
	}
	if all || cfg.memoryMiB() != want.memoryMiB {
		u["memory"] = want.memoryMiB
	}
	if all || cfg["ipconfig0"] != want.net.ipconfig0 {
		u["ipconfig0"] = want.net.ipconfig0
	}
	if ns := want.net.nameserver; ns != "" && (all || cfg["nameserver"] != ns) {
		u["nameserver"] = ns
	}
	if n := withNet(cfg["net0"], want.net.bridge, want.net.vlan); n != cfg["net0"] {
		u["net0"] = n
	}
	if want.userVolume != "" {
		if ci := withUserVolume(cfg["cicustom"], want.userVolume); ci != cfg["cicustom"] {
			u["cicustom"] = ci
		}
	}
	return u
}

// tagUpdate is the tag list that makes cfg's VM one of this system's
// (want.tags, else cfg's, with want.labels' tags when want.setLabels,
// plus better-compute), and whether it differs
// from cfg's.
func tagUpdate(cfg vmConfig, want *vmSpec) (string, bool) {
	tags := cfg["tags"]
	if want.tags != "" {
		tags = want.tags
	}
	if want.setLabels {
		tags = withLabelTags(tags, want.labels)
	}
	t := withTag(tags, ManagedTag)
	return t, !slices.Equal(parseTags(t), parseTags(cfg["tags"]))
}

// volumePattern is a PVE volume id a cicustom part can name.
var volumePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9._-]*:[^,=\s]+$`)

// writeSnippet stores want's user data with the snippet writer and returns
// the volume id. Errors: the writer's ComputeError, PROVIDER_ERROR code
// snippet_write for its other errors, INVALID_CONFIG naming
// options.snippetWriter when it returns something that is not a volume id.
func (s *session) writeSnippet(ctx context.Context, vmid int, want *vmSpec) (string, error) {
	vol, err := s.c.set.snippets(ctx, s.call, vmid, snippetName(vmid, want.key), want.userData)
	if err != nil {
		if ce := api.AsComputeError(err); ce.Code != api.CodeInternal {
			return "", ce
		}
		return "", api.ProviderError(0, "snippet_write", "proxmox: write the cloud-init snippet of VM %d: %v", vmid, err)
	}
	if !volumePattern.MatchString(vol) {
		return "", api.InvalidConfig("options.snippetWriter",
			"the snippet writer returned %q, not a volume id such as local:snippets/<name>", vol)
	}
	return vol, nil
}
