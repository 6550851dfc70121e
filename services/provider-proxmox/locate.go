package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"sync"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// vmResource is one guest of GET /cluster/resources?type=vm.
type vmResource struct {
	VMID     number `json:"vmid"`
	Node     string `json:"node"`
	Type     string `json:"type"`
	Status   string `json:"status"`
	Name     string `json:"name"`
	Template number `json:"template"`
	Tags     string `json:"tags"`
	Lock     string `json:"lock"`
	// MaxCPU, MaxMem (bytes) and MaxDisk (bytes) are a guest's sizes
	// (pvestatd's, see listGuests); of a node entry (clusterResource)
	// MaxCPU and MaxMem are the node's.
	MaxCPU  number `json:"maxcpu"`
	MaxMem  number `json:"maxmem"`
	MaxDisk number `json:"maxdisk"`
}

// guestQemu is the resource type of QEMU VMs (containers share the VMID
// space as "lxc").
const guestQemu = "qemu"

// guestLXC is the resource type of containers.
const guestLXC = "lxc"

// listGuests returns every guest of the cluster by VMID (GET
// /cluster/resources?type=vm, one request), containers included: they
// hold VMIDs too. Only vmid, node, type, lock and tags are current: PVE
// serves name, status, template and sizes from what pvestatd saw up to
// ~10 s ago, so a reused VMID can show its old occupant and a new VM
// status "unknown" and no name. The list says where VMs are; what a VM is
// (whose, a template or not, running or not) is read from the VM itself.
func (s *session) listGuests(ctx context.Context) (map[int]vmResource, error) {
	var list []vmResource
	if err := s.get(ctx, "/cluster/resources", url.Values{"type": {"vm"}}, &list); err != nil {
		return nil, err
	}
	out := make(map[int]vmResource, len(list))
	for _, r := range list {
		out[int(r.VMID)] = r
	}
	return out, nil
}

// clusterView is what one GET /cluster/resources without a type filter
// says: every guest by VMID (as listGuests), the nodes (as GET /nodes
// says them: status, maxcpu, mem, maxmem; both come from pvestatd's RRD
// cache, so they are equally fresh) and each node's storages (as ?type=
// storage). A create reads it once for its slots, its template and its
// placement, one request where three were.
type clusterView struct {
	guests   map[int]vmResource
	nodes    []nodeStatus
	storages []storageResource
}

// clusterResource is one entry of GET /cluster/resources of any type: the
// fields of a guest (type qemu or lxc), a node (type node) and a storage
// (type storage); other types (pool, sdn) are skipped.
type clusterResource struct {
	vmResource
	Mem     number `json:"mem"`
	Storage string `json:"storage"`
	Shared  number `json:"shared"`
}

// view reads the cluster with one GET /cluster/resources (see
// clusterView). With the account's shared reads on (WithTaskBatchWindow),
// concurrent creates of the account share one: a read joins the open
// batch, which is sent when its window ends, so the list is made after
// every create of the batch began, as fresh for each as its own would be
// (the same lag, see listGuests). The view is shared: read it, never
// change it.
func (s *session) view(ctx context.Context) (clusterView, error) {
	if s.c.views == nil {
		return s.readView(ctx)
	}
	v, _, err := s.c.views.Lookup(ctx, s.call, struct{}{})
	if ce := (*api.ComputeError)(nil); errors.As(err, &ce) {
		// The shared read changed nothing, but this call may have: its
		// own requests decide details.notExecuted (see markNotExecuted).
		ce.Details.NotExecuted = false
	}
	return v, err
}

// fetchView is the shared read of view: one GET /cluster/resources for
// the batch's creates, made for call, the first of them.
func (c *client) fetchView(ctx context.Context, call *provider.Call, _ []struct{}) (out map[struct{}]clusterView, err error) {
	s, err := c.open(ctx, call, opView)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	v, err := s.readView(ctx)
	if err != nil {
		return nil, err
	}
	return map[struct{}]clusterView{{}: v}, nil
}

// opView is the operation a shared cluster read reports (CallCounter, log
// lines): it serves the account's concurrent creates.
const opView = "cluster"

// readView is view's GET /cluster/resources.
func (s *session) readView(ctx context.Context) (clusterView, error) {
	var list []clusterResource
	if err := s.get(ctx, "/cluster/resources", nil, &list); err != nil {
		return clusterView{}, err
	}
	v := clusterView{guests: make(map[int]vmResource, len(list))}
	for _, r := range list {
		switch r.Type {
		case guestQemu, guestLXC:
			v.guests[int(r.VMID)] = r.vmResource
		case "node":
			v.nodes = append(v.nodes, nodeStatus{Node: r.Node, Status: r.Status, MaxCPU: r.MaxCPU, Mem: r.Mem, MaxMem: r.MaxMem})
		case "storage":
			v.storages = append(v.storages, storageResource{Node: r.Node, Storage: r.Storage, Shared: r.Shared})
		}
	}
	return v, nil
}

// qemuPath is the API path of VM vmid on node.
func qemuPath(node string, vmid int) string {
	return "/nodes/" + url.PathEscape(node) + "/qemu/" + strconv.Itoa(vmid)
}

// readConfig reads VM vmid's config on node (GET …/config). Errors: a
// *pveError of kind no_such_vm when it is not there.
func (s *session) readConfig(ctx context.Context, node string, vmid int) (vmConfig, error) {
	var raw json.RawMessage
	if err := s.get(ctx, qemuPath(node, vmid)+"/config", nil, &raw); err != nil {
		return nil, err
	}
	cfg, err := decodeVMConfig(raw)
	if err != nil {
		return nil, unexpectedReply("GET "+qemuPath(node, vmid)+"/config", err)
	}
	return cfg, nil
}

// status is VM vm's power status as its node reports it now (GET
// …/status/current): "running", "stopped", … Errors: a *pveError of kind
// no_such_vm when it is gone.
func (s *session) status(ctx context.Context, vm located) (string, error) {
	var st struct {
		Status string `json:"status"`
	}
	if err := s.get(ctx, qemuPath(vm.node, vm.vmid)+"/status/current", nil, &st); err != nil {
		return "", err
	}
	return st.Status, nil
}

// located is a VM found in the cluster: its VMID, node and config.
type located struct {
	vmid int
	node string
	cfg  vmConfig
	// assumed is set when cfg was neither read nor derived from a config
	// just read, but from a cached template config (templateCache): it may
	// lag edits of the template, so configure writes every key it manages
	// whole (see configUpdate); tpl is then that template.
	assumed bool
	tpl     vmResource
}

// inspect finds VM vmid and reads its config, or returns nil, nil when no
// QEMU VM has that VMID. The node tried first is the one the VM was last
// seen on (or the account's pinned node): one request when it is still
// there; otherwise GET /cluster/resources tells where it is.
func (s *session) inspect(ctx context.Context, vmid int) (*located, error) {
	if node := s.c.nodes.guess(vmid, s.c.cfg.Node); node != "" {
		cfg, err := s.readConfig(ctx, node, vmid)
		if err == nil {
			return &located{vmid: vmid, node: node, cfg: cfg}, nil
		}
		if !isKind(err, kindNoSuchVM) {
			return nil, err
		}
	}
	guests, err := s.listGuests(ctx)
	if err != nil {
		return nil, err
	}
	r, ok := guests[vmid]
	if !ok || r.Type != guestQemu {
		s.c.nodes.forget(vmid)
		return nil, nil
	}
	cfg, err := s.readConfig(ctx, r.Node, vmid)
	if isKind(err, kindNoSuchVM) {
		return nil, nil // removed since the list was made
	}
	if err != nil {
		return nil, err
	}
	s.c.nodes.remember(vmid, r.Node)
	return &located{vmid: vmid, node: r.Node, cfg: cfg}, nil
}

// managedVM is inspect for calls that change a VM: NOT_FOUND when there is
// no such VM (or it is a template, which is no machine), ACCESS_DENIED when
// this system does not manage it (no better-compute tag, or no key in its
// description), so shared clusters keep their other VMs untouched; and
// NOT_FOUND when the call expects a key (call.IdempotencyKey) and the VM
// carries another: the caller's VM is gone and its VMID was reused, so the
// VM there now is another machine.
func (s *session) managedVM(ctx context.Context, vmid int) (*located, error) {
	vm, err := s.inspect(ctx, vmid)
	switch {
	case err != nil:
		return nil, err
	case vm == nil || vm.cfg.isTemplate():
		return nil, api.NotFound("vm", strconv.Itoa(vmid))
	case !vm.cfg.managed():
		return nil, api.Errorf(api.CodeAccessDenied,
			"proxmox: VM %d is not managed by better-compute (it needs the %q tag and an idempotency-key line in its description)", vmid, ManagedTag)
	}
	if want := s.call.IdempotencyKey; want != "" {
		if key, _ := vm.cfg.key(); key != want {
			ce := api.NotFound("vm", strconv.Itoa(vmid))
			ce.Details.Reason = "the VMID now holds a VM of another idempotency key"
			return nil, ce
		}
	}
	return vm, nil
}

// nodeCache remembers the node each VM was last seen on, so calls about
// one VM need not list the cluster. Stale entries only cost a request.
type nodeCache struct {
	mu    sync.Mutex
	nodes map[int]string
}

// guess is the node VM vmid was last seen on, else fallback.
func (n *nodeCache) guess(vmid int, fallback string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if node, ok := n.nodes[vmid]; ok {
		return node
	}
	return fallback
}

// remember records that VM vmid is on node.
func (n *nodeCache) remember(vmid int, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes = map[int]string{}
	}
	n.nodes[vmid] = node
}

// forget drops VM vmid.
func (n *nodeCache) forget(vmid int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.nodes, vmid)
}
