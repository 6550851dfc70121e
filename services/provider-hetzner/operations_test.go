package hetzner

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
)

func TestDefinition(t *testing.T) {
	d := Definition()
	desc := d.Describe()
	if desc.ID != ProviderID || desc.Version != Version || strings.Join(desc.Provides, ",") != api.KindVPS ||
		strings.Join(desc.Capabilities, ",") != "power,reinstall,list,delete.byKey,ssh,labels,resize,metrics,"+
			"network.private,network.firewalls,network.publicIP,placement.spread,placement.locations" {
		t.Fatalf("description = %+v", desc)
	}
	cfg, err := provider.ValidateConfig(d.Manifest(), map[string]any{FieldToken: testTokenRef})
	if err != nil || cfg[FieldLocation] != DefaultLocation {
		t.Fatalf("config with defaults = %v, %v; want location %s", cfg, err, DefaultLocation)
	}
	if _, err := provider.ValidateConfig(d.Manifest(), map[string]any{}); api.AsComputeError(err).Path() != "config.token" {
		t.Errorf("missing token: %v, want INVALID_CONFIG at config.token", err)
	}
	if _, err := provider.ValidateConfig(d.Manifest(), map[string]any{FieldToken: testTokenRef, FieldLocation: "mars1"}); api.AsComputeError(err).Path() != "config.location" {
		t.Errorf("unknown location: %v, want INVALID_CONFIG at config.location", err)
	}
}

func TestOptionsValidated(t *testing.T) {
	cases := map[string]Option{
		"options.endpoint":     WithEndpoint("api.hetzner.cloud/v1"),
		"options.labelPrefix":  WithLabelPrefix("Not_A_Domain"),
		"options.pollInterval": WithPollInterval(0),
	}
	for path, opt := range cases {
		_, err := Definition(opt).New(provider.BuildContext{Account: testAccount()})
		if !api.IsCode(err, api.CodeInvalidConfig) || api.AsComputeError(err).Path() != path {
			t.Errorf("%s: build error %v, want INVALID_CONFIG at %s", path, err, path)
		}
	}
}

func TestPowerActions(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_p", "inst_p")
	e.clock.Advance(testActionDuration)
	cases := []struct {
		action   api.PowerAction
		endpoint string
		state    api.MachineState
	}{
		{api.ActionOff, "poweroff", api.StateStopped},
		{api.ActionOn, "poweron", api.StateRunning},
		{api.ActionGracefulRestart, "reboot", api.StateRunning},
		{api.ActionReset, "reset", api.StateRunning},
		{api.ActionCycle, "reset", api.StateRunning},
		{api.ActionGracefulOff, "shutdown", api.StateStopped},
	}
	for _, c := range cases {
		e.emu.ResetCalls()
		if err := e.client.Power(context.Background(), e.call(""), m.ID, c.action); err != nil {
			t.Fatalf("power %s: %v", c.action, err)
		}
		if n := e.emu.Calls("POST /servers/{id}/actions/" + c.endpoint); n != 1 {
			t.Errorf("power %s: %d calls of %s, want 1", c.action, n, c.endpoint)
		}
		if got := e.mustGet(t, m.ID).State; got != c.state {
			t.Errorf("after power %s the machine is %s, want %s", c.action, got, c.state)
		}
	}
}

func TestPowerNMIUnsupported(t *testing.T) {
	e := newEnv(t)
	e.emu.ResetCalls()
	providertest.WantCode(t, e.client.Power(context.Background(), e.call(""), "1", api.ActionNMI), api.CodeUnsupported)
	if n := e.calls(); n != 0 {
		t.Fatalf("nmi sent %d requests, want none", n)
	}
}

func TestFailedActionIsProviderError(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_f", "inst_f")
	e.clock.Advance(testActionDuration)
	e.emu.FailNextAction("stop_server", "action_failed", "the hypervisor refused")
	err := e.client.Power(context.Background(), e.call(""), m.ID, api.ActionOff)
	providertest.WantProviderError(t, err, 200, "action_failed")
	e.emu.FailNextAction("rebuild_server", "image_broken", "no")
	_, err = e.client.Reinstall(context.Background(), e.call(""), m.ID, "debian-12")
	providertest.WantProviderError(t, err, 200, "image_broken")
}

func TestAbsentServer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	m, err := e.client.Get(ctx, e.call(""), "4242")
	if err != nil || m != nil {
		t.Fatalf("get of a missing server = %v, %v; want nil, nil", m, err)
	}
	providertest.WantCode(t, e.client.Delete(ctx, e.call(""), "4242"), api.CodeNotFound)
	providertest.WantCode(t, e.client.Power(ctx, e.call(""), "4242", api.ActionOn), api.CodeNotFound)
	_, err = e.client.Reinstall(ctx, e.call(""), "4242", "debian-12")
	providertest.WantCode(t, err, api.CodeNotFound)
	_, err = e.client.Get(ctx, e.call(""), "web-1")
	if api.AsComputeError(err).Path() != "id" {
		t.Fatalf("get of a non-numeric id = %v, want INVALID_INPUT at id", err)
	}
}

func TestDeleteReturnsWhenAccepted(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_d", "inst_d")
	e.clock.Advance(testActionDuration)
	e.emu.ResetCalls()
	if err := e.client.Delete(context.Background(), e.call(""), m.ID); err != nil {
		t.Fatal(err)
	}
	if n := e.calls(); n != 1 {
		t.Fatalf("delete sent %d requests, want 1", n)
	}
	if got := e.mustGet(t, m.ID).State; got != api.StateDeleting {
		t.Fatalf("state after delete = %s, want deleting", got)
	}
	e.clock.Advance(testActionDuration)
	if got := e.mustGet(t, m.ID); got != nil {
		t.Fatalf("server still there after its delete action: %+v", got)
	}
}

func TestReinstall(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_r", "inst_r")
	e.clock.Advance(testActionDuration)
	got, err := e.client.Reinstall(context.Background(), e.call(""), m.ID, "debian-12")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.State != api.StateRunning {
		t.Fatalf("reinstall returned %+v, want server %s running", got, m.ID)
	}
	if img := e.emu.Servers()[0].Image; img != "debian-12" {
		t.Fatalf("image after reinstall = %q, want debian-12", img)
	}
}

func TestCreateShape(t *testing.T) {
	e := newEnv(t)
	m, err := e.client.Create(context.Background(), e.call("inst_01JQ"), api.MachineSpec{
		Name: "inst_01JQ", OfferID: "cx23", Image: "ubuntu-24.04", Region: "hel1", UserData: "#cloud-config\n"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "inst-01jq" || m.State != api.StatePending || m.OfferID != "cx23" || m.Region != "hel1" || len(m.Addresses) != 2 {
		t.Fatalf("created machine = %+v", m)
	}
	labels := e.emu.Servers()[0].Labels
	if labels[testPrefix+"/managed"] != "true" || labels[testPrefix+"/idempotency-key"] != "inst_01JQ" {
		t.Fatalf("labels = %v", labels)
	}
}

// SSH public keys travel in the user data (cloud-init), never as project
// SSH key resources.
func TestCreateOptsCarrySSHKeysInUserData(t *testing.T) {
	c := &client{location: "fsn1", labels: newLabels(testPrefix)}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host"
	opts := c.createOpts("k1", api.MachineSpec{Name: "web_1", OfferID: "cx23", Image: "ubuntu-24.04", SSHKeys: []string{key}})
	if len(opts.SSHKeys) != 0 || opts.UserData != provider.UserDataWithSSHKeys("", []string{key}) || !strings.Contains(opts.UserData, key) {
		t.Fatalf("ssh keys: %d key resources, user data %q", len(opts.SSHKeys), opts.UserData)
	}
	if opts.Name != "web-1" || opts.Location.Name != "fsn1" || opts.Labels[testPrefix+"/idempotency-key"] != "k1" {
		t.Fatalf("opts: %+v", opts)
	}
}

func TestCreateLongKeyIsHashed(t *testing.T) {
	e := newEnv(t)
	key := strings.Repeat("k", 100)
	first := e.create(t, key, "long")
	if again := e.create(t, key, "long"); again.ID != first.ID {
		t.Fatalf("second create of a long key made server %s, want %s", again.ID, first.ID)
	}
	if v := e.emu.Servers()[0].Labels[testPrefix+"/idempotency-key"]; v != KeyLabelValue(key) {
		t.Fatalf("key label = %q, want %q", v, KeyLabelValue(key))
	}
}

func TestOffers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	offers, err := e.client.ListOffers(ctx, e.call(""), api.OfferQuery{})
	if err != nil {
		t.Fatal(err)
	}
	cx23, ok := offerByID(offers, "cx23")
	if !ok || cx23.Kind != api.KindVPS || cx23.Region != "fsn1" || cx23.Vcpu != 2 || cx23.MemoryGiB != 4 ||
		cx23.DiskGiB != 40 || cx23.Currency != "EUR" || !cx23.Available || cx23.PricePerHour == nil || cx23.Architecture != api.ArchAMD64 ||
		math.Abs(*cx23.PricePerHour-0.006664) > 1e-9 {
		t.Fatalf("cx23 = %+v", cx23)
	}
	if cax, ok := offerByID(offers, "cax11"); !ok || cax.Architecture != api.ArchARM64 {
		t.Errorf("cax11 = %+v, want an arm64 offer", cax)
	}
	if _, ok := offerByID(offers, "cx22"); ok {
		t.Error("deprecated cx22 is offered")
	}
	sin, err := e.client.ListOffers(ctx, e.call(""), api.OfferQuery{Region: "sin", MinVcpu: 16, MinMemoryGiB: 32})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sin {
		if o.Vcpu < 16 || o.MemoryGiB < 32 || o.Region != "sin" || strings.HasPrefix(o.ID, "cax") || o.ID == "ccx63" {
			t.Errorf("offer %+v does not fit the query or is not sold in sin", o)
		}
	}
	if _, ok := offerByID(sin, "cx53"); !ok {
		t.Error("cx53 (listed in sin, sold out) is missing")
	}
	e.emu.ResetCalls()
	for _, q := range []api.OfferQuery{{GPUs: 1}, {Kind: api.KindMetal}} {
		got, err := e.client.ListOffers(ctx, e.call(""), q)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("query %+v = %v, %v; want no offers", q, got, err)
		}
	}
	if n := e.calls(); n != 0 {
		t.Errorf("GPU and metal queries sent %d requests, want none", n)
	}
}

func TestListPagesByLimit(t *testing.T) {
	e := newEnv(t)
	managed := e.emu.SeedServers(53, "m", map[string]string{testPrefix + "/managed": "true"})
	got, _ := providertest.ListAll(t, e.client, e.call, 7, 20)
	if len(got) != len(managed) {
		t.Fatalf("listed %d servers, want %d", len(got), len(managed))
	}
	for i, id := range managed {
		if got[i].ID != strconv.FormatInt(id, 10) {
			t.Fatalf("item %d = %s, want %d", i, got[i].ID, id)
		}
	}
	_, _, err := e.client.List(context.Background(), e.call(""), "page-two", 10)
	if api.AsComputeError(err).Path() != "cursor" {
		t.Fatalf("bad cursor: %v, want INVALID_INPUT at cursor", err)
	}
}

func TestTokenStaysSecret(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_s", "inst_s")
	e.emu.FailNext("GET /servers/{id}", 1, 401, "unauthorized", "unable to authenticate")
	_, err := e.client.Get(context.Background(), e.call(""), m.ID)
	providertest.WantProviderError(t, err, 401, "unauthorized")
	if strings.Contains(err.Error(), testToken) {
		t.Fatal("the token appears in an error")
	}
	logs := e.log.String()
	if strings.Contains(logs, testToken) {
		t.Fatal("the token appears in the log")
	}
	if !strings.Contains(logs, `"http_calls":2`) { // provider.Serve adds the tenant and account
		t.Fatalf("log lines lack the call count: %s", logs)
	}
}

func TestBadTokenValue(t *testing.T) {
	e := newEnv(t)
	call := e.call("")
	call.Secrets = resolverFunc(func(context.Context, string) (string, error) { return "two words", nil })
	_, err := e.client.Get(context.Background(), call, "1")
	if !api.IsCode(err, api.CodeInvalidConfig) || api.AsComputeError(err).Path() != "config.token" || strings.Contains(err.Error(), "two words") {
		t.Fatalf("bad token: %v, want INVALID_CONFIG at config.token without the value", err)
	}
}

type resolverFunc func(context.Context, string) (string, error)

func (f resolverFunc) Resolve(ctx context.Context, ref string) (string, error) { return f(ctx, ref) }

func TestUnreachableAPI(t *testing.T) {
	e := newEnv(t)
	_ = e.srv.Close()
	_, err := e.client.Get(context.Background(), e.call(""), "1")
	providertest.WantProviderError(t, err, 0, codeUnreachable)
}

func TestWaitHonoursContext(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_w", "inst_w")
	e.clock.Advance(testActionDuration)
	ctx, cancel := context.WithCancel(context.Background())
	call := e.call("")
	call.Clock = blockedClock{e.clock, cancel}
	providertest.WantCode(t, e.client.Power(ctx, call, m.ID, api.ActionOff), api.CodeUnavailable)
}

// blockedClock never fires After; it ends the call's context instead.
type blockedClock struct {
	*clock.Fake
	cancel context.CancelFunc
}

func (c blockedClock) After(time.Duration) <-chan time.Time {
	c.cancel()
	return make(chan time.Time)
}

func TestCallCounter(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	e := newEnv(t, WithCallCounter(func(op string, n int) {
		mu.Lock()
		defer mu.Unlock()
		counts[op] += n
	}))
	m := e.create(t, "inst_c", "inst_c")
	e.mustGet(t, m.ID)
	mu.Lock()
	defer mu.Unlock()
	if counts[provider.VerbCreate] != 2 || counts[provider.VerbGet] != 1 {
		t.Fatalf("counted %v, want create 2 and get 1", counts)
	}
}

// TestPlainErrorReplies covers error replies without a JSON body (as a
// proxy in front of the API may send): hcloud-go then knows no code.
func TestPlainErrorReplies(t *testing.T) {
	var status atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", int(status.Load()))
	}))
	t.Cleanup(plain.Close)
	e := newEnv(t, WithEndpoint(plain.URL+"/v1"))
	ctx := context.Background()

	status.Store(http.StatusNotFound)
	if m, err := e.client.Get(ctx, e.call(""), "7"); m != nil || err != nil {
		t.Errorf("get on a plain 404 = %v, %v; want nil, nil", m, err)
	}
	providertest.WantCode(t, e.client.Delete(ctx, e.call(""), "7"), api.CodeNotFound)
	status.Store(http.StatusServiceUnavailable)
	_, err := e.client.Get(ctx, e.call(""), "7")
	providertest.WantProviderError(t, err, http.StatusServiceUnavailable, "")
	status.Store(http.StatusTooManyRequests)
	_, err = e.client.Get(ctx, e.call(""), "7")
	if ce := providertest.WantCode(t, err, api.CodeRateLimited); ce.RetryAfter() != time.Second {
		t.Errorf("429 without RateLimit-Reset: retryAfter %v, want 1s", ce.RetryAfter())
	}
}

// A create the API refuses as invalid input names the refused field and
// why, so the caller knows which value to change.
func TestInvalidInputNamesTheField(t *testing.T) {
	e := newEnv(t)
	_, err := e.client.Create(context.Background(), e.call("inst_badimage"),
		api.MachineSpec{Name: "web-1", OfferID: "cx23", Image: "ubuntu-99.04"})
	ce := providertest.WantProviderError(t, err, 422, "invalid_input")
	if !strings.Contains(ce.Message, "image (") {
		t.Fatalf("message %q does not name the image field", ce.Message)
	}
}
