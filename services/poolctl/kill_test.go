package poolctl

import (
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/bus/bustest"
)

const childEnv = "COMPUTE_TEST_POOLCTL_CHILD_NATS"

// TestPoolctlChildProcess is not a test: it is the controller process
// TestSIGKILLDuringScaleUpLeavesNoSurplus starts and kills (it skips unless
// asked to run).
func TestPoolctlChildProcess(t *testing.T) {
	nc, st := bustest.ChildConnect(t, childEnv, "poolctl-child", "TestSIGKILLDuringScaleUpLeavesNoSurplus")
	o := fastOptions("child")
	o.Logger = zerolog.Nop()
	// slow creates, the second half slower: the kill lands while some
	// creates are answered, some sent and others not sent yet
	o.Hooks.BeforeCreate = func(_ string, ordinal int64) {
		d := 20 * time.Millisecond
		if ordinal >= 15 {
			d = 3 * time.Second
		}
		time.Sleep(d)
	}
	if _, err := Start(nc, st, o); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

// A controller process SIGKILLed during a scale-up to 30 leaves no
// surplus: the controller that takes over (once the lease expires) ends
// with exactly 30 instances and 30 machines, 30 ordinals used, no orphan.
func TestSIGKILLDuringScaleUpLeavesNoSurplus(t *testing.T) {
	h := newHarness(t)
	child := &bustest.Child{Test: "TestPoolctlChildProcess", Env: []string{childEnv + "=" + h.env.URL}, Output: os.Stderr}
	child.Start(t)
	// the child's controller is up once it serves its micro service
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := h.env.NC.Request("$SRV.PING."+ServiceName, nil, time.Second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child controller never started")
		}
	}
	h.scale(30)
	for len(h.instances()) < 8 {
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("the child made no instances:\n%s", h.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
	child.Kill()
	rec := h.control()
	pending := 0
	for _, s := range rec.Slots {
		if s.InstanceID == "" {
			pending++
		}
	}
	t.Logf("SIGKILLed with %d slots (%d without an instance id) and %d instance records", len(rec.Slots), pending, len(h.instances()))
	h.startController(fastOptions("heir"))
	h.waitSettled(30, 1, 180*time.Second)
	h.checkNoOrphans()
	if got := h.control().NextOrdinal; got != 30 {
		t.Errorf("ordinals used: %d, want 30", got)
	}
}
