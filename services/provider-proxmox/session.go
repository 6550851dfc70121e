package proxmox

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	pve "github.com/Telmate/proxmox-api-go/proxmox"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/metrics"
	"better-compute.io/compute/pkg/provider"
)

// session is one provider call's use of the API: a Telmate client built
// for the call with the call's token secret, the same HTTP client for the
// requests Telmate cannot make safely (see send), and a recorder counting
// requests. The secret lives here only for the call.
type session struct {
	c    *client
	call *provider.Call
	op   string
	vmid int // set by calls about one VM, for the log line
	rec  *recorder
	http *http.Client
	pve  *pve.Client
	auth string // Authorization header value; never logged
}

// open resolves the token secret and builds the call's clients. Telmate's
// debug mode (which prints the Authorization header) stays off. Errors:
// those of the secret resolver; INVALID_CONFIG naming config.tokenSecret
// when the value cannot travel in a header.
func (c *client) open(ctx context.Context, call *provider.Call, op string) (*session, error) {
	secret, err := call.Secret(ctx, FieldTokenSecret)
	if err != nil {
		return nil, err
	}
	if !provider.HeaderSafe(secret) {
		return nil, api.InvalidConfig("config."+FieldTokenSecret,
			"the tokenSecret reference resolves to a value that is not a token secret (printable ASCII without spaces)")
	}
	rec := &recorder{base: metrics.ProviderTransport(ProviderID, route, c.http.Transport)}
	hc := *c.http
	hc.Transport = rec
	// The TLS config of hc (the pinned CA) is the one used: Telmate
	// ignores its tls argument when given an HTTP client. Its task timeout
	// is unused (tasks are waited for by wait).
	tc, err := pve.NewClient(c.cfg.URL, &hc, "", nil, "", int(c.timing.timeout.Seconds()), false)
	if err != nil {
		return nil, api.ProviderError(0, "client", "proxmox: build the API client: %v", err)
	}
	tc.SetAPIToken(c.tokenID, pve.ApiTokenSecret(secret))
	return &session{c: c, call: call, op: op, rec: rec, http: &hc, pve: tc,
		auth: "PVEAPIToken=" + c.cfg.TokenID + "=" + secret}, nil
}

// openVM is open for a call about the VM with id: it reads the id first
// (INVALID_INPUT naming "id", before the token secret is resolved) and
// records the VMID on the session for its log line. It returns the
// session and the VMID.
func (c *client) openVM(ctx context.Context, call *provider.Call, op, id string) (*session, int, error) {
	vmid, err := parseVMID(id)
	if err != nil {
		return nil, 0, err
	}
	s, err := c.open(ctx, call, op)
	if err != nil {
		return nil, 0, err
	}
	s.vmid = vmid
	return s, vmid, nil
}

// end finishes the call; it must be deferred directly (defer s.end(ctx,
// &err)) so that it recovers a panic of the call, which becomes
// PROVIDER_ERROR. It maps *errp (see classify), reports the request count
// to the CallCounter and logs one line without any secret.
func (s *session) end(ctx context.Context, errp *error) {
	if p := recover(); p != nil {
		s.call.Log.Error().Str("panic_type", fmt.Sprintf("%T", p)).Bytes("stack", debug.Stack()).
			Str("op", s.op).Msg("proxmox call panicked")
		*errp = api.Errorf(api.CodeProviderError, "proxmox: %s failed on an unexpected API reply", s.op)
	}
	*errp = markNotExecuted(classify(ctx, *errp), s.rec)
	calls := s.rec.count()
	if s.c.set.countCalls != nil {
		s.c.set.countCalls(s.op, calls)
	}
	ev := s.call.CallLog(*errp)
	if s.vmid != 0 {
		ev = ev.Int("vmid", s.vmid)
	}
	ev.Str("op", s.op).Int("http_calls", calls).Msg("proxmox call")
}

// routeParams name the placeholders of the PVE API's path parameters.
var routeParams = map[string]string{"nodes": "{node}", "qemu": "{vmid}", "storage": "{storage}", "tasks": "{upid}"}

// route is a request's route template for metrics: its path below
// /api2/json with node, VMID, storage and UPID as placeholders
// ("/nodes/{node}/qemu/{vmid}/status/current").
func route(req *http.Request) string {
	p := req.URL.Path
	if _, rest, ok := strings.Cut(p, apiPath); ok {
		p = rest
	}
	return metrics.Route(p, "", routeParams)
}
