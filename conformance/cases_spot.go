package conformance

import (
	"slices"

	"better-compute.io/compute/pkg/api"
)

// offersCapacityType: every offer's capacityType is a CapacityType, and a
// provider claiming spot capacity lists at least one spot offer.
func offersCapacityType(c *check) {
	spots := 0
	for _, o := range c.mustOffers(api.OfferQuery{}) {
		switch {
		case o.CapacityType == api.CapacitySpot:
			spots++
		case !slices.Contains(api.CapacityTypes(), o.CapacityType):
			c.Errorf("offer %s@%s has capacityType %q, want one of %v", o.ID, o.Region, o.CapacityType, api.CapacityTypes())
		}
	}
	if spots == 0 {
		c.Errorf("the provider claims spot capacity but lists no spot offer")
	}
}

// offersSpotInterruption: a spot offer may be interrupted, so its
// probability is above 0, and it is a probability (at most 1).
func offersSpotInterruption(c *check) {
	for _, o := range offersOf(c, api.CapacitySpot) {
		if p := o.InterruptionProbability; !(p > 0 && p <= 1) {
			c.Errorf("spot offer %s@%s has interruptionProbability %v, want (0,1]", o.ID, o.Region, p)
		}
	}
}

// offersOnDemandUninterrupted: an on-demand offer is never reclaimed, so its
// probability is 0.
func offersOnDemandUninterrupted(c *check) {
	for _, o := range offersOf(c, api.CapacityOnDemand) {
		if o.InterruptionProbability != 0 {
			c.Errorf("on-demand offer %s@%s has interruptionProbability %v, want 0", o.ID, o.Region, o.InterruptionProbability)
		}
	}
}

// offersOf is the offers of capacity type t; none is an error (the
// behaviour would check nothing).
func offersOf(c *check, t api.CapacityType) []api.Offer {
	var out []api.Offer
	for _, o := range c.mustOffers(api.OfferQuery{}) {
		if o.CapacityType == t {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		c.Fatalf("no %s offer to check", t)
	}
	return out
}
