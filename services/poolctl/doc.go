// Package poolctl is the pool controller (issue 15): it keeps every sized
// pool (api.Pool.Sizes) at its size per flavor, with every instance on the
// pool's current template revision, through the public instance API
// (compute.v1.<tenant>.instances.{create,list,delete}) as any client would.
//
// Policies this package owns:
//
//   - Membership: the controller's record of the pool (api.PoolControl in
//     compute_poolctl, key <tenant>.<poolId>) lists the instances it made,
//     one slot each. Instances of the pool that no slot names (made by a
//     user) are never counted or touched. Each instance it makes carries
//     the labels api.LabelPoolID, api.LabelPoolRevision and
//     api.LabelPoolSlot, for people and selectors; membership is the
//     record's, so a relabelled instance stays where it is.
//   - Idempotency keys: "poolctl/<poolId>/<ordinal>" (CreateKey). Ordinals
//     are never reused (NextOrdinal only grows), so a key never names an
//     instance deleted before (scale down, then up), and a replaced Failed
//     instance's successor has a key of its own. A slot is written (CAS)
//     before its create is sent: a controller that dies between the two
//     leaves a slot without an instance id, and whoever acts next sends
//     that create again under the same key (the same request: the slot's
//     revision's template), which answers the instance the first attempt
//     made, if it made one. So no crash makes a surplus. A slot the plan
//     deletes before its create answered is created (the same request)
//     first, so its instance, if any, is found and deleted, not left
//     behind. One case cannot be resent: a slot whose revision the pool no
//     longer keeps (ten template changes while its create stayed
//     unanswered) is dropped, and an instance its lost create made would
//     stay in the pool uncounted.
//   - Lease: a controller acts on a pool only while it holds the lease in
//     the pool's record (Holder, LeaseExpiresAt), taken and renewed by a
//     CAS write at the start of every pass and again before it acts. A pass
//     stops acting LeaseMargin before its lease ends, so with the default
//     timing (LeaseDuration 15 s, margin LeaseDuration/5 = 3 s, instance
//     calls bounded by CallTimeout 10 s, at most LeaseDuration − margin)
//     a controller that stops renewing is replaced at the latest 15 s after
//     its last renewal, and never while it may still act. The record's
//     every write is a CAS, so two controllers also never allocate the
//     same ordinal.
//   - What a pass does, per flavor of size N with rollout maxSurge S,
//     maxUnavailable U (plan.go): delete Failed instances; delete
//     instances of the current revision beyond N (the newest first);
//     delete instances of older revisions that are not Running, then as
//     many Running ones as keep N − U Running; create current-revision
//     instances up to N, as long as the flavor has at most N + S. With the
//     default rollout (S 1, U 0) a deploy makes one new instance, waits
//     until it runs, deletes one old one, and so on; with S 0 it deletes
//     one, then makes one.
//   - When: on every change of a pool (a KV watch of compute_pools), on
//     every event of an instance the controller made
//     (compute.v1.*.events.instances.>), every RecheckInterval while a
//     pool has not converged, and every ResyncInterval for every sized
//     pool.
package poolctl
