package secrets

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"better-compute.io/compute/pkg/api"
)

// fakeVault speaks the read side of Vault's KV v2 HTTP API for one mount:
// GET /v1/<mount>/data/<path> with X-Vault-Token answers
// {"data":{"data":{…},"metadata":{…}}}, 404 for a missing path, 404 with
// null data for a deleted latest version, 403 for another token or a
// denied path, 503 while sealed.
type fakeVault struct {
	mount string
	mu    sync.Mutex
	token string
	// secrets by path; a nil map is a deleted latest version.
	secrets map[string]map[string]any
	denied  map[string]bool
	sealed  bool
	paths   []string // request paths seen
}

func (f *fakeVault) set(fn func(*fakeVault)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeVault) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

func (f *fakeVault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	reply := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	errs := func(status int, msgs ...string) { reply(status, map[string]any{"errors": append([]string{}, msgs...)}) }
	path, ok := strings.CutPrefix(r.URL.Path, "/v1/"+f.mount+"/data/")
	switch {
	case f.sealed:
		errs(http.StatusServiceUnavailable, "Vault is sealed")
		return
	case r.Header.Get("X-Vault-Token") != f.token || f.denied[path]:
		errs(http.StatusForbidden, "permission denied")
		return
	case r.Method != http.MethodGet:
		errs(http.StatusMethodNotAllowed)
		return
	case !ok:
		errs(http.StatusNotFound)
		return
	}
	data, exists := f.secrets[path]
	if !exists {
		errs(http.StatusNotFound)
		return
	}
	meta := map[string]any{"created_time": "2025-01-02T03:04:05.000000Z", "custom_metadata": nil,
		"deletion_time": "", "destroyed": false, "version": 3}
	status := http.StatusOK
	if data == nil {
		status = http.StatusNotFound
		meta["deletion_time"] = "2025-02-03T04:05:06.000000Z"
	}
	reply(status, map[string]any{"request_id": "req-1", "lease_id": "", "renewable": false, "lease_duration": 0,
		"data": map[string]any{"data": data, "metadata": meta}, "wrap_info": nil, "warnings": nil, "auth": nil})
}

const (
	vaultValue      = "vault-kv-value-5b1e"
	vaultTokenValue = "hvs.test-token-9c2d"
)

func startFakeVault(t *testing.T) (*fakeVault, *httptest.Server) {
	t.Helper()
	f := &fakeVault{mount: "kv", token: vaultTokenValue, denied: map[string]bool{"team/locked": true},
		secrets: map[string]map[string]any{
			"team/hetzner": {"token": vaultValue, "port": 8006, "empty": ""},
			"team/deleted": nil,
			"team/locked":  {"token": "locked-value"},
		}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func newTestVaultStore(t *testing.T, c VaultConfig) Store {
	t.Helper()
	s, err := NewVaultStore(c)
	if err != nil {
		t.Fatalf("NewVaultStore: %v", err)
	}
	return s
}

// Resolution through the service's resolve subject, against the fake Vault.
func TestVaultStoreReadsKVv2(t *testing.T) {
	f, srv := startFakeVault(t)
	store := newTestVaultStore(t, VaultConfig{Address: srv.URL, Token: vaultTokenValue})
	h := startHarness(t, func(o *Options) {
		o.Stores, o.Vault = []StoreConfig{{Scheme: api.SchemeVault, Tenants: []string{"root", "ops"}}}, store
	})

	for _, tc := range []struct {
		name, tenant, ref string
		code              api.Code
		path              string
	}{
		{"field of the latest version", "root", "vault://kv/team/hetzner#token", "", ""},
		{"second listed tenant", "ops", "vault://kv/team/hetzner#token", "", ""},
		{"missing path", "root", "vault://kv/team/nothing#token", api.CodeNotFound, ""},
		{"missing field", "root", "vault://kv/team/hetzner#password", api.CodeNotFound, ""},
		{"deleted latest version", "root", "vault://kv/team/deleted#token", api.CodeNotFound, ""},
		{"number field", "root", "vault://kv/team/hetzner#port", api.CodeInvalidConfig, "ref"},
		{"empty field", "root", "vault://kv/team/hetzner#empty", api.CodeInvalidConfig, "ref"},
		{"other mount", "root", "vault://secret/team/hetzner#token", api.CodeNotFound, ""},
		{"policy denies the path", "root", "vault://kv/team/locked#token", api.CodeAccessDenied, ""},
		{"tenant not listed", "acme", "vault://kv/team/hetzner#token", api.CodeAccessDenied, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := h.resolve(t, tc.tenant, tc.ref)
			if tc.code == "" {
				if err != nil || v != vaultValue {
					t.Fatalf("resolve: err %v, value matches %v", err, v == vaultValue)
				}
				return
			}
			wantError(t, err, tc.code, tc.path, vaultValue, vaultTokenValue, "locked-value")
		})
	}
	for _, p := range f.seen() {
		if p != "GET /v1/kv/data/team/hetzner" && p != "GET /v1/kv/data/team/nothing" && p != "GET /v1/kv/data/team/deleted" &&
			p != "GET /v1/kv/data/team/locked" && p != "GET /v1/secret/data/team/hetzner" {
			t.Errorf("unexpected request %s", p)
		}
	}
	// 2 successful reads, 4 failing on the field or path, 1 other mount, 1
	// denied; the unlisted tenant never reached Vault.
	if n := len(f.seen()); n != 9 {
		t.Fatalf("vault saw %d requests, want 9: %v", n, f.seen())
	}
	if logs := h.logs.String(); strings.Contains(logs, vaultValue) || strings.Contains(logs, vaultTokenValue) {
		t.Fatal("logs hold the vault value or token")
	}
}

func TestVaultStoreFailures(t *testing.T) {
	f, srv := startFakeVault(t)
	ref, _ := api.ParseSecretRef("vault://kv/team/hetzner#token")
	ctx := t.Context()

	wrong := newTestVaultStore(t, VaultConfig{Address: srv.URL, Token: "hvs.other"})
	_, err := wrong.Resolve(ctx, "root", ref)
	wantError(t, err, api.CodeAccessDenied, "", vaultValue, "hvs.other")

	good := newTestVaultStore(t, VaultConfig{Address: srv.URL, Token: vaultTokenValue})
	f.set(func(f *fakeVault) { f.sealed = true })
	_, err = good.Resolve(ctx, "root", ref)
	wantError(t, err, api.CodeUnavailable, "", vaultValue, vaultTokenValue)
	f.set(func(f *fakeVault) { f.sealed = false })

	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	unreachable := newTestVaultStore(t, VaultConfig{Address: dead.URL, Token: vaultTokenValue})
	_, err = unreachable.Resolve(ctx, "root", ref)
	wantError(t, err, api.CodeUnavailable, "", vaultTokenValue)

	if v, err := good.Resolve(ctx, "root", ref); err != nil || v != vaultValue {
		t.Fatalf("after unsealing: err %v, value matches %v", err, v == vaultValue)
	}
}

// A token file is read before every resolve: a token rotated by Vault
// Agent takes effect without a restart.
func TestVaultTokenFileIsReread(t *testing.T) {
	f, srv := startFakeVault(t)
	file := filepath.Join(t.TempDir(), "token")
	write := func(token string) {
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(vaultTokenValue)
	store := newTestVaultStore(t, VaultConfig{Address: srv.URL, TokenFile: file, Token: "ignored"})
	ref, _ := api.ParseSecretRef("vault://kv/team/hetzner#token")
	if v, err := store.Resolve(t.Context(), "root", ref); err != nil || v != vaultValue {
		t.Fatalf("first token: err %v", err)
	}
	f.set(func(f *fakeVault) { f.token = "hvs.rotated" })
	_, err := store.Resolve(t.Context(), "root", ref)
	wantError(t, err, api.CodeAccessDenied, "", vaultValue)
	write("hvs.rotated")
	if v, err := store.Resolve(t.Context(), "root", ref); err != nil || v != vaultValue {
		t.Fatalf("rotated token: err %v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = store.Resolve(t.Context(), "root", ref)
	wantError(t, err, api.CodeUnavailable, "", vaultValue)
}

func TestNewVaultStoreRefusesBadConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		name string
		cfg  VaultConfig
		want string
	}{
		{"no address", VaultConfig{Token: "t"}, "an address is required"},
		{"no token", VaultConfig{Address: "http://127.0.0.1:1"}, "a token is required"},
		{"unreadable token file", VaultConfig{Address: "http://127.0.0.1:1", TokenFile: missing}, "vault token file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewVaultStore(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewVaultStore: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
