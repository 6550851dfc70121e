package live_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/live"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// tokenEnv is the environment variable the account's token reference
// names in these tests.
const tokenEnv = "CF_LIVE_TEST_HCLOUD_TOKEN"

// liveProfiles are the profiles the live runs of these tests claim.
var liveProfiles = []string{conformance.ProfileCore, conformance.ProfileCloud, conformance.ProfileFaults,
	conformance.ProfileDurable, conformance.ProfileScale}

// realAPI starts the Hetzner Cloud emulator standing in for the real API
// (its own fault API is never used) and sets the token variable; it
// returns the API's base URL.
func realAPI(t *testing.T) (string, *emulator.Server) {
	t.Helper()
	token := "live-test-token-" + time.Now().Format("150405.000000")
	srv, err := emulator.Start(emulator.Options{Tokens: []string{token}, ActionDuration: 100 * time.Millisecond,
		RateLimitSize: 1_000_000, RateLimitRefillPerSecond: 1_000_000}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv(tokenEnv, token)
	return srv.URL(), srv
}

// startLive starts a live run of hetzner-cloud against apiURL.
func startLive(t *testing.T, o live.Options) *live.Env {
	t.Helper()
	o.Config = map[string]any{"token": "env://" + tokenEnv}
	o.PollInterval = 25 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := live.Start(ctx, "hetzner-cloud", o)
	if err != nil {
		t.Fatalf("start the live run: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close the live run: %v", err)
		}
	})
	env.Subject.Profiles = liveProfiles
	env.Subject.ScaleMachines = 50
	return env
}

// TestLiveHetznerCertifiedThroughTheFaultLayer: against the emulator as
// the real API, with no emulator fault hook, the fault, durable and scale
// lanes run through the certifier's own fault layer and certify; the
// sweep leaves no machine the run made.
func TestLiveHetznerCertifiedThroughTheFaultLayer(t *testing.T) {
	apiURL, srv := realAPI(t)
	env := startLive(t, live.Options{APIURL: apiURL})
	report := conformance.Run(t, env.Subject)
	if report.Verdict != conformance.VerdictCertified {
		t.Fatalf("verdict %s", report.Verdict)
	}
	if err := env.Proxy.Err(); err != nil {
		t.Errorf("fault layer: %v", err)
	}
	if _, err := env.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if left := srv.Emulator().Servers(); len(left) != 0 {
		t.Errorf("%d servers are left after the sweep, want 0 (first %s)", len(left), left[0].Name)
	}
}

// full is a client with every capability (the hetzner-cloud client is one).
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

// rateLimitLost is the hetzner-cloud client with its 429 handling
// broken: RATE_LIMITED and its retryAfterMs become a PROVIDER_ERROR.
type rateLimitLost struct{ full }

func (b rateLimitLost) Get(ctx context.Context, call *provider.Call, id string) (*api.ExternalMachine, error) {
	m, err := b.full.Get(ctx, call, id)
	if api.IsCode(err, api.CodeRateLimited) {
		return nil, api.ProviderError(429, "rate_limit_exceeded", "hetzner-cloud: HTTP 429")
	}
	return m, err
}

// TestLiveHetznerBroken429FailsTheFaultLane: the same live run, with the
// provider's 429 handling broken, fails fault.rate-limited and nothing
// else.
func TestLiveHetznerBroken429FailsTheFaultLane(t *testing.T) {
	apiURL, _ := realAPI(t)
	env := startLive(t, live.Options{APIURL: apiURL, Wrap: func(c provider.Client) provider.Client { return rateLimitLost{c.(full)} }})
	report, err := conformance.Certify(t.Context(), env.Subject, conformance.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if report.Verdict != conformance.VerdictFailed {
		t.Errorf("verdict %s, want FAILED", report.Verdict)
	}
	if got := report.WithStatus(conformance.Failed); !slices.Equal(got, []string{"fault.rate-limited"}) {
		for _, id := range got {
			res, _ := report.Result(id)
			t.Logf("%s: %s", id, res.Reason)
		}
		t.Errorf("failed behaviours %v, want [fault.rate-limited]", got)
	}
	if inc := report.WithStatus(conformance.Incomplete); len(inc) > 0 {
		t.Errorf("incomplete behaviours %v", inc)
	}
}
