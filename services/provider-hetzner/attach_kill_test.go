package hetzner

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// Environment of TestAttachChildProcess: the NATS URL, the emulator's API
// endpoint and the directory of its kill markers.
const (
	attachChildEnv    = "COMPUTE_TEST_HETZNER_ATTACH_CHILD_NATS"
	attachChildAPIEnv = "COMPUTE_TEST_HETZNER_ATTACH_CHILD_API"
	attachChildDirEnv = "COMPUTE_TEST_HETZNER_ATTACH_CHILD_DIR"
)

// killAroundAttach is the child's HTTP transport: it SIGKILLs the process
// at its first attach_to_network request before sending it, and at the
// next one right after the API accepted it (the action still running);
// a marker file in dir records each kill, so a process started again goes
// past it.
type killAroundAttach struct {
	base http.RoundTripper
	dir  string
}

// RoundTrip implements http.RoundTripper.
func (k killAroundAttach) RoundTrip(req *http.Request) (*http.Response, error) {
	attach := strings.HasSuffix(req.URL.Path, "/actions/attach_to_network")
	if attach {
		k.killOnce("before")
	}
	resp, err := k.base.RoundTrip(req)
	if attach && err == nil && resp.StatusCode == http.StatusCreated {
		k.killOnce("after")
	}
	return resp, err
}

// killOnce kills the process unless the marker point exists, creating it.
func (k killAroundAttach) killOnce(point string) {
	marker := filepath.Join(k.dir, point)
	if _, err := os.Stat(marker); err == nil {
		return
	}
	if err := os.WriteFile(marker, nil, 0o600); err == nil {
		bustest.KillSelf()
	}
}

// TestAttachChildProcess is not a test: it is the provider process
// TestRangedAttachSurvivesKills starts, serving hetzner-cloud on the bus
// against the parent's emulator, and killing itself around its attach
// (killAroundAttach).
func TestAttachChildProcess(t *testing.T) {
	nc, _ := bustest.ChildConnect(t, attachChildEnv, "hetzner-attach-child", "TestRangedAttachSurvivesKills")
	def := Definition(WithEndpoint(os.Getenv(attachChildAPIEnv)), WithPollInterval(20*time.Millisecond),
		WithHTTPClient(&http.Client{Transport: killAroundAttach{base: http.DefaultTransport, dir: os.Getenv(attachChildDirEnv)}}))
	if _, err := provider.Serve(nc, def, provider.ServeOptions{Resolver: func(string) provider.SecretResolver { return testSecrets }}); err != nil {
		t.Fatal(err)
	}
	select {} // until it kills itself, or the test kills it
}

// Kill test: the provider process is SIGKILLed in the middle of a create
// whose network has an ipRange, once before its attach_to_network is sent
// and once after the API accepted it, and started again each time; the
// caller retries the create of the key, as the reconciler does. The end
// is one server, attached once, with its address in the ipRange, and a
// create answered only once the attach action ended (actions run longer
// than a restart takes, so the last process finds it running).
func TestRangedAttachSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills provider processes")
	}
	srv, err := emulator.Start(emulator.Options{Tokens: []string{testToken}, ActionDuration: time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	emu := srv.Emulator()
	netID := emu.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	nats, dir := bustest.Start(t), t.TempDir()
	child := &bustest.Child{Test: "TestAttachChildProcess",
		Env: []string{attachChildEnv + "=" + nats.URL, attachChildAPIEnv + "=" + srv.URL(), attachChildDirEnv + "=" + dir}}
	r := provider.Remote{NC: nats.NC, ID: ProviderID}
	spec := api.MachineSpec{Name: "db-1", OfferID: "cx23", Image: "ubuntu-24.04",
		Network: &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "backend", IPRange: "10.0.2.0/24"}}}}

	var m *api.ExternalMachine
	failed := 0
	for attempt := 0; m == nil; attempt++ {
		if attempt > 5 {
			t.Fatalf("no create answered after %d attempts; servers %+v", attempt, emu.Servers())
		}
		child.Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		go func() { // a dead provider answers nothing: stop waiting
			select {
			case <-child.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		m, err = createWhenServed(ctx, r, api.ProviderCreateRequest{Account: testAccount(), IdempotencyKey: "inst_kill",
			FirstAttempt: attempt == 0, Machine: spec})
		cancel()
		if err != nil {
			t.Logf("attempt %d: %v", attempt, err)
			child.WaitKilled(t, 10*time.Second)
			failed++
		}
	}
	child.Kill()
	hc := hcloud.NewClient(hcloud.WithEndpoint(srv.URL()), hcloud.WithToken(testToken))
	if got, _, err := hc.Server.GetByID(context.Background(), mustID(t, m.ID)); err != nil || got == nil || got.Locked {
		t.Fatalf("server when the create answered: %+v (%v), want it unlocked: create answers once the attach ended", got, err)
	}
	if markers, _ := os.ReadDir(dir); len(markers) != 2 || failed != 2 {
		t.Fatalf("the provider killed itself %d times, %d creates failed; want 2 each (before and after the attach)", len(markers), failed)
	}
	servers := emu.Servers()
	if len(servers) != 1 || servers[0].PrivateIP(netID) != "10.0.2.1" {
		t.Fatalf("servers = %+v, want one with 10.0.2.1 in network %d", servers, netID)
	}
	if got := emu.CallCounts(); got[emulator.RouteAttachToNetwork] != 1 || got["POST /servers"] != 1 {
		t.Fatalf("calls = %v, want one POST /servers and one attach (the first kill came before it was sent)", got)
	}
	if !slices.Contains(m.Addresses, "10.0.2.1") {
		t.Fatalf("machine = %+v, want the address 10.0.2.1", m)
	}
}

// createWhenServed sends req once the provider answers on the bus (a
// child just started may not have subscribed yet: no responders).
func createWhenServed(ctx context.Context, r provider.Remote, req api.ProviderCreateRequest) (*api.ExternalMachine, error) {
	for {
		m, err := r.CreateRequest(ctx, req)
		if ce := api.AsComputeError(err); err == nil || ce.Code != api.CodeUnavailable || ctx.Err() != nil ||
			!strings.Contains(ce.Message, "no service answers") {
			return m, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
