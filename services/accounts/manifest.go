package accounts

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// manifestCache keeps each provider's manifest for a short TTL, so a busy
// accounts service does not call describe on every create or update.
// Failures are not cached.
type manifestCache struct {
	nc  *nats.Conn
	ttl time.Duration
	// known are the provider ids an unknown one's hint names.
	known   []string
	mu      sync.Mutex
	entries map[string]cachedManifest
}

type cachedManifest struct {
	desc    *api.ProviderDescription
	expires time.Time
}

func newManifestCache(nc *nats.Conn, ttl time.Duration, known []string) *manifestCache {
	return &manifestCache{nc: nc, ttl: ttl, known: known, entries: map[string]cachedManifest{}}
}

// get returns the manifest of provider id (a checked provider id) from
// describe. The slice is shared: callers must not modify it.
//
// Errors: INVALID_INPUT (path provider) when no provider service answers;
// UNAVAILABLE when one does not answer before ctx's deadline; the provider's
// error otherwise.
func (c *manifestCache) get(ctx context.Context, id string) ([]api.ManifestField, error) {
	d, err := c.describe(ctx, id)
	if api.IsCode(err, api.CodeNotFound) {
		return nil, api.InvalidInput("provider",
			"no provider service answers for provider %q: is the id right (this distribution's providers are %s) and is its service running?",
			id, strings.Join(c.known, ", "))
	}
	if err != nil {
		return nil, err
	}
	return d.Manifest, nil
}

// describe returns the description of provider id (a checked provider
// id), calling compute.internal.provider.<id>.describe when the cached one
// is missing or expired. It is shared: callers must not modify it.
//
// Errors: NOT_FOUND (details.id) when no provider service answers;
// UNAVAILABLE when one does not answer before ctx's deadline; the
// provider's error otherwise.
func (c *manifestCache) describe(ctx context.Context, id string) (*api.ProviderDescription, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.desc, nil
	}
	d, err := provider.Remote{NC: c.nc, ID: id}.Describe(ctx)
	if err != nil {
		// bus.Call reports both "no responders" and a passed deadline as
		// UNAVAILABLE; a live context tells the first apart.
		if api.IsCode(err, api.CodeUnavailable) && ctx.Err() == nil {
			ce := api.Errorf(api.CodeNotFound, "no provider service answers for provider %q", id)
			ce.Details.ID = id
			return nil, ce
		}
		return nil, err
	}
	c.mu.Lock()
	c.entries[id] = cachedManifest{desc: d, expires: time.Now().Add(c.ttl)}
	c.mu.Unlock()
	return d, nil
}
