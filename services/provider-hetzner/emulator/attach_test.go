package emulator

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/clock"
)

// attach_to_network with ip_range gives the server an address of that
// subnet (not the network's first), locks the server while its action
// runs (resources: server and network), and answers the API's refusals:
// locked, already attached, a network of another zone, an ip_range that
// is no subnet, a taken ip.
func TestAttachToNetwork(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	e, c, _ := newTestClient(t, Options{Clock: fake})
	ctx := testCtx(t)
	netID := e.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central", "10.0.2.0/24@eu-central")
	usID := e.AddNetwork("us", "10.1.0.0/16", "10.1.1.0/24@us-east")
	res, _, err := c.Server.Create(ctx, createOpts("db-1", nil))
	require.NoError(t, err)
	srv := res.Server
	_, second, _ := net.ParseCIDR("10.0.2.0/24")
	attach := func(network int64, opts hcloud.ServerAttachToNetworkOpts) (*hcloud.Action, error) {
		opts.Network = &hcloud.Network{ID: network}
		a, _, err := c.Server.AttachToNetwork(ctx, srv, opts)
		return a, err
	}

	_, err = attach(netID, hcloud.ServerAttachToNetworkOpts{IPRange: second})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeLocked), "attach while create runs: %v", err)
	fake.Advance(testActionDuration)

	_, other, _ := net.ParseCIDR("10.0.3.0/24")
	_, err = attach(netID, hcloud.ServerAttachToNetworkOpts{IPRange: other})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "ip_range no subnet: %v", err)
	_, err = attach(usID, hcloud.ServerAttachToNetworkOpts{})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeNoSubnetAvailable), "network of another zone: %v", err)
	_, err = attach(999, hcloud.ServerAttachToNetworkOpts{})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "unknown network: %v", err)

	a, err := attach(netID, hcloud.ServerAttachToNetworkOpts{IPRange: second})
	require.NoError(t, err)
	assert.Equal(t, "attach_to_network", a.Command)
	require.Len(t, a.Resources, 2)
	assert.Equal(t, netID, a.Resources[1].ID)
	assert.Equal(t, hcloud.ActionResourceTypeNetwork, a.Resources[1].Type)
	got, _, err := c.Server.GetByID(ctx, srv.ID)
	require.NoError(t, err)
	assert.True(t, got.Locked, "server unlocked while attach_to_network runs")
	fake.Advance(testActionDuration)
	assert.Equal(t, "10.0.2.1", e.Servers()[0].PrivateIP(netID))

	_, err = attach(netID, hcloud.ServerAttachToNetworkOpts{IPRange: second})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeServerAlreadyAttached), "second attach: %v", err)
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(t, err))

	res2, _, err := c.Server.Create(ctx, createOpts("db-2", nil))
	require.NoError(t, err)
	fake.Advance(testActionDuration)
	srv = res2.Server
	_, err = attach(netID, hcloud.ServerAttachToNetworkOpts{IP: net.ParseIP("10.0.2.1")})
	require.True(t, hcloud.IsError(err, hcloud.ErrorCodeIPNotAvailable), "taken ip: %v", err)
}

// A failed attach_to_network action takes the address back: the server is
// not in the network, and attaching again works.
func TestFailedAttachTakesTheAddressBack(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	netID := e.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central")
	res, _, err := c.Server.Create(ctx, createOpts("db-1", nil))
	require.NoError(t, err)
	require.NoError(t, c.Action.WaitFor(ctx, append([]*hcloud.Action{res.Action}, res.NextActions...)...))
	e.FailNextAction("attach_to_network", "server_error", "")
	opts := hcloud.ServerAttachToNetworkOpts{Network: &hcloud.Network{ID: netID}}
	a, _, err := c.Server.AttachToNetwork(ctx, res.Server, opts)
	require.NoError(t, err)
	require.Error(t, c.Action.WaitFor(ctx, a))
	assert.Empty(t, e.Servers()[0].PrivateIP(netID))
	a, _, err = c.Server.AttachToNetwork(ctx, res.Server, opts)
	require.NoError(t, err)
	require.NoError(t, c.Action.WaitFor(ctx, a))
	assert.Equal(t, "10.0.1.1", e.Servers()[0].PrivateIP(netID))
}
