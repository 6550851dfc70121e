package proxmox

import (
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// The pacer polls a type never seen early and then doubles; once it saw
// the type end it polls at the learned duration first, and an eighth of
// the elapsed time after that.
func TestTaskPacerLearnsDurations(t *testing.T) {
	var p taskPacer
	if d := p.first("qmclone"); d != firstTaskPoll {
		t.Fatalf("first poll of an unknown type after %s, want %s", d, firstTaskPoll)
	}
	if d := p.next("qmclone", 4*time.Second); d != 4*time.Second {
		t.Fatalf("unknown type running for 4 s: next poll after %s, want 4s (doubling)", d)
	}
	if d := p.next("qmclone", time.Minute); d != maxTaskPollGap {
		t.Fatalf("gap %s, want the cap %s", d, maxTaskPollGap)
	}
	p.learn("qmclone", 16*time.Second, 24*time.Second)
	if d := p.first("qmclone"); d != 20*time.Second {
		t.Fatalf("learned first poll %s, want the midpoint 20s", d)
	}
	if d := p.next("qmclone", 20*time.Second); d != 2500*time.Millisecond {
		t.Fatalf("known type still running at 20 s: next after %s, want 2.5s", d)
	}
	p.learn("qmclone", 0, 30*time.Second) // a first poll found it stopped: no news
	if d := p.first("qmclone"); d != 20*time.Second {
		t.Fatalf("estimate moved to %s on a poll that only bounds it", d)
	}
	p.learn("qmclone", 20*time.Second, 22500*time.Millisecond) // the first poll came too early
	if d := p.first("qmclone"); d != 22500*time.Millisecond {
		t.Fatalf("after a first poll too early, first poll %s, want the stop time 22.5s (one poll next time)", d)
	}
	if got := upidType("UPID:pve1:00001234:00ABCDEF:65F0A1B2:qmclone:9000:root@pam!ci:"); got != "qmclone" {
		t.Fatalf("upidType = %q", got)
	}
}

// Task durations are learned per node: a start learned on pve1 is polled
// once there, while the first start on pve2 polls as a type never seen
// (from firstTaskPoll, doubling), and its second once.
func TestTaskDurationsAreLearnedPerNode(t *testing.T) {
	e := newEnv(t, withDurations, func(su *setup) { su.emu.Nodes = []emulator.Node{{Name: "pve1"}, {Name: "pve2"}} })
	ids := map[string]string{}
	for i, node := range []string{"pve1", "pve2"} {
		key := "inst_pace_" + node
		got, err := e.emu.SeedVMs(emulator.SeedSpec{Count: 1, FirstVMID: 10000 + i, Node: node, Tags: ManagedTag,
			Description: ManagedDescription(key, testOffer)})
		if err != nil || len(got) != 1 {
			t.Fatalf("seed on %s: %v, %v", node, got, err)
		}
		ids[node] = strconv.Itoa(got[0])
	}
	// starts is the task polls of starting the VM on node (stopping it
	// first, unpolled counts aside, when it runs).
	starts := func(node string) int {
		t.Helper()
		if v := e.vm(t, mustAtoi(t, ids[node])); v.Status == emulator.StatusRunning {
			if err := e.client.Power(t.Context(), e.call(""), ids[node], api.ActionOff); err != nil {
				t.Fatal(err)
			}
		}
		e.emu.ResetCalls()
		if err := e.client.Power(t.Context(), e.call(""), ids[node], api.ActionOn); err != nil {
			t.Fatal(err)
		}
		return e.emu.Calls(emulator.RouteTaskStatus)
	}
	first1, again1, first2, again2 := starts("pve1"), starts("pve1"), starts("pve2"), starts("pve2")
	t.Logf("qmstart polls: pve1 %d then %d, pve2 %d then %d", first1, again1, first2, again2)
	if again1 != 1 || again2 != 1 || first2 != first1 || first2 <= 1 {
		t.Errorf("qmstart polls: pve1 %d then %d, pve2 %d then %d; want pve2's first like pve1's first (nothing learned there), then one each",
			first1, again1, first2, again2)
	}
}
