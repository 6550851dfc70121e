package emulator

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Networks, firewalls and placement groups made through the API come back
// in the API's shapes, findable by name.
func TestNetworkResourcesThroughTheAPI(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	_, ipRange, _ := net.ParseCIDR("10.0.0.0/16")
	_, sub, _ := net.ParseCIDR("10.0.1.0/24")
	n, _, err := c.Network.Create(ctx, hcloud.NetworkCreateOpts{Name: "backend", IPRange: ipRange,
		Subnets: []hcloud.NetworkSubnet{{Type: hcloud.NetworkSubnetTypeCloud, IPRange: sub, NetworkZone: hcloud.NetworkZoneEUCentral}}})
	require.NoError(t, err)
	got, _, err := c.Network.GetByName(ctx, "backend")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, n.ID, got.ID)
	require.Len(t, got.Subnets, 1)
	assert.Equal(t, hcloud.NetworkZoneEUCentral, got.Subnets[0].NetworkZone)

	_, _, err = c.Network.Create(ctx, hcloud.NetworkCreateOpts{Name: "backend", IPRange: ipRange})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeUniquenessError), "second network of one name: %v", err)
	_, public, _ := net.ParseCIDR("8.8.0.0/16")
	_, _, err = c.Network.Create(ctx, hcloud.NetworkCreateOpts{Name: "public", IPRange: public})
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeInvalidInput), "public range: %v", err)

	fw, _, err := c.Firewall.Create(ctx, hcloud.FirewallCreateOpts{Name: "web"})
	require.NoError(t, err)
	byName, _, err := c.Firewall.GetByName(ctx, "web")
	require.NoError(t, err)
	assert.Equal(t, fw.Firewall.ID, byName.ID)

	pg, _, err := c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: "g", Type: hcloud.PlacementGroupTypeSpread,
		Labels: map[string]string{"pool": "p1"}})
	require.NoError(t, err)
	list, _, err := c.PlacementGroup.List(ctx, hcloud.PlacementGroupListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "pool=p1"}})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, pg.PlacementGroup.ID, list[0].ID)
	_, err = c.PlacementGroup.Delete(ctx, pg.PlacementGroup)
	require.NoError(t, err)
	_, _, err = c.PlacementGroup.GetByID(ctx, pg.PlacementGroup.ID)
	require.NoError(t, err) // hcloud-go answers nil, nil for 404
}

// A server created with a network, a firewall and public_net without IPv4
// has an address of the network's subnet, the firewall applied and no
// public IPv4 in the reply, the state and the Primary IPs.
func TestCreateServerWithNetworkPart(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	netID := e.AddNetwork("backend", "10.0.0.0/16", "10.0.1.0/24@eu-central")
	fwID := e.AddFirewall("web")
	opts := createOpts("db-1", nil)
	opts.Networks = []*hcloud.Network{{ID: netID}}
	opts.Firewalls = []*hcloud.ServerCreateFirewall{{Firewall: hcloud.Firewall{ID: fwID}}}
	opts.PublicNet = &hcloud.ServerCreatePublicNet{EnableIPv4: false, EnableIPv6: true}
	res, _, err := c.Server.Create(ctx, opts)
	require.NoError(t, err)
	assert.True(t, res.Server.PublicNet.IPv4.IsUnspecified(), "reply has public IPv4 %v", res.Server.PublicNet.IPv4.IP)
	require.Len(t, res.Server.PrivateNet, 1)
	assert.Equal(t, "10.0.1.1", res.Server.PrivateNet[0].IP.String())
	require.Len(t, res.Server.PublicNet.Firewalls, 1)
	assert.Equal(t, fwID, res.Server.PublicNet.Firewalls[0].Firewall.ID)

	snap := e.Servers()[0]
	assert.Empty(t, snap.PublicIPv4)
	assert.Equal(t, "10.0.1.1", snap.PrivateIP(netID))
	assert.Equal(t, []int64{fwID}, snap.Firewalls)

	ips, _, err := c.PrimaryIP.List(ctx, hcloud.PrimaryIPListOpts{})
	require.NoError(t, err)
	require.Len(t, ips, 1, "one Primary IP: the IPv6")
	assert.Equal(t, hcloud.PrimaryIPTypeIPv6, ips[0].Type)

	second, _, err := c.Server.Create(ctx, func() hcloud.ServerCreateOpts { o := opts; o.Name = "db-2"; return o }())
	require.NoError(t, err)
	assert.Equal(t, "10.0.1.2", second.Server.PrivateNet[0].IP.String())
}

// The refusals of the network part, with the API's codes.
func TestCreateServerNetworkRefusals(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	usNet := e.AddNetwork("us", "10.1.0.0/16", "10.1.1.0/24@us-east")
	fwID := e.AddFirewall("web")
	cases := []struct {
		name   string
		set    func(o *hcloud.ServerCreateOpts)
		status int
		code   hcloud.ErrorCode
	}{
		{"unknown network", func(o *hcloud.ServerCreateOpts) { o.Networks = []*hcloud.Network{{ID: 42}} },
			http.StatusUnprocessableEntity, hcloud.ErrorCodeInvalidInput},
		{"network without a subnet in the zone", func(o *hcloud.ServerCreateOpts) { o.Networks = []*hcloud.Network{{ID: usNet}} },
			http.StatusUnprocessableEntity, hcloud.ErrorCodeNoSubnetAvailable},
		{"no public IP, no network", func(o *hcloud.ServerCreateOpts) { o.PublicNet = &hcloud.ServerCreatePublicNet{} },
			http.StatusUnprocessableEntity, hcloud.ErrorCodeInvalidInput},
		{"firewall without public interface", func(o *hcloud.ServerCreateOpts) {
			o.Location = &hcloud.Location{Name: "ash"}
			o.Networks = []*hcloud.Network{{ID: usNet}}
			o.Firewalls = []*hcloud.ServerCreateFirewall{{Firewall: hcloud.Firewall{ID: fwID}}}
			o.PublicNet = &hcloud.ServerCreatePublicNet{}
		}, http.StatusUnprocessableEntity, hcloud.ErrorCodePrivateNetOnlyServer},
		{"unknown placement group", func(o *hcloud.ServerCreateOpts) { o.PlacementGroup = &hcloud.PlacementGroup{ID: 7} },
			http.StatusUnprocessableEntity, hcloud.ErrorCodeInvalidInput},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := createOpts(fmt.Sprintf("r-%d", i), nil)
			tc.set(&o)
			_, _, err := c.Server.Create(ctx, o)
			require.Error(t, err)
			assert.True(t, hcloud.IsError(err, tc.code), "error %v, want %s", err, tc.code)
			assert.Equal(t, tc.status, statusOf(t, err))
		})
	}
	assert.Empty(t, e.Servers())
}

// A spread group holds 10 servers: the 11th create answers 422
// placement_group_member_limit_reached and makes nothing.
func TestPlacementGroupHoldsTenServers(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	pg, _, err := c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: "g", Type: hcloud.PlacementGroupTypeSpread})
	require.NoError(t, err)
	for i := range MaxPlacementGroupServers + 1 {
		o := createOpts(fmt.Sprintf("s-%d", i), nil)
		o.PlacementGroup = pg.PlacementGroup
		_, _, err := c.Server.Create(ctx, o)
		if i < MaxPlacementGroupServers {
			require.NoError(t, err)
			continue
		}
		assert.True(t, hcloud.IsError(err, hcloud.ErrorCode("placement_group_member_limit_reached")), "11th: %v", err)
		assert.Equal(t, http.StatusUnprocessableEntity, statusOf(t, err))
	}
	assert.Len(t, e.Servers(), MaxPlacementGroupServers)
	assert.Len(t, e.PlacementGroups()[0].Servers, MaxPlacementGroupServers)
	_, err = c.PlacementGroup.Delete(ctx, pg.PlacementGroup)
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceInUse), "delete of a group with servers: %v", err)
}

// SetLocationFull: every create there answers 412 resource_unavailable;
// other locations are unaffected.
func TestFullLocationAnswers412(t *testing.T) {
	e, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	e.SetLocationFull("nbg1", true)
	_, _, err := c.Server.Create(ctx, createOpts("a", nil))
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable), "%v", err)
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(t, err))
	o := createOpts("a", nil)
	o.Location = &hcloud.Location{Name: "fsn1"}
	_, _, err = c.Server.Create(ctx, o)
	require.NoError(t, err)
	e.SetLocationFull("nbg1", false)
	_, _, err = c.Server.Create(ctx, createOpts("b", nil))
	require.NoError(t, err)
}

// The control API makes a location full and lists placement groups.
func TestControlLocationFullAndPlacementGroups(t *testing.T) {
	s, err := Start(Options{ActionDuration: testActionDuration}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	base := "http://" + s.Addr()
	c := newClient(s.URL(), "t")
	ctx := testCtx(t)
	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "location-full", map[string]any{"location": "nbg1", "full": true}, nil))
	assert.Equal(t, http.StatusNotFound, control(t, base, http.MethodPost, "location-full", map[string]any{"location": "mars", "full": true}, nil))
	_, _, err = c.Server.Create(ctx, createOpts("a", nil))
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodeResourceUnavailable), "%v", err)
	require.Equal(t, http.StatusOK, control(t, base, http.MethodPost, "location-full", map[string]any{"location": "nbg1", "full": false}, nil))
	pg, _, err := c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: "g", Type: hcloud.PlacementGroupTypeSpread})
	require.NoError(t, err)
	o := createOpts("a", nil)
	o.PlacementGroup = pg.PlacementGroup
	_, _, err = c.Server.Create(ctx, o)
	require.NoError(t, err)
	var groups []PlacementGroupSnapshot
	require.Equal(t, http.StatusOK, control(t, base, http.MethodGet, "placement-groups", nil, &groups))
	require.Len(t, groups, 1)
	assert.Len(t, groups[0].Servers, 1)
}

// A placement group's servers share a location: a create in another
// answers 422 placement_error.
func TestPlacementGroupKeepsOneLocation(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	pg, _, err := c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: "g", Type: hcloud.PlacementGroupTypeSpread})
	require.NoError(t, err)
	o := createOpts("a", nil)
	o.PlacementGroup = pg.PlacementGroup
	_, _, err = c.Server.Create(ctx, o)
	require.NoError(t, err)
	o.Name, o.Location = "b", &hcloud.Location{Name: "fsn1"}
	_, _, err = c.Server.Create(ctx, o)
	assert.True(t, hcloud.IsError(err, hcloud.ErrorCodePlacementError), "%v", err)
}
