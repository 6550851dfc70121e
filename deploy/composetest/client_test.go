package composetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// callTimeout bounds one request, as the CLI's default does.
const callTimeout = 10 * time.Second

// client talks to the stack from the host as the admin user (its
// credential from compute nats-init), through all three NATS nodes; the
// admin user sends the commands of any tenant into the SERVICES account.
type client struct {
	t  *testing.T
	nc *nats.Conn

	mu          sync.Mutex
	unavailable map[string]int    // UNAVAILABLE answers retried, by resource.verb
	firstCause  map[string]string // the first such answer's message, by resource.verb
}

func connectAdmin(s *stack) *client {
	s.t.Helper()
	nc, err := bus.Connect(bus.ConnectOptions{URL: hostNATSURLs, Name: "composetest",
		CredsFile: s.adminCreds(), CAFile: s.caFile()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(nc.Close)
	if err := nc.FlushTimeout(30 * time.Second); err != nil {
		s.t.Fatalf("NATS at %s: %v", hostNATSURLs, err)
	}
	return &client{t: s.t, nc: nc, unavailable: map[string]int{}, firstCause: map[string]string{}}
}

// call sends one command of tenant.
func (c *client) call(tenant, resource, verb string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return bus.Call(ctx, c.nc, bus.Command(tenant, resource, verb), in, out)
}

// retry calls until the answer is not UNAVAILABLE (which it counts) or the
// deadline passes; it returns the last answer's error.
func (c *client) retry(deadline time.Time, tenant, resource, verb string, in, out any) error {
	for {
		err := c.call(tenant, resource, verb, in, out)
		if !api.IsCode(err, api.CodeUnavailable) {
			return err
		}
		c.countUnavailable(resource+"."+verb, err)
		if time.Now().After(deadline) {
			return fmt.Errorf("still unavailable at the deadline: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// countUnavailable counts one UNAVAILABLE answer of resource.verb.
func (c *client) countUnavailable(what string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unavailable[what]++
	if _, ok := c.firstCause[what]; !ok {
		c.firstCause[what] = api.AsComputeError(err).Message
	}
}

// takeUnavailable returns the UNAVAILABLE counts since the last call, as
// "verb=n (first: message)", and resets them.
func (c *client) takeUnavailable() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, n := range c.unavailable {
		parts = append(parts, fmt.Sprintf("%s=%d (first: %.90s)", k, n, c.firstCause[k]))
	}
	sort.Strings(parts)
	c.unavailable, c.firstCause = map[string]int{}, map[string]string{}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// world is a tenant with a Hetzner token, an account and a pool.
type world struct {
	tenant  string
	secret  api.Secret
	account api.Account
	pool    api.Pool
}

// Flavor of every pool: the smallest Hetzner server type.
const (
	flavorName = "small"
	offerID    = "cx23"
	imageName  = "ubuntu-24.04"
)

func (c *client) newWorld(tenant string) *world {
	c.t.Helper()
	w := &world{tenant: tenant}
	deadline := time.Now().Add(2 * time.Minute)
	must := func(what string, err error) {
		if err != nil {
			c.t.Fatalf("tenant %s: %s: %v", tenant, what, err)
		}
	}
	must("secrets.put", c.retry(deadline, tenant, bus.ResourceSecrets, "put",
		api.SecretPutRequest{Name: "hcloud", Value: "emulator-token-" + tenant}, &w.secret))
	must("accounts.create", c.retry(deadline, tenant, bus.ResourceAccounts, "create",
		api.AccountCreateRequest{Provider: "hetzner-cloud", Name: "load", Config: map[string]any{"token": w.secret.Ref}}, &w.account))
	must("pools.create", c.retry(deadline, tenant, bus.ResourcePools, "create",
		api.PoolCreateRequest{Name: "load", Class: api.PoolClassProvider, Agent: api.PoolAgentNone, ProviderAccountID: w.account.ID,
			Flavors: []api.Flavor{{Name: flavorName, OfferID: offerID, Image: imageName}}}, &w.pool))
	return w
}

// streamLeader is the server leading a stream's replicas.
func (c *client) streamLeader(stream string) string {
	c.t.Helper()
	js, err := jetstream.New(c.nc)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		c.t.Fatalf("stream %s: %v", stream, err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		c.t.Fatalf("stream %s is not replicated on three nodes: %+v", stream, info.Cluster)
	}
	return info.Cluster.Leader
}

// serverSnapshot is a server as the Hetzner emulator's control API lists it.
type serverSnapshot struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
}

// idempotencyLabel holds the instance id a server was created for.
const idempotencyLabel = "better-compute.io/idempotency-key"

// emulatorServers reads every server of the Hetzner emulator.
func emulatorServers(t *testing.T) []serverSnapshot {
	t.Helper()
	resp, err := http.Get(emulatorURL + "/_emulator/servers")
	if err != nil {
		t.Fatalf("emulator control API: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var servers []serverSnapshot
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("emulator control API: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&servers); err != nil {
		t.Fatalf("emulator control API: %v", err)
	}
	return servers
}

// setEmulatorLatency delays every API route of the Hetzner emulator the
// stack has called so far by d (0 removes the delay).
func setEmulatorLatency(t *testing.T, d time.Duration) {
	t.Helper()
	resp, err := http.Get(emulatorURL + "/_emulator/calls")
	if err != nil {
		t.Fatalf("emulator control API: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil || len(calls) == 0 {
		t.Fatalf("emulator calls: %v %v", calls, err)
	}
	for route := range calls {
		body, _ := json.Marshal(map[string]string{"route": route, "duration": d.String()})
		r, err := http.Post(emulatorURL+"/_emulator/faults/latency", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("emulator latency: %v", err)
		}
		_ = r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("emulator latency of %s: %s", route, r.Status)
		}
	}
}
