package api

// ConditionPlaced notes where an instance's machine landed when that is
// not where its pool asked first: True with reason ReasonLocationFallback
// and the provider's ExternalMachine.PlacementNote as message (e.g.
// "created in nbg1: no capacity (412 resource_unavailable) in fsn1 (…)").
// It is informational: not a problem (Condition.Problem), and it stays
// for the machine's life.
const ConditionPlaced ConditionType = "Placed"

// ReasonLocationFallback is the reason of a Placed condition: the first
// location(s) of the pool's placement.locations had no capacity.
const ReasonLocationFallback ConditionReason = "LocationFallback"
