package reconciler

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

const (
	bootstrapChildNATS = "COMPUTE_TEST_BOOTSTRAP_CHILD_NATS"
	bootstrapChildKill = "COMPUTE_TEST_BOOTSTRAP_KILL_AT" // "<step>/<state>"
)

// bootstrapChildOptions are the child reconciler's: short calls, leases
// and installs, so a resume after a kill comes within seconds.
func bootstrapChildOptions() Options {
	o := fastOptions()
	o.CallTimeout, o.AckWait = time.Second, time.Second
	o.Bootstrap = BootstrapOptions{InstallTimeout: 2 * time.Second, LeaseMargin: 100 * time.Millisecond}
	return o
}

// TestBootstrapChildProcess is not a test: it is the reconciler process
// the kill tests start and SIGKILL; with bootstrapChildKill set it kills
// itself right after recording that step boundary.
func TestBootstrapChildProcess(t *testing.T) {
	nc, st := bustest.ChildConnect(t, bootstrapChildNATS, "reconciler-bootstrap-child", "the bootstrap kill tests")
	o := bootstrapChildOptions()
	o.Logger = zerolog.Nop()
	if at := os.Getenv(bootstrapChildKill); at != "" {
		o.Hooks.BootstrapStepRecorded = func(_ string, step api.BootstrapStep, state api.StepState) {
			if string(step)+"/"+string(state) == at {
				bustest.KillSelf()
			}
		}
	}
	if _, err := Start(nc, st, o); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

// bootstrapChild is the reconciler in a child process, for the server at
// url; start it with bootstrapChildKill set to where it kills itself ("" for
// nowhere).
func bootstrapChild(url string) *bustest.Child {
	return &bustest.Child{Test: "TestBootstrapChildProcess", Env: []string{bootstrapChildNATS + "=" + url}}
}

// installRuns counts installimage runs on server n's rescue system.
func (w *robotWorld) installRuns(n int) int {
	k := 0
	for _, c := range w.commands(n, true) {
		if strings.Contains(c, "installimage") {
			k++
		}
	}
	return k
}

// TestBootstrapKilledAtEveryStep SIGKILLs the reconciler process right
// after each step boundary is recorded (a step recorded Running before
// it is taken, and each outcome recorded after), restarts it, and checks
// that it resumes at the right step: the server is rescued and reset
// once, installed once, rebooted once, and reaches Ready with the
// installed system's host key pinned.
func TestBootstrapKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills reconciler processes")
	}
	boundaries := []string{"Rescue/Running", "WaitRescue/Waiting", "Install/Waiting", "Install/Running",
		"Reboot/Waiting", "Reboot/Running", "WaitSystem/Waiting", "Ready/Succeeded"}
	for _, at := range boundaries {
		t.Run(strings.ReplaceAll(at, "/", "-"), func(t *testing.T) {
			w := newRobotWorld(t, bootstrapChildOptions(), startAPI)
			child := bootstrapChild(w.env.URL)
			child.Start(t, bootstrapChildKill+"="+at)
			inst, err := w.bootstrap(101)
			if err != nil {
				t.Fatal(err)
			}
			child.WaitKilled(t, 60*time.Second)
			killed := w.record(inst.ID).Status.Bootstrap
			if killed == nil || string(killed.Step)+"/"+string(killed.State) != at {
				t.Fatalf("killed at %+v, want %s", killed, at)
			}
			child.Start(t, bootstrapChildKill+"=")
			got := w.waitConfigured(inst.ID)
			if b := got.Status.Bootstrap; b.Step != api.BootstrapReady {
				t.Fatalf("bootstrap %+v", b)
			}
			wantPrefixes(t, "Robot writes", w.writes(), bootstrapWrites(inst.ID))
			if n := w.installRuns(101); n != 1 {
				t.Fatalf("installimage ran %d times, want 1: %q", n, w.commands(101, true))
			}
			if name, ok := w.emu.Installed(101); !ok || name != "bm-101" {
				t.Fatalf("installed %q %v", name, ok)
			}
		})
	}
}

// TestBootstrapKilledDuringInstall SIGKILLs the reconciler while
// installimage runs (it hangs): the restarted reconciler finds the server
// still in its rescue system and installs again, with no second reset
// while the install's step holds the server; the half-installed server
// is never reported ready before that.
func TestBootstrapKilledDuringInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills reconciler processes")
	}
	w := newRobotWorld(t, bootstrapChildOptions(), startAPI)
	w.emu.SetInstallImage(101, emulator.InstallHang)
	child := bootstrapChild(w.env.URL)
	child.Start(t, bootstrapChildKill+"=")
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.installRuns(101) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("installimage never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	child.Kill()
	if b := w.record(inst.ID).Status.Bootstrap; b.Step != api.BootstrapInstall || b.State != api.StepRunning {
		t.Fatalf("killed during install, recorded %+v", b)
	}
	if p := w.record(inst.ID).Status.Phase; p != api.PhaseProvisioning {
		t.Fatalf("phase %s while half-installed", p)
	}
	w.emu.SetInstallImage(101, emulator.InstallSucceed)
	child.Start(t, bootstrapChildKill+"=")
	got := w.waitConfigured(inst.ID)
	if b := got.Status.Bootstrap; b.Installs != 2 || b.Rescues != 1 {
		t.Fatalf("bootstrap %+v, want 2 installs after 1 rescue boot", b)
	}
	wantPrefixes(t, "Robot writes", w.writes(), bootstrapWrites(inst.ID))
	if n := w.installRuns(101); n != 2 {
		t.Fatalf("installimage ran %d times, want 2", n)
	}
}

// TestBootstrapHalfInstalledNeverReady: installimage fails; the server is
// installed again (never reported ready in between) and becomes ready
// once an install succeeds; past MaxInstalls failures the bootstrap fails.
func TestBootstrapHalfInstalledNeverReady(t *testing.T) {
	o := fastOptions()
	o.Bootstrap.MaxInstalls = 3
	w := newRobotWorld(t, o)
	w.emu.SetInstallImage(101, emulator.InstallFail)
	w.emu.SetInstallImage(102, emulator.InstallFail)
	inst, err := w.bootstrap(101)
	if err != nil {
		t.Fatal(err)
	}
	w.waitFor(inst.ID, "failed once", func(i *api.Instance, err error) bool {
		b := i.Status.Bootstrap
		return err == nil && b != nil && b.Step == api.BootstrapInstall && b.State == api.StepFailed
	})
	if got := w.record(inst.ID); got.Status.Phase != api.PhaseProvisioning {
		t.Fatalf("phase %s after a failed install", got.Status.Phase)
	}
	w.emu.SetInstallImage(101, emulator.InstallSucceed)
	got := w.waitConfigured(inst.ID)
	if b := got.Status.Bootstrap; b.Installs < 2 {
		t.Fatalf("bootstrap %+v", b)
	}
	wantPrefixes(t, "Robot writes", w.writes(), bootstrapWrites(inst.ID))

	other, err := w.bootstrap(102)
	if err != nil {
		t.Fatal(err)
	}
	failed := w.waitPhase(other.ID, api.PhaseFailed)
	if b := failed.Status.Bootstrap; !b.Final || b.Installs != 3 {
		t.Fatalf("bootstrap %+v, want final after 3 installs", b)
	}
}
