package emulator

import (
	"fmt"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// location is one Hetzner location with its pricing region.
type location struct {
	schema.Location
	// datacenter is the name of the location's (single) datacenter, as still
	// reported inside server objects.
	datacenter string
	// pricePercent scales the EU base price (100 = EU).
	pricePercent int64
	// includedTraffic is the free traffic per month in bytes.
	includedTraffic uint64
	// perTB is the net price of one extra TB of traffic, in units of 1e-10 EUR.
	perTB int64
}

// tib is one tebibyte, the unit of included traffic in the real API.
const tib = uint64(1) << 40

// newLocations returns today's locations, ordered by id.
func newLocations() []*location {
	loc := func(id int64, name, desc, country, city, zone string, lat, lon float64,
		dc string, pct int64, traffic uint64, perTB int64) *location {
		return &location{
			Location: schema.Location{
				ID: id, Name: name, Description: desc, Country: country, City: city,
				Latitude: lat, Longitude: lon, NetworkZone: zone,
			},
			datacenter: dc, pricePercent: pct,
			includedTraffic: traffic, perTB: perTB,
		}
	}
	const euro = 10_000_000_000 // 1 EUR in 1e-10 EUR units
	return []*location{
		loc(1, "fsn1", "Falkenstein DC Park 1", "DE", "Falkenstein", "eu-central", 50.47612, 12.370071, "fsn1-dc14", 100, 20*tib, euro),
		loc(2, "nbg1", "Nuremberg DC Park 1", "DE", "Nuremberg", "eu-central", 49.452102, 11.076665, "nbg1-dc3", 100, 20*tib, euro),
		loc(3, "hel1", "Helsinki DC Park 1", "FI", "Helsinki", "eu-central", 60.169855, 24.938379, "hel1-dc2", 100, 20*tib, euro),
		loc(4, "ash", "Ashburn, VA", "US", "Ashburn, VA", "us-east", 39.045821, -77.487073, "ash-dc1", 112, 1*tib, euro),
		loc(5, "hil", "Hillsboro, OR", "US", "Hillsboro, OR", "us-west", 45.54222, -122.951924, "hil-dc1", 112, 1*tib, euro),
		loc(6, "sin", "Singapore", "SG", "Singapore", "ap-southeast", 1.283333, 103.833333, "sin-dc1", 120, tib/2, 74*euro/10),
	}
}

// deprecation is the announced end of life of a type (or of a type in one
// location).
type deprecation struct {
	announced        time.Time
	unavailableAfter time.Time
}

// toSchema renders d, nil for "not deprecated".
func (d *deprecation) toSchema() *schema.DeprecationInfo {
	if d == nil {
		return nil
	}
	return &schema.DeprecationInfo{Announced: d.announced, UnavailableAfter: d.unavailableAfter}
}

// typeLocation is a server type's standing in one location: listed means
// supported there.
type typeLocation struct {
	loc         *location
	available   bool
	recommended bool
	deprecation *deprecation
}

// serverType is one server type; availability and deprecation are mutable
// through the fault API.
type serverType struct {
	id           int64
	name         string
	description  string
	category     string
	cores        int
	memory       float32
	disk         int
	cpuType      string
	architecture string
	// hourlyNet is the EU net hourly price in units of 1e-10 EUR.
	hourlyNet   int64
	deprecation *deprecation
	locations   []*typeLocation
	// rendered caches toSchema; whoever changes the type clears it.
	rendered *schema.ServerType
}

// in returns the type's entry for the named location, nil if the type is
// not offered there.
func (t *serverType) in(locName string) *typeLocation {
	for _, tl := range t.locations {
		if tl.loc.Name == locName {
			return tl
		}
	}
	return nil
}

// Guess: category names follow the 2025 product lines (cost-optimized CX and
// CAX, regular-performance CPX, general-purpose CCX).
const (
	categoryCostOptimized  = "cost_optimized"
	categoryRegularPurpose = "regular_purpose"
	categoryGeneralPurpose = "general_purpose"
)

// cx22Deprecation is the end of life of the old cx22 fixture type.
var cx22Deprecation = deprecation{
	announced:        time.Date(2025, 10, 16, 6, 0, 0, 0, time.UTC),
	unavailableAfter: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
}

// newServerTypes returns today's server type catalogue over locs, ordered
// by id. cax types exist only in EU locations, ccx63 is not offered in sin,
// cx53 is listed but sold out in sin and cx22 is deprecated and no longer
// orderable anywhere.
func newServerTypes(locs []*location) []*serverType {
	eu := func(l *location) bool { return l.NetworkZone == "eu-central" }
	all := func(*location) bool { return true }
	notSin := func(l *location) bool { return l.Name != "sin" }
	const perTenThousandth = 1_000_000 // 0.0001 EUR in 1e-10 EUR units
	var types []*serverType
	add := func(name, desc, category string, cores int, memory float32, disk int, cpu, arch string,
		price int64, where func(*location) bool) *serverType {
		t := &serverType{
			id: int64(101 + len(types)), name: name, description: desc, category: category,
			cores: cores, memory: memory, disk: disk, cpuType: cpu, architecture: arch,
			hourlyNet: price * perTenThousandth,
		}
		for _, l := range locs {
			if where(l) {
				t.locations = append(t.locations, &typeLocation{loc: l, available: true, recommended: eu(l)})
			}
		}
		types = append(types, t)
		return t
	}
	old := add("cx22", "CX22", categoryCostOptimized, 2, 4, 40, "shared", "x86", 60, eu)
	old.deprecation = &cx22Deprecation
	for _, tl := range old.locations {
		tl.available, tl.recommended, tl.deprecation = false, false, &cx22Deprecation
	}
	add("cx23", "CX23", categoryCostOptimized, 2, 4, 40, "shared", "x86", 56, all)
	add("cx33", "CX33", categoryCostOptimized, 4, 8, 80, "shared", "x86", 88, all)
	add("cx43", "CX43", categoryCostOptimized, 8, 16, 160, "shared", "x86", 152, all)
	add("cx53", "CX53", categoryCostOptimized, 16, 32, 320, "shared", "x86", 288, all).in("sin").available = false
	add("cpx12", "CPX12", categoryRegularPurpose, 1, 2, 40, "shared", "x86", 72, all)
	add("cpx22", "CPX22", categoryRegularPurpose, 3, 4, 80, "shared", "x86", 112, all)
	add("cpx32", "CPX32", categoryRegularPurpose, 4, 8, 160, "shared", "x86", 192, all)
	add("cpx42", "CPX42", categoryRegularPurpose, 8, 16, 320, "shared", "x86", 288, all)
	add("cpx52", "CPX52", categoryRegularPurpose, 12, 24, 480, "shared", "x86", 344, all)
	add("cpx62", "CPX62", categoryRegularPurpose, 16, 32, 640, "shared", "x86", 400, all)
	add("cax11", "CAX11", categoryCostOptimized, 2, 4, 40, "shared", "arm", 40, eu)
	add("cax21", "CAX21", categoryCostOptimized, 4, 8, 80, "shared", "arm", 64, eu)
	add("cax31", "CAX31", categoryCostOptimized, 8, 16, 160, "shared", "arm", 120, eu)
	add("cax41", "CAX41", categoryCostOptimized, 16, 32, 320, "shared", "arm", 232, eu)
	add("ccx13", "CCX13 Dedicated CPU", categoryGeneralPurpose, 2, 8, 80, "dedicated", "x86", 200, all)
	add("ccx23", "CCX23 Dedicated CPU", categoryGeneralPurpose, 4, 16, 160, "dedicated", "x86", 384, all)
	add("ccx33", "CCX33 Dedicated CPU", categoryGeneralPurpose, 8, 32, 240, "dedicated", "x86", 752, all)
	add("ccx43", "CCX43 Dedicated CPU", categoryGeneralPurpose, 16, 64, 360, "dedicated", "x86", 1488, all)
	add("ccx53", "CCX53 Dedicated CPU", categoryGeneralPurpose, 32, 128, 600, "dedicated", "x86", 2976, all)
	add("ccx63", "CCX63 Dedicated CPU", categoryGeneralPurpose, 48, 192, 960, "dedicated", "x86", 4464, notSin)
	return types
}

// hoursPerMonthCap is how many hourly prices make the monthly cap.
const hoursPerMonthCap = 620

// vatPercent turns net into gross prices (German VAT, as the real API does
// for a German account).
const vatPercent = 119

// formatEUR renders a non-negative amount in 1e-10 EUR units the way the
// real API renders prices: a decimal string with 10 fractional digits.
func formatEUR(units int64) string {
	const scale = 10_000_000_000
	return fmt.Sprintf("%d.%010d", units/scale, units%scale)
}

// price renders a net amount as a net/gross pair.
func price(net int64) schema.Price {
	return schema.Price{Net: formatEUR(net), Gross: formatEUR(net * vatPercent / 100)}
}

// toSchema renders t as the API does. The result shares its slices with
// the cache: callers must not modify it.
func (t *serverType) toSchema() schema.ServerType {
	if t.rendered == nil {
		st := t.render()
		t.rendered = &st
	}
	return *t.rendered
}

// render builds the API form of t.
func (t *serverType) render() schema.ServerType {
	st := schema.ServerType{
		ID: t.id, Name: t.name, Description: t.description, Category: t.category,
		Cores: t.cores, Memory: t.memory, Disk: t.disk, StorageType: "local",
		CPUType: t.cpuType, Architecture: t.architecture,
		Prices:     make([]schema.PricingServerTypePrice, 0, len(t.locations)),
		Locations:  make([]schema.ServerTypeLocation, 0, len(t.locations)),
		Deprecated: t.deprecation != nil, //nolint:staticcheck // the real API still sends it; clients read it
	}
	st.Deprecation = t.deprecation.toSchema()
	for _, tl := range t.locations {
		hourly := t.hourlyNet * tl.loc.pricePercent / 100
		st.Prices = append(st.Prices, schema.PricingServerTypePrice{
			Location:          tl.loc.Name,
			PriceHourly:       price(hourly),
			PriceMonthly:      price(hourly * hoursPerMonthCap),
			IncludedTraffic:   tl.loc.includedTraffic,
			PricePerTBTraffic: price(tl.loc.perTB),
		})
		stl := schema.ServerTypeLocation{
			ID: tl.loc.ID, Name: tl.loc.Name, Available: tl.available, Recommended: tl.recommended,
		}
		stl.Deprecation = tl.deprecation.toSchema()
		st.Locations = append(st.Locations, stl)
	}
	return st
}

// image is a system image; the real API has one image per name and
// architecture.
type image struct {
	id           int64
	name         string
	description  string
	osFlavor     string
	osVersion    string
	architecture string
	created      time.Time
}

// newImages returns the system images, ordered by id.
func newImages() []*image {
	img := func(id int64, name, desc, flavor, version, arch string, created time.Time) *image {
		return &image{id: id, name: name, description: desc, osFlavor: flavor, osVersion: version, architecture: arch, created: created}
	}
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 10, 0, 0, 0, time.UTC) }
	return []*image{
		img(67794396, "ubuntu-22.04", "Ubuntu 22.04", "ubuntu", "22.04", "x86", day(2022, 4, 21)),
		img(76766499, "rocky-9", "Rocky Linux 9", "rocky", "9", "x86", day(2022, 7, 14)),
		img(76766502, "rocky-9", "Rocky Linux 9", "rocky", "9", "arm", day(2022, 7, 14)),
		img(103907373, "ubuntu-22.04", "Ubuntu 22.04", "ubuntu", "22.04", "arm", day(2023, 1, 18)),
		img(114690387, "debian-12", "Debian 12", "debian", "12", "x86", day(2023, 6, 13)),
		img(114690389, "debian-12", "Debian 12", "debian", "12", "arm", day(2023, 6, 13)),
		img(161547269, "ubuntu-24.04", "Ubuntu 24.04", "ubuntu", "24.04", "x86", day(2024, 4, 25)),
		img(161547270, "ubuntu-24.04", "Ubuntu 24.04", "ubuntu", "24.04", "arm", day(2024, 4, 25)),
	}
}

// toSchema renders i as the API does.
func (i *image) toSchema() schema.Image {
	name, version, created := i.name, i.osVersion, i.created
	diskSize := float32(5)
	return schema.Image{
		ID: i.id, Status: "available", Type: "system", Name: &name, Description: i.description,
		DiskSize: diskSize, Created: &created, OSFlavor: i.osFlavor, OSVersion: &version,
		Architecture: i.architecture, RapidDeploy: true, Labels: map[string]string{},
	}
}
