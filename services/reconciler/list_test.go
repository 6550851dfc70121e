package reconciler

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
)

// matches is the one filter of instances.list, and it must give the same
// answer on an instance's index view (listView) as on the whole record.
func TestListPredicate(t *testing.T) {
	poolA, poolB := api.NewID(api.PrefixPool), api.NewID(api.PrefixPool)
	inst := api.Instance{ID: "inst_1", PoolID: poolA, Name: "web-1", Flavor: "small", Labels: map[string]string{"app": "web"},
		Status: api.InstanceStatus{Phase: api.PhaseRunning, Machine: &api.ExternalMachine{ID: "7"}}}
	cases := []struct {
		name string
		req  api.InstanceListRequest
		want bool
	}{
		{"no filter", api.InstanceListRequest{}, true},
		{"its pool", api.InstanceListRequest{PoolID: poolA}, true},
		{"another pool", api.InstanceListRequest{PoolID: poolB}, false},
		{"its phase", api.InstanceListRequest{Phase: api.PhaseRunning}, true},
		{"another phase", api.InstanceListRequest{Phase: api.PhaseStopped}, false},
		{"its pool and phase", api.InstanceListRequest{PoolID: poolA, Phase: api.PhaseRunning}, true},
		{"its pool, another phase", api.InstanceListRequest{PoolID: poolA, Phase: api.PhaseFailed}, false},
		{"another pool, its phase", api.InstanceListRequest{PoolID: poolB, Phase: api.PhaseRunning}, false},
		{"its label", api.InstanceListRequest{Selector: "app=web"}, true},
		{"another label value", api.InstanceListRequest{Selector: "app in (db,cache)"}, false},
		{"its pool, a label it lacks", api.InstanceListRequest{PoolID: poolA, Selector: "tier"}, false},
	}
	view := listView(&inst)
	for _, c := range cases {
		match, err := instanceFilter(c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := match(&inst); got != c.want {
			t.Errorf("%s: filter(record) = %v, want %v", c.name, got, c.want)
		}
		if got := match(&view); got != c.want {
			t.Errorf("%s: filter(view) = %v, want %v", c.name, got, c.want)
		}
		// Every facet a matching request requires is one the instance has.
		if c.want {
			for _, f := range requiredFacets(c.req) {
				if !slices.Contains(listFacets(&view), f) {
					t.Errorf("%s: requires facet %q the instance lacks (%v)", c.name, f, listFacets(&view))
				}
			}
		}
	}
	if view.Name != "" || view.Status.Machine != nil {
		t.Errorf("the view keeps more than the list filters read: %+v", view)
	}
	// The collector's fields stay, messages go; interning changes nothing.
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inst.Status.Conditions = []api.Condition{{Type: api.ConditionReady, Status: api.ConditionFalse, Reason: "Provisioning",
		Message: "booting", LastTransitionTime: at}}
	want := []api.Condition{{Type: api.ConditionReady, Status: api.ConditionFalse, Reason: "Provisioning", LastTransitionTime: at}}
	for name, v := range map[string]api.Instance{"listView": listView(&inst), "interned": interned()(&inst)} {
		if !reflect.DeepEqual(v.Status.Conditions, want) || v.PoolID != inst.PoolID || v.Status.Phase != inst.Status.Phase ||
			!reflect.DeepEqual(v.Labels, inst.Labels) {
			t.Errorf("%s: %+v, want conditions %+v", name, v, want)
		}
	}
}

// Through the bus, with two replicas answering instances.list (the API
// alone: no pass changes a phase meanwhile): a list sent right after a
// create was answered holds the instance, whichever replica answers, and
// a list by its pool or phase too.
func TestListHoldsEveryCreateBeforeIt(t *testing.T) {
	h := newHarness(t, fastOptions(), startAPI)
	h.startAPIOnly()
	other := h.otherPool()
	for i := range 40 {
		req := api.InstanceCreateRequest{}
		if i%2 == 1 {
			req = withPool(req, other)
		}
		inst := h.create(req)
		for _, filter := range []map[string]any{{"limit": 1000}, {"limit": 1000, "poolId": inst.PoolID},
			{"limit": 1000, "phase": inst.Status.Phase}} {
			var page api.List[api.Instance]
			if err := h.call("list", filter, &page); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(page.Items, func(i api.Instance) bool { return i.ID == inst.ID }) {
				t.Fatalf("list %v right after creating %s (%s) lacks it: %d items", filter, inst.ID, inst.Status.Phase, len(page.Items))
			}
		}
	}
}
