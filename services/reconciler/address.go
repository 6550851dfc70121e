package reconciler

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
)

// Static addresses of pools whose network names addresses (an
// api.AddressRange) are held in bus.BucketAddresses, one key per address
// held (addressKey), its value the holding instance's id: creating the
// key (KV create, which fails when the key exists) is claiming the
// address, so no address is ever held by two instances, however many
// replicas allocate at once.
//
// The order makes a crash at any point neither leak nor double an
// address:
//
//  1. an address is recorded on the instance (Status.Address) before it
//     is claimed, so every address an instance may hold is one its record
//     names (a crash before the claim leaves a record naming an address
//     it does not hold: the next pass claims it, or picks another when
//     someone else holds it);
//  2. the claim is checked before every create (ensureAddress): a create
//     is only ever sent with an address whose key holds the instance's
//     id, so a retry, a crashed pass's successor and a drift re-create
//     all reuse the address;
//  3. the address is released (its key deleted at the revision read, and
//     only while it holds the instance's id) by the delete path once no
//     machine of the instance remains (releaseAddress, after
//     deleteUnrecorded), before the record goes.
//
// An instance picks a free address starting at a position hashed from
// its id (then in order, wrapping), after one listing of the pool's held
// keys: concurrent creates in one pool rarely try the same address.

// addressKey is the key of address a of pool in bus.BucketAddresses:
// "<tenant>.<poolId>.<a with dashes for dots>".
func addressKey(tenant, pool string, a netip.Addr) string {
	return tenant + "." + pool + "." + strings.ReplaceAll(a.String(), ".", "-")
}

// maxClaimTries bounds how often claim looks again at a key that is
// deleted between its create and its read.
const maxClaimTries = 4

// ensureAddress returns the static address the instance's create must
// carry: nil when its pool hands out none; the recorded address while the
// instance holds it (claimed now when the record names it unclaimed);
// else a free address of the range, recorded and then claimed (see the
// order above). A record is only ever written over an address another
// instance holds, so a pass racing another of the same instance takes
// the address that one recorded instead of replacing it. Errors:
// CAPACITY_UNAVAILABLE with details.path network.addresses when every
// address of the range is held (retried with backoff: a deletion frees
// one), INVALID_STATE when the pool's range does not parse (the pool was
// written without checks), a storeError.
func (r *Reconciler) ensureAddress(ctx context.Context, s *scope) (*api.StaticAddress, error) {
	if s.pool == nil || s.pool.Network == nil || s.pool.Network.Addresses == nil {
		return nil, nil
	}
	span, err := s.pool.Network.Addresses.Parse("network.addresses")
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidState, "pool %s: %s", s.pool.ID, api.AsComputeError(err).Message)
	}
	tenant, pool, id := s.inst.TenantID, s.inst.PoolID, s.inst.ID
	var taken map[string]bool // the pool's held keys, listed once
	n := span.Size()
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	next := int(h.Sum32() % uint32(n)) // where the search for a free address goes on
	for tried := 0; ; {
		lost := s.inst.Status.Address // recorded: ours, unclaimed, or another's
		if lost != nil {
			if p, err := netip.ParsePrefix(lost.Address); err == nil && span.Contains(p.Addr()) {
				held, err := r.claim(ctx, addressKey(tenant, pool, p.Addr()), id)
				if err != nil || held {
					return lost, err
				}
				s.log.Warn().Str("address", lost.Address).Msg("recorded address held by another instance: picking another")
			}
		}
		if taken == nil {
			if taken, err = r.heldAddresses(ctx, tenant, pool); err != nil {
				return nil, err
			}
		}
		var pick *api.StaticAddress
		for ; tried < n && pick == nil; tried++ {
			a := span.At(next)
			next = (next + 1) % n
			if key := addressKey(tenant, pool, a); !taken[key] {
				taken[key] = true // tried: held by us next round, or by another
				static := span.Static(a)
				pick = &static
			}
		}
		if pick == nil {
			rng := s.pool.Network.Addresses
			return nil, api.Errorf(api.CodeCapacityUnavailable,
				"pool %s: every one of the %d addresses of network.addresses (%s, %s to %s) is held",
				pool, n, rng.CIDR, span.First, span.Last).WithPath("network.addresses")
		}
		if err := r.writeStatus(ctx, s, func(st *api.InstanceStatus) {
			if sameAddress(st.Address, lost) { // else a racing pass recorded one: take it
				st.Address = pick
			}
		}); err != nil {
			return nil, err
		}
	}
}

// sameAddress reports whether a and b name the same address (or none).
func sameAddress(a, b *api.StaticAddress) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Address == b.Address)
}

// heldAddresses are the keys of the addresses of pool held now.
func (r *Reconciler) heldAddresses(ctx context.Context, tenant, pool string) (map[string]bool, error) {
	lister, err := r.st.Addresses.ListKeysFiltered(ctx, tenant+"."+pool+".>")
	if err != nil {
		return nil, storeError{err}
	}
	out := map[string]bool{}
	for k := range lister.Keys() { // closed once every key is listed
		out[k] = true
	}
	return out, nil
}

// claim makes id the holder of key unless another instance holds it, and
// reports whether id holds it now. Errors: a storeError.
func (r *Reconciler) claim(ctx context.Context, key, id string) (bool, error) {
	for range maxClaimTries {
		_, err := r.st.Addresses.Create(ctx, key, []byte(id))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return false, storeError{err}
		}
		e, err := r.st.Addresses.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return false, storeError{err}
		}
		return string(e.Value()) == id, nil
	}
	return false, storeError{fmt.Errorf("address %s: released and re-claimed %d times while claiming", key, maxClaimTries)}
}

// releaseAddress is the delete path's phase after deleteUnrecorded: no
// machine of the instance remains, so the address its record names is
// released, when the instance holds it (its key is deleted at the
// revision read: a key another instance holds is never touched).
func (r *Reconciler) releaseAddress(ctx context.Context, s *scope) (step, error) {
	rec := s.inst.Status.Address
	if rec == nil {
		return next, nil
	}
	p, err := netip.ParsePrefix(rec.Address)
	if err != nil {
		return next, nil // never claimed: claims are made from parsed ranges only
	}
	key := addressKey(s.inst.TenantID, s.inst.PoolID, p.Addr())
	e, err := r.st.Addresses.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return next, nil
	case err != nil:
		return next, storeError{err}
	case string(e.Value()) != s.inst.ID:
		return next, nil
	}
	err = r.st.Addresses.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return next, storeError{err}
	}
	s.log.Info().Str("address", rec.Address).Msg("static address released")
	return next, nil
}
