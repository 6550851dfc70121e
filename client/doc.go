// Package client is the Go client of the compute control plane: typed
// methods for every tenant verb (compute.v1.<tenant>.<resource>.<verb>),
// errors as *api.ComputeError, and helpers that wait for an instance to
// reach a goal (Wait) and follow its events (Watch).
//
// A Client is one NATS connection acting as one tenant:
//
//	c, err := client.Connect(client.Options{URLs: []string{"nats://127.0.0.1:4222"}, Tenant: "demo"})
//	if err != nil { ... }
//	defer c.Close()
//	inst, err := c.Instances.Create(ctx, api.InstanceCreateRequest{PoolID: pool.ID, Flavor: "small", Name: "web-1"})
//	inst, err = c.Instances.Wait(ctx, inst.ID, client.Running, nil)
//
// Every method's error is a *api.ComputeError (test it with api.IsCode):
// the service's own (documented per verb in the services' packages and in
// docs/user-guide.md), or UNAVAILABLE when no service answers before the
// call's deadline (Options.Timeout, or the context's when earlier).
//
// Resources are addressed by id; Resolve methods turn a name into an id
// within the tenant (NOT_FOUND when no record has it, INVALID_INPUT listing
// the candidates in details.candidates when several do).
package client
