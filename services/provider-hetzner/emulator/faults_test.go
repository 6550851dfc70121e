package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/clock"
)

func TestFailNext(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	e.FailNext("POST /servers", 2, http.StatusServiceUnavailable, "unavailable", "maintenance window")

	for range 2 {
		_, _, err := c.Server.Create(ctx, createOpts("f", nil))
		require.True(t, hcloud.IsError(err, hcloud.ErrorCode("unavailable")), "%v", err)
		assert.Equal(t, http.StatusServiceUnavailable, statusOf(t, err))
		assert.Equal(t, "maintenance window", err.(hcloud.Error).Message)
	}
	assert.Empty(t, e.Servers(), "a failed call changes nothing")
	_, _, err := c.Server.Create(ctx, createOpts("f", nil))
	require.NoError(t, err)
	assert.Equal(t, 3, e.Calls("POST /servers"))
}

func TestDropResponseCommits(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	e.DropResponseNext("POST /servers", 1)

	_, _, err := c.Server.Create(ctx, createOpts("lost-reply", map[string]string{"k": "v"}))
	require.Error(t, err)
	var herr hcloud.Error
	assert.False(t, errors.As(err, &herr), "no API reply was received: %v", err)

	snaps := e.Servers()
	require.Len(t, snaps, 1, "the create was committed")
	assert.Equal(t, "lost-reply", snaps[0].Name)

	got, _, err := c.Server.GetByName(ctx, "lost-reply")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, map[string]string{"k": "v"}, got.Labels)
}

func TestHangHonoursContext(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	e.HangNext("GET /servers", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := c.Server.List(ctx, hcloud.ServerListOpts{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	_, _, err = c.Server.List(testCtx(t), hcloud.ServerListOpts{})
	require.NoError(t, err, "only the next call hangs")
	assert.Equal(t, 2, e.Calls("GET /servers"))
}

func TestLatency(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	e.SetLatency("GET /locations", 200*time.Millisecond)

	start := time.Now()
	_, _, err := c.Location.List(testCtx(t), hcloud.LocationListOpts{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	e.SetLatency("POST /servers", time.Minute)
	_, _, err = c.Server.Create(ctx, createOpts("slow", nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, e.Servers(), "a call abandoned during its latency is not served")

	e.SetLatency("GET /locations", 0)
	start = time.Now()
	_, _, err = c.Location.List(testCtx(t), hcloud.LocationListOpts{})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 200*time.Millisecond)
}

func TestFailNextActionCreate(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	e.FailNextAction("create_server", "placement_error", "no capacity")

	res, _, err := c.Server.Create(ctx, createOpts("doomed", nil))
	require.NoError(t, err)
	err = c.Action.WaitFor(ctx, append([]*hcloud.Action{res.Action}, res.NextActions...)...)
	var aerr hcloud.ActionError
	require.ErrorAs(t, err, &aerr)
	assert.Equal(t, "placement_error", aerr.Code)
	assert.Equal(t, "no capacity", aerr.Message)

	require.Eventually(t, func() bool {
		a, _, err := c.Action.GetByID(ctx, res.NextActions[0].ID)
		return err == nil && a.Status == hcloud.ActionStatusError && a.ErrorCode == "placement_error"
	}, 5*time.Second, 5*time.Millisecond, "the start after a failed create fails too")

	got, _, err := c.Server.GetByID(ctx, res.Server.ID)
	require.NoError(t, err)
	require.NotNil(t, got, "a failed create leaves the server behind")
	assert.Equal(t, hcloud.ServerStatusOff, got.Status)
	assert.False(t, got.Locked)

	// It can be deleted normally.
	del, _, err := c.Server.DeleteWithResult(ctx, got)
	require.NoError(t, err)
	require.NoError(t, c.Action.WaitFor(ctx, del.Action))
	assert.Empty(t, e.Servers())
}

func TestFailNextActionPoweroffRevertsStatus(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	e, c, _ := newTestClient(t, Options{Clock: fake})
	ctx := testCtx(t)
	id := e.SeedServers(1, "x", nil)[0]
	e.FailNextAction("stop_server", "server_error", "")

	a, _, err := c.Server.Poweroff(ctx, &hcloud.Server{ID: id})
	require.NoError(t, err)
	fake.Advance(DefaultActionDuration)
	a, _, err = c.Action.GetByID(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, hcloud.ActionStatusError, a.Status)
	assert.Equal(t, "server_error", a.ErrorCode)
	assert.Equal(t, "running", e.Servers()[0].Status)
	assert.Equal(t, "injected action failure", a.ErrorMessage)
}

func TestOutOfBandDrift(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	ids := e.SeedServers(2, "drift", nil)
	e.SetServerStatus(ids[0], "off")
	e.DeleteServerOutOfBand(ids[1])

	got, _, err := c.Server.GetByID(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, hcloud.ServerStatusOff, got.Status)
	gone, _, err := c.Server.GetByID(ctx, ids[1])
	require.NoError(t, err)
	assert.Nil(t, gone)
}

func TestCallCounters(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	res, _, err := c.Server.Create(ctx, createOpts("count", nil))
	require.NoError(t, err)
	require.NoError(t, c.Action.WaitFor(ctx, res.Action))
	_, _, err = c.Server.Poweroff(ctx, res.Server)
	require.NoError(t, err)
	_, _, err = c.Server.GetByID(ctx, res.Server.ID)
	require.NoError(t, err)
	_, _, err = c.Server.GetByID(ctx, 1)
	require.NoError(t, err)

	counts := e.CallCounts()
	assert.Equal(t, 1, counts["POST /servers"])
	assert.Equal(t, 2, counts["GET /servers/{id}"])
	assert.Equal(t, 1, counts["POST /servers/{id}/actions/poweroff"])
	assert.Positive(t, counts["GET /actions"])
	assert.Equal(t, counts["GET /actions"], e.Calls("GET /actions"))

	e.ResetCalls()
	assert.Empty(t, e.CallCounts())
	assert.Zero(t, e.Calls("POST /servers"))
}

// control calls the control API and decodes its reply into out (if set).
func control(t *testing.T, base, method, path string, body, out any) int {
	t.Helper()
	var buf bytes.Buffer
	if body != nil {
		require.NoError(t, json.NewEncoder(&buf).Encode(body))
	}
	req, err := http.NewRequest(method, base+"/_emulator/"+path, &buf)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

func TestControlAPI(t *testing.T) {
	s, err := Start(Options{ActionDuration: testActionDuration}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	base := "http://" + s.Addr()
	assert.Equal(t, base+"/v1", s.URL())
	c := newClient(s.URL(), "t")
	ctx := testCtx(t)

	var seeded struct{ IDs []int64 }
	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "servers/seed",
		map[string]any{"n": 3, "name_prefix": "ctl", "labels": map[string]string{"env": "ci"}}, &seeded))
	require.Len(t, seeded.IDs, 3)

	var snaps []ServerSnapshot
	require.Equal(t, http.StatusOK, control(t, base, http.MethodGet, "servers", nil, &snaps))
	require.Len(t, snaps, 3)
	assert.Equal(t, map[string]string{"env": "ci"}, snaps[0].Labels)
	assert.Equal(t, snaps, s.Emulator().Servers())

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "faults/fail",
		map[string]any{"route": "GET /servers", "n": 1, "status": 500, "code": "server_error"}, nil))
	_, _, err = c.Server.List(ctx, hcloud.ServerListOpts{})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeServerError), "%v", err)

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "faults/hang", map[string]any{"route": "GET /servers", "n": 1}, nil))
	hangCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _, err = c.Server.List(hangCtx, hcloud.ServerListOpts{})
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "faults/latency", map[string]any{"route": "GET /locations", "duration": "5ms"}, nil))
	assert.Equal(t, http.StatusUnprocessableEntity, control(t, base, http.MethodPost, "faults/latency", map[string]any{"route": "GET /servers", "duration": "bogus"}, nil))

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "faults/drop", map[string]any{"route": "POST /servers", "n": 1}, nil))
	_, _, err = c.Server.Create(ctx, createOpts("dropped", nil))
	require.Error(t, err)

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "faults/action", map[string]any{"command": "reboot_server", "code": "server_error"}, nil))
	a, _, err := c.Server.Reboot(ctx, &hcloud.Server{ID: seeded.IDs[0]})
	require.NoError(t, err)
	var aerr hcloud.ActionError
	require.ErrorAs(t, c.Action.WaitFor(ctx, a), &aerr)

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "availability", map[string]any{"server_type": "cx23", "location": "nbg1", "available": false}, nil))
	assert.Equal(t, http.StatusNotFound, control(t, base, http.MethodPost, "availability", map[string]any{"server_type": "cx99", "location": "nbg1"}, nil))
	_, _, err = c.Server.Create(ctx, createOpts("nope", nil))
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable), "%v", err)

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "deprecate", map[string]any{"server_type": "cx33"}, nil))
	st, _, err := c.ServerType.GetByName(ctx, "cx33")
	require.NoError(t, err)
	assert.True(t, st.IsDeprecated())

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "servers/"+strconv.FormatInt(seeded.IDs[1], 10)+"/status", map[string]any{"status": "off"}, nil))
	require.Equal(t, http.StatusOK, control(t, base, http.MethodDelete, "servers/"+strconv.FormatInt(seeded.IDs[2], 10), nil, nil))

	reset := time.Now().Add(30 * time.Second).Truncate(time.Second)
	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "ratelimit", map[string]any{"remaining": 0, "reset_at": reset}, nil))
	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded), "%v", err)
	assert.WithinDuration(t, reset, resp.Meta.Ratelimit.Reset, time.Second)

	var calls map[string]int
	require.Equal(t, http.StatusOK, control(t, base, http.MethodGet, "calls", nil, &calls))
	assert.Equal(t, 3, calls["GET /servers"]) // failed, hung, rate limited
	assert.Equal(t, 2, calls["POST /servers"])

	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "reset", nil, nil))
	assert.Empty(t, s.Emulator().Servers())
	assert.Empty(t, s.Emulator().CallCounts())
	_, _, err = c.Server.Create(ctx, createOpts("fresh", nil))
	require.NoError(t, err, "reset restores availability, budget and faults")

	assert.Equal(t, http.StatusNotFound, control(t, base, http.MethodGet, "nothing", nil, nil))
}
