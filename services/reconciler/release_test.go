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
