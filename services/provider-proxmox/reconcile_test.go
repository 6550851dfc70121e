package proxmox

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/reconciler"
)

// stack is the reconciler and this provider on one bus, against e's
// emulator, with e's account and a pool of testOffer on testTemplate.
type stack struct {
	env  *bustest.Env
	pool api.Pool
}

// newStack starts it.
func newStack(t *testing.T, e *env) *stack {
	t.Helper()
	s := &stack{env: bustest.Start(t)}
	svc, err := provider.Serve(s.env.NC, e.def, provider.ServeOptions{Clock: e.clock, Logger: zerolog.Nop(),
		Resolver: func(string) provider.SecretResolver { return testSecrets }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	ctx := context.Background()
	acct := api.Account{ID: e.acct.ID, TenantID: testTenant, Provider: ProviderID, Name: "pve", Config: e.acct.Config, Version: 1}
	if _, err := bus.CreateJSON(ctx, s.env.Stores.Accounts, testTenant+"."+acct.ID, &acct); err != nil {
		t.Fatal(err)
	}
	s.pool = api.Pool{ID: api.NewID(api.PrefixPool), TenantID: testTenant, Class: api.PoolClassProvider, ProviderAccountID: acct.ID,
		Agent: api.PoolAgentNone, Version: 1, Flavors: []api.Flavor{{Name: testOffer, OfferID: testOffer, Image: testTemplate}}}
	if _, err := bus.CreateJSON(ctx, s.env.Stores.Pools, testTenant+"."+s.pool.ID, &s.pool); err != nil {
		t.Fatal(err)
	}
	rec, err := reconciler.Start(s.env.NC, s.env.Stores, reconciler.Options{Logger: zerolog.Nop(), PollInterval: 20 * time.Millisecond,
		CallTimeout: 10 * time.Second, AckWait: 2 * time.Second, ResyncInterval: -1,
		Retry: reconciler.RetryPolicy{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Stop)
	return s
}

// call sends an instances command of the test tenant.
func (s *stack) call(verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bus.Call(ctx, s.env.NC, bus.Command(testTenant, bus.ResourceInstances, verb), in, out)
}

// waitFor polls instance id until cond holds (30 s at most).
func (s *stack) waitFor(t *testing.T, id, what string, cond func(*api.Instance, error) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var inst api.Instance
		err := s.call("get", api.IDRequest{ID: id}, &inst)
		if cond(&inst, err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never %s; last status %+v (err %v)", id, what, inst.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 11, item 3: every slot of the instance's key holds another key's
// VM, so its create never made a machine. Its delete completes (there is
// nothing to delete) and touches no VM.
func TestDeleteOfInstanceWithoutVMWhenEverySlotIsTaken(t *testing.T) {
	const lo = 10000
	e := newEnv(t, func(su *setup) {
		su.config[FieldVMIDMin] = lo
		su.config[FieldVMIDMax] = lo + MaxProbes - 1
	})
	for vmid := lo; vmid < lo+MaxProbes; vmid++ {
		e.seed(t, ManagedTag, ManagedDescription("inst_other"+strconv.Itoa(vmid), testOffer), vmid)
	}
	before := e.emu.VMs()
	s := newStack(t, e)

	var inst api.Instance
	if err := s.call("create", api.InstanceCreateRequest{PoolID: s.pool.ID, Flavor: testOffer, Name: "w1"}, &inst); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, inst.ID, "refused for capacity", func(i *api.Instance, err error) bool {
		for _, c := range i.Status.Conditions {
			if c.Type == api.ConditionProviderError && c.Reason == string(api.CodeCapacityUnavailable) {
				return err == nil && i.Status.CreateRequested && i.Status.Machine == nil
			}
		}
		return false
	})
	if err := s.call("delete", api.IDRequest{ID: inst.ID}, nil); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, inst.ID, "deleted", func(_ *api.Instance, err error) bool { return api.IsCode(err, api.CodeNotFound) })
	for route, n := range e.emu.CallCounts() {
		if !strings.HasPrefix(route, "GET ") {
			t.Errorf("%s called %d times, want only reads", route, n)
		}
	}
	if after := e.emu.VMs(); !reflect.DeepEqual(after, before) {
		t.Errorf("the VMs changed:\nbefore %+v\nafter  %+v", before, after)
	}
}
