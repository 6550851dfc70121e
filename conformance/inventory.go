package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// seedBatch is how many machines one Inventory.Seed call adds.
const seedBatch = 1000

// ensureSeeded grows the run's shared inventory of managed machines
// (named <prefix>-seed-…) to at least n and returns their ids. It is
// removed when the run ends.
func (c *check) ensureSeeded(n int) []string {
	ids, err := c.r.seed(c.ctx, n)
	if errors.Is(err, ErrNotSupported) {
		c.Incompletef("the Inventory hook cannot seed managed machines")
	}
	if err != nil {
		c.Fatalf("seed %d managed machines: %v", n, err)
	}
	return ids
}

// seed grows the shared inventory to n machines, seedBatch at a time.
func (r *run) seed(ctx context.Context, n int) ([]string, error) {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	for len(r.seeded) < n {
		ids, err := r.s.Inventory.Seed(ctx, min(seedBatch, n-len(r.seeded)), true, r.prefix+"-seed")
		if err != nil {
			return nil, err
		}
		r.seeded = append(r.seeded, ids...)
	}
	return append([]string(nil), r.seeded...), nil
}

// page is one list reply with its size on the wire.
type page struct {
	items []api.ExternalMachine
	next  string
	bytes int
}

// listPage asks for one page of the machine list.
func (c *check) listPage(cursor string, limit int) (page, error) {
	raw, err := c.raw(provider.VerbList, api.ProviderListRequest{Account: c.acct(), Cursor: cursor, Limit: limit})
	if err != nil {
		return page{}, err
	}
	var l api.List[api.ExternalMachine]
	if err := json.Unmarshal(raw, &l); err != nil {
		return page{}, fmt.Errorf("list reply does not decode: %w", err)
	}
	return page{items: l.Items, next: l.NextCursor, bytes: len(raw)}, nil
}

// listing is every machine of a walk through all list pages.
type listing struct {
	items    []api.ExternalMachine
	pages    int
	maxBytes int
	total    int // bytes of all replies
}

// maxPages bounds a walk, so a provider whose cursor never ends fails
// instead of looping.
const maxPages = 100_000

// listAll walks every page with limit, failing the behaviour on an error,
// a repeated cursor or a page limit exceeded.
func (c *check) listAll(limit int) listing {
	var out listing
	seen := map[string]bool{}
	cursor := ""
	for {
		p, err := c.listPage(cursor, limit)
		if err != nil {
			c.Fatalf("list page %d (cursor %q, limit %d): %v", out.pages+1, cursor, limit, err)
		}
		out.pages++
		out.items = append(out.items, p.items...)
		out.maxBytes = max(out.maxBytes, p.bytes)
		out.total += p.bytes
		if len(p.items) > limit {
			c.Errorf("list page %d has %d machines, more than the limit %d", out.pages, len(p.items), limit)
		}
		if p.next == "" {
			return out
		}
		if seen[p.next] || out.pages >= maxPages {
			c.Fatalf("list cursor %q repeats or never ends (page %d)", p.next, out.pages)
		}
		seen[p.next] = true
		cursor = p.next
	}
}

// countNamed counts the backend's machines called name, through the
// Inventory hook or else the list capability; ok is false when neither
// is there.
func (c *check) countNamed(name string) (n int, ok bool) {
	switch {
	case c.r.s.Inventory != nil:
		ms, err := c.r.s.Inventory.Machines(c.ctx)
		if err != nil {
			c.Fatalf("inventory: %v", err)
		}
		for _, m := range ms {
			if m.Name == name {
				n++
			}
		}
		return n, true
	case c.r.claims(provider.CapabilityList):
		for _, m := range c.listAll(provider.MaxListLimit).items {
			if m.Name == name {
				n++
			}
		}
		return n, true
	}
	return 0, false
}

// expectOne fails unless exactly one machine is called name.
func (c *check) expectOne(name string) {
	n, ok := c.countNamed(name)
	switch {
	case !ok:
		c.Logf("no Inventory hook and no list capability: cannot count machines called %s", name)
	case n != 1:
		c.Errorf("%d machines are called %s, want exactly 1", n, name)
	}
}

// sweep removes the shared inventory and every machine still named with
// the run's prefix (a behaviour's cleanup that failed), through the
// Inventory hook, or else through list and delete.
func (r *run) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, pollLimit)
	defer cancel()
	var left []string
	switch {
	case r.s.Inventory != nil:
		ms, err := r.s.Inventory.Machines(ctx)
		if err != nil {
			r.progressf("cleanup: inventory: %v", err)
			return
		}
		for _, m := range ms {
			if strings.HasPrefix(m.Name, r.prefix+"-") {
				left = append(left, m.ID)
			}
		}
		if err := r.s.Inventory.Remove(ctx, left); err != nil {
			r.progressf("cleanup: remove %d machines: %v", len(left), err)
		}
	case r.claims(provider.CapabilityList):
		left = r.listOurs(ctx)
		for _, id := range left {
			if err := r.deleteMachine(ctx, id); err != nil {
				r.progressf("cleanup: machine %s: %v", id, err)
			}
		}
	}
	r.seedMu.Lock()
	extra := len(left) - len(r.seeded)
	r.seedMu.Unlock()
	if extra > 0 {
		r.progressf("cleanup: removed %d machines that behaviours left behind", extra)
	}
}

// listOurs lists the ids of the machines named with the run's prefix.
func (r *run) listOurs(ctx context.Context) []string {
	var ids []string
	cursor := ""
	for range maxPages {
		cctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		l, err := r.remote.List(cctx, r.s.Account, cursor, provider.MaxListLimit)
		cancel()
		if err != nil {
			r.progressf("cleanup: list: %v", err)
			return ids
		}
		for _, m := range l.Items {
			if strings.HasPrefix(m.Name, r.prefix+"-") {
				ids = append(ids, m.ID)
			}
		}
		if cursor = l.NextCursor; cursor == "" {
			break
		}
	}
	return ids
}

// progressf writes a line to the progress writer, if any.
func (r *run) progressf(format string, args ...any) {
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, format+"\n", args...)
	}
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]float64) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
