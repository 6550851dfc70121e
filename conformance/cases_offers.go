package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/provider"
)

// offers asks for the offers of q, strictly decoded (unknown fields and
// wrong types are errors).
func (c *check) offers(q api.OfferQuery) ([]api.Offer, json.RawMessage, error) {
	raw, err := c.raw(provider.VerbOffers, api.ProviderOffersRequest{Account: c.acct(), Query: q})
	if err != nil {
		return nil, nil, err
	}
	var l api.List[api.Offer]
	if err := bus.Decode(raw, &l); err != nil {
		return nil, raw, fmt.Errorf("offers reply is not well typed: %w", err)
	}
	return l.Items, raw, nil
}

// mustOffers is offers, stopping the behaviour on an error.
func (c *check) mustOffers(q api.OfferQuery) []api.Offer {
	offers, _, err := c.offers(q)
	if err != nil {
		c.Fatalf("offers %+v: %v", q, err)
	}
	return offers
}

// requiredOfferFields must be present in every offer on the wire.
var requiredOfferFields = []string{"id", "kind", "region", "vcpu", "memoryGiB", "available"}

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// offersWellFormed: every offer has its required fields, typed and in
// range, a kind the provider provides, finite non-negative figures, a
// currency with a price, and a unique (id, region).
func offersWellFormed(c *check) {
	offers, raw, err := c.offers(api.OfferQuery{})
	if err != nil {
		c.Fatalf("offers: %v", err)
	}
	var wire struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil || wire.Items == nil {
		c.Fatalf("offers reply has no items array: %v", err)
	}
	seen := map[string]bool{}
	for i, o := range offers {
		where := fmt.Sprintf("offer %d (%s)", i, o.ID)
		for _, f := range requiredOfferFields {
			if _, ok := wire.Items[i][f]; !ok {
				c.Errorf("%s lacks %s", where, f)
			}
		}
		for _, problem := range offerProblems(o, c.r.desc.Provides) {
			c.Errorf("%s: %s", where, problem)
		}
		if key := o.ID + "@" + o.Region; seen[key] {
			c.Errorf("%s is listed twice in region %s", where, o.Region)
		} else {
			seen[key] = true
		}
	}
	if len(offers) == 0 {
		c.Errorf("the account has no offers at all")
	}
	c.Metric("offers", float64(len(offers)))
}

// offerProblems lists what is out of range in o.
func offerProblems(o api.Offer, provides []string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if o.ID == "" {
		bad("empty id")
	}
	if !slices.Contains(provides, o.Kind) {
		bad("kind %q is not one the provider provides %v", o.Kind, provides)
	}
	if o.Region == "" {
		bad("empty region")
	}
	if o.Vcpu < 1 {
		bad("vcpu %d < 1", o.Vcpu)
	}
	if !finite(o.MemoryGiB) || o.MemoryGiB <= 0 {
		bad("memoryGiB %g is not a positive number", o.MemoryGiB)
	}
	if !finite(o.DiskGiB) || o.DiskGiB < 0 {
		bad("diskGiB %g is negative", o.DiskGiB)
	}
	if o.GPUs < 0 {
		bad("gpus %d is negative", o.GPUs)
	}
	if p := o.PricePerHour; p != nil {
		if !finite(*p) || *p < 0 {
			bad("pricePerHour %g is not a finite number >= 0", *p)
		}
		if !currencyPattern.MatchString(o.Currency) {
			bad("currency %q is not an ISO 4217 code", o.Currency)
		}
	}
	return out
}

// subjectOffer finds the subject's offer among offers.
func (c *check) subjectOffer(offers []api.Offer) (api.Offer, bool) {
	i := slices.IndexFunc(offers, func(o api.Offer) bool { return o.ID == c.r.s.OfferID })
	if i < 0 {
		return api.Offer{}, false
	}
	return offers[i], true
}

// offersIncludesSubject: the subject's offer is listed and available.
func offersIncludesSubject(c *check) {
	o, ok := c.subjectOffer(c.mustOffers(api.OfferQuery{}))
	switch {
	case !ok:
		c.Errorf("offers do not include the subject's offer %q", c.r.s.OfferID)
	case !o.Available:
		c.Errorf("the subject's offer %q is listed as unavailable", o.ID)
	}
}

// offersNoneForHuge: nothing has a million vCPUs.
func offersNoneForHuge(c *check) {
	offers := c.mustOffers(api.OfferQuery{MinVcpu: 1_000_000})
	if len(offers) != 0 {
		c.Errorf("minVcpu 1000000 answers %d offers, e.g. %s with %d vcpu", len(offers), offers[0].ID, offers[0].Vcpu)
	}
}

// offersFilters: each filter answers exactly the unfiltered offers that
// match it.
func offersFilters(c *check) {
	all := c.mustOffers(api.OfferQuery{})
	s, ok := c.subjectOffer(all)
	if !ok {
		c.Fatalf("offers do not include the subject's offer %q", c.r.s.OfferID)
	}
	maxGPUs := 0
	for _, o := range all {
		maxGPUs = max(maxGPUs, o.GPUs)
	}
	other := api.KindMetal
	if s.Kind == api.KindMetal {
		other = api.KindVPS
	}
	queries := []api.OfferQuery{
		{Region: s.Region}, {Kind: s.Kind}, {Kind: other}, {MinVcpu: s.Vcpu}, {MinVcpu: s.Vcpu + 1},
		{MinMemoryGiB: s.MemoryGiB}, {GPUs: maxGPUs + 1},
		{Region: s.Region, Kind: s.Kind, MinVcpu: s.Vcpu, MinMemoryGiB: s.MemoryGiB},
	}
	for _, q := range queries {
		var want []string
		for _, o := range all {
			if q.Matches(o) {
				want = append(want, o.ID+"@"+o.Region)
			}
		}
		var got []string
		for _, o := range c.mustOffers(q) {
			got = append(got, o.ID+"@"+o.Region)
			if !q.Matches(o) {
				c.Errorf("query %+v answers %s, which does not match it", q, o.ID)
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			c.Errorf("query %+v answers %v, want the %d matching offers %v", q, got, len(want), want)
		}
	}
}
