// Package reconciler serves the instance API (compute.v1.<tenant>.instances.*)
// and drives every instance through its provider until the real machine is
// as declared: created once (the instance id is the idempotency key), powered
// as desired, one-shot operations executed at most once, deleted without
// leaking. Work arrives on the COMPUTE_WORK stream (one durable consumer
// shared by every replica); a periodic resync re-queues every instance so a
// lost message never strands one. Every status write is a revision CAS.
package reconciler
