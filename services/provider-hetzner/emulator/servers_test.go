package emulator

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/clock"
)

func TestCreateWaitRunning(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)

	res, resp, err := c.Server.Create(ctx, createOpts("web-1", map[string]string{"env": "prod"}))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, hcloud.ServerStatusInitializing, res.Server.Status)
	assert.Equal(t, "cx23", res.Server.ServerType.Name)
	assert.Equal(t, "nbg1", res.Server.Location.Name)
	assert.Equal(t, "ubuntu-24.04", res.Server.Image.Name)
	assert.Equal(t, map[string]string{"env": "prod"}, res.Server.Labels)
	assert.True(t, res.Server.Locked)
	assert.NotEmpty(t, res.Server.PublicNet.IPv4.IP.String())
	assert.Equal(t, "create_server", res.Action.Command)
	assert.Equal(t, hcloud.ActionStatusRunning, res.Action.Status)
	require.Len(t, res.NextActions, 1)
	assert.Equal(t, "start_server", res.NextActions[0].Command)
	assert.NotEmpty(t, res.RootPassword)

	require.NoError(t, c.Action.WaitFor(ctx, append([]*hcloud.Action{res.Action}, res.NextActions...)...))
	got, _, err := c.Server.GetByID(ctx, res.Server.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ServerStatusRunning, got.Status)
	assert.False(t, got.Locked)

	snaps := e.Servers()
	require.Len(t, snaps, 1)
	assert.Equal(t, ServerSnapshot{
		ID: res.Server.ID, Name: "web-1", Status: "running", ServerType: "cx23", Location: "nbg1",
		Image: "ubuntu-24.04", Labels: map[string]string{"env": "prod"}, Created: snaps[0].Created,
		PublicIPv4: "203.0.113.1", PublicIPv6: "2001:db8:0:0::/64", PrivateIPs: map[int64]string{},
	}, snaps[0])
}

func TestCreateStartAfterCreateFalseEndsOff(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	_, c, _ := newTestClient(t, Options{Clock: fake, ActionDuration: time.Minute})
	ctx := testCtx(t)
	opts := createOpts("quiet", nil)
	opts.StartAfterCreate = hcloud.Ptr(false)
	opts.SSHKeys = []*hcloud.SSHKey{{ID: 1}}
	res, _, err := c.Server.Create(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, res.NextActions)
	assert.Empty(t, res.RootPassword, "no root password when SSH keys are given")

	fake.Advance(30 * time.Second)
	a, _, err := c.Action.GetByID(ctx, res.Action.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ActionStatusRunning, a.Status)
	assert.Equal(t, 50, a.Progress)

	fake.Advance(30 * time.Second)
	a, _, err = c.Action.GetByID(ctx, res.Action.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ActionStatusSuccess, a.Status)
	assert.Equal(t, 100, a.Progress)
	srv, _, err := c.Server.GetByID(ctx, res.Server.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ServerStatusOff, srv.Status)
}

func TestCreateByImageIDAndDefaultLocation(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	res, _, err := c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: "arm-1", ServerType: &hcloud.ServerType{Name: "cax11"}, Image: &hcloud.Image{ID: 161547270},
	})
	require.NoError(t, err)
	assert.Equal(t, "fsn1", res.Server.Location.Name)
	assert.Equal(t, hcloud.ArchitectureARM, res.Server.Image.Architecture)

	// By name, the arm variant of the image is chosen for an arm type.
	res, _, err = c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: "arm-2", ServerType: &hcloud.ServerType{Name: "cax11"}, Image: &hcloud.Image{Name: "debian-12"},
	})
	require.NoError(t, err)
	assert.Equal(t, int64(114690389), res.Server.Image.ID)
}

func TestCreateInvalidInput(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	tests := []struct {
		name   string
		opts   hcloud.ServerCreateOpts
		fields []string
	}{
		{"unknown type", hcloud.ServerCreateOpts{Name: "a", ServerType: &hcloud.ServerType{Name: "cx99"}, Image: &hcloud.Image{Name: "debian-12"}}, []string{"server_type"}},
		{"unknown image", hcloud.ServerCreateOpts{Name: "a", ServerType: &hcloud.ServerType{Name: "cx23"}, Image: &hcloud.Image{Name: "windows"}}, []string{"image"}},
		{"unknown location", hcloud.ServerCreateOpts{Name: "a", ServerType: &hcloud.ServerType{Name: "cx23"}, Image: &hcloud.Image{Name: "debian-12"}, Location: &hcloud.Location{Name: "mars1"}}, []string{"location"}},
		{"bad name", hcloud.ServerCreateOpts{Name: "not_a host", ServerType: &hcloud.ServerType{Name: "cx23"}, Image: &hcloud.Image{Name: "debian-12"}}, []string{"name"}},
		{"bad label", hcloud.ServerCreateOpts{Name: "a", ServerType: &hcloud.ServerType{Name: "cx23"}, Image: &hcloud.Image{Name: "debian-12"}, Labels: map[string]string{"k": "-bad"}}, []string{"labels"}},
		{"several", hcloud.ServerCreateOpts{Name: "a", ServerType: &hcloud.ServerType{Name: "nope"}, Image: &hcloud.Image{Name: "nope"}}, []string{"server_type", "image"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.Server.Create(ctx, tt.opts)
			require.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "%v", err)
			assert.Equal(t, http.StatusUnprocessableEntity, statusOf(t, err))
			details, isInvalid := err.(hcloud.Error).Details.(hcloud.ErrorDetailsInvalidInput)
			require.True(t, isInvalid)
			var names []string
			for _, f := range details.Fields {
				names = append(names, f.Name)
			}
			assert.Equal(t, tt.fields, names)
		})
	}
}

func TestCreateMissingNameRaw(t *testing.T) {
	_, srv := newTestServer(t, Options{})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/servers",
		stringsReader(`{"server_type":"cx23","image":"debian-12"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				Fields []struct{ Name string } `json:"fields"`
			} `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, decodeBody(resp, &body))
	assert.Equal(t, "invalid_input", body.Error.Code)
	require.Len(t, body.Error.Details.Fields, 1)
	assert.Equal(t, "name", body.Error.Details.Fields[0].Name)
}

func TestCreateUnavailable(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	for _, tt := range []struct{ typ, loc string }{
		{"cx53", "sin"},  // listed, sold out
		{"cax11", "ash"}, // not offered in the US
		{"cx22", "fsn1"}, // deprecated, no longer orderable
	} {
		opts := createOpts("x-"+tt.typ, nil)
		opts.ServerType = &hcloud.ServerType{Name: tt.typ}
		opts.Location = &hcloud.Location{Name: tt.loc}
		_, _, err := c.Server.Create(ctx, opts)
		require.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable), "%s in %s: %v", tt.typ, tt.loc, err)
		assert.Equal(t, http.StatusPreconditionFailed, statusOf(t, err))
	}

	e.SetAvailability("cx23", "nbg1", false)
	_, _, err := c.Server.Create(ctx, createOpts("sold-out", nil))
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable))
	e.SetAvailability("cx23", "nbg1", true)
	_, _, err = c.Server.Create(ctx, createOpts("sold-out", nil))
	require.NoError(t, err)
	assert.Empty(t, e.Servers()[0].Labels)
}

func TestCreateNameTaken(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	_, _, err := c.Server.Create(ctx, createOpts("dup", nil))
	require.NoError(t, err)
	_, _, err = c.Server.Create(ctx, createOpts("dup", nil))
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeUniquenessError), "%v", err)
	assert.Equal(t, http.StatusConflict, statusOf(t, err))
}

func TestConcurrentCreatesSameName(t *testing.T) {
	e, srv := newTestServer(t, Options{})
	ctx := testCtx(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = newClient(srv.URL+"/v1", "t").Server.Create(ctx, createOpts("race", nil))
		})
	}
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case hcloud.IsError(err, hcloud.ErrorCodeUniquenessError):
			conflicts++
		}
	}
	assert.Equal(t, 1, wins)
	assert.Equal(t, n-1, conflicts)
	assert.Len(t, e.Servers(), 1)
}

func TestGetByIDNotFound(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	srv, resp, err := c.Server.GetByID(testCtx(t), 12345)
	require.NoError(t, err)
	assert.Nil(t, srv)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestListLabelSelectors(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	e.SeedServers(2, "prod-web", map[string]string{"env": "prod", "role": "web"})
	e.SeedServers(1, "prod-db", map[string]string{"env": "prod", "role": "db"})
	e.SeedServers(3, "dev", map[string]string{"env": "dev"})
	e.SeedServers(1, "bare", nil)

	tests := []struct {
		selector string
		want     int
	}{
		{"", 7},
		{"env=prod", 3},
		{"env==prod", 3},
		{"env!=prod", 4}, // dev and unlabelled
		{"role", 3},
		{"!role", 4},
		{"env in (prod,dev)", 6},
		{"env notin (prod)", 4},
		{"env=prod,role=web", 2},
		{"env=prod,!role", 0},
		{"env in (dev), !role", 3},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			got, err := c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: tt.selector}})
			require.NoError(t, err)
			assert.Len(t, got, tt.want)
		})
	}

	_, _, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "env in (prod"}})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "%v", err)
	assert.Equal(t, http.StatusBadRequest, statusOf(t, err))
}

func TestListNameAndStatusFilters(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	ids := e.SeedServers(3, "node", nil)
	e.SetServerStatus(ids[1], "off")
	name := e.Servers()[2].Name

	got, _, err := c.Server.List(ctx, hcloud.ServerListOpts{Name: name})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, ids[2], got[0].ID)

	got, _, err = c.Server.List(ctx, hcloud.ServerListOpts{Name: "node"})
	require.NoError(t, err)
	assert.Empty(t, got, "name is an exact match")

	got, _, err = c.Server.List(ctx, hcloud.ServerListOpts{Status: []hcloud.ServerStatus{hcloud.ServerStatusOff}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, ids[1], got[0].ID)
}

func TestPagination(t *testing.T) {
	e, c, srv := newTestClient(t, Options{})
	ctx := testCtx(t)
	ids := e.SeedServers(60, "p", map[string]string{"pool": "a"})

	all, err := c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "pool=a"}})
	require.NoError(t, err)
	require.Len(t, all, 60)
	for i, s := range all {
		assert.Equal(t, ids[i], s.ID)
	}
	assert.Equal(t, 2, e.Calls("GET /servers"))

	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{Page: 2, PerPage: 50}})
	require.NoError(t, err)
	p := resp.Meta.Pagination
	require.NotNil(t, p)
	assert.Equal(t, hcloud.Pagination{Page: 2, PerPage: 50, PreviousPage: 1, NextPage: 0, LastPage: 2, TotalEntries: 60}, *p)

	// Defaults and caps; absent pages are JSON null.
	raw := rawGet(t, srv.URL+"/v1/servers?per_page=500") //nolint:bodyclose // rawGet closes it at cleanup
	var body struct {
		Servers []any `json:"servers"`
		Meta    struct {
			Pagination map[string]any `json:"pagination"`
		} `json:"meta"`
	}
	require.NoError(t, decodeBody(raw, &body))
	assert.Len(t, body.Servers, 50)
	assert.Nil(t, body.Meta.Pagination["previous_page"])
	assert.InDelta(t, 2, body.Meta.Pagination["next_page"], 0)

	raw = rawGet(t, srv.URL+"/v1/servers") //nolint:bodyclose // rawGet closes it at cleanup
	require.NoError(t, decodeBody(raw, &body))
	assert.Len(t, body.Servers, 25)
}

func TestUpdateServer(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	ids := e.SeedServers(2, "u", nil)
	srvs := e.Servers()

	got, _, err := c.Server.Update(ctx, &hcloud.Server{ID: ids[0]}, hcloud.ServerUpdateOpts{Name: "renamed", Labels: map[string]string{"a": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "renamed", got.Name)
	assert.Equal(t, map[string]string{"a": "b"}, got.Labels)

	_, _, err = c.Server.Update(ctx, &hcloud.Server{ID: ids[0]}, hcloud.ServerUpdateOpts{Name: srvs[1].Name})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeUniquenessError), "%v", err)

	// The old name is free again.
	_, _, err = c.Server.Create(ctx, createOpts(srvs[0].Name, nil))
	require.NoError(t, err)
}

func TestDeleteServer(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	e, c, _ := newTestClient(t, Options{Clock: fake, ActionDuration: time.Second})
	ctx := testCtx(t)
	id := e.SeedServers(1, "d", nil)[0]

	res, _, err := c.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
	require.NoError(t, err)
	assert.Equal(t, "delete_server", res.Action.Command)
	assert.Equal(t, "deleting", e.Servers()[0].Status)

	_, _, err = c.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeLocked), "%v", err)

	fake.Advance(time.Second)
	srv, _, err := c.Server.GetByID(ctx, id)
	require.NoError(t, err)
	assert.Nil(t, srv)
	assert.Empty(t, e.Servers())

	_, resp, err := c.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeNotFound))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A server being deleted keeps its name until its delete_server action
// ends: a create with that name answers 409 uniqueness_error meanwhile,
// and the name lists the server as deleting.
func TestNameHeldWhileDeleteRuns(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	e, c, _ := newTestClient(t, Options{Clock: fake, ActionDuration: 5 * time.Second})
	ctx := testCtx(t)
	id := e.SeedServers(1, "w", nil)[0]
	name := e.Servers()[0].Name
	_, _, err := c.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
	require.NoError(t, err)

	fake.Advance(4 * time.Second)
	_, _, err = c.Server.Create(ctx, createOpts(name, nil))
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeUniquenessError), "%v", err)
	holders, _, err := c.Server.List(ctx, hcloud.ServerListOpts{Name: name})
	require.NoError(t, err)
	require.Len(t, holders, 1)
	assert.Equal(t, hcloud.ServerStatusDeleting, holders[0].Status)

	fake.Advance(time.Second)
	_, _, err = c.Server.Create(ctx, createOpts(name, nil))
	require.NoError(t, err, "the name is free once the delete action ended")
}

func TestPowerTransitions(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	e, c, _ := newTestClient(t, Options{Clock: fake, ActionDuration: time.Second})
	ctx := testCtx(t)
	id := e.SeedServers(1, "pw", nil)[0]
	s := &hcloud.Server{ID: id}
	status := func() string { return e.Servers()[0].Status }

	steps := []struct {
		name          string
		call          func() (*hcloud.Action, error)
		command       string
		during, after string
	}{
		{"poweroff", func() (*hcloud.Action, error) { a, _, err := c.Server.Poweroff(ctx, s); return a, err }, "stop_server", "stopping", "off"},
		{"poweron", func() (*hcloud.Action, error) { a, _, err := c.Server.Poweron(ctx, s); return a, err }, "start_server", "starting", "running"},
		{"shutdown", func() (*hcloud.Action, error) { a, _, err := c.Server.Shutdown(ctx, s); return a, err }, "shutdown_server", "stopping", "off"},
		{"reset", func() (*hcloud.Action, error) { a, _, err := c.Server.Reset(ctx, s); return a, err }, "reset_server", "off", "running"},
		{"reboot", func() (*hcloud.Action, error) { a, _, err := c.Server.Reboot(ctx, s); return a, err }, "reboot_server", "running", "running"},
		{"rebuild", func() (*hcloud.Action, error) {
			r, _, err := c.Server.RebuildWithResult(ctx, s, hcloud.ServerRebuildOpts{Image: &hcloud.Image{Name: "debian-12"}})
			if err == nil && r.RootPassword == "" {
				err = fmt.Errorf("no root password")
			}
			return r.Action, err
		}, "rebuild_server", "rebuilding", "running"},
	}
	for _, st := range steps {
		a, err := st.call()
		require.NoError(t, err, st.name)
		assert.Equal(t, st.command, a.Command, st.name)
		assert.Equal(t, st.during, status(), st.name)

		_, _, err = c.Server.Poweron(ctx, s)
		assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeLocked), "%s: second action while locked: %v", st.name, err)

		fake.Advance(time.Second)
		assert.Equal(t, st.after, status(), st.name)
	}
	assert.Equal(t, "debian-12", e.Servers()[0].Image)

	acts, _, err := c.Server.Action.ListFor(ctx, s, hcloud.ActionListOpts{})
	require.NoError(t, err)
	require.Len(t, acts, len(steps))
	for i, a := range acts {
		assert.Equal(t, steps[i].command, a.Command)
		assert.Equal(t, hcloud.ActionStatusSuccess, a.Status)
		assert.Equal(t, []*hcloud.ActionResource{{ID: id, Type: hcloud.ActionResourceTypeServer}}, a.Resources)
	}
}

func TestLargeInventorySelector(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	for i := range 10 {
		e.SeedServers(990, fmt.Sprintf("shard%d", i), map[string]string{"shard": fmt.Sprint(i), "managed-by": "compute"})
	}
	canaries := e.SeedServers(100, "canary", map[string]string{"shard": "canary", "managed-by": "compute"})
	assert.Len(t, e.Servers(), 10_000)

	got, err := c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "managed-by=compute,shard in (canary)"}})
	require.NoError(t, err)
	require.Len(t, got, 100)
	for i, s := range got {
		assert.Equal(t, canaries[i], s.ID)
	}
	assert.Equal(t, 2, e.Calls("GET /servers"))

	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "shard notin (canary,0,1)", PerPage: 50}})
	require.NoError(t, err)
	assert.Equal(t, 8*990, resp.Meta.Pagination.TotalEntries)
}

func BenchmarkListSelector10k(b *testing.B) {
	e := New(Options{RateLimitSize: math.MaxInt32})
	for i := range 10 {
		e.SeedServers(1000, fmt.Sprintf("s%d", i), map[string]string{"shard": fmt.Sprint(i)})
	}
	req, _ := http.NewRequest(http.MethodGet, "/v1/servers?label_selector=shard%3D3&per_page=50", nil)
	req.Header.Set("Authorization", "Bearer t")
	for b.Loop() {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
