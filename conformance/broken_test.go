package conformance_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/fake"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// full is a client with every capability (the memory client is one).
type full interface {
	provider.Client
	provider.Powerer
	provider.Reinstaller
	provider.Lister
	provider.KeyDeleter
	provider.Relabeler
	provider.Resizer
	provider.MetricsReader
}

// nonIdempotent makes a new machine on every create, ignoring the key.
type nonIdempotent struct {
	full
	n *atomic.Int64
}

func (b nonIdempotent) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	c := *call
	c.IdempotencyKey += "-" + string(rune('a'+b.n.Add(1)%26)) + time.Now().Format("150405.000000000")
	return b.full.Create(ctx, &c, spec)
}

// keyless never reports the key its machines carry, so a caller cannot
// tell a reused id from its own machine.
type keyless struct{ full }

func (b keyless) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	return withoutKey(b.full.Create(ctx, call, spec))
}

func (b keyless) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	return withoutKey(b.full.Get(ctx, call, id))
}

func withoutKey(m *api.ExternalMachine, err error) (*api.ExternalMachine, error) {
	if m != nil {
		m.IdempotencyKey = ""
	}
	return m, err
}

// missingIsProviderError answers PROVIDER_ERROR where a missing machine
// is absent (get) or NOT_FOUND (delete, power, reinstall).
type missingIsProviderError struct{ full }

func notFoundToProviderError(err error) error {
	if api.IsCode(err, api.CodeNotFound) {
		return api.ProviderError(404, "not_found", "the API answered 404")
	}
	return err
}

func (b missingIsProviderError) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	m, err := b.full.Get(ctx, call, id)
	if err == nil && m == nil {
		return nil, api.ProviderError(404, "not_found", "the API answered 404")
	}
	return m, err
}

func (b missingIsProviderError) Delete(ctx context.Context, call *provider.Call, id string) error {
	return notFoundToProviderError(b.full.Delete(ctx, call, id))
}

func (b missingIsProviderError) Power(ctx context.Context, call *provider.Call, id string, action api.PowerAction) error {
	return notFoundToProviderError(b.full.Power(ctx, call, id, action))
}

func (b missingIsProviderError) Reinstall(ctx context.Context, call *provider.Call, id, image string) (*api.ExternalMachine, error) {
	m, err := b.full.Reinstall(ctx, call, id, image)
	return m, notFoundToProviderError(err)
}

// deletedIsLocked answers a delete of a machine already deleted with
// PROVIDER_ERROR 423 locked, as Hetzner does while a delete still runs.
type deletedIsLocked struct{ full }

func (b deletedIsLocked) Delete(ctx context.Context, call *provider.Call, id string) error {
	err := b.full.Delete(ctx, call, id)
	if api.IsCode(err, api.CodeNotFound) {
		return api.ProviderError(423, "locked", "the API answered 423")
	}
	return err
}

// powerUnsupported claims power but answers UNSUPPORTED.
type powerUnsupported struct{ full }

func (powerUnsupported) Power(context.Context, *provider.Call, string, api.PowerAction) error {
	return api.Errorf(api.CodeUnsupported, "power is not implemented")
}

// negativePrices offers everything at a negative price.
type negativePrices struct{ full }

func (b negativePrices) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	offers, err := b.full.ListOffers(ctx, call, q)
	for i := range offers {
		p := -0.5
		offers[i].PricePerHour, offers[i].Currency = &p, "EUR"
	}
	return offers, err
}

// interruptionSwapped gives every spot offer interruptionProbability 0 and
// every on-demand offer 0.5, and drops the capacity type of the last offer.
type interruptionSwapped struct{ full }

func (b interruptionSwapped) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	offers, err := b.full.ListOffers(ctx, call, q)
	for i := range offers {
		offers[i].InterruptionProbability = 0.5
		if offers[i].CapacityType == api.CapacitySpot {
			offers[i].InterruptionProbability = 0
		}
	}
	if len(offers) > 0 {
		offers[len(offers)-1].CapacityType = ""
	}
	return offers, err
}

// spotless lists only on-demand offers while claiming spot capacity.
type spotless struct{ full }

func (b spotless) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	offers, err := b.full.ListOffers(ctx, call, q)
	return slices.DeleteFunc(offers, func(o api.Offer) bool { return o.CapacityType == api.CapacitySpot }), err
}

// ignoresFilters answers every offer whatever the query.
type ignoresFilters struct{ full }

func (b ignoresFilters) ListOffers(ctx context.Context, call *provider.Call, _ api.OfferQuery) ([]api.Offer, error) {
	return b.full.ListOffers(ctx, call, api.OfferQuery{})
}

// rateLimitAsProviderError loses RATE_LIMITED and its retryAfterMs.
type rateLimitAsProviderError struct{ full }

func (b rateLimitAsProviderError) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	m, err := b.full.Get(ctx, call, id)
	if api.IsCode(err, api.CodeRateLimited) {
		return nil, api.ProviderError(429, "rate_limited", "the API answered 429")
	}
	return m, err
}

// ownTimeout ignores the caller's deadline for a timeout of its own.
type ownTimeout struct{ full }

func (b ownTimeout) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	own, cancel := context.WithTimeout(context.WithoutCancel(ctx), 6*time.Second)
	defer cancel()
	return b.full.Get(own, call, id)
}

// leaky logs the token and puts it into an offer of its own with a
// negative price.
type leaky struct{ full }

func (b leaky) ListOffers(ctx context.Context, call *provider.Call, q api.OfferQuery) ([]api.Offer, error) {
	offers, err := b.full.ListOffers(ctx, call, q)
	token, terr := call.Secret(ctx, "token")
	if err != nil || terr != nil {
		return offers, err
	}
	call.Log.Info().Str("token", token).Msg("resolved the token")
	price := -1.0
	leak := api.Offer{ID: "leak-" + token, Kind: api.KindVPS, Region: "leak", Vcpu: 1, MemoryGiB: 1, PricePerHour: &price, Currency: "EUR", Available: true}
	if q.Matches(leak) {
		offers = append(offers, leak)
	}
	return offers, nil
}

// permanenceLost answers a create that can never pass (the memory
// client's INVALID_CONFIG for an unknown offer) as a PROVIDER_ERROR 422
// without details.permanent, which the reconciler would retry forever.
type permanenceLost struct{ full }

func (b permanenceLost) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	m, err := b.full.Create(ctx, call, spec)
	if ce := api.AsComputeError(err); ce != nil && ce.Permanent() {
		return nil, api.ProviderError(422, "invalid_input", "the API answered 422: %s", ce.Message)
	}
	return m, err
}

// resizeForgets answers a resize as done without moving the machine (get
// keeps reporting the old offer; an unknown offer is not refused), and
// metrics with points before the window and series out of order.
type resizeForgets struct{ full }

func (b resizeForgets) Resize(ctx context.Context, call *provider.Call, req api.ProviderResizeRequest) (*api.ResizeResult, error) {
	m, err := b.Get(ctx, call, req.ID)
	if err != nil || m == nil {
		return nil, api.NotFound("machine", req.ID)
	}
	changed := m.OfferID != req.OfferID
	m.OfferID = req.OfferID
	return &api.ResizeResult{Machine: m, Changed: changed}, nil
}

func (b resizeForgets) Metrics(ctx context.Context, call *provider.Call, id string, w api.MetricsWindow) (*api.Metrics, error) {
	out, err := b.full.Metrics(ctx, call, id, w)
	if err != nil {
		return nil, err
	}
	early := api.MetricPoint{Time: w.From.Add(-time.Hour), Value: 1}
	for i := range out.Series {
		out.Series[i].Points = append([]api.MetricPoint{early}, out.Series[i].Points...)
	}
	out.Series = append(out.Series, api.MetricSeries{Name: "a-first", Unit: "percent", Points: []api.MetricPoint{}})
	return out, nil
}

// TestBrokenProvidersFailTheRightBehaviours certifies the memory provider
// wrapped in each kind of defect and checks that exactly the behaviours
// meant to catch it fail.
// labelsDropped makes machines without the labels their create asked
// for (relabel still works).
type labelsDropped struct{ full }

func (b labelsDropped) Create(ctx context.Context, call *provider.Call, spec api.MachineSpec) (*api.ExternalMachine, error) {
	spec.Labels = nil
	return b.full.Create(ctx, call, spec)
}

func TestBrokenProvidersFailTheRightBehaviours(t *testing.T) {
	t.Parallel()
	core := []string{conformance.ProfileCore}
	for _, tc := range []struct {
		name     string
		wrap     func(full) provider.Client
		profiles []string
		failed   []string
	}{
		{"create not idempotent", func(c full) provider.Client { return nonIdempotent{c, &atomic.Int64{}} },
			[]string{conformance.ProfileCore, conformance.ProfileFaults, conformance.ProfileDurable, conformance.ProfileTransport},
			[]string{"life.create.retry-same-key", "life.create.concurrent-same-key", "fault.dropped-response-converges",
				"durable.kill-after-accept", "transport.duplicate-request", "life.key.reported", "life.delete.by-key"}},
		{"machine keys not reported", func(c full) provider.Client { return keyless{c} }, core,
			[]string{"life.key.reported"}},
		{"PROVIDER_ERROR for a missing machine", func(c full) provider.Client { return missingIsProviderError{c} }, core,
			[]string{"life.delete.removes", "life.delete.twice-not-found", "life.get.unknown-absent", "err.missing.not-found", "life.delete.by-key",
				"resize.refusals"}},
		{"a deleted machine's delete answers locked", func(c full) provider.Client { return deletedIsLocked{c} }, core,
			[]string{"life.delete.twice-not-found", "err.missing.not-found"}},
		{"claims power, answers UNSUPPORTED", func(c full) provider.Client { return powerUnsupported{c} },
			[]string{conformance.ProfileCore, conformance.ProfileFaults},
			[]string{"life.power.stop-start", "fault.action-failed", "err.missing.not-found"}},
		{"negative prices", func(c full) provider.Client { return negativePrices{c} }, core,
			[]string{"offers.wellformed"}},
		{"offer filters ignored", func(c full) provider.Client { return ignoresFilters{c} }, core,
			[]string{"offers.none-for-huge", "offers.filters"}},
		{"RATE_LIMITED lost", func(c full) provider.Client { return rateLimitAsProviderError{c} },
			[]string{conformance.ProfileFaults}, []string{"fault.rate-limited"}},
		{"caller's deadline ignored", func(c full) provider.Client { return ownTimeout{c} },
			[]string{conformance.ProfileFaults}, []string{"fault.hung-call-deadline"}},
		{"token leaked", func(c full) provider.Client { return leaky{c} },
			[]string{conformance.ProfileCore, conformance.ProfileSecrets},
			[]string{"offers.wellformed", "secrets.replies", "secrets.logs", "secrets.reports"}},
		{"permanent refusal answered retryable", func(c full) provider.Client { return permanenceLost{c} }, core,
			[]string{"err.refusal.permanent"}},
		{"interruption probabilities swapped, a capacity type missing", func(c full) provider.Client { return interruptionSwapped{c} },
			[]string{conformance.ProfileSpot},
			[]string{"offers.capacity-type", "offers.spot-interruption", "offers.on-demand-uninterrupted"}},
		{"spot claimed, no spot offer", func(c full) provider.Client { return spotless{c} },
			[]string{conformance.ProfileSpot}, []string{"offers.capacity-type", "offers.spot-interruption"}},
		{"labels dropped at create", func(c full) provider.Client { return labelsDropped{c} },
			[]string{conformance.ProfileLabels}, []string{"labels.create.propagated", "labels.list.reported"}},
		{"resize answered, machine not moved; metrics outside the window", func(c full) provider.Client { return resizeForgets{c} }, core,
			[]string{"resize.moves-offer", "resize.refusals", "metrics.series"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startFake(t, "memory", fake.Options{Wrap: func(c provider.Client) provider.Client { return tc.wrap(c.(full)) }})
			s.Profiles = tc.profiles
			report, err := conformance.Certify(t.Context(), s, conformance.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			checkFailedExactly(t, report, tc.failed)
		})
	}
}

// checkFailedExactly fails t unless report's verdict is FAILED with
// exactly the behaviours failed failed (in any order; each failed one's
// reason logged otherwise) and none incomplete.
func checkFailedExactly(t *testing.T, report *conformance.Report, failed []string) {
	t.Helper()
	if report.Verdict != conformance.VerdictFailed {
		t.Errorf("verdict %s, want FAILED", report.Verdict)
	}
	got, want := report.WithStatus(conformance.Failed), slices.Clone(failed)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		for _, id := range got {
			res, _ := report.Result(id)
			t.Logf("%s: %s", id, res.Reason)
		}
		t.Errorf("failed behaviours %v, want %v", got, want)
	}
	if inc := report.WithStatus(conformance.Incomplete); len(inc) > 0 {
		t.Errorf("incomplete behaviours %v", inc)
	}
}
