package api

import (
	"cmp"
	"slices"
	"strings"
)

// HoursPerMonth is the hours of a billing month, 365 × 24 / 12 = 730: a
// month of an offer costs at most HoursPerMonth × its PricePerHour (an
// upper bound: Hetzner caps a month lower, at its monthly price). The CLI's
// offers table and the web console's cost both use it.
const HoursPerMonth = 730

// SortOffersByPrice orders offers cheapest per hour first (offers without
// a price last), equal prices by id, in place and stably.
func SortOffersByPrice(offers []Offer) {
	slices.SortStableFunc(offers, func(a, b Offer) int {
		switch {
		case a.PricePerHour == nil && b.PricePerHour == nil:
		case a.PricePerHour == nil:
			return 1
		case b.PricePerHour == nil:
			return -1
		default:
			if c := cmp.Compare(*a.PricePerHour, *b.PricePerHour); c != 0 {
				return c
			}
		}
		return strings.Compare(a.ID, b.ID)
	})
}
