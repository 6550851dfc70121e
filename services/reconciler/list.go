package reconciler

import (
	"slices"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// instances.list is answered from an in-memory index of every instance
// (bus.Index, kept by each replica from a watch of compute_instances and
// caught up to the stream's last sequence before each list): a page costs
// its own records' reads, whatever the tenant's inventory, and is sent as
// the cached records' stored JSON (bus.Index.ListJSON). The index
// keeps only listView of each instance; instanceFilter is the list's one filter,
// applied to the views to pick a page's ids and again to the records read.

// instanceFilter is instances.list's one predicate over a record, built
// from the request: the pool (when named), the phase (when named) and the
// label selector (api.ParseSelector) must all match. A list
// implementation, scanning or indexed, applies it to each candidate.
// Errors: INVALID_INPUT naming phase, poolId or selector.
func instanceFilter(in api.InstanceListRequest) (func(*api.Instance) bool, error) {
	if in.Phase != "" && !slices.Contains(api.Phases(), in.Phase) {
		return nil, api.InvalidInput("phase", "phase must be one of %v", api.Phases())
	}
	if in.PoolID != "" && !api.ValidID(api.PrefixPool, in.PoolID) {
		return nil, api.InvalidInput("poolId", "poolId must be a pool id (pool_…)")
	}
	sel, err := api.ParseSelector("selector", in.Selector)
	if err != nil {
		return nil, err
	}
	return func(i *api.Instance) bool {
		return (in.PoolID == "" || i.PoolID == in.PoolID) && (in.Phase == "" || i.Status.Phase == in.Phase) && sel.Matches(i.Labels)
	}, nil
}

// listView is what the index keeps of an instance: the fields instanceFilter
// reads (pool, phase, labels for a selector) and those the metrics
// collector counts (the conditions' type, status, reason and transition
// time, without their messages), nothing else: a page's records are read
// from the bucket.
func listView(inst *api.Instance) api.Instance {
	var v api.Instance
	v.ID, v.PoolID, v.Status.Phase, v.Labels = inst.ID, inst.PoolID, inst.Status.Phase, inst.Labels
	if n := len(inst.Status.Conditions); n > 0 {
		v.Status.Conditions = make([]api.Condition, n)
		for i, c := range inst.Status.Conditions {
			v.Status.Conditions[i] = api.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime}
		}
	}
	return v
}

// interned is listView whose strings repeated across instances (pool id,
// phase, condition type, status and reason) share one copy each. It keeps
// a table of its own and is not safe for concurrent use: the index calls
// its view from its one watch goroutine.
func interned() func(*api.Instance) api.Instance {
	table := map[string]string{}
	intern := func(s string) string {
		if t, ok := table[s]; ok {
			return t
		}
		table[s] = s
		return s
	}
	return func(inst *api.Instance) api.Instance {
		v := listView(inst)
		v.PoolID, v.Status.Phase = intern(v.PoolID), api.Phase(intern(string(v.Status.Phase)))
		for i := range v.Status.Conditions {
			c := &v.Status.Conditions[i]
			c.Type, c.Status = api.ConditionType(intern(string(c.Type))), api.ConditionStatus(intern(string(c.Status)))
			c.Reason = api.ConditionReason(intern(string(c.Reason)))
		}
		return v
	}
}

// Facet names of the instance index: the sets a list walks instead of
// every instance of the tenant when its request names a pool or a phase.
const (
	facetPool  = "pool="
	facetPhase = "phase="
)

// listFacets are the index's facets of an instance view: its pool and
// its phase.
func listFacets(v *api.Instance) []string {
	return []string{facetPool + v.PoolID, facetPhase + string(v.Status.Phase)}
}

// requiredFacets are the facets every instance matching req has: the
// index walks the smaller of their sets.
func requiredFacets(req api.InstanceListRequest) []string {
	var fs []string
	if req.PoolID != "" {
		fs = append(fs, facetPool+req.PoolID)
	}
	if req.Phase != "" {
		fs = append(fs, facetPhase+string(req.Phase))
	}
	return fs
}

// instanceCacheBytes bounds the instance records the index keeps as
// stored (bus.IndexOptions.CacheBytes), so that a page of cached records
// costs no KV read: 16 MiB holds every record of about 15,000 instances
// (about 1 KiB each). Measured at 100,000 instances (BenchmarkMemoryAtScale):
// 32 MiB made a replica's RSS 219 MB (with the GC's headroom, about twice
// the cache), under its 300 MB goal but most of the margin, so half that.
const instanceCacheBytes = 16 << 20

// instanceIndex starts the instance index of st's instances table.
func instanceIndex(instances *bus.Table[api.Instance], o Options) (*bus.Index[api.Instance], error) {
	return bus.NewIndex(instances, bus.IndexOptions[api.Instance]{View: interned(), Facets: listFacets, Logger: o.Logger,
		CacheBytes: instanceCacheBytes})
}
