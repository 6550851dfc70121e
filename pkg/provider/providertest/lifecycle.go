package providertest

import (
	"context"
	"fmt"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Lifecycle steps, in the order Lifecycle.Run takes them.
const (
	StepCreateToRunning = "create-to-running"
	StepPowerOff        = "power-off"
	StepPowerOn         = "power-on"
	StepReinstall       = "reinstall"
	StepDelete          = "delete"
)

// LifecycleSteps are the Step* names in order.
var LifecycleSteps = []string{StepCreateToRunning, StepPowerOff, StepPowerOn, StepReinstall, StepDelete}

// Lifecycle is one machine's life as the reconciler drives it.
type Lifecycle struct {
	// Client is the client under test; it must also be a provider.Powerer
	// and a provider.Reinstaller.
	Client provider.Client
	// Call returns the call context of an idempotency key ("" for the calls
	// after create).
	Call func(key string) *provider.Call
	// Key is the idempotency key of the create.
	Key string
	// Spec is the machine to create.
	Spec api.MachineSpec
	// Image is what the machine is reinstalled with.
	Image string
	// AfterCreate, when set, runs between the create and the get, e.g. to
	// let the provider's create action finish on a fake clock.
	AfterCreate func()
}

// Run drives the machine through its life: create, then, unless the
// create answered it running with its addresses known (the reconciler
// then takes it as answered and looks no more), one get that must answer
// it running (StepCreateToRunning); power off; power on; reinstall
// with l.Image; delete. Each step runs inside measure(name, run): measure
// calls run once, and reads what it measures around it. A step that fails
// fails tb.
func (l Lifecycle) Run(tb testing.TB, measure func(step string, run func())) {
	tb.Helper()
	ctx := context.Background()
	step := func(name string, do func() error) {
		measure(name, func() {
			if err := do(); err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
		})
	}
	var id string
	step(StepCreateToRunning, func() error {
		m, err := l.Client.Create(ctx, l.Call(l.Key), l.Spec)
		if err != nil {
			return err
		}
		id = m.ID
		if m.State == api.StateRunning && !m.AddressesPending {
			return nil // the reconciler takes it as answered: no look
		}
		if l.AfterCreate != nil {
			l.AfterCreate()
		}
		m, err = l.Client.Get(ctx, l.Call(""), id)
		if err == nil && (m == nil || m.State != api.StateRunning) {
			err = fmt.Errorf("machine is %+v, want running", m)
		}
		return err
	})
	power := l.Client.(provider.Powerer)
	step(StepPowerOff, func() error { return power.Power(ctx, l.Call(""), id, api.ActionOff) })
	step(StepPowerOn, func() error { return power.Power(ctx, l.Call(""), id, api.ActionOn) })
	step(StepReinstall, func() error {
		_, err := l.Client.(provider.Reinstaller).Reinstall(ctx, l.Call(""), id, l.Image)
		return err
	})
	step(StepDelete, func() error { return l.Client.Delete(ctx, l.Call(""), id) })
}
