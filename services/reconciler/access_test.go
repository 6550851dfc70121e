package reconciler

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"golang.org/x/crypto/ssh"

	"better-compute.io/compute/pkg/access"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/sshemu"
	"better-compute.io/compute/services/secrets"
	"better-compute.io/compute/services/secrets/seal"
)

// accessWorld is a harness whose memory machines have SSH endpoints, with
// the secrets service holding the platform's private key.
type accessWorld struct {
	*harness
	fleet *sshemu.Fleet
	// keyPEM and seed are the private key as stored and its raw seed: the
	// leak scan looks for both.
	keyPEM, seed string
	keyRef       string
	logs         *bustest.LogBuffer
	// keyring and secrets are the secrets service's (stopSecrets and
	// startSecrets make an outage).
	keyring *seal.Keyring
	secrets *bus.Service
}

// newAccessWorld starts a harness (what as for newHarness), an SSH fleet
// for its cloud and the secrets service, and stores the platform's key.
func newAccessWorld(t testing.TB, opts Options, what ...start) *accessWorld {
	t.Helper()
	logs := &bustest.LogBuffer{}
	opts.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	h := newHarness(t, opts, what...)
	w := &accessWorld{harness: h, fleet: sshemu.NewFleet(zerolog.New(logs)), logs: logs}
	t.Cleanup(w.fleet.Close)
	h.cloud.SetSSH(w.fleet)
	kr, err := seal.NewKeyring(seal.Key{ID: "k1", Bytes: bytes.Repeat([]byte{7}, seal.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	w.keyring = kr
	w.startSecrets()
	t.Cleanup(w.stopSecrets)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	w.keyPEM, w.seed = string(pem.EncodeToMemory(block)), string(priv.Seed())
	var sec api.Secret
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.Call(ctx, h.env.NC, bus.Command(tenant, bus.ResourceSecrets, "put"), api.SecretPutRequest{Name: "platform-ssh", Value: w.keyPEM}, &sec); err != nil {
		t.Fatal(err)
	}
	w.keyRef = sec.Ref
	return w
}

// startSecrets starts the secrets service (after stopSecrets: the outage
// ends).
func (w *accessWorld) startSecrets() {
	w.t.Helper()
	svc, err := secrets.Start(w.env.NC, w.env.Stores, secrets.Options{Keyring: w.keyring, Logger: zerolog.New(w.logs)})
	if err != nil {
		w.t.Fatal(err)
	}
	w.secrets = svc
}

// stopSecrets stops the secrets service: no service answers
// compute.internal.secrets.resolve until startSecrets.
func (w *accessWorld) stopSecrets() {
	if w.secrets != nil {
		_ = w.secrets.Stop()
		w.secrets = nil
	}
}

// pool writes a pool of the harness's account with access a (its key the
// stored one) and returns its id.
func (w *accessWorld) pool(a api.PoolAccess) string {
	w.t.Helper()
	return w.poolWithKey(a, w.keyRef)
}

// poolWithKey is pool with the private key ref.
func (w *accessWorld) poolWithKey(a api.PoolAccess, ref string) string {
	w.t.Helper()
	return w.poolWith(a, ref, nil)
}

// poolWith is pool with the private key ref and the network nw.
func (w *accessWorld) poolWith(a api.PoolAccess, ref string, nw *api.PoolNetwork) string {
	w.t.Helper()
	a.User, a.PrivateKey = "root", ref
	if err := api.CheckPoolAccess(&a); err != nil {
		w.t.Fatal(err)
	}
	p := w.harness.pool
	p.ID, p.Access, p.Network = api.NewID(api.PrefixPool), &a, nw
	if _, err := w.env.Stores.PoolTable().Create(context.Background(), tenant, p.ID, p); err != nil {
		w.t.Fatal(err)
	}
	return p.ID
}

// machine is the SSH machine of the instance's recorded machine.
func (w *accessWorld) machine(inst *api.Instance) *sshemu.Machine {
	w.t.Helper()
	m := w.fleet.Machine(inst.Status.Machine.ID)
	if m == nil {
		w.t.Fatalf("machine %s has no SSH endpoint", inst.Status.Machine.ID)
	}
	return m
}

// waitConfigured waits until the instance runs, configured for its
// generation.
func (w *accessWorld) waitConfigured(id string) *api.Instance {
	w.t.Helper()
	return w.waitFor(id, "configured", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionConfigured)
		return err == nil && i.Status.Phase == api.PhaseRunning && i.Status.ObservedGeneration == i.Generation &&
			c != nil && c.Status == api.ConditionTrue && configureStatus(i) != nil
	})
}

// pass runs one pass over the instance, as a redelivery or resync would.
func (w *accessWorld) pass(id string) {
	w.t.Helper()
	if _, err := w.rec.reconcile(context.Background(), w.rec.log, tenant, id); err != nil {
		w.t.Fatal(err)
	}
}

func (w *accessWorld) exec(in api.InstanceExecRequest) (*api.InstanceExecReply, error) {
	var out api.InstanceExecReply
	err := w.call("exec", in, &out)
	return &out, err
}

func TestConfigureRunsOncePerGeneration(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configuring $COMPUTE_INSTANCE_ID generation $COMPUTE_GENERATION"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitConfigured(inst.ID)
	m := w.machine(got)

	c := got.Status.Access.Configure
	wantTail := "configuring " + inst.ID + " generation 1\n"
	if c.State != api.StepSucceeded || c.Attempts != 1 || c.Generation != 1 || c.ExitCode == nil || *c.ExitCode != 0 || c.OutputTail != wantTail {
		t.Fatalf("configure status %+v", c)
	}
	if want := ssh.FingerprintSHA256(m.HostKey()); got.Status.Access.HostKey != want || got.Status.Access.HostKeyMachine != got.Status.Machine.ID {
		t.Fatalf("pinned %q for %q, want %q", got.Status.Access.HostKey, got.Status.Access.HostKeyMachine, want)
	}
	if r := condition(got, api.ConditionReady); r == nil || r.Status != api.ConditionTrue {
		t.Fatalf("ready %+v", r)
	}

	// More passes of the same generation (a redelivery, a resync) run nothing.
	w.pass(inst.ID)
	w.pass(inst.ID)
	if runs := m.Runs(); len(runs) != 1 || runs[0].Env["COMPUTE_GENERATION"] != "1" || runs[0].Env["COMPUTE_INSTANCE_ID"] != inst.ID {
		t.Fatalf("runs after more passes of generation 1: %+v", runs)
	}

	// A new generation (a reset) is configured again, told its generation.
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, nil); err != nil {
		t.Fatal(err)
	}
	got = w.waitFor(inst.ID, "configured for generation 2", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && i.Generation == 2 && c != nil && c.State == api.StepSucceeded && i.Status.Phase == api.PhaseRunning
	})
	runs := m.Runs()
	if len(runs) != 2 || runs[1].Env["COMPUTE_GENERATION"] != "2" || runs[1].Command != "sh -s -- "+inst.ID+" 2" {
		t.Fatalf("runs after generation 2: %+v", runs)
	}
	if got.Status.Access.Configure.Attempts != 1 {
		t.Fatalf("generation 2 attempts %d, want 1", got.Status.Access.Configure.Attempts)
	}
}

func TestConfigureFailureIsACondition(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Hook: "join"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitFor(inst.ID, "failed", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == api.PhaseFailed && i.Status.ObservedGeneration == i.Generation
	})
	c := got.Status.Access.Configure
	if c.State != api.StepFailed || !c.Final || c.ExitCode == nil || *c.ExitCode != 127 ||
		!strings.Contains(c.OutputTail, "/usr/lib/compute/hooks/join: not found") {
		t.Fatalf("configure status %+v", c)
	}
	cond := condition(got, api.ConditionConfigured)
	ready := condition(got, api.ConditionReady)
	if cond == nil || cond.Status != api.ConditionFalse || cond.Reason != api.ReasonConfigureFailed ||
		ready == nil || ready.Status != api.ConditionFalse || ready.Reason != api.ReasonConfigureFailed {
		t.Fatalf("configured %+v, ready %+v", cond, ready)
	}
	// Final for the generation: another pass runs nothing.
	m := w.machine(got)
	w.pass(inst.ID)
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs after a final failure, want 1", n)
	}
}

// TestConfigureKeyMissingIsACondition: configure on a pool whose
// access.privateKey names a secret that does not exist (one deleted while
// the pool was written) runs nothing and says why: Configured False with
// reason NOT_FOUND and a message naming the reference, and Ready False
// with that reason.
func TestConfigureKeyMissingIsACondition(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	missing := "secret://" + tenant + "/" + api.NewID(api.PrefixSecret)
	poolID := w.poolWithKey(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configured"}}, missing)
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	notFound := api.ReasonOf(api.CodeNotFound)
	got := w.waitFor(inst.ID, "configure and Ready waiting on a missing key", func(i *api.Instance, err error) bool {
		c, ready := condition(i, api.ConditionConfigured), condition(i, api.ConditionReady)
		return err == nil && c != nil && c.Reason == notFound && ready != nil && ready.Reason == notFound
	})
	c, ready := condition(got, api.ConditionConfigured), condition(got, api.ConditionReady)
	if c.Status != api.ConditionFalse || !strings.Contains(c.Message, "access.privateKey "+missing) || ready.Status != api.ConditionFalse {
		t.Fatalf("Configured %+v, Ready %+v; want both False NOT_FOUND, naming access.privateKey %s", c, ready, missing)
	}
	if m := w.machine(got); len(m.Runs()) != 0 {
		t.Fatalf("commands ran without the key: %v", m.Runs())
	}
}

func TestConfigureRetriesWhenAsked(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Hook: "join", OnFailure: api.OnFailureRetry}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitFor(inst.ID, "configure failed once", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && c != nil && c.State == api.StepFailed
	})
	if got.Status.Phase != api.PhaseProvisioning || got.Status.Access.Configure.Final {
		t.Fatalf("phase %s, configure %+v: a retried configure is not final", got.Status.Phase, got.Status.Access.Configure)
	}
	w.machine(got).SetProgram(api.HookDir+"/join", sshemu.Response{Stdout: "joined\n"})
	got = w.waitConfigured(inst.ID)
	if c := got.Status.Access.Configure; c.Attempts < 2 || c.OutputTail != "joined\n" {
		t.Fatalf("configure status %+v", c)
	}
}

// TestRemadeMachineIsConfiguredAgain: a machine deleted out of band is
// re-made (a new machine id), and the configure outcome of the old one
// does not count for it: the new machine is configured again (until then
// the instance is Provisioning, not Ready), pinned anew at first contact,
// and exec reaches it after.
func TestRemadeMachineIsConfiguredAgain(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Hook: "join", OnFailure: api.OnFailureRetry}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitFor(inst.ID, "machine made", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Machine != nil && w.fleet.Machine(i.Status.Machine.ID) != nil
	})
	w.machine(got).SetProgram(api.HookDir+"/join", sshemu.Response{Stdout: "joined\n"})
	got = w.waitConfigured(inst.ID)
	first := got.Status.Machine.ID

	w.cloud.Remove(first) // deleted out of band; its SSH endpoint goes with it
	if _, err := w.rec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The re-made machine has no join hook yet: its configure fails (and is
	// retried), so the instance must not read as running and configured.
	remade := w.waitFor(inst.ID, "configure tried on the re-made machine", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && i.Status.Machine != nil && i.Status.Machine.ID != first && c != nil && c.State == api.StepFailed
	})
	ready, configured := condition(remade, api.ConditionReady), condition(remade, api.ConditionConfigured)
	if remade.Status.Phase != api.PhaseProvisioning || ready == nil || ready.Status != api.ConditionFalse ||
		configured == nil || configured.Status != api.ConditionFalse {
		t.Fatalf("re-made machine not configured yet: phase %s, Ready %+v, Configured %+v; want Provisioning, both False",
			remade.Status.Phase, ready, configured)
	}
	if a := remade.Status.Access; a.HostKeyMachine != remade.Status.Machine.ID || a.Configure.Machine != remade.Status.Machine.ID {
		t.Fatalf("access %+v: want the pin and configure of machine %s", a, remade.Status.Machine.ID)
	}
	m := w.machine(remade)
	m.SetProgram(api.HookDir+"/join", sshemu.Response{Stdout: "joined again\n"})
	got = w.waitFor(inst.ID, "re-made machine configured", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && i.Status.Phase == api.PhaseRunning && c != nil && c.State == api.StepSucceeded
	})
	if c := got.Status.Access.Configure; c.OutputTail != "joined again\n" || c.Machine != remade.Status.Machine.ID {
		t.Fatalf("configure status %+v, want the re-made machine's %s", c, remade.Status.Machine.ID)
	}
	if want := ssh.FingerprintSHA256(m.HostKey()); got.Status.Access.HostKey != want {
		t.Fatalf("pinned %q, want the re-made machine's %q", got.Status.Access.HostKey, want)
	}
	if out, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "echo hello"}); err != nil || out.Stdout != "hello\n" {
		t.Fatalf("exec on the re-made machine: %+v, %v", out, err)
	}
}

func TestHostKeyChangeIsRefused(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "true"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitConfigured(inst.ID)
	m := w.machine(got)
	pinned := got.Status.Access.HostKey
	if err := m.ChangeHostKey(); err != nil {
		t.Fatal(err)
	}
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, nil); err != nil {
		t.Fatal(err)
	}
	got = w.waitFor(inst.ID, "refused", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionHostKeyChanged)
		return err == nil && i.Generation == 2 && c != nil && c.Status == api.ConditionTrue && i.Status.Phase == api.PhaseFailed
	})
	if got.Status.Access.HostKey != pinned {
		t.Fatalf("pin changed from %s to %s", pinned, got.Status.Access.HostKey)
	}
	if c := condition(got, api.ConditionConfigured); c.Status != api.ConditionFalse || c.Reason != api.ReasonHostKeyChanged {
		t.Fatalf("configured %+v", c)
	}
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs: a machine with another host key was sent a command", n)
	}
	if _, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "true"}); !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("exec on a machine whose host key changed: %v", err)
	}
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs after a refused exec", n)
	}
}

// events collects the instance events of the test tenant.
type events struct {
	mu  sync.Mutex
	got []api.Event
}

func (w *accessWorld) watch() *events {
	w.t.Helper()
	ev := &events{}
	sub, err := w.env.NC.Subscribe(bus.Event(tenant, bus.ResourceInstances, "*", "*"), func(m *nats.Msg) {
		var e api.Event
		if json.Unmarshal(m.Data, &e) == nil {
			ev.mu.Lock()
			ev.got = append(ev.got, e)
			ev.mu.Unlock()
		}
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ev
}

// of is the events of type typ, oldest first.
func (e *events) of(typ api.EventType) []api.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []api.Event
	for _, x := range e.got {
		if x.Type == typ {
			out = append(out, x)
		}
	}
	return out
}

func TestDrainRunsBeforeDelete(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	ev := w.watch()
	poolID := w.pool(api.PoolAccess{Drain: &api.AccessStep{Script: "echo draining $COMPUTE_INSTANCE_ID"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitPhase(inst.ID, api.PhaseRunning)
	m := w.machine(got)
	if err := w.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitGone(inst.ID)
	runs := m.Runs()
	// The machine's endpoint ends with the machine: a drain recorded on it
	// ran before the delete.
	if len(runs) != 1 || !strings.Contains(runs[0].Script, "echo draining $COMPUTE_INSTANCE_ID") {
		t.Fatalf("runs %+v", runs)
	}
	if w.fleet.Machine(got.Status.Machine.ID) != nil {
		t.Fatal("the machine's endpoint outlived its delete")
	}
	bustest.WaitFor(t, "drained event", func() bool { return len(ev.of(api.EventDrained)) == 1 })
	if d := ev.of(api.EventDrained)[0]; d.Message != "drain exited 0" {
		t.Fatalf("drained event %+v", d)
	}
}

func TestDrainTimeoutIsHonoured(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	ev := w.watch()
	hang := sshemu.Response{Hang: true}
	cont := w.pool(api.PoolAccess{Drain: &api.AccessStep{Hook: "drain", TimeoutMs: 200}})
	wait := w.pool(api.PoolAccess{Drain: &api.AccessStep{Hook: "drain", TimeoutMs: 200, OnFailure: api.OnFailureFail}})

	// continue (the default): the delete proceeds after the timeout.
	a := w.create(api.InstanceCreateRequest{PoolID: cont})
	w.machine(w.waitPhase(a.ID, api.PhaseRunning)).SetProgram(api.HookDir+"/drain", hang)
	if err := w.call("delete", api.IDRequest{ID: a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitGone(a.ID)
	if d := ev.of(api.EventDrained); len(d) != 1 || d[0].Message != "drain timed out" {
		t.Fatalf("drained events %+v", d)
	}

	// fail: the delete waits, the drain is tried again, the machine stays.
	b := w.create(api.InstanceCreateRequest{PoolID: wait})
	running := w.waitPhase(b.ID, api.PhaseRunning)
	m := w.machine(running)
	m.SetProgram(api.HookDir+"/drain", hang)
	if err := w.call("delete", api.IDRequest{ID: b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(b.ID, "drain retried", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Access != nil && i.Status.Access.Drain != nil && i.Status.Access.Drain.Attempts >= 2
	})
	if c := condition(got, api.ConditionDrained); c == nil || c.Reason != api.ReasonDrainTimedOut {
		t.Fatalf("drained %+v", c)
	}
	if len(w.cloud.Machines()) != 1 {
		t.Fatal("the machine was deleted although its drain failed with onFailure fail")
	}
	m.SetProgram(api.HookDir+"/drain", sshemu.Response{})
	w.waitGone(b.ID)
}

func TestExecAnswersOutputExitCodesAndTimeout(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	ev := w.watch()
	poolID := w.pool(api.PoolAccess{})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitFor(inst.ID, "running and pinned", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Phase == api.PhaseRunning && i.Status.Access != nil && i.Status.Access.HostKey != ""
	})
	m := w.machine(got)
	m.SetProgram("status", sshemu.Response{Stdout: "degraded\n", Stderr: "disk 2 failing\n", Exit: 5})
	m.SetProgram("hang", sshemu.Response{Hang: true, Stdout: "started\n"})
	m.SetProgram("chatty", sshemu.Response{Stdout: strings.Repeat("x", api.ExecOutputBytes) + "END\n"})

	out, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "echo hello"})
	if err != nil || *out != (api.InstanceExecReply{Stdout: "hello\n"}) {
		t.Fatalf("echo: %+v, %v", out, err)
	}
	out, err = w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "status"})
	if err != nil || out.ExitCode != 5 || out.Stdout != "degraded\n" || out.Stderr != "disk 2 failing\n" {
		t.Fatalf("status: %+v, %v", out, err)
	}
	out, err = w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "hang", TimeoutMs: 200})
	if err != nil || !out.TimedOut || out.ExitCode != -1 || out.Stdout != "started\n" {
		t.Fatalf("hang: %+v, %v", out, err)
	}
	out, err = w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "chatty"})
	if err != nil || !out.Truncated || len(out.Stdout) != api.ExecOutputBytes || !strings.HasSuffix(out.Stdout, "END\n") {
		t.Fatalf("chatty: truncated %v, %d bytes, %v", out.Truncated, len(out.Stdout), err)
	}
	var logs api.InstanceLogsReply
	m.SetLog(sshemu.LogJournal, []string{"one", "two", "three"})
	if err := w.call("logs", api.InstanceLogsRequest{ID: inst.ID, Source: api.LogSourceJournal, Lines: 2}, &logs); err != nil ||
		strings.Join(logs.Lines, "|") != "two|three" {
		t.Fatalf("logs: %+v, %v", logs, err)
	}
	m.SetLog(sshemu.LogCloudInit, []string{"init", "modules:final", "finished"})
	m.SetLog(sshemu.LogConsole, []string{"[    0.000000] Linux version 6.1.0", "[    1.234567] Run /sbin/init"})
	for _, tc := range []struct {
		source string
		lines  int
		want   string
	}{{api.LogSourceCloudInit, 0, "init|modules:final|finished"}, {api.LogSourceConsole, 1, "[    1.234567] Run /sbin/init"}} {
		logs = api.InstanceLogsReply{}
		if err := w.call("logs", api.InstanceLogsRequest{ID: inst.ID, Source: tc.source, Lines: tc.lines}, &logs); err != nil ||
			logs.Source != tc.source || strings.Join(logs.Lines, "|") != tc.want || logs.Truncated {
			t.Fatalf("%s logs: %+v, %v; want %q", tc.source, logs, err, tc.want)
		}
	}
	bustest.WaitFor(t, "audit events", func() bool { return len(ev.of(api.EventExec)) == 4 && len(ev.of(api.EventLogs)) == 3 })
	if e := ev.of(api.EventLogs)[2]; e.Message != "logs console, 1 lines" || e.ResourceID != inst.ID {
		t.Fatalf("logs event %+v", e)
	}
	if e := ev.of(api.EventExec)[1]; e.Message != "exec exited 5: status" || e.ResourceID != inst.ID {
		t.Fatalf("exec event %+v", e)
	}

	// Bad input names the field; another tenant does not see the instance.
	if _, err := w.exec(api.InstanceExecRequest{ID: inst.ID}); api.AsComputeError(err).Path() != "command" {
		t.Fatalf("no command: %v", err)
	}
	if _, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "true", TimeoutMs: api.MaxExecTimeout.Milliseconds() + 1}); api.AsComputeError(err).Path() != "timeoutMs" {
		t.Fatalf("long timeout: %v", err)
	}
	if err := w.call("logs", api.InstanceLogsRequest{ID: inst.ID, Source: "dmesg"}, nil); api.AsComputeError(err).Path() != "source" {
		t.Fatalf("bad source: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = bus.Call(ctx, w.env.NC, bus.Command("globex", bus.ResourceInstances, "exec"), api.InstanceExecRequest{ID: inst.ID, Command: "true"}, nil)
	if !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("exec as another tenant: %v", err)
	}

	// Not running: INVALID_STATE, nothing sent.
	before := len(m.Runs())
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitPhase(inst.ID, api.PhaseStopped)
	if _, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "true"}); !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("exec on a stopped machine: %v", err)
	}
	if len(m.Runs()) != before {
		t.Fatal("a stopped machine was sent a command")
	}
}

func TestExecRefusedWithoutAccess(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	inst := w.create(api.InstanceCreateRequest{})
	w.waitPhase(inst.ID, api.PhaseRunning)
	if _, err := w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "true"}); !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("exec in a pool without access: %v", err)
	}
}

// The reconciler process is SIGKILLed while the configure step runs (the
// step hangs): the next reconciler runs it again (at least once, never
// skipped) and the instance becomes ready.
func TestConfigureRunsAgainAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	w := newAccessWorld(t, fastOptions())
	w.rec.Stop() // the only reconciler is the child process
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Hook: "join"}})
	child := childReconciler(w.env.URL)
	child.Start(t) // the one alive at the end is killed at cleanup
	var inst api.Instance
	if err := w.callRetry("create", api.InstanceCreateRequest{PoolID: poolID, Flavor: "small"}, &inst); err != nil {
		t.Fatal(err)
	}
	var m *sshemu.Machine
	bustest.WaitFor(t, "a machine with an SSH endpoint", func() bool {
		ms := w.cloud.Machines()
		if len(ms) == 1 {
			m = w.fleet.Machine(ms[0].ID)
		}
		return m != nil
	})
	m.SetProgram(api.HookDir+"/join", sshemu.Response{Hang: true})
	bustest.WaitFor(t, "configure running", func() bool { return len(m.Runs()) == 1 })
	child.Kill()
	if c := w.record(inst.ID).Status.Access.Configure; c == nil || c.State != api.StepRunning || c.Attempts != 1 {
		t.Fatalf("configure status at the kill: %+v", c)
	}

	m.SetProgram(api.HookDir+"/join", sshemu.Response{Stdout: "joined\n"})
	child.Start(t)
	got := w.waitConfigured(inst.ID)
	// at least once: a run cut off by a slow machine (a loaded host) may
	// add an attempt, never remove one
	c := got.Status.Access.Configure
	if c.Attempts < 2 || c.OutputTail != "joined\n" {
		t.Fatalf("configure status after the restart: %+v", c)
	}
	if runs := m.Runs(); len(runs) != c.Attempts || runs[len(runs)-1].Env["COMPUTE_GENERATION"] != "1" {
		t.Fatalf("%d attempts recorded, runs %+v", c.Attempts, runs)
	}
}

// The platform's private key goes in through secrets.put only: after
// configure, exec, logs and drain it appears in no log line (services,
// emulated machines), reply, event, KV value or output tail.
func TestPrivateKeyLeaksNowhere(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configured"}, Drain: &api.AccessStep{Script: "echo drained"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	got := w.waitConfigured(inst.ID)
	var replies []string
	keep := func(v any, err error) {
		data, _ := json.Marshal(v)
		replies = append(replies, string(data))
		if err != nil {
			replies = append(replies, err.Error())
		}
	}
	keep(got, nil)
	keep(w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "echo hi"}))
	keep(w.exec(api.InstanceExecRequest{ID: inst.ID, Command: "nosuch"}))
	var logs api.InstanceLogsReply
	keep(&logs, w.call("logs", api.InstanceLogsRequest{ID: inst.ID, Source: api.LogSourceCloudInit}, &logs))
	if err := w.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitGone(inst.ID)
	// A pool whose key is not a key: the failure names the field, not the value.
	var bad api.Secret
	if err := w.call2(bus.ResourceSecrets, "put", api.SecretPutRequest{Name: "not-a-key", Value: w.keyPEM[:40] + "garbage"}, &bad); err != nil {
		t.Fatal(err)
	}
	badPool := w.poolWithKey(api.PoolAccess{Configure: &api.AccessStep{Script: "true"}}, bad.Ref)
	second := w.create(api.InstanceCreateRequest{PoolID: badPool})
	failing := w.waitFor(second.ID, "configure waiting on a bad key", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionConfigured)
		return err == nil && c != nil && c.Reason == api.ReasonOf(api.CodeInvalidConfig)
	})
	keep(failing, nil)
	bustest.AssertNowhere(t, bustest.Scan{NC: w.env.NC, Logs: w.logs.String(), Replies: replies},
		w.keyPEM, w.seed, pemBody(w.keyPEM), w.keyPEM[:40]+"garbage")
}

// pemBody is the base64 body of a PEM block, on one line.
func pemBody(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[1:len(lines)-1], "")
}

// call2 sends a command of the test tenant to any resource.
func (h *harness) call2(resource, verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, h.env.NC, bus.Command(tenant, resource, verb), in, out)
}

func TestMachineSSHKeysAddThePlatformKey(t *testing.T) {
	const tenantKey, platformKey = "ssh-ed25519 AAAAtenant alice", "ssh-ed25519 AAAAplatform compute"
	inst := &api.Instance{SSHKeys: []string{tenantKey}}
	if got := machineSSHKeys(inst, &api.PoolAccess{PublicKey: platformKey}); !slices.Equal(got, []string{tenantKey, platformKey}) {
		t.Fatalf("with a platform key: %v", got)
	}
	if !slices.Equal(inst.SSHKeys, []string{tenantKey}) {
		t.Fatalf("the instance's keys changed: %v", inst.SSHKeys)
	}
	if got := machineSSHKeys(&api.Instance{SSHKeys: []string{platformKey}}, &api.PoolAccess{PublicKey: platformKey}); len(got) != 1 {
		t.Fatalf("a key the tenant gave too is listed twice: %v", got)
	}
	if got := machineSSHKeys(inst, nil); !slices.Equal(got, []string{tenantKey}) {
		t.Fatalf("without access: %v", got)
	}
}

// BenchmarkReadyWithConfigure measures create → Running and Ready of one
// instance on the memory provider in a pool without access (the baseline)
// and in one whose configure step runs over SSH on the machine's emulated
// endpoint (connect, pin, run, record), and reports both and their ratio.
// go test -run '^$' -bench ReadyWithConfigure ./services/reconciler/
func BenchmarkReadyWithConfigure(b *testing.B) {
	w := newAccessWorld(b, fastOptions())
	plain := w.harness.pool.ID
	configured := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configured $1"}})
	measure := func(pool string, ready func(string) *api.Instance) time.Duration {
		start := time.Now()
		inst := w.create(api.InstanceCreateRequest{PoolID: pool})
		ready(inst.ID)
		took := time.Since(start)
		if err := w.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
			b.Fatal(err)
		}
		w.waitGone(inst.ID)
		return took
	}
	var base, conf time.Duration
	n := 0
	for b.Loop() {
		base += measure(plain, func(id string) *api.Instance { return w.waitPhase(id, api.PhaseRunning) })
		conf += measure(configured, w.waitConfigured)
		n++
	}
	b.ReportMetric(float64(base.Microseconds())/float64(n)/1000, "ms-ready-plain")
	b.ReportMetric(float64(conf.Microseconds())/float64(n)/1000, "ms-ready-configured")
	b.ReportMetric(float64(conf)/float64(base), "ratio")
}

func TestDrainRunsBeforeReinstall(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Drain: &api.AccessStep{Script: "echo draining for a reinstall"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	m := w.machine(w.waitPhase(inst.ID, api.PhaseRunning))
	var asked api.Instance
	if err := w.call("reinstall", api.InstanceReinstallRequest{ID: inst.ID, Image: "debian-13"}, &asked); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "reinstalled", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.LastOperation != nil && i.Status.LastOperation.State == api.OperationSucceeded &&
			i.Status.Phase == api.PhaseRunning && i.Image == "debian-13"
	})
	d := got.Status.Access.Drain
	if d == nil || d.State != api.StepSucceeded || d.StartedAt.Before(asked.Desired.Operation.RequestedAt) ||
		d.FinishedAt.After(got.Status.LastOperation.StartedAt) {
		t.Fatalf("drain %+v, operation %+v: want a drain that ended before the reinstall started", d, got.Status.LastOperation)
	}
	if runs := m.Runs(); len(runs) != 1 || !strings.Contains(runs[0].Script, "draining for a reinstall") {
		t.Fatalf("runs %+v", runs)
	}
	// The machine's next passes drain nothing more.
	w.pass(inst.ID)
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs after another pass", n)
	}
}

// A machine of a pool with a network is reached at its private address
// (a Hetzner server lists public IPv4 and IPv6 first), one of a pool
// without at its first address; both with the pool's port and the key
// the secrets service resolved.
func TestAccessTargetPrefersThePrivateAddress(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	a := api.PoolAccess{Port: 2222}
	plain := w.pool(a)
	networked := w.poolWith(a, w.keyRef, &api.PoolNetwork{PrivateNetworks: []api.NetworkAttachment{{Network: "internal"}}})
	m := &api.ExternalMachine{ID: "42", State: api.StateRunning, Addresses: []string{"203.0.113.7", "2001:db8:1::1", "10.0.1.5"}}
	for _, tc := range []struct{ pool, want string }{{plain, "203.0.113.7:2222"}, {networked, "10.0.1.5:2222"}} {
		pool, _, err := w.env.Stores.PoolTable().Get(context.Background(), tenant, tc.pool)
		if err != nil {
			t.Fatal(err)
		}
		inst := &api.Instance{ID: api.NewID(api.PrefixInstance), TenantID: tenant, PoolID: tc.pool}
		got, err := w.rec.accessTarget(context.Background(), inst, pool.Access, m)
		if err != nil || got.Address != tc.want || got.User != "root" || got.Key == nil {
			t.Fatalf("pool %s: target %s as %s (key %v), %v; want %s", tc.pool, got.Address, got.User, got.Key != nil, err, tc.want)
		}
	}
}

// A resize of a running machine (which may restart it) is preceded by the
// pool's drain step, once for the generation; one of a stopped machine
// drains nothing.
func TestDrainRunsBeforeResize(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	w.addFlavors(api.Flavor{Name: "large", OfferID: "large"})
	poolID := w.pool(api.PoolAccess{Drain: &api.AccessStep{Script: "echo draining for a resize"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	m := w.machine(w.waitPhase(inst.ID, api.PhaseRunning))

	w.setFlavor(inst.ID, "large")
	got := w.waitResized(inst.ID)
	d, rs := got.Status.Access.Drain, got.Status.Resize
	if rs.State != api.ResizeSucceeded || d == nil || d.State != api.StepSucceeded || d.Generation != rs.Generation ||
		d.FinishedAt == nil || d.FinishedAt.After(rs.StartedAt) {
		t.Fatalf("drain %+v, resize %+v: want a drain of the resize's generation that ended before it started", d, rs)
	}
	if runs := m.Runs(); len(runs) != 1 || !strings.Contains(runs[0].Script, "draining for a resize") {
		t.Fatalf("runs %+v", runs)
	}
	w.pass(inst.ID)
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs after another pass", n)
	}

	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitPhase(inst.ID, api.PhaseStopped)
	w.setFlavor(inst.ID, "small")
	if got = w.waitResized(inst.ID); got.Status.Resize.State != api.ResizeSucceeded {
		t.Fatalf("resize of the stopped machine:\n%s", statusJSON(got))
	}
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs: a stopped machine was drained", n)
	}
}

// While the machine's SSH does not answer (sshd not up yet), configure
// waits: Configured False WaitingForSSH, the instance not ready, nothing
// run, and each pass looks again after a longer delay; once SSH answers
// the step runs and the instance is ready.
func TestConfigureWaitsForSSHWithBackoff(t *testing.T) {
	w := newAccessWorld(t, fastOptions())
	poolID := w.pool(api.PoolAccess{Configure: &api.AccessStep{Script: "echo configured $COMPUTE_GENERATION"}})
	inst := w.create(api.InstanceCreateRequest{PoolID: poolID})
	m := w.machine(w.waitConfigured(inst.ID))
	m.SetDown(true)
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionReset}, nil); err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "waiting for SSH", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionConfigured)
		return err == nil && i.Generation == 2 && c != nil && c.Reason == api.ReasonWaitingForSSH
	})
	var delays []time.Duration
	for range 3 {
		out, err := w.rec.reconcile(context.Background(), w.rec.log, tenant, inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := w.record(inst.ID)
		c, ready := condition(got, api.ConditionConfigured), condition(got, api.ConditionReady)
		if out.done || c.Reason != api.ReasonWaitingForSSH || ready.Status != api.ConditionFalse ||
			ready.Reason != api.ReasonWaitingForSSH || got.Status.Phase != api.PhaseProvisioning {
			t.Fatalf("pass while SSH is down: %+v, phase %s, configured %+v, ready %+v", out, got.Status.Phase, c, ready)
		}
		delays = append(delays, out.requeue)
	}
	if !(delays[0] > 0 && delays[1] > delays[0] && delays[2] > delays[1]) {
		t.Fatalf("delays between looks %v: want them growing", delays)
	}
	if n := len(m.Runs()); n != 1 {
		t.Fatalf("%d runs while SSH was down, want the first generation's only", n)
	}
	m.SetDown(false)
	got := w.waitFor(inst.ID, "configured for generation 2", func(i *api.Instance, err error) bool {
		c := configureStatus(i)
		return err == nil && i.Generation == 2 && c != nil && c.State == api.StepSucceeded && i.Status.Phase == api.PhaseRunning
	})
	if c := got.Status.Access.Configure; c.Attempts != 1 || c.OutputTail != "configured 2\n" {
		t.Fatalf("configure status %+v: one attempt once SSH answered", c)
	}
}

// stepOutcome maps a step's result to its recorded state, exit code,
// message and output tail: the tail is stdout then stderr, cut to its
// last api.StepOutputTailBytes bytes.
func TestStepOutcome(t *testing.T) {
	long := strings.Repeat("o", api.StepOutputTailBytes)
	code := func(c int) *int { return &c }
	for _, tc := range []struct {
		name  string
		res   access.Result
		err   error
		state api.StepState
		exit  *int
		msg   string
		tail  string
	}{
		{"exit 0", access.Result{Stdout: "ok\n"}, nil, api.StepSucceeded, code(0), "exited 0", "ok\n"},
		{"exit 3", access.Result{ExitCode: 3, Stdout: "out\n", Stderr: "err\n"}, nil, api.StepFailed, code(3), "exited 3", "out\nerr\n"},
		{"timed out", access.Result{ExitCode: -1, TimedOut: true, Stdout: "started\n"}, nil, api.StepTimedOut, nil, "timed out", "started\n"},
		{"dropped", access.Result{Stdout: "half"}, fmt.Errorf("%w: 127.0.0.1:22: EOF", access.ErrDropped), api.StepFailed, nil,
			"ssh connection dropped: 127.0.0.1:22: EOF", "half"},
		{"long output", access.Result{Stdout: long, Stderr: "last words\n"}, nil, api.StepSucceeded, code(0), "exited 0",
			long[len("last words\n"):] + "last words\n"},
	} {
		state, exit, msg, tail := stepOutcome(tc.res, tc.err)
		if state != tc.state || (exit == nil) != (tc.exit == nil) || exit != nil && *exit != *tc.exit || msg != tc.msg || tail != tc.tail {
			t.Errorf("%s: %s, exit %v, %q, tail of %d bytes; want %s, %v, %q, %d bytes", tc.name, state, exit, msg, len(tail),
				tc.state, tc.exit, tc.msg, len(tc.tail))
		}
	}
}
