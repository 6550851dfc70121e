package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/conformance"
	"better-compute.io/compute/conformance/httpfault"
	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/clock"
	"better-compute.io/compute/pkg/provider"
	hetzner "better-compute.io/compute/services/provider-hetzner"
)

func init() {
	targets["hetzner-cloud"] = target{
		dialect: hetznerDialect, apiURL: hetzner.DefaultEndpoint, tokenField: hetzner.FieldToken,
		define: func(endpoint string, poll time.Duration) *provider.Defined {
			// Batching off: shared lookups depend on which calls meet in a
			// 200 ms window, so a recording would not replay, and the fault
			// layer's routes (a get is GET /servers/{id}) would miss them.
			// The batched lookups have tests of their own in the provider.
			opts := []hetzner.Option{hetzner.WithEndpoint(endpoint), hetzner.WithBatchWindow(0)}
			if poll > 0 {
				opts = append(opts, hetzner.WithPollInterval(poll))
			}
			return hetzner.Definition(opts...)
		},
		inventory: newHetznerInventory,
		offerID:   "cx23", image: "ubuntu-24.04",
		// transport is not claimed by default: transport.list-paging seeds
		// provider.MaxListLimit (500) machines and more; --profile claims it.
		profiles: []string{conformance.ProfileCore, conformance.ProfileCloud, conformance.ProfileFaults,
			conformance.ProfileDurable, conformance.ProfileSecrets, conformance.ProfileScale},
	}
}

// hetznerDialect is the Hetzner Cloud API as the fault layer sees it
// (https://docs.hetzner.cloud/reference/cloud): the server routes, the
// server action routes, the {"error":{code,message,details}} body, the
// RateLimit-* headers, and the secret fields of its bodies.
var hetznerDialect = httpfault.Dialect{
	Ops: map[string]httpfault.Route{
		provider.VerbCreate: "POST /servers",
		provider.VerbGet:    "GET /servers/{id}",
		provider.VerbList:   "GET /servers",
		provider.VerbDelete: "DELETE /servers/{id}",
		provider.VerbOffers: "GET /server_types",
	},
	Actions: map[api.PowerAction]httpfault.Route{
		api.ActionOn: "POST /servers/{id}/actions/poweron", api.ActionOff: "POST /servers/{id}/actions/poweroff",
		api.ActionGracefulOff: "POST /servers/{id}/actions/shutdown", api.ActionReset: "POST /servers/{id}/actions/reset",
		api.ActionCycle: "POST /servers/{id}/actions/reset", api.ActionGracefulRestart: "POST /servers/{id}/actions/reboot",
		api.ActionReinstall: "POST /servers/{id}/actions/rebuild",
	},
	FailAction:   hetznerFailAction,
	Error:        hetznerError,
	RateLimited:  hetznerRateLimited,
	Created:      hetznerCreated,
	SecretFields: []string{"root_password", "user_data", "token", "password"},
}

// hetznerInjected is the message of every response the fault layer makes.
const hetznerInjected = "injected by the conformance program"

// hetznerErrorBody is the API's error body.
func hetznerErrorBody(code string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": hetznerInjected, "details": map[string]any{}}})
	return b
}

// hetznerError is an injected status: 429 rate_limit_exceeded (no
// RateLimit-Reset), anything else service_error.
func hetznerError(status int) (http.Header, []byte) {
	code := string(hcloud.ErrorCodeServiceError)
	if status == http.StatusTooManyRequests {
		code = string(hcloud.ErrorCodeRateLimitExceeded)
	}
	return http.Header{"Content-Type": {"application/json"}}, hetznerErrorBody(code)
}

// hetznerRateLimited is the API's 429 with the budget empty until reset
// (RateLimit-Reset in Unix seconds, rounded up).
func hetznerRateLimited(reset time.Time) (http.Header, []byte) {
	secs := reset.Unix()
	if reset.After(time.Unix(secs, 0)) {
		secs++
	}
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set("RateLimit-Limit", "3600")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(secs, 10))
	return h, hetznerErrorBody(string(hcloud.ErrorCodeRateLimitExceeded))
}

// hetznerFailAction rewrites {"action":{…}} into an action that failed
// with code action_failed.
func hetznerFailAction(body []byte) ([]byte, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	var a map[string]any
	if err := json.Unmarshal(v["action"], &a); err != nil || a == nil {
		return nil, fmt.Errorf("the response has no action")
	}
	a["status"], a["progress"] = "error", 100
	a["error"] = map[string]any{"code": "action_failed", "message": hetznerInjected}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	v["action"] = raw
	return json.Marshal(v)
}

// hetznerCreated is the id of {"server":{"id":…}}.
func hetznerCreated(body []byte) string {
	var v struct {
		Server struct {
			ID int64 `json:"id"`
		} `json:"server"`
	}
	if json.Unmarshal(body, &v) != nil || v.Server.ID == 0 {
		return ""
	}
	return strconv.FormatInt(v.Server.ID, 10)
}

// hetznerManagedLabel marks the servers the provider manages.
const hetznerManagedLabel = hetzner.DefaultLabelPrefix + "/managed"

// hetznerInventory is the Inventory hook over the Hetzner Cloud API
// (hcloud-go), through the fault layer's hook client.
type hetznerInventory struct {
	api          *hcloud.Client
	offer, image string

	mu  sync.Mutex
	seq int
}

var _ conformance.Inventory = (*hetznerInventory)(nil)

func newHetznerInventory(p *httpfault.Proxy, token, offer, image string) conformance.Inventory {
	return &hetznerInventory{offer: offer, image: image, api: hcloud.NewClient(
		hcloud.WithEndpoint(p.URL()), hcloud.WithToken(token), hcloud.WithHTTPClient(p.HookClient()),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(100 * time.Millisecond)}),
	)}
}

// Machines lists every server of the project (GET /servers, all pages);
// managed ones carry the provider's label.
func (h *hetznerInventory) Machines(ctx context.Context) ([]conformance.InventoryMachine, error) {
	servers, err := h.api.Server.All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]conformance.InventoryMachine, 0, len(servers))
	for _, s := range servers {
		out = append(out,
			conformance.InventoryMachine{ID: strconv.FormatInt(s.ID, 10), Name: s.Name, Managed: s.Labels[hetznerManagedLabel] == "true"})
	}
	return out, nil
}

// Seed creates n servers of the subject's offer and image (POST
// /servers), labelled managed or made "in the console", and waits for
// their create actions.
func (h *hetznerInventory) Seed(ctx context.Context, n int, managed bool, namePrefix string) ([]string, error) {
	labels := map[string]string{"origin": "console"}
	if managed {
		labels = map[string]string{hetznerManagedLabel: "true"}
	}
	var ids []string
	var actions []*hcloud.Action
	for range n {
		h.mu.Lock()
		h.seq++
		name := fmt.Sprintf("%s-%d", namePrefix, h.seq)
		h.mu.Unlock()
		res, _, err := h.api.Server.Create(ctx, hcloud.ServerCreateOpts{Name: name, Labels: labels,
			ServerType: &hcloud.ServerType{Name: h.offer}, Image: &hcloud.Image{Name: h.image}})
		if err != nil {
			return ids, fmt.Errorf("create server %s: %w", name, err)
		}
		ids = append(ids, strconv.FormatInt(res.Server.ID, 10))
		if res.Action != nil {
			actions = append(actions, res.Action)
		}
	}
	if err := h.api.Action.WaitFor(ctx, actions...); err != nil {
		return ids, fmt.Errorf("wait for the seeded servers: %w", err)
	}
	return ids, nil
}

// Remove deletes servers (DELETE /servers/{id}) and waits until each is
// gone: one already gone is not an error, one locked by a running action
// (a delete already under way) is tried again until it is gone.
func (h *hetznerInventory) Remove(ctx context.Context, ids []string) error {
	for _, id := range ids {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			continue
		}
		if err := h.remove(ctx, n); err != nil {
			return fmt.Errorf("delete server %s: %w", id, err)
		}
	}
	return nil
}

// removeRetry is how long remove waits before it tries a locked server again.
const removeRetry = 250 * time.Millisecond

func (h *hetznerInventory) remove(ctx context.Context, id int64) error {
	for {
		res, _, err := h.api.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
		switch {
		case err == nil:
			return h.api.Action.WaitFor(ctx, res.Action)
		case hcloud.IsError(err, hcloud.ErrorCodeNotFound):
			return nil
		case !hcloud.IsError(err, hcloud.ErrorCodeLocked):
			return err
		}
		if err := provider.Sleep(ctx, clock.Real{}, removeRetry); err != nil {
			return err
		}
	}
}
