package emulator

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/clock"
)

func TestRateLimitBucket(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	fake := clock.NewFake(now)
	e, c, _ := newTestClient(t, Options{Clock: fake, RateLimitSize: 3, RateLimitRefillPerSecond: 0.5})
	ctx := testCtx(t)

	for want := 2; want >= 0; want-- {
		_, resp, err := c.Location.List(ctx, hcloud.LocationListOpts{})
		require.NoError(t, err)
		assert.Equal(t, 3, resp.Meta.Ratelimit.Limit)
		assert.Equal(t, want, resp.Meta.Ratelimit.Remaining)
		// Full again after (3-want) tokens at 0.5/s.
		assert.Equal(t, now.Add(time.Duration(3-want)*2*time.Second).Unix(), resp.Meta.Ratelimit.Reset.Unix())
	}

	for range 2 { // a 429 does not consume
		_, resp, err := c.Location.List(ctx, hcloud.LocationListOpts{})
		require.True(t, hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded), "%v", err)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
		assert.Equal(t, now.Add(6*time.Second).Unix(), resp.Meta.Ratelimit.Reset.Unix())
	}
	assert.Equal(t, 5, e.Calls("GET /locations"), "429s are counted")

	fake.Advance(2 * time.Second)
	_, resp, err := c.Location.List(ctx, hcloud.LocationListOpts{})
	require.NoError(t, err)
	assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
}

func TestSetRateLimitReplay(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	fake := clock.NewFake(now)
	e, c, _ := newTestClient(t, Options{Clock: fake})
	ctx := testCtx(t)

	e.SetRateLimit(0, now.Add(30*time.Second))
	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded), "%v", err)
	assert.Equal(t, 3600, resp.Meta.Ratelimit.Limit)
	assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
	assert.Equal(t, now.Add(30*time.Second).Unix(), resp.Meta.Ratelimit.Reset.Unix())

	fake.Advance(30 * time.Second)
	_, resp, err = c.Server.List(ctx, hcloud.ServerListOpts{})
	require.NoError(t, err)
	assert.Equal(t, 3599, resp.Meta.Ratelimit.Remaining)

	// Back at the normal refill rate: one token per second.
	e.SetRateLimit(0, time.Time{})
	fake.Advance(time.Second)
	_, resp, err = c.Server.List(ctx, hcloud.ServerListOpts{})
	require.NoError(t, err)
	assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining)
}

// A window closed by SetRateLimit (Remaining 0, reset 20 s ahead) refuses
// every request until its reset, reporting that reset, and is full at it.
func TestClosedWindowRefusesUntilReset(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	fake := clock.NewFake(now)
	e, c, _ := newTestClient(t, Options{Clock: fake})
	ctx := testCtx(t)
	reset := now.Add(20 * time.Second)

	e.SetRateLimit(0, reset)
	for _, at := range []time.Duration{0, time.Second, 10 * time.Second, 19 * time.Second} {
		fake.Advance(at - fake.Now().Sub(now))
		_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
		require.True(t, hcloud.IsError(err, hcloud.ErrorCodeRateLimitExceeded), "at +%v: %v", at, err)
		assert.Equal(t, 0, resp.Meta.Ratelimit.Remaining, "at +%v", at)
		assert.Equal(t, reset.Unix(), resp.Meta.Ratelimit.Reset.Unix(), "at +%v", at)
	}
	assert.Equal(t, 4, e.RateLimitedCalls())

	fake.Advance(time.Second)
	_, resp, err := c.Server.List(ctx, hcloud.ServerListOpts{})
	require.NoError(t, err)
	assert.Equal(t, 3599, resp.Meta.Ratelimit.Remaining)
	assert.Equal(t, 4, e.RateLimitedCalls())
	e.ResetCalls()
	assert.Equal(t, 0, e.RateLimitedCalls())
}

func TestHeadersOnEveryReply(t *testing.T) {
	_, srv := newTestServer(t, Options{Tokens: []string{"good"}})
	for _, tc := range []struct {
		path, token string
		status      int
	}{
		{"/v1/servers/1", "good", http.StatusNotFound},
		{"/v1/servers", "bad", http.StatusUnauthorized},
		{"/v1/datacenters", "good", http.StatusGone},
		{"/v1/nothing", "good", http.StatusNotFound},
		{"/v1/servers", "good", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, tc.path)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), tc.path)
		assert.Equal(t, "3600", resp.Header.Get("RateLimit-Limit"), tc.path)
		_, err = strconv.Atoi(resp.Header.Get("RateLimit-Remaining"))
		assert.NoError(t, err, tc.path)
		_, err = strconv.ParseInt(resp.Header.Get("RateLimit-Reset"), 10, 64)
		assert.NoError(t, err, tc.path)
	}
}

func TestAuth(t *testing.T) {
	_, srv := newTestServer(t, Options{Tokens: []string{"good"}})
	ctx := testCtx(t)
	_, _, err := newClient(srv.URL+"/v1", "bad").Server.List(ctx, hcloud.ServerListOpts{})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeUnauthorized), "%v", err)
	assert.Equal(t, http.StatusUnauthorized, statusOf(t, err))
	_, _, err = newClient(srv.URL+"/v1", "good").Server.List(ctx, hcloud.ServerListOpts{})
	require.NoError(t, err)

	_, open := newTestServer(t, Options{})
	_, _, err = newClient(open.URL+"/v1", "anything").Server.List(ctx, hcloud.ServerListOpts{})
	require.NoError(t, err)
	resp, err := http.Get(open.URL + "/v1/servers")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a token is always required")
}
