package proxmox

import (
	"maps"
	"strconv"
	"sync"
	"time"
)

// templateCacheAge is how long a template's config read by one call
// serves the account's later calls without a new GET …/config.
const templateCacheAge = 10 * time.Minute

// templateFingerprint is what GET /cluster/resources says of a template:
// a cached config is used only while the list still says the same.
type templateFingerprint struct {
	name                    string
	template                number
	maxCPU, maxMem, maxDisk number
	tags                    string
}

// fingerprintOf is r's templateFingerprint.
func fingerprintOf(r vmResource) templateFingerprint {
	return templateFingerprint{name: r.Name, template: r.Template, maxCPU: r.MaxCPU, maxMem: r.MaxMem, maxDisk: r.MaxDisk, tags: r.Tags}
}

// templateCache remembers the configs of templates the account's calls
// confirmed (session.template), by node and VMID, so that the account's
// next creates and reinstalls from the same template skip its GET
// …/config. PVE cannot turn a template back into a VM, so a confirmed
// template stays one until it is destroyed; its config may still be
// edited (qm set on a template). An entry serves only while the cluster
// list shows the template as it did when the entry was made (name,
// template flag, maxcpu, maxmem, maxdisk and tags: fingerprintOf), for
// at most templateCacheAge, and is dropped when a clone from it or the
// configuration of such a clone fails (forget).
//
// Guess: PVE promises no sign of every config edit in /cluster/resources:
// cores, sockets, memory, disk size and tags show there (tags at once,
// the sizes from pvestatd's cache, up to ~10 s late), other keys (net0's
// model, cicustom, agent) do not. A create from a cached config therefore
// writes every key it manages whole (cores, memory, ipconfig0,
// nameserver) instead of only those that differ from the config (see
// configureOnce), and never net0, which also holds parts it does not
// manage (model, MAC, firewall, mtu, rate, queues): a create or reinstall
// that may have to write net0 (the pool's bridge or VLAN, or a cached
// net0 not on the wanted bridge untagged: netSpec.cacheable) reads the
// template's config instead. The clone itself always copies the
// template as it is, so an edit of net0 or agent reaches the machines
// at once; a create whose clone answers that no guest agent is
// configured drops the entry (see session.created). An edit of the
// template's bridge or VLAN tag (net0) is not seen by creates that use
// the entry, until it goes; nor is one of cicustom's network= or
// vendor= parts, which a create with user data writes back from the
// entry.
//
// A template destroyed and its VMID given to a rebuilt template with the
// same name, sizes and tags (an image refresh) lists exactly as the old
// one did: the entry (the old template's config) keeps serving the
// account's creates from it until templateCacheAge (10 min) after it was
// read, or until a create drops it (a failed clone or configure, no
// guest agent configured) or replaces it (one that reads the template's
// config: the pool's network, a net0 change). The clones are the
// rebuilt template's; only what configure assumes of them is stale.
//
// The configs it returns are shared: read them, never change them.
type templateCache struct {
	mu      sync.Mutex
	entries map[string]templateEntry
}

// templateEntry is one cached template config.
type templateEntry struct {
	fp     templateFingerprint
	cfg    vmConfig
	readAt time.Time
}

// templateCacheKey is the cache key of template vmid on node.
func templateCacheKey(node string, vmid int) string { return node + "/" + strconv.Itoa(vmid) }

// get is the cached config of template r (its node, VMID and
// fingerprint) at now, when there is a fresh one.
func (t *templateCache) get(r vmResource, now time.Time) (vmConfig, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[templateCacheKey(r.Node, int(r.VMID))]
	if !ok || e.fp != fingerprintOf(r) || now.Sub(e.readAt) >= templateCacheAge || now.Before(e.readAt) {
		return nil, false
	}
	return e.cfg, true
}

// put caches cfg, read at readAt, as the config of template r.
func (t *templateCache) put(r vmResource, cfg vmConfig, readAt time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[string]templateEntry{}
	}
	t.entries[templateCacheKey(r.Node, int(r.VMID))] = templateEntry{fp: fingerprintOf(r), cfg: maps.Clone(cfg), readAt: readAt}
}

// forget drops template r's entry.
func (t *templateCache) forget(r vmResource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, templateCacheKey(r.Node, int(r.VMID)))
}
