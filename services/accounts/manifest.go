package accounts

import (
	"context"
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
	nc      *nats.Conn
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cachedManifest
}

type cachedManifest struct {
	fields  []api.ManifestField
	expires time.Time
}

func newManifestCache(nc *nats.Conn, ttl time.Duration) *manifestCache {
	return &manifestCache{nc: nc, ttl: ttl, entries: map[string]cachedManifest{}}
}

// builtInProviders names the providers the compute binary serves, for the
// hint of an unknown provider id (their packages are not imported here: a
// provider is reached only over the bus, and may live in another binary).
const builtInProviders = "hetzner-cloud, proxmox"

// get returns the manifest of provider id (a checked provider id), calling
// compute.internal.provider.<id>.describe when the cached one is missing or
// expired. The slice is shared: callers must not modify it.
//
// Errors: INVALID_INPUT (path provider) when no provider service answers;
// UNAVAILABLE when one does not answer before ctx's deadline; the provider's
// error otherwise.
func (c *manifestCache) get(ctx context.Context, id string) ([]api.ManifestField, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.fields, nil
	}
	d, err := provider.Remote{NC: c.nc, ID: id}.Describe(ctx)
	if err != nil {
		// bus.Call reports both "no responders" and a passed deadline as
		// UNAVAILABLE; a live context tells the first apart.
		if api.IsCode(err, api.CodeUnavailable) && ctx.Err() == nil {
			return nil, api.InvalidInput("provider",
				"no provider service answers for provider %q: is the id right (this distribution's providers are %s) and is its service running?",
				id, builtInProviders)
		}
		return nil, err
	}
	c.mu.Lock()
	c.entries[id] = cachedManifest{fields: d.Manifest, expires: time.Now().Add(c.ttl)}
	c.mu.Unlock()
	return d.Manifest, nil
}
