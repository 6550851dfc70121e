package fake

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	proxmox "better-compute.io/compute/services/provider-proxmox"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

func init() { setups[proxmox.ProviderID] = proxmoxBackend }

// Settings of the proxmox fake: task durations and poll interval in real
// time, the account's VMID range, and where and how sparsely Seed puts
// VMs (at most one in any 64 consecutive VMIDs, so seeded VMs never fill
// a key's probe window).
const (
	proxmoxTaskDuration = 40 * time.Millisecond
	proxmoxPoll         = 20 * time.Millisecond
	proxmoxVMIDMin      = 100000
	proxmoxVMIDMax      = 999999
	proxmoxSeedFirst    = 110000
	proxmoxSeedStride   = 80
	proxmoxTemplateID   = 9000
	proxmoxTemplate     = "ubuntu-24-04"
	proxmoxOffer        = "small"
)

// proxmoxRoutes are the API routes (emulator call keys) of each op: for
// create, the request that makes the VM.
var proxmoxRoutes = map[string]string{
	provider.VerbCreate: emulator.RouteClone,
	provider.VerbGet:    emulator.RouteConfigGet,
	provider.VerbList:   emulator.RouteClusterResources,
	provider.VerbDelete: emulator.RouteDestroy,
	provider.VerbOffers: emulator.RouteNodes,
}

// proxmoxTasks are the task types of each action.
var proxmoxTasks = map[api.PowerAction]string{
	api.ActionOn: "qmstart", api.ActionOff: "qmstop", api.ActionGracefulOff: "qmshutdown",
	api.ActionReset: "qmreset", api.ActionCycle: "qmstop", api.ActionGracefulRestart: "qmreboot",
	api.ActionReinstall: "qmclone",
}

// proxmoxBackend is the proxmox provider against the PVE API emulator,
// which accepts only token (for the emulator's default token id). PVE has
// no rate limit, so RateLimit is not supported and the faults profile is
// not claimed; the other fault hooks work (the durable lane uses them).
func proxmoxBackend(token, addr string, log zerolog.Logger) (*backend, error) {
	fs, err := newFleetSSH(log)
	if err != nil {
		return nil, err
	}
	durations := map[string]time.Duration{}
	for _, typ := range []string{"qmclone", "qmconfig", "resize", "qmstart", "qmstop", "qmshutdown", "qmreset", "qmreboot", "qmdestroy"} {
		durations[typ] = proxmoxTaskDuration
	}
	srv, err := emulator.Start(emulator.Options{
		Tokens: map[string]string{emulator.DefaultTokenID: token},
		Nodes:  proxmoxNodes(),
		// On shared storage: clones land on any node (placement.nodes).
		Storages: []emulator.Storage{{Name: proxmoxSharedStorage, Shared: true}},
		Templates: []emulator.Template{{VMID: proxmoxTemplateID, Name: proxmoxTemplate, Storage: proxmoxSharedStorage,
			Config: map[string]string{"ipconfig0": "ip=dhcp"}}},
		TaskDurations: durations,
		StatsInterval: emulator.DefaultStatsInterval, // /cluster/resources lags as on a real cluster
		ListenAddr:    addr,
		SSH:           fs.fleet,
	})
	if err != nil {
		fs.fleet.Close()
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CACertPEM()) {
		_ = srv.Close()
		return nil, errors.New("the PVE emulator's CA does not parse")
	}
	h := &proxmoxHooks{emu: srv.Emulator(), tr: &faultTransport{
		base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 16},
		drop: map[string]int{}, hang: map[string]int{},
	}, next: proxmoxSeedFirst}
	snippets := &proxmox.MemorySnippets{}
	return &backend{
		def: proxmox.Definition(
			proxmox.WithHTTPClient(&http.Client{Transport: h.tr}), // pins the CA: the caCert field stays empty
			proxmox.WithTaskPollInterval(proxmoxPoll),
			proxmox.WithSnippetWriter(snippets.Write),
		),
		endpoint: srv.URL(),
		profiles: []string{conformance.ProfileCore, conformance.ProfileCloud, conformance.ProfileDurable,
			conformance.ProfileTransport, conformance.ProfileSecrets, conformance.ProfileScale, conformance.ProfileSpot,
			conformance.ProfileSSH, conformance.ProfileLabels, conformance.ProfileNetwork},
		offerID: proxmoxOffer, image: proxmoxTemplate,
		config: func(ref string) map[string]any {
			return map[string]any{
				proxmox.FieldURL: srv.URL(), proxmox.FieldTokenID: emulator.DefaultTokenID, proxmox.FieldTokenSecret: ref,
				proxmox.FieldVMIDMin: proxmoxVMIDMin, proxmox.FieldVMIDMax: proxmoxVMIDMax,
				proxmox.FieldSizes: []any{map[string]any{"name": proxmoxOffer, "vcpu": 2, "memoryGiB": 2, "diskGiB": 20},
					map[string]any{"name": proxmoxOffer + "-large", "vcpu": 4, "memoryGiB": 4, "diskGiB": 30}},
			}
		},
		faults:      h,
		inventory:   h,
		ssh:         fs,
		nodeNetwork: proxmoxNetwork{emu: srv.Emulator()},
		close:       func() { _ = srv.Close(); fs.fleet.Close() },
	}, nil
}

// proxmoxHooks implement conformance.Faults and conformance.Inventory on
// the emulator's Go API and the provider's HTTP transport.
type proxmoxHooks struct {
	emu *emulator.Emulator
	tr  *faultTransport

	mu   sync.Mutex
	next int // where the next seeded VM goes
	seq  int
}

var (
	_ conformance.Faults    = (*proxmoxHooks)(nil)
	_ conformance.Inventory = (*proxmoxHooks)(nil)
)

// proxmoxRoute is the emulator route of op (ErrNotSupported for others).
func proxmoxRoute(op string) (string, error) {
	r, ok := proxmoxRoutes[op]
	if !ok {
		return "", conformance.ErrNotSupported
	}
	return r, nil
}

// FailNext injects a route fault: the next n requests of op answer status.
func (h *proxmoxHooks) FailNext(_ context.Context, op string, n, status int) error {
	r, err := proxmoxRoute(op)
	if err == nil {
		h.emu.InjectRouteFault(emulator.RouteFault{Route: r, Count: n, Status: status, Message: "injected by the conformance program"})
	}
	return err
}

// DropResponseNext lets the next n requests of op reach the emulator and
// loses their replies in the provider's transport.
func (h *proxmoxHooks) DropResponseNext(_ context.Context, op string, n int) error {
	r, err := proxmoxRoute(op)
	if err == nil {
		h.tr.arm(h.tr.drop, r, n)
	}
	return err
}

// HangNext holds the next n requests of op in the provider's transport
// until the provider gives up on them.
func (h *proxmoxHooks) HangNext(_ context.Context, op string, n int) error {
	r, err := proxmoxRoute(op)
	if err == nil {
		h.tr.arm(h.tr.hang, r, n)
	}
	return err
}

// SetLatency sets the emulator's latency of op's route.
func (h *proxmoxHooks) SetLatency(_ context.Context, op string, d time.Duration) error {
	r, err := proxmoxRoute(op)
	if err == nil {
		h.emu.SetLatency(emulator.Latency{Route: r, Delay: d})
	}
	return err
}

// FailNextAction makes the next task of the action's type fail.
func (h *proxmoxHooks) FailNextAction(_ context.Context, action api.PowerAction) error {
	typ, ok := proxmoxTasks[action]
	if !ok {
		return conformance.ErrNotSupported
	}
	h.emu.FailNextTask(typ, "injected by the conformance program")
	return nil
}

// RateLimit is not supported: PVE has no rate limit.
func (h *proxmoxHooks) RateLimit(context.Context, time.Time) error {
	return conformance.ErrNotSupported
}

// APICalls sums the emulator's call counters.
func (h *proxmoxHooks) APICalls(context.Context) (int, error) {
	n := 0
	for _, c := range h.emu.CallCounts() {
		n += c
	}
	return n, nil
}

// Machines lists the emulator's VMs (templates are no machines); managed
// ones carry the tag and a key in their description.
func (h *proxmoxHooks) Machines(context.Context) ([]conformance.InventoryMachine, error) {
	var out []conformance.InventoryMachine
	for _, v := range h.emu.VMs() {
		if !v.Template {
			out = append(out, conformance.InventoryMachine{ID: strconv.Itoa(v.VMID), Name: v.Name,
				Managed: proxmox.IsManaged(strings.Join(v.Tags, ";"), v.Description)})
		}
	}
	return out, nil
}

// Seed adds stopped VMs named namePrefix-<vmid>, sparsely in the account's
// range: managed ones with the tag and a key of their own, the others as
// made in the PVE console.
func (h *proxmoxHooks) Seed(_ context.Context, n int, managed bool, namePrefix string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, n)
	for range n {
		// Stopped: a scale lane seeds thousands, and running guests' memory
		// would fill the nodes the lane's creates are placed on.
		spec := emulator.SeedSpec{Count: 1, FirstVMID: h.next, NamePrefix: namePrefix + "-", Tags: "console"}
		if managed {
			h.seq++
			spec.Tags, spec.Description = proxmox.ManagedTag, proxmox.ManagedDescription(fmt.Sprintf("%s-%d", namePrefix, h.seq), proxmoxOffer)
		}
		got, err := h.emu.SeedVMs(spec)
		if err != nil {
			return ids, err
		}
		h.next = got[0] + proxmoxSeedStride
		if h.next > proxmoxVMIDMax {
			return ids, fmt.Errorf("the proxmox fake's VMID range is full")
		}
		ids = append(ids, strconv.Itoa(got[0]))
	}
	return ids, nil
}

// Remove deletes VMs out of band.
func (h *proxmoxHooks) Remove(_ context.Context, ids []string) error {
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err == nil {
			_ = h.emu.DeleteVM(n)
		}
	}
	return nil
}

// faultTransport is the provider's HTTP transport in the fake: requests of
// an armed route hang until the provider gives up, or reach the emulator
// and lose their reply.
type faultTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	drop map[string]int
	hang map[string]int
}

// routePatterns match request paths to emulator routes.
var routePatterns = func() map[string]*regexp.Regexp {
	out := map[string]*regexp.Regexp{}
	for _, r := range proxmoxRoutes {
		method, path, _ := strings.Cut(r, " ")
		out[r] = regexp.MustCompile("^" + method + " /api2/json" + regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllString(path, `[^/]+`) + "$")
	}
	return out
}()

// arm adds n uses to route in counts.
func (t *faultTransport) arm(counts map[string]int, route string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts[route] += n
}

// take consumes one use armed in counts for req's route.
func (t *faultTransport) take(counts map[string]int, req *http.Request) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for route, re := range routePatterns {
		if counts[route] > 0 && re.MatchString(req.Method+" "+req.URL.Path) {
			counts[route]--
			return true
		}
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.take(t.hang, req) {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && t.take(t.drop, req) {
		_ = resp.Body.Close()
		return nil, errors.New("connection lost before the reply (dropped by the conformance program)")
	}
	return resp, err
}
