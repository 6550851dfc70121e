package emulator

import (
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"better-compute.io/compute/pkg/clock"
)

func TestServerTypesDecode(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	types, err := c.ServerType.All(ctx)
	require.NoError(t, err)
	assert.Len(t, types, 21)
	byName := map[string]*hcloud.ServerType{}
	for _, st := range types {
		byName[st.Name] = st
	}

	cx23 := byName["cx23"]
	require.NotNil(t, cx23)
	assert.Equal(t, 2, cx23.Cores)
	assert.InDelta(t, 4, cx23.Memory, 0)
	assert.Equal(t, 40, cx23.Disk)
	assert.Equal(t, hcloud.CPUTypeShared, cx23.CPUType)
	assert.Equal(t, hcloud.ArchitectureX86, cx23.Architecture)
	assert.False(t, cx23.IsDeprecated())
	require.Len(t, cx23.Pricings, 6)
	prices := map[string]hcloud.ServerTypeLocationPricing{}
	for _, p := range cx23.Pricings {
		prices[p.Location.Name] = p
	}
	assert.Equal(t, "0.0056000000", prices["fsn1"].Hourly.Net)
	assert.Equal(t, "0.0066640000", prices["fsn1"].Hourly.Gross)
	assert.Equal(t, "3.4720000000", prices["fsn1"].Monthly.Net)
	assert.Equal(t, "0.0067200000", prices["sin"].Hourly.Net, "Singapore is dearer")
	assert.Equal(t, uint64(20<<40), prices["nbg1"].IncludedTraffic)

	cax := byName["cax31"]
	require.NotNil(t, cax)
	assert.Equal(t, hcloud.ArchitectureARM, cax.Architecture)
	var caxLocs []string
	for _, l := range cax.Locations {
		caxLocs = append(caxLocs, l.Location.Name)
	}
	assert.Equal(t, []string{"fsn1", "nbg1", "hel1"}, caxLocs)

	var cx53InSin *hcloud.ServerTypeLocation
	for i, l := range byName["cx53"].Locations {
		if l.Location.Name == "sin" {
			cx53InSin = &byName["cx53"].Locations[i]
		}
	}
	require.NotNil(t, cx53InSin)
	assert.False(t, cx53InSin.Available)

	ccx := byName["ccx63"]
	assert.Equal(t, hcloud.CPUTypeDedicated, ccx.CPUType)
	assert.Equal(t, 48, ccx.Cores)

	old := byName["cx22"]
	require.NotNil(t, old)
	assert.True(t, old.IsDeprecated())
	assert.Equal(t, time.Date(2025, 10, 16, 6, 0, 0, 0, time.UTC), old.DeprecationAnnounced())
	assert.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), old.UnavailableAfter())
	for _, l := range old.Locations {
		assert.False(t, l.Available)
		assert.True(t, l.IsDeprecated())
	}

	got, _, err := c.ServerType.GetByName(ctx, "ccx13")
	require.NoError(t, err)
	assert.Equal(t, 8, int(got.Memory))
	got, _, err = c.ServerType.GetByID(ctx, got.ID)
	require.NoError(t, err)
	assert.Equal(t, "ccx13", got.Name)
}

func TestDeprecate(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	e, c, _ := newTestClient(t, Options{Clock: clock.NewFake(now)})
	ctx := testCtx(t)

	e.Deprecate("cpx12", "hel1")
	st, _, err := c.ServerType.GetByName(ctx, "cpx12")
	require.NoError(t, err)
	assert.False(t, st.IsDeprecated())
	for _, l := range st.Locations {
		assert.Equal(t, l.Location.Name == "hel1", l.IsDeprecated(), l.Location.Name)
	}

	e.Deprecate("cpx12", "")
	st, _, err = c.ServerType.GetByName(ctx, "cpx12")
	require.NoError(t, err)
	assert.True(t, st.IsDeprecated())
	assert.Equal(t, now, st.DeprecationAnnounced())
	assert.Equal(t, now.Add(90*24*time.Hour), st.UnavailableAfter())
}

func TestLocationsAndImages(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	ctx := testCtx(t)
	locs, err := c.Location.All(ctx)
	require.NoError(t, err)
	var names []string
	for _, l := range locs {
		names = append(names, l.Name+"/"+string(l.NetworkZone))
	}
	assert.Equal(t, []string{"fsn1/eu-central", "nbg1/eu-central", "hel1/eu-central", "ash/us-east", "hil/us-west", "sin/ap-southeast"}, names)
	loc, _, err := c.Location.GetByID(ctx, 6)
	require.NoError(t, err)
	assert.Equal(t, "SG", loc.Country)

	imgs, err := c.Image.AllWithOpts(ctx, hcloud.ImageListOpts{Name: "ubuntu-24.04", Architecture: []hcloud.Architecture{hcloud.ArchitectureX86}})
	require.NoError(t, err)
	require.Len(t, imgs, 1)
	assert.Equal(t, int64(161547269), imgs[0].ID)
	assert.Equal(t, hcloud.ImageTypeSystem, imgs[0].Type)
}

func TestDatacentersGone(t *testing.T) {
	_, c, _ := newTestClient(t, Options{})
	_, _, err := c.Datacenter.List(testCtx(t), hcloud.DatacenterListOpts{}) //nolint:staticcheck // the point is that it is gone
	require.True(t, hcloud.IsError(err, hcloud.ErrorDeprecatedAPIEndpoint), "%v", err)
	assert.Equal(t, http.StatusGone, statusOf(t, err))
	details, isDeprecated := err.(hcloud.Error).Details.(hcloud.ErrorDetailsDeprecatedAPIEndpoint)
	require.True(t, isDeprecated)
	assert.Contains(t, details.Announcement, "datacenters-deprecated")
}
