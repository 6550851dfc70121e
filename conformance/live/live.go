// Package live certifies a provider against its real API: the harness
// (embedded NATS, the secrets service resolving the account's env://
// references, the provider service) in front of the certifier's own HTTP
// fault layer (conformance/httpfault), which is in front of the real API.
// The provider's endpoint points at the fault layer, so the fault lane's
// 429, 5xx, dropped responses and hung calls are injected in front of the
// real thing; the durable lane kills the provider service the harness
// started; the Inventory hook talks to the real API through the fault
// layer (budgeted and recorded, never faulted). Nothing of an emulator's
// own fault API is used.
//
// A run is bounded by a budget of requests and machines the fault layer
// will not exceed, and Close sweeps every machine made through it, also
// after a cancelled run. With Record the exchanges are written to a
// directory (secrets redacted); with Replay a recording answers instead
// of the API, so CI can certify without credentials.
//
// Each provider is one entry of targets (hetzner-cloud).
package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/harness"
	"better-compute.io/compute/conformance/httpfault"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// Default budget of a live run.
const (
	DefaultMaxRequests = 20_000
	DefaultMaxMachines = 100
)

// Options configure Start.
type Options struct {
	// Config is the account config with secret references only, e.g.
	// {"token":"env://HCLOUD_TOKEN"}; env:// references resolve from this
	// process's environment. Required unless Replay is set.
	Config map[string]any
	// APIURL is the real API's base URL (default the provider's, e.g.
	// https://api.hetzner.cloud/v1).
	APIURL string
	// OfferID and Image are an offer and an image create accepts, also
	// those of the machines the Inventory hook seeds (default the
	// provider's: cx23 and ubuntu-24.04 for hetzner-cloud).
	OfferID, Image string
	// Port is the loopback port of the fault layer, the provider's
	// endpoint (0: any free one).
	Port int
	// MaxRequests and MaxMachines are the run's budget (0: the defaults).
	MaxRequests, MaxMachines int
	// PollInterval is how often the provider polls an API action (0: the
	// provider's default).
	PollInterval time.Duration
	// Record is a directory to record the exchanges into; Replay one to
	// answer them from instead of the API (then no credential is needed).
	Record, Replay string
	// Wrap, when set, wraps every client the provider builds (tests
	// break a provider this way).
	Wrap func(provider.Client) provider.Client
}

// target is what live knows of one provider: its dialect, its API's
// default URL, its definition at an endpoint, the config field holding
// the token reference, its Inventory over the API, and the profiles a
// live run can drive.
type target struct {
	dialect    httpfault.Dialect
	apiURL     string
	define     func(endpoint string, poll time.Duration) *provider.Defined
	tokenField string
	inventory  func(p *httpfault.Proxy, token, offer, image string) conformance.Inventory
	offerID    string
	image      string
	profiles   []string
}

// targets are the providers live can certify, by provider id.
var targets = map[string]target{}

// Providers lists the provider ids Start supports, sorted.
func Providers() []string { return slices.Sorted(maps.Keys(targets)) }

// Env is a started live run: the subject (every profile a live run can
// drive claimed, every hook set) and the fault layer. Close sweeps and
// stops everything.
type Env struct {
	Subject conformance.Subject
	// Proxy is the fault layer in front of the API.
	Proxy    *httpfault.Proxy
	h        *harness.Harness
	rec      *httpfault.Recorder
	recordTo string
	// swept and closed: Sweep succeeded once; Close ran.
	swept, closed bool
}

// RunFile is the file of a recording directory naming the run it
// recorded (a replay must repeat its choices).
const RunFile = "run.json"

// Run is what a recording's RunFile holds: the provider id, offer,
// image, profiles, prefix, seed and seed count of the recorded run.
type Run struct {
	ProviderID    string   `json:"providerId"`
	OfferID       string   `json:"offerId"`
	Image         string   `json:"image"`
	Profiles      []string `json:"profiles"`
	Prefix        string   `json:"prefix"`
	Seed          uint64   `json:"seed"`
	ScaleMachines int      `json:"scaleMachines"`
}

// ReadRun reads dir's RunFile. Errors: the file system's, bad JSON.
func ReadRun(dir string) (Run, error) {
	var r Run
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", RunFile, err)
	}
	return r, nil
}

// WriteRun writes the recording's RunFile (when recording; a no-op
// otherwise). Errors: the file system's.
func (e *Env) WriteRun(r Run) error {
	if e.recordTo == "" {
		return nil
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.recordTo, RunFile), append(data, '\n'), 0o644)
}

// Start starts a live run of providerID. Errors: an unknown provider
// (naming the supported ones); INVALID_CONFIG naming config.<field> for a
// token reference that is missing, not env://, or unset in this
// environment; a part failing to start.
func Start(ctx context.Context, providerID string, o Options) (_ *Env, err error) {
	t, ok := targets[providerID]
	if !ok {
		return nil, fmt.Errorf("no live target for provider %q (have %s)", providerID, strings.Join(Providers(), ", "))
	}
	upstream, err := url.Parse(cmp.Or(o.APIURL, t.apiURL))
	if err != nil || upstream.Host == "" {
		return nil, api.InvalidInput("apiUrl", "the API URL %q is not an absolute URL", o.APIURL)
	}
	h, err := harness.Start(ctx, harness.Options{Name: providerID, EnvSecrets: true})
	if err != nil {
		return nil, err
	}
	env := &Env{h: h, recordTo: o.Record}
	defer func() {
		if err != nil {
			_ = env.Close()
		}
	}()
	cfg, token, err := credentials(ctx, h, t, o)
	if err != nil {
		return nil, err
	}
	po := httpfault.Options{Upstream: upstream, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)), Dialect: t.dialect,
		MaxRequests: cmp.Or(o.MaxRequests, DefaultMaxRequests), MaxMachines: cmp.Or(o.MaxMachines, DefaultMaxMachines)}
	switch {
	case o.Replay != "":
		if po.Replay, err = httpfault.LoadReplay(o.Replay); err != nil {
			return nil, fmt.Errorf("load the recording: %w", err)
		}
	case o.Record != "":
		if po.Record, err = httpfault.NewRecorder(o.Record, []string{token}); err != nil {
			return nil, fmt.Errorf("start recording: %w", err)
		}
		env.rec = po.Record
	}
	if env.Proxy, err = httpfault.Start(po); err != nil {
		return nil, err
	}
	h.OnClose(func() { _ = env.Proxy.Close() })
	offer, image := cmp.Or(o.OfferID, t.offerID), cmp.Or(o.Image, t.image)
	inv := t.inventory(env.Proxy, token, offer, image)
	svc, err := h.Serve(ctx, harness.Wrapped(t.define(env.Proxy.URL(), o.PollInterval), o.Wrap))
	if err != nil {
		return nil, err
	}
	nc, err := h.Connect("conformance")
	if err != nil {
		return nil, err
	}
	env.Subject = conformance.Subject{
		ProviderID: providerID, NC: nc,
		Account: api.ProviderAccount{ID: api.NewID(api.PrefixAccount), TenantID: harness.Tenant, Version: 1, Config: cfg},
		OfferID: offer, Image: image, Profiles: slices.Clone(t.profiles),
		PowerObservable: true, SecretValues: []string{token}, Logs: h.Logs,
		Faults: env.Proxy, Inventory: inv, Service: svc,
	}
	return env, nil
}

// credentials is the account config and the token it references: the
// given config and the env:// value, or, replaying, a stored stand-in
// token the recording never saw.
func credentials(ctx context.Context, h *harness.Harness, t target, o Options) (map[string]any, string, error) {
	if o.Replay != "" {
		token := "replay-token-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		ref, err := h.PutSecret(ctx, "replay-token", token)
		if err != nil {
			return nil, "", err
		}
		cfg := maps.Clone(o.Config)
		if cfg == nil {
			cfg = map[string]any{}
		}
		cfg[t.tokenField] = ref
		return cfg, token, nil
	}
	path := "config." + t.tokenField
	s, _ := o.Config[t.tokenField].(string)
	ref, err := api.ParseSecretRef(s)
	switch {
	case s == "":
		return nil, "", api.InvalidConfig(path, "a live run needs the API token as a secret reference (%s: env://NAME)", t.tokenField)
	case err != nil || ref.Scheme != api.SchemeEnv:
		return nil, "", api.InvalidConfig(path, "a live run resolves env:// references only")
	}
	token := os.Getenv(ref.Name)
	if token == "" {
		return nil, "", api.InvalidConfig(path, "environment variable %s of the token reference is not set", ref.Name)
	}
	return maps.Clone(o.Config), token, nil
}

// Sweep removes every machine made through the fault layer (by the
// provider or by the hooks) that the API still lists, and returns how
// many it removed. Errors: listing or removing failed.
func (e *Env) Sweep(ctx context.Context) (int, error) {
	made := e.Proxy.Made()
	if len(made) == 0 {
		return 0, nil
	}
	ms, err := e.Subject.Inventory.Machines(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the machines to sweep: %w", err)
	}
	var left []string
	for _, m := range ms {
		if slices.Contains(made, m.ID) {
			left = append(left, m.ID)
		}
	}
	if err := e.Subject.Inventory.Remove(ctx, left); err != nil {
		return 0, fmt.Errorf("sweep %d machines: %w", len(left), err)
	}
	e.swept = true
	return len(left), nil
}

// Close sweeps unless Sweep did (bounded by a minute, whatever happened
// to the run), stops recording and stops everything; once closed it does nothing.
// Errors: the sweep's or the recording's.
func (e *Env) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.Proxy != nil && e.Subject.Inventory != nil && !e.swept {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := e.Sweep(ctx)
		cancel()
		errs = append(errs, err)
	}
	if e.rec != nil {
		errs = append(errs, e.rec.Close())
	}
	e.h.Close()
	return errors.Join(errs...)
}
