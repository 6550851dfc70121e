package console

import (
	"sort"

	"better-compute.io/compute/pkg/api"
)

// Money is an amount per currency (EUR for Hetzner), so that prices in
// different currencies are never added up.
type Money map[string]float64

func (m Money) add(currency string, v float64) { m[currency] += v }

// Line is the cost of one group of instances: per hour and per month
// (api.HoursPerMonth × per hour), the instances that cost, and those whose
// offer carries no price (Unpriced, e.g. Proxmox) or was not found
// (Unknown: the flavor or offer is gone, or the account's offers could
// not be read).
type Line struct {
	Name      string
	Hourly    Money
	Monthly   Money
	Costing   int
	Unpriced  int
	Unknown   int
	Instances []InstanceCost
}

// InstanceCost is the price of one costing instance; Offer is nil when
// it was not found.
type InstanceCost struct {
	Instance api.Instance
	Offer    *api.Offer
}

// CostReport is the cost of a tenant's fleet: one Line per pool (by pool
// name) and the tenant's total.
type CostReport struct {
	Pools []Line
	Total Line
}

// Costs reports whether an instance costs now: its machine exists (was
// recorded and is not deleted), whatever its power (a stopped Hetzner
// server is billed).
func Costs(inst api.Instance) bool {
	m := inst.Status.Machine
	return m != nil && m.State != api.StateDeleted
}

// Cost prices the instances: each costing one (Costs) at the offer its
// flavor names in its pool, looked up in offers by account id and offer
// id.
func Cost(pools []api.Pool, instances []api.Instance, offers map[string][]api.Offer) CostReport {
	byPool := map[string]*Line{}
	poolOf := map[string]api.Pool{}
	for _, p := range pools {
		poolOf[p.ID] = p
		byPool[p.ID] = &Line{Name: poolName(p), Hourly: Money{}, Monthly: Money{}}
	}
	total := Line{Name: "total", Hourly: Money{}, Monthly: Money{}}
	for _, inst := range instances {
		if !Costs(inst) {
			continue
		}
		line, ok := byPool[inst.PoolID]
		if !ok { // a pool deleted under its instances
			line = &Line{Name: inst.PoolID, Hourly: Money{}, Monthly: Money{}}
			byPool[inst.PoolID] = line
		}
		offer := offerOf(poolOf[inst.PoolID], inst.Flavor, offers)
		for _, l := range []*Line{line, &total} {
			l.Instances = append(l.Instances, InstanceCost{Instance: inst, Offer: offer})
			switch {
			case offer == nil:
				l.Unknown++
			case offer.PricePerHour == nil:
				l.Unpriced++
			default:
				l.Costing++
				l.Hourly.add(offer.Currency, *offer.PricePerHour)
				l.Monthly.add(offer.Currency, *offer.PricePerHour*api.HoursPerMonth)
			}
		}
	}
	r := CostReport{Total: total}
	for _, l := range byPool {
		r.Pools = append(r.Pools, *l)
	}
	sort.Slice(r.Pools, func(i, j int) bool { return r.Pools[i].Name < r.Pools[j].Name })
	return r
}

// offerOf is the offer a flavor of pool names, among the offers of the
// pool's account (nil when the flavor or offer is not found).
func offerOf(pool api.Pool, flavor string, offers map[string][]api.Offer) *api.Offer {
	f, ok := pool.Flavor(flavor)
	if !ok {
		return nil
	}
	for i, o := range offers[pool.ProviderAccountID] {
		if o.ID == f.OfferID {
			return &offers[pool.ProviderAccountID][i]
		}
	}
	return nil
}

// poolName is a pool's name, or its id when it has none.
func poolName(p api.Pool) string {
	if p.Name != "" {
		return p.Name
	}
	return p.ID
}
