package reconciler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	robot "better-compute.io/compute/services/provider-hetzner-robot"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// Robot fixtures of the bootstrap tests.
const (
	robotUserRef = "env://ROBOT_USER"
	robotPassRef = "env://ROBOT_PASSWORD"
	robotImage   = "/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz"
)

// robotWorld is an access world with the Robot emulator (servers 101 and
// 102 free, 103 named by someone else), the hetzner-robot provider on the
// bus, its account and a metal-host pool with a configure step.
type robotWorld struct {
	*accessWorld
	emu     *emulator.Emulator
	account api.Account
	poolID  string
}

func newRobotWorld(t testing.TB, opts Options, what ...start) *robotWorld {
	t.Helper()
	return newRobotWorldBooting(t, opts, 0, what...)
}

// newRobotWorldBooting is newRobotWorld whose servers' systems answer SSH
// bootDelay after each reset (emulator.Options.BootDelay).
func newRobotWorldBooting(t testing.TB, opts Options, bootDelay time.Duration, what ...start) *robotWorld {
	t.Helper()
	w := &robotWorld{accessWorld: newAccessWorld(t, opts, what...)}
	srv, err := emulator.Start(emulator.Options{User: "robot", Password: "robot-pass", SSH: w.fleet, BootDelay: bootDelay},
		"127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	w.emu = srv.Emulator()
	for _, s := range []emulator.ServerSpec{{Number: 101}, {Number: 102, Product: "AX52"}, {Number: 103, Name: "db-primary"}} {
		if err := w.emu.AddServer(s); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := provider.Serve(w.env.NC, robot.Definition(robot.WithEndpoint(srv.URL())), provider.ServeOptions{Logger: zerolog.Nop(),
		Resolver: func(string) provider.SecretResolver {
			return providertest.Secrets{robotUserRef: "robot", robotPassRef: "robot-pass"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	signer, err := ssh.ParsePrivateKey([]byte(w.keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	w.account = api.Account{ID: api.NewID(api.PrefixAccount), TenantID: tenant, Provider: robot.ProviderID, Name: "robot", Version: 1,
		Config: map[string]any{robot.FieldUser: robotUserRef, robot.FieldPassword: robotPassRef, robot.FieldSSHPublicKey: pub,
			robot.FieldKeyName: robot.DefaultKeyName}}
	ctx := context.Background()
	if _, err := w.env.Stores.AccountTable().Create(ctx, tenant, w.account.ID, w.account); err != nil {
		t.Fatal(err)
	}
	a := api.PoolAccess{User: "root", PrivateKey: w.keyRef, Configure: &api.AccessStep{Script: "echo joined $COMPUTE_INSTANCE_ID"}}
	pool := api.Pool{ID: api.NewID(api.PrefixPool), TenantID: tenant, Class: api.PoolClassMetalHost, ProviderAccountID: w.account.ID,
		Agent: api.PoolAgentNone, Version: 1, Access: &a, Flavors: []api.Flavor{{Name: "metal", OfferID: "EX44", Image: robotImage}}}
	if _, err := w.env.Stores.PoolTable().Create(ctx, tenant, pool.ID, pool); err != nil {
		t.Fatal(err)
	}
	w.poolID = pool.ID
	return w
}

// bootstrap sends accounts.bootstrap for server n.
func (w *robotWorld) bootstrap(n int) (*api.Instance, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var inst api.Instance
	err := bus.Call(ctx, w.env.NC, bus.Command(tenant, bus.ResourceAccounts, "bootstrap"),
		api.AccountBootstrapRequest{AccountID: w.account.ID, PoolID: w.poolID, ServerNumber: n, Image: robotImage}, &inst)
	return &inst, err
}

// writes is the emulator's calls that change something (not GETs), in order.
func (w *robotWorld) writes() []string {
	var out []string
	for _, c := range w.emu.Calls() {
		if !strings.HasPrefix(c, "GET ") {
			out = append(out, c)
		}
	}
	return out
}

// commands is what ran over SSH on server n's rescue (rescue true) or
// installed system, as "user: command" lines.
func (w *robotWorld) commands(n int, rescue bool) []string {
	var out []string
	for _, r := range w.emu.Machine(n, rescue).Runs() {
		line := r.User + ": " + r.Command
		if r.Script != "" {
			line += " <<" + strings.TrimSpace(r.Script[strings.LastIndex(strings.TrimSpace(r.Script), "\n")+1:])
		}
		out = append(out, line)
	}
	return out
}

// wantPrefixes fails unless got[i] starts with want[i] for every i (and
// the lengths match).
func wantPrefixes(t testing.TB, what string, got, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Fatalf("%s:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// bootstrapWrites are the Robot writes of one bootstrap of server 101.
func bootstrapWrites(inst string) []string {
	return []string{
		"POST /server/101 server_name=compute:" + inst,                                                         // claim
		"POST /key name=better-compute",                                                                        // the platform's key
		"DELETE /boot/101/rescue", "POST /boot/101/rescue os=linux authorized_key=", "POST /reset/101 type=hw", // rescue
		"POST /reset/101 type=hw", // reboot into the installed system
	}
}

// TestBootstrapEndToEnd: claim → rescue → reset → install → reboot →
// configure → ready → release, through the bus, every Robot write and
// SSH command asserted in order; the rescue and the installed system
// are pinned with their own host keys.
func TestBootstrapEndToEnd(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Name != "bm-101" || inst.Bootstrap == nil || inst.Bootstrap.ServerNumber != 101 || inst.Image != robotImage {
		t.Fatalf("bootstrap reply = %+v", inst)
	}
	got := w.waitConfigured(inst.ID)
	b := got.Status.Bootstrap
	if b == nil || b.Step != api.BootstrapReady || b.Rescues != 1 || b.Installs != 1 || got.Status.Machine.ID != "101" {
		status, _ := json.MarshalIndent(got.Status, "", "  ")
		t.Fatalf("status:\n%s", status)
	}
	osKey := ssh.FingerprintSHA256(w.emu.Machine(101, false).HostKey())
	rescueKey := ssh.FingerprintSHA256(w.emu.Machine(101, true).HostKey())
	if got.Status.Access.HostKey != osKey || b.RescueHostKey != rescueKey || osKey == rescueKey {
		t.Fatalf("pins: system %s (want %s), rescue %s (want %s)", got.Status.Access.HostKey, osKey, b.RescueHostKey, rescueKey)
	}
	wantPrefixes(t, "Robot writes", w.writes(), bootstrapWrites(inst.ID))
	wantPrefixes(t, "rescue system commands", w.commands(101, true), []string{
		"root: hostname", // WaitRescue
		"root: hostname", // Install: still the rescue system
		"root: " + DefaultInstallImage + " -a -n bm-101 -i " + robotImage + " -t yes -G yes -r yes -l 1",
	})
	wantPrefixes(t, "installed system commands", w.commands(101, false), []string{
		"root: hostname", // WaitSystem
		"root: sh -s -- " + inst.ID + " 1 <<echo joined", // configure
	})
	if name, ok := w.emu.Installed(101); !ok || name != "bm-101" {
		t.Fatalf("installed %q %v", name, ok)
	}

	if err := w.call("delete", api.IDRequest{ID: inst.ID}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitGone(inst.ID)
	wantPrefixes(t, "Robot writes after the release", w.writes(), append(bootstrapWrites(inst.ID),
		"DELETE /boot/101/rescue", "POST /server/101 server_name=")) // release: disarm, un-claim; never a cancellation
	if w.emu.Booted(101) != "disk" {
		t.Fatal("the release touched the installed system")
	}
}

// TestBootstrapNotOurs: a server named by someone else is never touched:
// the instance fails with ACCESS_DENIED and no write reaches it.
func TestBootstrapNotOurs(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	inst, err := w.bootstrap(103)
	if err != nil {
		t.Fatal(err)
	}
	got := w.waitPhase(inst.ID, api.PhaseFailed)
	if c := condition(got, api.ConditionProviderError); c == nil || c.Reason != api.ReasonOf(api.CodeAccessDenied) {
		t.Fatalf("conditions %+v, want ProviderError ACCESS_DENIED", got.Status.Conditions)
	}
	if writes := w.writes(); len(writes) != 0 {
		t.Fatalf("writes reached the webservice: %v", writes)
	}
	if len(w.emu.Machine(103, false).Runs()) != 0 || len(w.emu.Machine(103, true).Runs()) != 0 {
		t.Fatal("SSH reached server 103")
	}
}

// TestBootstrapReinstall: a host's reinstall is the bootstrap sequence
// again (drain, rescue, reset, install with the new image, reboot,
// configure for the new generation), the new system's host key pinned.
func TestBootstrapReinstall(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	first := w.waitConfigured(inst.ID)
	const image2 = "/root/.oldroot/nfs/images/Debian-1203-bookworm-amd64-base.tar.gz"
	if err := w.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: image2}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "reinstalled", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && i.Status.Phase == api.PhaseRunning && i.Generation == 2 && c != nil && c.State == api.StepSucceeded
	})
	if got.Image != image2 || got.Status.Bootstrap.Installs != 1 || got.Status.Access.HostKey == first.Status.Access.HostKey {
		t.Fatalf("after the reinstall: image %s, bootstrap %+v, pin %s (was %s)", got.Image, got.Status.Bootstrap,
			got.Status.Access.HostKey, first.Status.Access.HostKey)
	}
	again := bootstrapWrites(inst.ID)[1:] // the key is posted again (409: stored already), no second claim
	wantPrefixes(t, "Robot writes", w.writes(), append(bootstrapWrites(inst.ID), again...))
	if n := w.installRuns(101); n != 2 {
		t.Fatalf("installimage ran %d times, want 2", n)
	}
}

// TestBootstrapReinstallImageChecked: a host's reinstall image becomes a
// word of installimage's command line: one with shell metacharacters is
// refused at the API (INVALID_INPUT, path image).
func TestBootstrapReinstallImageChecked(t *testing.T) {
	w := newRobotWorld(t, fastOptions(), startAPI)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	err = w.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "/x.tar.gz; reboot"}, &api.Instance{})
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "image" {
		t.Fatalf("reinstall with a shell word = %v, want INVALID_INPUT at image", err)
	}
}

// TestBootstrapKeyMissingIsACondition: a bootstrap into a pool whose
// access.privateKey names a secret that does not exist (one deleted while
// the pool was written) takes no step: after the claim no rescue boot,
// no reset and no SSH reach the server, and the instance shows why, a
// ProviderError condition NOT_FOUND naming the reference, retried with
// backoff (not Failed).
func TestBootstrapKeyMissingIsACondition(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	missing := "secret://" + tenant + "/" + api.NewID(api.PrefixSecret)
	pool, _, err := w.env.Stores.PoolTable().Get(context.Background(), tenant, w.poolID)
	if err != nil {
		t.Fatal(err)
	}
	a := *pool.Access
	a.PrivateKey = missing
	pool.ID, pool.Access = api.NewID(api.PrefixPool), &a
	if _, err := w.env.Stores.PoolTable().Create(context.Background(), tenant, pool.ID, pool); err != nil {
		t.Fatal(err)
	}
	w.poolID = pool.ID
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "ProviderError NOT_FOUND", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && c != nil && c.Status == api.ConditionTrue && c.Reason == api.ReasonOf(api.CodeNotFound)
	})
	c := condition(got, api.ConditionProviderError)
	if !strings.Contains(c.Message, "access.privateKey "+missing) || c.RetryAt == nil || got.Status.Phase == api.PhaseFailed {
		status, _ := json.MarshalIndent(got.Status, "", "  ")
		t.Fatalf("want a retried ProviderError naming access.privateKey %s; status:\n%s", missing, status)
	}
	if ready := condition(got, api.ConditionReady); ready == nil || ready.Status != api.ConditionFalse || ready.Reason != c.Reason {
		t.Fatalf("Ready = %+v, want False %s", ready, c.Reason)
	}
	for _, call := range w.writes() {
		if strings.Contains(call, "/boot/") || strings.Contains(call, "/reset/") {
			t.Fatalf("a step was taken without the key: Robot writes %v", w.writes())
		}
	}
	if b := got.Status.Bootstrap; b != nil {
		t.Fatalf("bootstrap status %+v, want none: no step recorded", b)
	}
	if n := len(w.emu.Machine(101, true).Runs()) + len(w.emu.Machine(101, false).Runs()); n != 0 {
		t.Fatalf("%d SSH commands reached server 101", n)
	}
}

// TestBootstrapIdempotencyKeyChecked: accounts.bootstrap refuses an
// idempotency key instances.create refuses, with the same error
// (INVALID_INPUT at idempotencyKey), and claims nothing.
func TestBootstrapIdempotencyKeyChecked(t *testing.T) {
	w := newRobotWorld(t, fastOptions(), startAPI)
	key := strings.Repeat("k", 5000)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bootErr := bus.Call(ctx, w.env.NC, bus.Command(tenant, bus.ResourceAccounts, "bootstrap"),
		api.AccountBootstrapRequest{AccountID: w.account.ID, PoolID: w.poolID, ServerNumber: 101, Image: robotImage,
			IdempotencyKey: key}, &api.Instance{})
	createErr := w.call("create", api.InstanceCreateRequest{PoolID: w.poolID, Flavor: "metal", IdempotencyKey: key}, &api.Instance{})
	for what, err := range map[string]error{"accounts.bootstrap": bootErr, "instances.create": createErr} {
		if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidInput || ce.Path() != "idempotencyKey" {
			t.Errorf("%s with a %d-character key = %v, want INVALID_INPUT at idempotencyKey", what, len(key), err)
		}
	}
	if bootErr != nil && createErr != nil && bootErr.Error() != createErr.Error() {
		t.Errorf("errors differ: bootstrap %q, create %q", bootErr, createErr)
	}
	if writes := w.writes(); len(writes) != 0 {
		t.Fatalf("writes reached the webservice: %v", writes)
	}
}

// TestBootstrapKeyOutageIsResolved: a bootstrap started while no
// secrets service answers records ProviderError UNAVAILABLE naming
// access.privateKey; once the key resolves again and a step is taken, the
// condition is resolved at once (not when the whole sequence is Ready),
// and Ready no longer gives the outage as its reason.
func TestBootstrapKeyOutageIsResolved(t *testing.T) {
	w := newRobotWorldBooting(t, fastOptions(), 2*time.Second)
	w.stopSecrets()
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	unavailable := api.ReasonOf(api.CodeUnavailable)
	got := w.waitFor(inst.ID, "ProviderError UNAVAILABLE", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && c != nil && c.Status == api.ConditionTrue && c.Reason == unavailable
	})
	if c := condition(got, api.ConditionProviderError); !strings.Contains(c.Message, "access.privateKey "+w.keyRef) {
		t.Fatalf("ProviderError %+v, want one naming access.privateKey %s", c, w.keyRef)
	}
	w.startSecrets()
	// The rescue system takes BootDelay to answer: the sequence waits in
	// WaitRescue (or later) well before it is Ready.
	got = w.waitFor(inst.ID, "a bootstrap step taken after the outage", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Bootstrap != nil && i.Status.Bootstrap.Step != api.BootstrapRescue
	})
	if b := got.Status.Bootstrap; b.Step == api.BootstrapReady {
		t.Fatalf("bootstrap already Ready (%+v): the test needs a step before Ready", b)
	}
	c, ready := condition(got, api.ConditionProviderError), condition(got, api.ConditionReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != api.ReasonResolved {
		status, _ := json.MarshalIndent(got.Status, "", "  ")
		t.Fatalf("ProviderError after a step taken with the key resolved: %+v, want False Resolved; status:\n%s", c, status)
	}
	if ready == nil || ready.Status != api.ConditionFalse || ready.Reason == unavailable {
		t.Fatalf("Ready %+v while bootstrapping after the outage: want False, not the outage's reason", ready)
	}
}
