package accounts_test

import (
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// pools.update merges sizes, makes a revision for each new template (the
// first update makes revision 1), keeps the 10 newest; pools.rollback makes
// a new revision of an earlier one's template.
func TestPoolUpdateAndRollback(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", api.PoolCreateRequest{Class: api.PoolClassProvider,
		ProviderAccountID: a.ID, Agent: api.PoolAgentNone,
		Flavors: []api.Flavor{{Name: "small", OfferID: "cx22-fsn1", Image: "ubuntu-24.04"}, {Name: "large", OfferID: "cx32-fsn1", Image: "x"}}})
	up := func(req api.PoolUpdateRequest) api.Pool {
		t.Helper()
		req.ID = p.ID
		return must[api.Pool](t, e.NC, bus.ResourcePools, "update", req)
	}
	p = up(api.PoolUpdateRequest{Sizes: map[string]int{"small": 3}})
	if p.Revision != 1 || p.Version != 2 || p.Sizes["small"] != 3 || len(p.Revisions) != 1 || p.RolloutOrDefault().MaxSurge != 1 {
		t.Fatalf("first update: %+v", p)
	}
	p = up(api.PoolUpdateRequest{Sizes: map[string]int{"large": 1}, Rollout: &api.PoolRollout{MaxSurge: 0, MaxUnavailable: 2}})
	if p.Revision != 1 || p.Sizes["small"] != 3 || p.Sizes["large"] != 1 || p.Rollout.MaxUnavailable != 2 {
		t.Fatalf("sizes are merged, no revision: %+v", p)
	}
	p = up(api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "debian-12", Labels: map[string]string{"app": "web"}}})
	if p.Revision != 2 || p.Template.Image != "debian-12" {
		t.Fatalf("deploy: %+v", p)
	}
	if again := up(api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "debian-12", Labels: map[string]string{"app": "web"}}}); again.Revision != 2 {
		t.Fatalf("the same template made revision %d", again.Revision)
	}
	rb := must[api.Pool](t, e.NC, bus.ResourcePools, "rollback", api.PoolRollbackRequest{ID: p.ID})
	if rb.Revision != 3 || rb.Template.Image != "" || rb.Revisions[2].RollbackOf != 1 {
		t.Fatalf("rollback: %+v", rb)
	}
	for i := range 12 {
		p = up(api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "img-" + strings.Repeat("x", i+1)}})
	}
	if len(p.Revisions) != api.PoolRevisionsKept || p.Revisions[0].Revision != p.Revision-api.PoolRevisionsKept+1 {
		t.Fatalf("revisions kept: %d, first %d, current %d", len(p.Revisions), p.Revisions[0].Revision, p.Revision)
	}
	_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "rollback", api.PoolRollbackRequest{ID: p.ID, Revision: 2})
	wantErr(t, err, api.CodeInvalidInput, "revision")
	_, err = call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "update", api.PoolUpdateRequest{ID: p.ID, Version: 1, Sizes: map[string]int{"small": 1}})
	wantErr(t, err, api.CodeConflict, "version")
	got := must[api.Pool](t, e.NC, bus.ResourcePools, "get", api.IDRequest{ID: p.ID})
	if got.Status != nil {
		t.Fatalf("status without a pool controller: %+v", got.Status)
	}
}

// Bad updates are INVALID_INPUT naming the field.
func TestPoolUpdateRefusals(t *testing.T) {
	e := start(t, 0)
	a := createAccount(t, e, "main", "fsn1")
	p := must[api.Pool](t, e.NC, bus.ResourcePools, "create", api.PoolCreateRequest{Class: api.PoolClassProvider,
		ProviderAccountID: a.ID, Agent: api.PoolAgentNone, Flavors: []api.Flavor{{Name: "small", OfferID: "cx22-fsn1"}}})
	rollout := func(s, u int) *api.PoolRollout { return &api.PoolRollout{MaxSurge: s, MaxUnavailable: u} }
	cases := []struct {
		req  api.PoolUpdateRequest
		path string
	}{
		{api.PoolUpdateRequest{ID: "pool_nope"}, "id"},
		{api.PoolUpdateRequest{Sizes: map[string]int{"huge": 1}}, "sizes.huge"},
		{api.PoolUpdateRequest{Sizes: map[string]int{"small": -1}}, "sizes.small"},
		{api.PoolUpdateRequest{Sizes: map[string]int{"small": api.MaxPoolSize + 1}}, "sizes.small"},
		{api.PoolUpdateRequest{Rollout: rollout(0, 0)}, "rollout.maxUnavailable"},
		{api.PoolUpdateRequest{Rollout: rollout(-1, 1)}, "rollout.maxSurge"},
		{api.PoolUpdateRequest{Template: &api.PoolTemplate{Image: "bad\x00image"}}, "template.image"},
		{api.PoolUpdateRequest{Template: &api.PoolTemplate{Labels: map[string]string{"compute.pool/id": "x"}}},
			"template.labels.compute.pool/id"},
		{api.PoolUpdateRequest{Template: &api.PoolTemplate{Labels: map[string]string{"bad key": "x"}}}, "template.labels.bad key"},
		{api.PoolUpdateRequest{Template: &api.PoolTemplate{Labels: map[string]string{"app": "-x"}}}, "template.labels.app"},
		// the flavor has no image, so the template must name one
		{api.PoolUpdateRequest{Sizes: map[string]int{"small": 1}, Template: &api.PoolTemplate{}}, "template.image"},
		{api.PoolUpdateRequest{Sizes: map[string]int{"small": 1}}, "template.image"},
	}
	for _, c := range cases {
		if c.req.ID == "" {
			c.req.ID = p.ID
		}
		_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "update", c.req)
		wantErr(t, err, api.CodeInvalidInput, c.path)
	}
	_, err := call[api.Pool](t, e.NC, tenant, bus.ResourcePools, "rollback", api.PoolRollbackRequest{ID: p.ID})
	wantErr(t, err, api.CodeInvalidState, "")
}
