package conformance

import (
	"slices"

	"better-compute.io/compute/pkg/api"
)

// This file is the metal profile: providers of rented machines that are
// claimed rather than created (hetzner-robot). A claimed machine's id is
// also the offer id that names it while it is free.

// offerIDs lists the ids of the account's offers.
func (c *check) offerIDs() []string {
	ctx, cancel := c.callCtx()
	defer cancel()
	offers, err := c.remote().Offers(ctx, c.acct(), api.OfferQuery{})
	if err != nil {
		c.Fatalf("offers: %v", err)
	}
	ids := make([]string, len(offers))
	for i, o := range offers {
		if o.Kind != api.KindMetal {
			c.Errorf("offer %s has kind %q, want %q", o.ID, o.Kind, api.KindMetal)
		}
		ids[i] = o.ID
	}
	return ids
}

// metalClaimExclusive: a claimed machine, named by its id as the offer
// of a create under another key, is refused ACCESS_DENIED (permanent) and
// stays the first claim's.
func metalClaimExclusive(c *check) {
	m := c.mustCreate(c.name("a"))
	name := c.name("b")
	spec := c.spec(name)
	spec.OfferID = m.ID
	ctx, cancel := c.callCtx()
	defer cancel()
	other, err := c.remote().Create(ctx, c.acct(), name, spec)
	switch ce := api.AsComputeError(err); {
	case err == nil:
		if other != nil && other.ID != "" && other.ID != m.ID {
			c.cleanupMachine(other.ID)
		}
		c.Fatalf("a second claim of machine %s under another key succeeded (%+v), want ACCESS_DENIED", m.ID, other)
	case ce.Code != api.CodeAccessDenied || !ce.Permanent():
		c.Errorf("a second claim of machine %s answered %v (details %v), want ACCESS_DENIED, permanent", m.ID, ce, ce.Details)
	}
	got, err := c.get(m.ID)
	if err != nil || got == nil || got.IdempotencyKey != m.IdempotencyKey {
		c.Errorf("after the refused claim machine %s reads %+v, %v; want it unchanged (key %q)", m.ID, got, err, m.IdempotencyKey)
	}
}

// metalReleaseFrees: a claimed machine is not offered; once deleted
// (released) it is offered again, by its id.
func metalReleaseFrees(c *check) {
	m := c.mustCreate(c.name("m"))
	if slices.Contains(c.offerIDs(), m.ID) {
		c.Errorf("claimed machine %s is still offered", m.ID)
	}
	if err := c.del(m.ID); err != nil {
		c.Fatalf("release of machine %s: %v", m.ID, err)
	}
	if !slices.Contains(c.offerIDs(), m.ID) {
		c.Errorf("released machine %s is not offered again", m.ID)
	}
}
