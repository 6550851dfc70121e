package reconciler

import (
	"context"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

// wipeOnRelease sets the robot world's pool to wipe its hosts on release.
func (w *robotWorld) wipeOnRelease(t testing.TB) {
	t.Helper()
	if _, _, err := w.env.Stores.PoolTable().Mutate(context.Background(), tenant, w.poolID, func(p *api.Pool) error {
		p.Release = &api.PoolRelease{Wipe: true}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// releaseWipeWrites are the Robot writes of a wiping release of server
// 101 after its bootstrap: the rescue boot to wipe, then the un-claim.
var releaseWipeWrites = []string{
	"POST /key name=better-compute",                                                                        // found stored (409)
	"DELETE /boot/101/rescue", "POST /boot/101/rescue os=linux authorized_key=", "POST /reset/101 type=hw", // rescue
	"DELETE /boot/101/rescue", "POST /server/101 server_name=", // un-claim; never a cancellation
}

// wipeRuns counts the wipe commands run on server 101's rescue system.
func (w *robotWorld) wipeRuns() int {
	k := 0
	for _, c := range w.commands(101, true) {
		if strings.Contains(c, "wipefs") {
			k++
		}
	}
	return k
}

// TestReleaseWipe: instances.delete of a host whose pool says
// release.wipe drains it, boots the rescue system, wipes the disks over
// SSH (the rescue's host key pinned at its first contact) and un-claims
// the server; the rental is never cancelled.
func TestReleaseWipe(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	w.wipeOnRelease(t)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitConfigured(inst.ID)
	installs := len(w.commands(101, true))
	if err := w.call("delete", api.IDRequest{ID: inst.ID}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitGone(inst.ID)
	wantPrefixes(t, "Robot writes", w.writes(), append(bootstrapWrites(inst.ID), releaseWipeWrites...))
	wantPrefixes(t, "rescue system commands after the install", w.commands(101, true)[installs:], []string{
		"root: hostname", // WipeWaitRescue
		"root: hostname", // Wipe: still the rescue system
		"root: " + DefaultWipeCommand,
	})
	if !w.emu.Wiped(101) {
		t.Fatal("server 101's disks were not wiped")
	}
	if srv := w.emu.Servers(); srv[0].Number != 101 || srv[0].Name != "" {
		t.Fatalf("server 101 after the release: %+v (want it un-claimed, still rented)", srv[0])
	}
}

// TestReleaseWipeKilledAtEveryStep SIGKILLs the reconciler right after
// each wipe step boundary is recorded, restarts it, and checks that the
// release resumes: one rescue boot, one wipe, then the un-claim.
func TestReleaseWipeKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills reconciler processes")
	}
	for _, at := range []string{"WipeRescue/Running", "WipeWaitRescue/Waiting", "Wipe/Waiting", "Wipe/Running", "Wiped/Succeeded"} {
		t.Run(strings.ReplaceAll(at, "/", "-"), func(t *testing.T) {
			w := newRobotWorld(t, bootstrapChildOptions(), startAPI)
			w.wipeOnRelease(t)
			child := bootstrapChild(w.env.URL)
			child.Start(t, bootstrapChildKill+"=")
			inst, err := w.bootstrap(101)
			if err != nil {
				t.Fatal(err)
			}
			w.waitConfigured(inst.ID)
			child.Kill()
			child.Start(t, bootstrapChildKill+"="+at)
			if err := w.call("delete", api.IDRequest{ID: inst.ID}, &api.Instance{}); err != nil {
				t.Fatal(err)
			}
			child.WaitKilled(t, 60*time.Second)
			killed := w.record(inst.ID).Status.Bootstrap
			if killed == nil || string(killed.Step)+"/"+string(killed.State) != at {
				t.Fatalf("killed at %+v, want %s", killed, at)
			}
			child.Start(t, bootstrapChildKill+"=")
			w.waitGone(inst.ID)
			wantPrefixes(t, "Robot writes", w.writes(), append(bootstrapWrites(inst.ID), releaseWipeWrites...))
			if n := w.wipeRuns(); n != 1 {
				t.Fatalf("the wipe ran %d times, want 1: %q", n, w.commands(101, true))
			}
			if !w.emu.Wiped(101) {
				t.Fatal("server 101's disks were not wiped")
			}
		})
	}
}

// dropKey points the robot world's pool's access.privateKey at a secret
// that does not exist (one deleted while the pool was written) and
// returns that reference.
func (w *robotWorld) dropKey(t testing.TB) string {
	t.Helper()
	missing := "secret://" + tenant + "/" + api.NewID(api.PrefixSecret)
	if _, _, err := w.env.Stores.PoolTable().Mutate(context.Background(), tenant, w.poolID, func(p *api.Pool) error {
		a := *p.Access
		a.PrivateKey = missing
		p.Access = &a
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return missing
}

// TestReleaseWipeKeyMissing: the release of a host installed by us,
// whose pool's key is gone by then, takes no wipe step (no rescue boot,
// no reset: nothing could follow it over SSH); the instance shows why, a
// ProviderError NOT_FOUND naming access.privateKey, retried with
// backoff, and the server stays claimed until an operator clears its
// name in Robot (after wiping it by hand): then the release ends without
// touching it.
func TestReleaseWipeKeyMissing(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	w.wipeOnRelease(t)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitConfigured(inst.ID)
	writes := len(w.writes())
	missing := w.dropKey(t)
	if err := w.call("delete", api.IDRequest{ID: inst.ID}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	got := w.waitFor(inst.ID, "ProviderError NOT_FOUND", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && c != nil && c.Status == api.ConditionTrue && c.Reason == api.ReasonOf(api.CodeNotFound) && c.RetryAt != nil
	})
	if c := condition(got, api.ConditionProviderError); !strings.Contains(c.Message, "access.privateKey "+missing) {
		t.Fatalf("ProviderError %+v, want it to name access.privateKey %s", c, missing)
	}
	time.Sleep(200 * time.Millisecond) // a few more passes
	if after := w.writes(); len(after) != writes {
		t.Fatalf("writes reached the webservice without the key: %v", after[writes:])
	}
	if srv := w.emu.Servers(); srv[0].Number != 101 || srv[0].Name != "compute:"+inst.ID {
		t.Fatalf("server 101: %+v, want it still claimed (not wiped)", srv[0])
	}
	// The operator's way out: wipe the server by hand and clear its name
	// in Robot; the release finds it not ours, does not touch it, and ends.
	w.emu.SetServerName(101, "")
	w.waitGone(inst.ID)
	for _, c := range w.writes()[writes:] {
		if strings.Contains(c, "/boot/") || strings.Contains(c, "/reset/") || strings.HasPrefix(c, "POST /server/") {
			t.Fatalf("the release touched a server not ours any more: %v", w.writes()[writes:])
		}
	}
}

// TestReleaseNothingInstalledNotWiped: a host whose bootstrap never
// installed anything (its pool's key was gone from the start: claimed,
// no step taken) holds nothing of ours: its release un-claims it without
// a wipe (no rescue boot, no reset), although the key is still missing.
func TestReleaseNothingInstalledNotWiped(t *testing.T) {
	w := newRobotWorld(t, fastOptions())
	w.wipeOnRelease(t)
	w.dropKey(t)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "ProviderError NOT_FOUND", func(i *api.Instance, err error) bool {
		c := condition(i, api.ConditionProviderError)
		return err == nil && c != nil && c.Status == api.ConditionTrue && c.Reason == api.ReasonOf(api.CodeNotFound)
	})
	if err := w.call("delete", api.IDRequest{ID: inst.ID}, &api.Instance{}); err != nil {
		t.Fatal(err)
	}
	w.waitGone(inst.ID)
	// the claim, then only un-claims (a retry pass racing the delete may
	// un-claim twice: it changes nothing)
	writes := w.writes()
	for i, c := range writes {
		if i == 0 && c != "POST /server/101 server_name=compute:"+inst.ID ||
			i > 0 && c != "DELETE /boot/101/rescue" && c != "POST /server/101 server_name=" {
			t.Fatalf("Robot writes %v: want the claim, then the un-claim only", writes)
		}
	}
	if srv := w.emu.Servers(); srv[0].Number != 101 || srv[0].Name != "" {
		t.Fatalf("server 101 after the release: %+v (want it un-claimed)", srv[0])
	}
}

// TestNothingInstalled: only a host with no install, no pinned system and
// no reinstall behind it is released without a wipe.
func TestNothingInstalled(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   api.InstanceStatus
		want bool
	}{
		{"no step taken", api.InstanceStatus{}, true},
		{"rescue only", api.InstanceStatus{Bootstrap: &api.BootstrapStatus{Step: api.BootstrapWaitRescue, Rescues: 1}}, true},
		{"installimage ran", api.InstanceStatus{Bootstrap: &api.BootstrapStatus{Step: api.BootstrapInstall, Installs: 1}}, false},
		{"a wipe started", api.InstanceStatus{Bootstrap: &api.BootstrapStatus{Step: api.BootstrapWipeWaitRescue}}, false},
		{"a system answered", api.InstanceStatus{Access: &api.AccessStatus{HostKey: "SHA256:x"}}, false},
		{"reinstalled (bootstrap started afresh)", api.InstanceStatus{LastOperation: &api.OperationStatus{Action: api.ActionReinstall}}, false},
	} {
		if got := nothingInstalled(&api.Instance{Status: tc.st}); got != tc.want {
			t.Errorf("%s: nothingInstalled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
