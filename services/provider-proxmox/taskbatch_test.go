package proxmox

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// realEnv is newEnv on the wall clock (the emulator's tasks end on their
// own) with shared task polls on (window w).
func realEnv(t testing.TB, w time.Duration) *env {
	t.Helper()
	return newEnv(t, func(su *setup) {
		su.emu.Clock = clock.Real{}
		su.options = append(su.options, WithTaskBatchWindow(w))
	})
}

// realCall is e.call on the wall clock.
func (e *env) realCall(key string) *provider.Call {
	c := e.call(key)
	c.Clock = clock.Real{}
	return c
}

// Concurrent task waits of one account share the node's task list: 20
// power-offs of a second poll GET /nodes/{node}/tasks a few times in all,
// and never their own task status; the outcome each gets is its task's.
func TestConcurrentTaskWaitsShareTheTaskList(t *testing.T) {
	e := realEnv(t, 500*time.Millisecond)
	// the machines are made by a client polling every 10 ms on its own
	maker, err := Definition(WithSnippetWriter(e.snippets.Write), WithTaskBatchWindow(0), WithTaskPollInterval(10*time.Millisecond)).
		New(provider.BuildContext{Account: e.acct})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 20)
	for i := range ids {
		key := fmt.Sprintf("inst_share_%02d", i)
		m, err := maker.Create(t.Context(), e.realCall(key), spec(key))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = m.ID
	}
	e.emu.SetTaskDuration("qmstop", time.Second)
	e.emu.FailNextTask("qmstop", "VM quit/powerdown failed - got timeout")
	e.emu.ResetCalls()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for _, id := range ids {
		wg.Go(func() {
			err := e.client.Power(t.Context(), e.realCall(""), id, api.ActionOff)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
			case api.IsCode(err, api.CodeProviderError):
				failed++
			default:
				t.Errorf("power off %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	lists, own := e.emu.Calls(emulator.RouteNodeTasks), e.emu.Calls(emulator.RouteTaskStatus)
	t.Logf("20 power-offs of 1 s: %d shared task lists, %d own task polls", lists, own)
	if failed != 1 {
		t.Errorf("%d power-offs failed, want the one whose task failed", failed)
	}
	if lists == 0 || lists > 8 || own != 0 {
		t.Fatalf("20 waits sent %d task lists and %d task status polls, want a few lists and no own polls", lists, own)
	}
}

// Concurrent creates of one account share their cluster list (one GET
// /cluster/resources serves the slots, template and placement of every
// create of its batch), and still each makes its own VM.
func TestConcurrentCreatesShareTheClusterList(t *testing.T) {
	const n = 10
	e := realEnv(t, 300*time.Millisecond)
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("inst_view_%02d", i)
			m, err := e.client.Create(t.Context(), e.realCall(key), spec(key))
			if err != nil {
				t.Errorf("create %s: %v", key, err)
				return
			}
			ids[i] = m.ID
		})
	}
	wg.Wait()
	lists := e.emu.Calls(emulator.RouteClusterResources)
	t.Logf("%d concurrent creates: %d cluster lists", n, lists)
	if lists > 3 {
		t.Errorf("%d concurrent creates sent %d cluster lists, want one shared (a few when slots collide)", n, lists)
	}
	seen := map[string]bool{}
	for i, id := range ids {
		v := e.vm(t, mustAtoi(t, id))
		if k, _ := descriptionValue(v.Description, keyLinePrefix); seen[id] || k != fmt.Sprintf("inst_view_%02d", i) || !hasManagedTag(v.Config["tags"]) {
			t.Errorf("create %d answered VM %s (key %q, tags %q), want a tagged VM of its own key", i, id, k, v.Config["tags"])
		}
		seen[id] = true
	}
}
