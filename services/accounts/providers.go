package accounts

import (
	"context"
	"slices"
	"strings"
	"sync"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// DefaultProviders are the provider ids providers.list asks when
// Options.Providers is empty: the providers the compute binary serves
// (their packages are not imported here: a provider is reached only over
// the bus, and may live in another binary).
var DefaultProviders = []string{"hetzner-cloud", "hetzner-robot", "proxmox"}

// providerInfo is the tenant view of provider id's description (cached as
// validConfig's manifest is). Errors: those of manifestCache.describe.
func (s *service) providerInfo(ctx context.Context, id string) (api.ProviderInfo, error) {
	d, err := s.manifests.describe(ctx, id)
	if err != nil {
		return api.ProviderInfo{}, err
	}
	return api.ProviderInfo{ID: d.ID, Version: d.Version, Capabilities: d.Capabilities, Fields: d.Manifest}, nil
}

// listProviders answers providers.list {} with the providers of
// Options.Providers that answer describe now, in id order. A provider
// whose service does not run is left out. Errors: UNAVAILABLE when one
// that runs does not answer in time, a provider's error.
func (s *service) listProviders(ctx context.Context, req *bus.Request) (any, error) {
	var in api.ListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	infos := make([]*api.ProviderInfo, len(s.providers))
	errs := make([]error, len(s.providers))
	var wg sync.WaitGroup
	for i, id := range s.providers {
		wg.Go(func() {
			info, err := s.providerInfo(ctx, id)
			switch {
			case err == nil:
				infos[i] = &info
			case !api.IsCode(err, api.CodeNotFound):
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := api.List[api.ProviderInfo]{Items: []api.ProviderInfo{}}
	for _, info := range infos {
		if info != nil {
			out.Items = append(out.Items, *info)
		}
	}
	slices.SortFunc(out.Items, func(a, b api.ProviderInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// describeProvider answers providers.describe {id} with provider id's
// config fields and capabilities. Errors: INVALID_INPUT (path id) for a
// malformed id, NOT_FOUND (details.id) when no service of that provider
// answers, UNAVAILABLE.
func (s *service) describeProvider(ctx context.Context, req *bus.Request) (any, error) {
	var in api.IDRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !providerIDPattern.MatchString(in.ID) {
		return nil, api.InvalidInput("id", "id must be a provider id: lower-case letters, digits and hyphens, starting with a letter")
	}
	return s.providerInfo(ctx, in.ID)
}
