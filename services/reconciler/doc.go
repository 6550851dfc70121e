// Package reconciler serves the instance API (compute.v1.<tenant>.instances.*)
// and drives every instance through its provider until the real machine is
// as declared: created once (the instance id is the idempotency key), powered
// as desired, one-shot operations executed at most once, deleted without
// leaking. Work arrives on the COMPUTE_WORK stream (a durable consumer per
// tenant account shared by every replica, run in turns fair across tenants
// and a tenant's accounts: work.go, fairqueue.go); a periodic resync
// re-queues every instance so a lost message never strands one, and
// repairs the tenants' instance counts. The tenants' quotas are enforced at
// create (usage.go: instances per tenant and pool, creates per second). Every status write is a revision CAS
// (writeRecord, the one CAS loop).
//
// A pass runs the live or the delete phases in order (phases.go; each phase
// in the file named after it). The phase is derived from the instance's
// facts by derivePhase (phase.go) in sealRecord, the only writer of
// status.phase; no decision reads it. Time comes from Options.Clock (pkg/clock).
//
// instances.list is answered from the replica's in-memory instance index
// (list.go, bus.Index): pages cost O(page) at any inventory, filtered by the
// one predicate matches, and still hold every instance written before them.
package reconciler
