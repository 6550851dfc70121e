package proxmox

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// Test fixtures.
const (
	testTenant      = "acme"
	testSecretRef   = "env://PVE_TOKEN_SECRET"
	testTemplateID  = 9000
	testTemplate    = "ubuntu-24-04"
	testTemplate2ID = 9001
	testTemplate2   = "debian-12"
	testOffer       = "small"
	testNode        = emulator.DefaultNodeName
)

// testStart is when the fake clock starts.
var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testSecrets resolves testSecretRef to the emulator's token secret.
var testSecrets = providertest.Secrets{testSecretRef: emulator.DefaultTokenSecret}

// setup is what newEnv builds: emulator options, account config changes
// and provider options.
type setup struct {
	emu     emulator.Options
	config  map[string]any
	options []Option
}

// env is an emulator and a provider client talking to it.
type env struct {
	srv      *emulator.Server
	emu      *emulator.Emulator
	clock    *clock.Fake // the emulator's clock and the calls': waits advance it
	def      *provider.Defined
	client   *client
	acct     api.ProviderAccount
	log      *bustest.LogBuffer
	snippets *MemorySnippets
}

// testTemplates are the cluster's templates: a cloud-init Ubuntu with a
// network snippet and a Debian.
func testTemplates() []emulator.Template {
	return []emulator.Template{
		{VMID: testTemplateID, Name: testTemplate, DiskGiB: 10, Cores: 2, MemoryMiB: 2048, Tags: "base",
			Config: map[string]string{"ipconfig0": "ip=dhcp", "cicustom": "network=local:snippets/net.yaml"}},
		{VMID: testTemplate2ID, Name: testTemplate2, DiskGiB: 8, Cores: 1, MemoryMiB: 1024},
	}
}

// newEnv starts an emulator (fake clock at testStart, the test templates)
// and builds a client for it; mods change the setup first.
func newEnv(t testing.TB, mods ...func(*setup)) *env {
	t.Helper()
	fake := clock.NewFake(testStart)
	su := &setup{emu: emulator.Options{Clock: fake, Templates: testTemplates()}, config: map[string]any{}}
	for _, m := range mods {
		m(su)
	}
	srv, err := emulator.Start(su.emu)
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{srv: srv, emu: srv.Emulator(), clock: fake, log: &bustest.LogBuffer{}, snippets: &MemorySnippets{}}
	e.acct = api.ProviderAccount{ID: "pacct_01jq7g8v6k5m4n3p2r1s0t9w8x", TenantID: testTenant, Version: 1, Config: map[string]any{
		FieldURL: srv.URL(), FieldTokenID: emulator.DefaultTokenID, FieldTokenSecret: testSecretRef,
		FieldCACert: string(srv.CACertPEM()),
		FieldSizes: []any{
			map[string]any{"name": testOffer, "vcpu": 2, "memoryGiB": 4, "diskGiB": 20},
			map[string]any{"name": "large", "vcpu": 8, "memoryGiB": 32, "diskGiB": 80},
		},
	}}
	for k, v := range su.config {
		if v == nil {
			delete(e.acct.Config, k)
		} else {
			e.acct.Config[k] = v
		}
	}
	// Shared task polls off: their window would move the fake clock; see
	// the tests of shared polls (taskbatch_test.go).
	e.def = Definition(append([]Option{WithSnippetWriter(e.snippets.Write), WithTaskBatchWindow(0)}, su.options...)...)
	c, err := e.def.New(provider.BuildContext{Account: e.acct})
	if err != nil {
		t.Fatalf("build client: %v", err)
	}
	e.client = c.(*client)
	return e
}

// withDurations sets realistic task durations (seconds on the fake clock).
func withDurations(su *setup) {
	su.emu.TaskDurations = realisticDurations()
}

// realisticDurations are task durations of a small cluster with local
// LVM-thin storage.
func realisticDurations() map[string]time.Duration {
	return map[string]time.Duration{
		"qmclone": 20 * time.Second, "qmconfig": time.Second, "resize": 2 * time.Second,
		"qmstart": 3 * time.Second, "qmstop": 2 * time.Second, "qmshutdown": 8 * time.Second,
		"qmreset": time.Second, "qmreboot": 10 * time.Second, "qmdestroy": 5 * time.Second,
	}
}

// call is a provider call context for key, logging into e.log.
func (e *env) call(key string) *provider.Call {
	return &provider.Call{IdempotencyKey: key, Account: e.acct, Clock: e.clock, Secrets: testSecrets,
		Log: zerolog.New(e.log).Level(zerolog.DebugLevel)}
}

// spec is a machine spec of testOffer on the Ubuntu template.
func spec(name string) api.MachineSpec {
	return api.MachineSpec{Name: name, OfferID: testOffer, Image: testTemplate}
}

// create creates machine key (named key) and fails the test on error.
func (e *env) create(t testing.TB, key string) *api.ExternalMachine {
	t.Helper()
	return providertest.MustCreate(t, e.client, e.call(key), spec(key))
}

// mustGet gets id and fails the test on error.
func (e *env) mustGet(t testing.TB, id string) *api.ExternalMachine {
	t.Helper()
	return providertest.MustGet(t, e.client, e.call(""), id)
}

// vm returns the emulator's view of VM vmid, failing the test when absent.
func (e *env) vm(t testing.TB, vmid int) emulator.VMSnapshot {
	t.Helper()
	v, ok := e.emu.VM(vmid)
	if !ok {
		t.Fatalf("VM %d does not exist", vmid)
	}
	return v
}

// machines returns the emulator's non-template VMs.
func (e *env) machines() []emulator.VMSnapshot {
	var out []emulator.VMSnapshot
	for _, v := range e.emu.VMs() {
		if !v.Template {
			out = append(out, v)
		}
	}
	return out
}

// calls is the number of API requests since the last ResetCalls.
func (e *env) calls() int {
	n := 0
	for _, c := range e.emu.CallCounts() {
		n += c
	}
	return n
}

// seed adds out-of-band VMs at vmids (each taken at once) with tags and
// description.
func (e *env) seed(t testing.TB, tags, desc string, vmids ...int) {
	t.Helper()
	for _, id := range vmids {
		got, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: id, Tags: tags, Description: desc, Running: true})
		if err != nil || len(got) != 1 || got[0] != id {
			t.Fatalf("seed VM %d: %v, %v", id, got, err)
		}
	}
}

// mustList lists the account's machines (one page of up to 10) and fails
// the test on error.
func (e *env) mustList(t testing.TB) []api.ExternalMachine {
	t.Helper()
	items, _, err := e.client.List(context.Background(), e.call(""), "", 10)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return items
}
