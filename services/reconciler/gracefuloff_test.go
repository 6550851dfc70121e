package reconciler

import (
	"encoding/json"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

// TestGracefulOffOverSSH: Robot cannot send a graceful-off (its resets
// do not reach the OS), so instances.power graceful-off of a host runs
// systemctl poweroff over SSH, with the pinned host key, once: the server
// shuts down by itself (no reset is sent) and the instance converges to
// off; power on is then a Robot power press.
func TestGracefulOffOverSSH(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	// a newer server: it has power resets (on is a power press)
	if err := w.emu.AddServer(emulator.ServerSpec{Number: 108, ResetTypes: []string{"power", "power_long", "hw", "man"}}); err != nil {
		t.Fatal(err)
	}
	inst, err := w.bootstrap(108)
	if err != nil {
		t.Fatal(err)
	}
	writes := func(extra ...string) []string {
		var out []string
		for _, c := range bootstrapWrites(inst.ID) {
			out = append(out, strings.ReplaceAll(c, "/101", "/108"))
		}
		return append(out, extra...)
	}
	w.waitConfigured(inst.ID)
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionGracefulOff}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "off", func(i *api.Instance, err error) bool {
		op := i.Status.LastOperation
		return err == nil && op != nil && op.Action == api.ActionGracefulOff && op.State == api.OperationSucceeded &&
			i.Status.Machine != nil && i.Status.Machine.State == api.StateStopped && i.Status.Phase == api.PhaseStopped
	})
	if c := condition(got, api.ConditionProviderError); c != nil && c.Status == api.ConditionTrue {
		t.Fatalf("ProviderError %+v", c)
	}
	wantPrefixes(t, "installed system commands", w.commands(108, false), []string{
		"root: hostname", // WaitSystem
		"root: sh -s -- " + inst.ID + " 1 <<echo joined", // configure
		"root: systemctl poweroff --no-block",            // graceful-off
	})
	wantPrefixes(t, "Robot writes", w.writes(), writes()) // no reset: the OS shut down
	if b := w.emu.Booted(108); b != "none" {
		t.Fatalf("server 108 runs %q after the graceful-off", b)
	}

	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOn}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "on", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Machine != nil && i.Status.Machine.State == api.StateRunning && i.Status.Phase == api.PhaseRunning
	})
	wantPrefixes(t, "Robot writes", w.writes(), writes("POST /reset/108 type=power"))
	if b := w.emu.Booted(108); b != "disk" {
		t.Fatalf("server 108 runs %q after power on", b)
	}
}

// TestGracefulOffUnsupportedWithoutPin: a host whose installed system
// was never reached (its install keeps failing: no host key pinned)
// cannot be sent a graceful-off over SSH either: the operation fails
// UNSUPPORTED and nothing reaches the server.
func TestGracefulOffUnsupportedWithoutPin(t *testing.T) {
	o := fastOptions()
	o.Bootstrap.MaxInstalls = 1000
	w := newRobotWorld(t, o)
	w.emu.SetInstallImage(101, emulator.InstallFail)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "install failed", func(i *api.Instance, err error) bool {
		b := i.Status.Bootstrap
		return err == nil && b != nil && b.Step == api.BootstrapInstall && b.State == api.StepFailed
	})
	writes := len(w.writes())
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionGracefulOff}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "refused", func(i *api.Instance, err error) bool {
		op := i.Status.LastOperation
		return err == nil && op != nil && op.Action == api.ActionGracefulOff && op.State == api.OperationFailed
	})
	if c := condition(got, api.ConditionProviderError); c == nil || c.Reason != api.ReasonOf(api.CodeUnsupported) {
		t.Fatalf("conditions %+v, want ProviderError UNSUPPORTED", got.Status.Conditions)
	}
	if after := w.writes(); len(after) != writes {
		t.Fatalf("writes reached the webservice: %v", after[writes:])
	}
	for _, c := range w.commands(101, false) {
		if strings.Contains(c, "poweroff") {
			t.Fatalf("the graceful-off reached the OS: %s", c)
		}
	}
}

// TestPowerOnUnsupportedKeepsStopped: after a graceful-off (over SSH), a
// power on of a Robot server whose resets are sw, hw and man (no power
// press) does not fail the instance: it stays Stopped with a
// ProviderError UNSUPPORTED condition retried with backoff, and a power
// off (the level its machine is at) clears it.
func TestPowerOnUnsupportedKeepsStopped(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitConfigured(inst.ID)
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionGracefulOff}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "off", func(i *api.Instance, err error) bool {
		return err == nil && i.Status.Machine != nil && i.Status.Machine.State == api.StateStopped && i.Status.Phase == api.PhaseStopped
	})
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOn}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "ProviderError UNSUPPORTED", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && c != nil && c.Status == api.ConditionTrue && c.Reason == api.ReasonOf(api.CodeUnsupported)
	})
	if c := condition(got, api.ConditionProviderError); c.RetryAt == nil || got.Status.Phase != api.PhaseStopped {
		status, _ := json.MarshalIndent(got.Status, "", "  ")
		t.Fatalf("want Stopped with a retried ProviderError; status:\n%s", status)
	}
	if err := w.call("power", api.InstancePowerRequest{ID: inst.ID, Action: api.ActionOff}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "recovered", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && i.Status.Phase == api.PhaseStopped && (c == nil || c.Status != api.ConditionTrue)
	})
}
