package proxmox

import (
	"context"
	"math"
	"net/http"
	"time"

	pve "github.com/Telmate/proxmox-api-go/proxmox"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// client is the provider.Client of one account. It holds no secret: every
// call resolves the token secret and builds its own Telmate client (see
// open). What it shares between calls is the account's HTTP client (its
// connection pool, its pinned CA) and the node each VM was last seen on.
type client struct {
	set    *settings
	cfg    *accountConfig
	timing taskTiming // the account's, else the options
	pacer  *taskPacer // task durations seen on the account's cluster
	// tasks shares the account's concurrent task polls (nil when off:
	// WithTaskBatchWindow(0)).
	tasks *provider.Batcher[taskRef, taskStatus]
	// views shares the cluster list of the account's concurrent creates
	// (nil when off, as tasks).
	views   *provider.Batcher[struct{}, clusterView]
	tokenID pve.ApiTokenID
	http    *http.Client
	nodes   nodeCache
	// templates caches confirmed templates' configs (templateCache).
	templates templateCache
}

// newClient builds the client of an account. Errors: INVALID_CONFIG for
// unusable options or config (see Definition).
func newClient(s *settings, acct api.ProviderAccount) (*client, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	cfg, tokenID, err := parseConfig(acct.Config)
	if err != nil {
		return nil, err
	}
	timing, err := cfg.timing(s.timing)
	if err != nil {
		return nil, err
	}
	hc, err := accountHTTPClient(s.httpClient, cfg.CACert)
	if err != nil {
		return nil, err
	}
	c := &client{set: s, cfg: cfg, timing: timing, pacer: &taskPacer{}, tokenID: tokenID, http: hc}
	if s.taskBatchWindow > 0 {
		c.tasks = &provider.Batcher[taskRef, taskStatus]{Window: func() time.Duration { return s.taskBatchWindow },
			Size: taskBatchSize, Fetch: c.fetchTasks}
		c.views = &provider.Batcher[struct{}, clusterView]{Window: func() time.Duration { return s.taskBatchWindow },
			Size: math.MaxInt, Fetch: c.fetchView}
	}
	return c, nil
}

// Get returns a VM of this system by VMID, or nil, nil when there is no
// such VM or it is not one of this system's (a template, no better-compute
// tag, no key in its description). Requests: GET …/config (plus GET
// /cluster/resources when the VM is not on the node it was last seen on),
// GET …/status/current, and, while it runs with the agent enabled and
// DHCP, GET …/agent/network-get-interfaces for its addresses. While it
// runs, a static address (ipconfig0 ip=<address>/<len>) is its address
// without asking the agent; with DHCP, an agent that does not answer yet
// (or reports no address yet) gives no addresses (nor the emulator's SSH
// endpoint) and AddressesPending, not an error. The state comes from machineStates.
//
// Errors: INVALID_INPUT (id not a VMID), PROVIDER_ERROR, UNAVAILABLE.
func (c *client) Get(ctx context.Context, call *provider.Call, id string) (m *api.ExternalMachine, err error) {
	s, vmid, err := c.openVM(ctx, call, provider.VerbGet, id)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx, &err)
	vm, err := s.inspect(ctx, vmid)
	if err != nil || vm == nil || vm.cfg.isTemplate() || !vm.cfg.managed() {
		return nil, err
	}
	status, err := s.status(ctx, *vm)
	if isKind(err, kindNoSuchVM) {
		return nil, nil // removed since its config was read
	}
	if err != nil {
		return nil, err
	}
	state, _ := machineState(false, vm.cfg.lock(), status)
	m = c.toMachine(vmid, vm.cfg, state)
	if status != statusRunning {
		return m, nil
	}
	if addr, ok := vm.cfg.staticAddress(); ok {
		m.Addresses = []string{addr}
	} else if vm.cfg.agentEnabled() {
		if m.Addresses, m.AddressesPending, err = s.addresses(ctx, vm); err != nil {
			return nil, err
		}
		if m.AddressesPending {
			m.SSHEndpoint = "" // the emulator's stand-in for an address: none is known yet
		}
	}
	return m, nil
}
