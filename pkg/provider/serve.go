package provider

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/clock"
)

// Verbs of the provider subjects.
const (
	VerbDescribe  = "describe"
	VerbOffers    = "offers"
	VerbCreate    = "create"
	VerbGet       = "get"
	VerbDelete    = "delete"
	VerbPower     = "power"
	VerbReinstall = "reinstall"
	VerbList      = "list"
	// VerbRelabel replaces a machine's user labels (capability labels).
	VerbRelabel = "relabel"
	VerbResize  = "resize"
	VerbMetrics = "metrics"
)

// Request limits enforced by Serve before a client sees a request.
const (
	MaxIDLength       = 128
	MaxKeyLength      = 255
	MaxNameLength     = 255
	MaxUserDataBytes  = 32 * 1024
	MaxSSHKeys        = 100
	MaxSSHKeyBytes    = 16 * 1024
	DefaultListLimit  = 100
	MaxListLimit      = 500
	redactedPlacehold = "[REDACTED]"
)

// ServeOptions configures Serve.
type ServeOptions struct {
	// Logger for the service; calls log with the account and request ids.
	Logger zerolog.Logger
	// Workers bounds concurrent calls (default 64).
	Workers int
	// Clock given to calls (default clock.Real).
	Clock clock.Clock
	// Resolver builds the secret resolver of a call for tenant; default
	// resolves through compute.internal.secrets.resolve on the same connection.
	Resolver func(tenant string) SecretResolver
}

// server is one provider served on the bus.
type server struct {
	def   *Defined
	nc    *nats.Conn
	opts  ServeOptions
	mu    sync.Mutex
	cache map[string]cachedClient
}

type cachedClient struct {
	version int64
	client  Client
}

// Serve answers compute.internal.provider.<id>.{describe,offers,create,get,
// delete,power,reinstall,list,relabel,resize,metrics} for d as a micro service named
// "provider-<id>" with queue group, so replicas share calls.
//
// Every call is validated before the client sees it: the account config
// against the manifest (INVALID_CONFIG / INVALID_INPUT), ids, keys, names,
// user data and SSH keys against the Max* limits (INVALID_INPUT), the power
// action (INVALID_INPUT). A capability the client lacks is UNSUPPORTED. A
// client is built once per account id and version (a failed build is not
// cached). A panicking client answers PROVIDER_ERROR. Resolved secret values
// are redacted from every error message.
func Serve(nc *nats.Conn, d *Defined, o ServeOptions) (*bus.Service, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Resolver == nil {
		o.Resolver = func(tenant string) SecretResolver { return busResolver{nc: nc, tenant: tenant} }
	}
	s := &server{def: d, nc: nc, opts: o, cache: map[string]cachedClient{}}
	eps := []bus.Endpoint{
		{Name: bus.EndpointName(bus.ResourceProvider, VerbDescribe), Subject: bus.ProviderCall(d.ID(), VerbDescribe), Handler: s.describe},
	}
	for verb, h := range map[string]callHandler{
		VerbOffers: s.offers, VerbCreate: s.create, VerbGet: s.get, VerbDelete: s.delete,
		VerbPower: s.power, VerbReinstall: s.reinstall, VerbList: s.list, VerbRelabel: s.relabel,
		VerbCheckPool: s.checkPool, VerbResize: s.resize, VerbMetrics: s.metrics,
	} {
		eps = append(eps,
			bus.Endpoint{Name: bus.EndpointName(bus.ResourceProvider, verb), Subject: bus.ProviderCall(d.ID(), verb), Handler: s.wrap(h)})
	}
	slices.SortFunc(eps, func(a, b bus.Endpoint) int { return strings.Compare(a.Name, b.Name) })
	return bus.StartService(nc, bus.ServiceConfig{
		Name: "provider-" + d.ID(), Version: d.Version(), Description: "provider " + d.ID(),
		Endpoints: eps, Workers: o.Workers, Logger: o.Logger,
	})
}

// callHandler serves one verb once the request is decoded into its account part.
type callHandler func(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error)

func (s *server) describe(context.Context, *bus.Request) (any, error) { return s.def.Describe(), nil }

// accountOnly decodes just the account of any provider request.
type accountOnly struct {
	Account api.ProviderAccount `json:"account"`
}

// wrap decodes the account, validates it, builds (or reuses) the client and
// the call, runs h with panic recovery and redacts resolved secrets.
func (s *server) wrap(h callHandler) bus.Handler {
	return func(ctx context.Context, req *bus.Request) (out any, err error) {
		var head accountOnly
		if err := bus.DecodeLoose(req.Data, &head); err != nil {
			return nil, err
		}
		acct := head.Account
		switch {
		case acct.ID == "" || len(acct.ID) > MaxIDLength:
			return nil, api.InvalidInput("account.id", "account.id is required (at most %d characters)", MaxIDLength)
		case !api.ValidTenant(acct.TenantID):
			return nil, api.InvalidInput("account.tenantId", "account.tenantId must be a valid tenant id")
		}
		cfg, err := ValidateConfig(s.def.d.Manifest, acct.Config)
		if err != nil {
			return nil, prefixPath(err, "account.")
		}
		acct.Config = cfg
		client, err := s.client(acct)
		if err != nil {
			return nil, err
		}
		resolver := &redactingResolver{inner: s.opts.Resolver(acct.TenantID)}
		call := &Call{Account: acct, Clock: s.opts.Clock, Secrets: resolver, observed: &observedRateLimit{},
			Log: req.Log.With().Str("tenant", acct.TenantID).Str("account", acct.ID).Str("provider", s.def.ID()).Logger()}
		defer func() {
			if p := recover(); p != nil {
				call.Log.Error().Str("panic_type", fmt.Sprintf("%T", p)).Bytes("stack", debug.Stack()).Msg("provider client panicked")
				out, err = nil, api.Errorf(api.CodeProviderError, "provider %s failed unexpectedly (request %s)", s.def.ID(), req.RequestID)
			}
			if err != nil {
				err = resolver.redact(providerError(err))
			}
			if rl, ok := call.RateLimit(); ok {
				setRateLimitHeaders(req.ReplyHeader, rl)
			}
		}()
		return h(ctx, req, client, call)
	}
}

// client returns the cached client of acct's id and version, building it
// when absent or stale. Build failures are returned and not cached.
func (s *server) client(acct api.ProviderAccount) (Client, error) {
	s.mu.Lock()
	c, ok := s.cache[acct.ID]
	s.mu.Unlock()
	if ok && c.version == acct.Version {
		return c.client, nil
	}
	client, err := s.def.New(BuildContext{Account: acct})
	if err != nil {
		ce := api.AsComputeError(err)
		if ce.Code == api.CodeInternal {
			ce = api.Errorf(api.CodeInvalidConfig, "build %s client: %s", s.def.ID(), ce.Message)
		}
		return nil, ce
	}
	if err := s.def.checkClient(client); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if cur, ok := s.cache[acct.ID]; !ok || cur.version <= acct.Version {
		s.cache[acct.ID] = cachedClient{version: acct.Version, client: client}
	}
	s.mu.Unlock()
	return client, nil
}

func (s *server) offers(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderOffersRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	offers, err := c.ListOffers(ctx, call, in.Query)
	if err != nil {
		return nil, err
	}
	if offers == nil {
		offers = []api.Offer{}
	}
	return api.List[api.Offer]{Items: offers}, nil
}

func (s *server) create(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderCreateRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if err := validateSpec(in.IdempotencyKey, in.Machine); err != nil {
		return nil, err
	}
	call.IdempotencyKey, call.FirstAttempt = in.IdempotencyKey, in.FirstAttempt
	call.Log = call.Log.With().Str("idempotency_key", in.IdempotencyKey).Logger()
	return c.Create(ctx, call, in.Machine)
}

func (s *server) get(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderMachineRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	m, err := c.Get(ctx, call, in.ID)
	if err != nil {
		return nil, err
	}
	if m != nil && in.IdempotencyKey != "" && m.IdempotencyKey != "" && m.IdempotencyKey != in.IdempotencyKey {
		call.Log.Warn().Str("machine", m.ID).Msg("machine id now names another key's machine: answered absent")
		return api.ProviderGetReply{}, nil
	}
	return api.ProviderGetReply{Machine: m}, nil
}

// delete deletes the machine with the id, or, with no id and an
// idempotency key, every machine carrying the key (delete.byKey:
// UNSUPPORTED for a provider that does not claim it).
func (s *server) delete(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderMachineRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if in.ID == "" && in.IdempotencyKey == "" {
		return nil, api.InvalidInput("id", "id is required (or, to delete every machine carrying a key, idempotencyKey)")
	}
	if in.ID != "" {
		if err := checkMachineRequest(in.ID, in.IdempotencyKey, call); err != nil {
			return nil, err
		}
		return nil, c.Delete(ctx, call, in.ID)
	}
	if err := checkKey(in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	d, ok := c.(KeyDeleter)
	if !ok || !s.def.Has(CapabilityDeleteByKey) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support delete by idempotency key", s.def.ID())
	}
	return nil, d.DeleteByKey(ctx, call, in.IdempotencyKey)
}

func (s *server) power(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderPowerRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	if !slices.Contains(api.PowerActions(), in.Action) {
		return nil, api.InvalidInput("action", "action must be one of %v", api.PowerActions())
	}
	p, ok := c.(Powerer)
	if !ok || !s.def.Has(CapabilityPower) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support power actions", s.def.ID())
	}
	return nil, p.Power(ctx, call, in.ID, in.Action)
}

func (s *server) reinstall(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderReinstallRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	if err := api.CheckImage("image", in.Image, true); err != nil {
		return nil, err
	}
	r, ok := c.(Reinstaller)
	if !ok || !s.def.Has(CapabilityReinstall) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support reinstall", s.def.ID())
	}
	return r.Reinstall(ctx, call, in.ID, in.Image)
}

// resize checks the offer and the power state asked for, then moves the
// machine (capability resize).
func (s *server) resize(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderResizeRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	switch {
	case in.OfferID == "" || len(in.OfferID) > MaxIDLength:
		return nil, api.InvalidInput("offerId", "offerId is required (at most %d characters)", MaxIDLength)
	case in.Power != "" && in.Power != api.PowerOn && in.Power != api.PowerOff:
		return nil, api.InvalidInput("power", "power must be %q, %q or absent", api.PowerOn, api.PowerOff)
	}
	r, ok := c.(Resizer)
	if !ok || !s.def.Has(CapabilityResize) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support resize", s.def.ID())
	}
	return r.Resize(ctx, call, in)
}

// metrics checks the window (api.MetricsWindow.Check on the call's clock)
// and answers the machine's series (capability metrics).
func (s *server) metrics(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderMetricsRequest
	if err := decodeMachineRequest(req, &in, &in.ID, &in.IdempotencyKey, call); err != nil {
		return nil, err
	}
	if err := in.Check(call.Clock.Now()); err != nil {
		return nil, err
	}
	m, ok := c.(MetricsReader)
	if !ok || !s.def.Has(CapabilityMetrics) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support metrics", s.def.ID())
	}
	out, err := m.Metrics(ctx, call, in.ID, in.MetricsWindow)
	if err != nil {
		return nil, err
	}
	if out.Series == nil {
		out.Series = []api.MetricSeries{}
	}
	return out, nil
}

func (s *server) list(ctx context.Context, req *bus.Request, c Client, call *Call) (any, error) {
	var in api.ProviderListRequest
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	switch {
	case in.Limit == 0:
		in.Limit = DefaultListLimit
	case in.Limit < 0 || in.Limit > MaxListLimit:
		return nil, api.InvalidInput("limit", "limit must be between 1 and %d", MaxListLimit)
	}
	l, ok := c.(Lister)
	if !ok || !s.def.Has(CapabilityList) {
		return nil, api.Errorf(api.CodeUnsupported, "provider %s does not support list", s.def.ID())
	}
	items, next, err := l.List(ctx, call, in.Cursor, in.Limit)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []api.ExternalMachine{}
	}
	return api.List[api.ExternalMachine]{Items: items, NextCursor: next}, nil
}

// decodeMachineRequest decodes v (which must be decoded before id and key
// are read, so they are passed as pointers) and checks its machine id and
// optional idempotency key, which it gives the call.
func decodeMachineRequest(req *bus.Request, v any, id, key *string, call *Call) error {
	if err := req.Decode(v); err != nil {
		return err
	}
	return checkMachineRequest(*id, *key, call)
}

// checkMachineRequest checks a request's machine id (required) and
// optional idempotency key, which it gives the call.
func checkMachineRequest(id, key string, call *Call) error {
	if id == "" || len(id) > MaxIDLength {
		return api.InvalidInput("id", "id is required (at most %d characters)", MaxIDLength)
	}
	return checkKey(key, call)
}

// checkKey checks a request's optional idempotency key and gives it the call.
func checkKey(key string, call *Call) error {
	if len(key) > MaxKeyLength {
		return api.InvalidInput("idempotencyKey", "idempotencyKey has at most %d characters", MaxKeyLength)
	}
	if key != "" {
		call.IdempotencyKey = key
		call.Log = call.Log.With().Str("idempotency_key", key).Logger()
	}
	return nil
}

func validateSpec(key string, m api.MachineSpec) error {
	imageErr := api.CheckImage("machine.image", m.Image, true)
	switch {
	case key == "" || len(key) > MaxKeyLength:
		return api.InvalidInput("idempotencyKey", "idempotencyKey is required (at most %d characters)", MaxKeyLength)
	case m.Name == "" || len(m.Name) > MaxNameLength:
		return api.InvalidInput("machine.name", "machine.name is required (at most %d characters)", MaxNameLength)
	case m.OfferID == "" || len(m.OfferID) > MaxIDLength:
		return api.InvalidInput("machine.offerId", "machine.offerId is required (at most %d characters)", MaxIDLength)
	case imageErr != nil:
		return imageErr
	case len(m.UserData) > MaxUserDataBytes:
		return api.InvalidInput("machine.userData", "machine.userData is larger than %d bytes", MaxUserDataBytes)
	case len(m.SSHKeys) > MaxSSHKeys:
		return api.InvalidInput("machine.sshKeys", "at most %d SSH keys", MaxSSHKeys)
	}
	if err := api.ValidateLabels("machine.labels", m.Labels); err != nil {
		return err
	}
	for i, k := range m.SSHKeys {
		if k == "" || len(k) > MaxSSHKeyBytes {
			return api.InvalidInput(fmt.Sprintf("machine.sshKeys[%d]", i), "SSH key must be 1 to %d bytes", MaxSSHKeyBytes)
		}
	}
	return nil
}

// providerError keeps ComputeErrors and reports any other error of a client
// as PROVIDER_ERROR (a provider's failure, not ours).
func providerError(err error) *api.ComputeError {
	ce := api.AsComputeError(err)
	if ce.Code == api.CodeInternal {
		return api.Errorf(api.CodeProviderError, "%s", ce.Message)
	}
	return ce
}

func prefixPath(err error, prefix string) error {
	ce := api.AsComputeError(err)
	if p := ce.Path(); p != "" {
		ce.WithPath(prefix + p)
	}
	return ce
}

// busResolver resolves references through compute.internal.secrets.resolve,
// scoped to the account's tenant.
type busResolver struct {
	nc     *nats.Conn
	tenant string
}

func (r busResolver) Resolve(ctx context.Context, ref string) (string, error) {
	var out api.SecretResolveReply
	if err := bus.Call(ctx, r.nc, bus.SecretsResolve, api.SecretResolveRequest{TenantID: r.tenant, Ref: ref}, &out); err != nil {
		return "", err
	}
	return out.Value, nil
}

// redactingResolver remembers the values it resolved during one call so
// they can be cut out of the call's error: its message and string details.
type redactingResolver struct {
	inner  SecretResolver
	mu     sync.Mutex
	values []string
}

func (r *redactingResolver) Resolve(ctx context.Context, ref string) (string, error) {
	v, err := r.inner.Resolve(ctx, ref)
	if err == nil && v != "" {
		r.mu.Lock()
		r.values = append(r.values, v)
		r.mu.Unlock()
	}
	return v, err
}

func (r *redactingResolver) redact(ce *api.ComputeError) *api.ComputeError {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.values) == 0 {
		return ce
	}
	return &api.ComputeError{Code: ce.Code, Message: r.cut(ce.Message), Details: ce.Details.MapStrings(r.cut)}
}

// cut replaces every resolved value in s (r.mu held).
func (r *redactingResolver) cut(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, redactedPlacehold)
	}
	return s
}
