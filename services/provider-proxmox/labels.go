package proxmox

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Instance labels as Proxmox VE tags (capability labels). A PVE tag is
// [a-z0-9_][a-z0-9_+.-]* (PVE compares and stores tags lower-case by
// default); a label key is [prefix/]name and a value [A-Za-z0-9._-]*, so
// '+' is the one tag character a label never holds. A label is the tag
//
//	<key with "/" written "+">+<value>, lower-cased
//
// and the mapping is lossy only in case:
//
//	label                  tag                   read back as
//	env=prod               env+prod              env=prod
//	backup=                backup+               backup=
//	example.com/team=web   example.com+team+web  example.com/team=web
//	Env=Prod               env+prod              env=prod (case lost)
//
// Reading back, every tag holding '+' is a label: one '+' separates key
// and value, two separate prefix, name and value; tags that do not parse
// (three '+' or more, an invalid key) are left out. Other tags (the
// template's, ManagedTag) are no labels and are kept by every write.

// labelTagSeparator separates a label tag's key and value (and a key's
// prefix and name).
const labelTagSeparator = "+"

// LabelTag is the PVE tag of label key=value (see the table above).
func LabelTag(key, value string) string {
	return strings.ToLower(strings.Replace(key, "/", labelTagSeparator, 1) + labelTagSeparator + value)
}

// labelTags are the tags of labels, sorted.
func labelTags(labels map[string]string) []string {
	tags := make([]string, 0, len(labels))
	for k, v := range labels {
		tags = append(tags, LabelTag(k, v))
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// TagLabels are the labels a PVE tag list holds (any PVE spelling), as
// far as they parse back (see the table above); nil when none does.
func TagLabels(tags string) map[string]string {
	var out map[string]string
	for _, t := range parseTags(tags) {
		parts := strings.Split(t, labelTagSeparator)
		var key, value string
		switch len(parts) {
		case 2:
			key, value = parts[0], parts[1]
		case 3:
			key, value = parts[0]+"/"+parts[1], parts[2]
		default:
			continue
		}
		if api.CheckLabelKeySyntax(key) != nil || api.CheckLabelValue(value) != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = value
	}
	return out
}

// withLabelTags is the tag list tags with its label tags (those holding
// '+') replaced by the tags of labels, in PVE's stored form (lower-case,
// sorted, ';'-separated).
func withLabelTags(tags string, labels map[string]string) string {
	kept := slices.DeleteFunc(parseTags(tags), func(t string) bool { return strings.Contains(t, labelTagSeparator) })
	all := append(kept, labelTags(labels)...)
	slices.Sort(all)
	return strings.Join(slices.Compact(all), ";")
}

// Relabel replaces the VM's label tags: GET …/config (ownership: the
// better-compute tag and the key, as every machine verb checks), then,
// when the tags differ, PUT …/config {tags} (synchronous; PVE applies
// tags to a running VM at once) with its other tags kept, and GET
// …/status/current for its state (3 requests, 2 when nothing changes).
// The machine returned reports the labels as they read back (TagLabels:
// lower-case).
//
// Errors: INVALID_INPUT (id), NOT_FOUND (absent, or a VM of another key),
// ACCESS_DENIED (a VM this system does not manage), PROVIDER_ERROR,
// UNAVAILABLE.
func (c *client) Relabel(ctx context.Context, call *provider.Call, id string,
	labels map[string]string) (m *api.ExternalMachine, err error) {
	s, vmid, err := c.openVM(ctx, call, provider.VerbRelabel, id)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.managedVM(ctx, vmid)
	if err != nil {
		return nil, err
	}
	tags := withTag(withLabelTags(vm.cfg["tags"], labels), ManagedTag)
	if !slices.Equal(parseTags(tags), parseTags(vm.cfg["tags"])) {
		if err := s.startTask(ctx, http.MethodPut, qemuPath(vm.node, vmid)+"/config", map[string]any{"tags": tags}); err != nil {
			return nil, err
		}
	}
	status, err := s.status(ctx, *vm)
	if err != nil {
		return nil, err
	}
	cfg := maps.Clone(vm.cfg)
	cfg["tags"] = tags
	state, _ := machineState(false, cfg.lock(), status)
	return c.toMachine(vmid, cfg, state), nil
}
