package reconciler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

const sshKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host"

func TestBadInputIsRefusedAndLeavesNothing(t *testing.T) {
	h := newHarness(t, fastOptions())
	pool := h.pool.ID
	cases := []struct {
		name, verb string
		body       any
		code       api.Code
		path       string
	}{
		{"malformed JSON", "create", []byte(`{"poolId":`), api.CodeInvalidInput, ""},
		{"not an object", "create", []byte(`[1]`), api.CodeInvalidInput, ""},
		{"unknown field", "create", map[string]any{"poolId": pool, "flavor": "small", "colour": "red"}, api.CodeInvalidInput, "colour"},
		{"wrong type", "create", map[string]any{"poolId": pool, "flavor": 7}, api.CodeInvalidInput, "flavor"},
		{"missing pool", "create", map[string]any{"flavor": "small"}, api.CodeInvalidInput, "poolId"},
		{"unknown pool", "create", map[string]any{"poolId": api.NewID(api.PrefixPool), "flavor": "small"}, api.CodeInvalidInput, "poolId"},
		{"missing flavor", "create", map[string]any{"poolId": pool}, api.CodeInvalidInput, "flavor"},
		{"unknown flavor", "create", map[string]any{"poolId": pool, "flavor": "huge"}, api.CodeInvalidInput, "flavor"},
		{"bad name", "create", map[string]any{"poolId": pool, "flavor": "small", "name": "no spaces"}, api.CodeInvalidInput, "name"},
		{"bad power", "create", map[string]any{"poolId": pool, "flavor": "small", "power": "maybe"}, api.CodeInvalidInput, "power"},
		{"secret ref in user data", "create", map[string]any{"poolId": pool, "flavor": "small", "userData": "#cloud-config\ntoken: secret://acme/sec_x"}, api.CodeInvalidInput, "userData"},
		{"private key in user data", "create", map[string]any{"poolId": pool, "flavor": "small", "userData": "-----BEGIN OPENSSH PRIVATE KEY-----"}, api.CodeInvalidInput, "userData"},
		{"image with a control character", "create", map[string]any{"poolId": pool, "flavor": "small", "image": "ubuntu\u0001x"},
			api.CodeInvalidInput, "image"},
		{"reinstall image with a bidi character", "reinstall", map[string]any{"id": api.NewID(api.PrefixInstance), "image": "debian\u202e21"},
			api.CodeInvalidInput, "image"},
		{"bad ssh key", "create", map[string]any{"poolId": pool, "flavor": "small", "sshKeys": []string{sshKey, "not-a-key"}}, api.CodeInvalidInput, "sshKeys[1]"},
		// 12 keys of 14,600 bytes pass the per-key limit; their comments'
		// '<' are six bytes each once stored as JSON: over a megabyte.
		{"record too large", "create", map[string]any{"poolId": pool, "flavor": "small", "sshKeys": bulkyKeys(12, 14_500)}, api.CodeInvalidInput, "sshKeys"},
		// About 240,000 bytes once stored: under MaxRecordBytes, but with
		// less than GrowthRoom left for the status the reconciler writes
		// (such a record would refuse its status writes and its delete).
		{"record without room for its status", "create", map[string]any{"poolId": pool, "flavor": "small", "sshKeys": bulkyKeys(4, 10_000)},
			api.CodeInvalidInput, "sshKeys"},
		{"tenant mismatch", "create", map[string]any{"tenantId": "other", "poolId": pool, "flavor": "small"}, api.CodeAccessDenied, "tenantId"},
		{"get bad id", "get", map[string]any{"id": "inst_../x"}, api.CodeInvalidInput, "id"},
		{"get unknown", "get", map[string]any{"id": api.NewID(api.PrefixInstance)}, api.CodeNotFound, ""},
		{"delete unknown", "delete", map[string]any{"id": api.NewID(api.PrefixInstance)}, api.CodeNotFound, ""},
		{"power bad action", "power", map[string]any{"id": api.NewID(api.PrefixInstance), "action": "explode"}, api.CodeInvalidInput, "action"},
		{"reinstall no image", "reinstall", map[string]any{"id": api.NewID(api.PrefixInstance)}, api.CodeInvalidInput, "image"},
		{"list bad phase", "list", map[string]any{"phase": "Sleeping"}, api.CodeInvalidInput, "phase"},
		{"list bad limit", "list", map[string]any{"limit": 5000}, api.CodeInvalidInput, "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := h.call(tc.verb, tc.body, nil)
			ce := api.AsComputeError(err)
			if ce == nil || ce.Code != tc.code || ce.Path() != tc.path {
				t.Fatalf("got %v (path %q), want %s path %q", err, pathOf(ce), tc.code, tc.path)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, kv := range []string{bus.BucketInstances, bus.BucketIdempotency} {
		b, err := h.env.Stores.JS.KeyValue(ctx, kv)
		if err != nil {
			t.Fatal(err)
		}
		if keys, err := bus.NewTable[struct{}](b, "record").Keys(ctx, ""); err != nil || len(keys) != 0 {
			t.Fatalf("%s holds %v after refused requests (err %v)", kv, keys, err)
		}
	}
}

// bulkyKeys is n copies of sshKey with a comment of size '<'.
func bulkyKeys(n, size int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = sshKey + strings.Repeat("<", size)
	}
	return keys
}

func pathOf(ce *api.ComputeError) string {
	if ce == nil {
		return ""
	}
	return ce.Path()
}

func TestValidSSHKeyAccepted(t *testing.T) {
	if err := validateSSHKeys([]string{sshKey}); err != nil {
		t.Fatalf("valid key refused: %v", err)
	}
}

func TestRetryDelay(t *testing.T) {
	p := RetryPolicy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}
	cases := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 80 * time.Millisecond, 120 * time.Millisecond},
		{2, 0, 160 * time.Millisecond, 240 * time.Millisecond},
		{3, 0, 320 * time.Millisecond, 480 * time.Millisecond},
		{10, 0, 800 * time.Millisecond, time.Second},
		{1, 30 * time.Second, 30 * time.Second, 30 * time.Second},
	}
	for _, c := range cases {
		for range 20 {
			if d := p.Delay(c.attempt, c.retryAfter); d < c.lo || d > c.hi {
				t.Fatalf("Delay(%d, %v) = %v, want within [%v, %v]", c.attempt, c.retryAfter, d, c.lo, c.hi)
			}
		}
	}
}

// Creates in a pool that a pools.delete has marked are refused, and the
// recheck after the instance write sees a mark or a deleted pool.
func TestCreateRefusedWhilePoolIsBeingDeleted(t *testing.T) {
	h := newHarness(t, fastOptions())
	ctx := context.Background()
	marked := h.pool
	now := time.Now().UTC()
	marked.DeletionRequestedAt = &now
	if _, err := h.env.Stores.Pools.Put(ctx, tenant+"."+marked.ID, mustJSON(t, marked)); err != nil {
		t.Fatal(err)
	}
	err := h.call("create", api.InstanceCreateRequest{PoolID: marked.ID, Flavor: "small"}, nil)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeInvalidState || ce.Path() != "poolId" {
		t.Fatalf("create in a pool being deleted: %v", err)
	}
	if err := h.rec.recheckPool(ctx, tenant, marked.ID); !api.IsCode(err, api.CodeInvalidState) {
		t.Fatalf("recheck of a marked pool: %v", err)
	}
	if err := h.env.Stores.Pools.Delete(ctx, tenant+"."+marked.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.rec.recheckPool(ctx, tenant, marked.ID); !api.IsCode(err, api.CodeInvalidInput) {
		t.Fatalf("recheck of a deleted pool: %v", err)
	}
	if keys, _ := h.env.Stores.InstanceTable().Keys(ctx, ""); len(keys) != 0 {
		t.Fatalf("instances left: %v", keys)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPollDelayDoublesUpToTheCap(t *testing.T) {
	r := &Reconciler{o: Options{PollInterval: 2 * time.Second}}
	for _, c := range []struct {
		polls int
		want  time.Duration
	}{{0, 2 * time.Second}, {1, 2 * time.Second}, {2, 4 * time.Second}, {3, 8 * time.Second}, {4, 16 * time.Second}, {5, 30 * time.Second}, {50, 30 * time.Second}} {
		if got := r.pollDelay(c.polls); got != c.want {
			t.Errorf("pollDelay(%d) = %v, want %v", c.polls, got, c.want)
		}
	}
	slow := &Reconciler{o: Options{PollInterval: time.Minute}}
	if got := slow.pollDelay(3); got != time.Minute {
		t.Errorf("a poll interval above the cap is kept: got %v", got)
	}
}
