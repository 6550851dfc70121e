package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	vault "github.com/hashicorp/vault/api"

	"better-compute.io/compute/pkg/api"
)

// DefaultVaultTimeout bounds one Vault read when VaultConfig.Timeout is zero.
const DefaultVaultTimeout = 10 * time.Second

// VaultConfig configures NewVaultStore.
type VaultConfig struct {
	// Address of the Vault server, e.g. "https://vault.example.com:8200"
	// (required). The standard VAULT_CACERT, VAULT_CLIENT_CERT,
	// VAULT_CLIENT_KEY, VAULT_NAMESPACE and VAULT_SKIP_VERIFY environment
	// variables apply as in the vault CLI.
	Address string
	// Token authenticates to Vault. TokenFile instead names a file holding
	// the token, read again before every resolve, so a token rotated by Vault
	// Agent's file sink takes effect without a restart. One is required;
	// TokenFile wins.
	Token, TokenFile string
	// Timeout bounds one read (default DefaultVaultTimeout); the caller's
	// deadline applies too.
	Timeout time.Duration
}

// vaultStore serves vault://<mount>/<path>#<field> from HashiCorp Vault's
// KV version 2 secrets engine (GET /v1/<mount>/data/<path>, the field of
// the latest version's data). The token reads whatever its policy allows,
// so the broker lets only the tenants of its StoreConfig reach it.
type vaultStore struct {
	client    *vault.Client
	tokenFile string
	timeout   time.Duration
	mu        sync.Mutex
	token     string
}

// NewVaultStore returns the Store of vault:// references, for
// Options.Vault. It does not contact Vault: an unreachable Vault fails the
// resolves (UNAVAILABLE), not the start. Errors (plain): no address, no
// token, an unreadable token file, a malformed address.
func NewVaultStore(c VaultConfig) (Store, error) {
	if c.Address == "" {
		return nil, errors.New("vault: an address is required")
	}
	cfg := vault.DefaultConfig()
	if cfg.Error != nil {
		return nil, fmt.Errorf("vault: %w", cfg.Error)
	}
	cfg.Address = c.Address
	// No retries inside a resolve: its caller retries UNAVAILABLE with
	// backoff and a deadline of its own.
	cfg.MaxRetries = 0
	client, err := vault.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	s := &vaultStore{client: client, tokenFile: c.TokenFile, timeout: c.Timeout}
	if s.timeout <= 0 {
		s.timeout = DefaultVaultTimeout
	}
	if c.TokenFile == "" {
		if c.Token == "" {
			return nil, errors.New("vault: a token is required (token file or VAULT_TOKEN)")
		}
		s.setToken(c.Token)
		return s, nil
	}
	if err := s.refreshToken(); err != nil {
		return nil, fmt.Errorf("vault: %s", api.AsComputeError(err).Message)
	}
	return s, nil
}

// Resolve reads the latest version of <mount>/<path> and answers its field.
// Errors: ACCESS_DENIED when Vault denies the token (401, 403); NOT_FOUND for a missing or
// deleted path (404) or a missing field; INVALID_CONFIG (path ref) for a
// field that is not a non-empty string; UNAVAILABLE when Vault cannot be
// reached, is sealed or overloaded (429, 5xx), or the token file cannot be
// read; INTERNAL for any other answer. Messages never quote a value.
func (s *vaultStore) Resolve(ctx context.Context, _ string, ref api.SecretRef) (string, error) {
	if err := s.refreshToken(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	where := ref.Mount + "/" + ref.Path
	sec, err := s.client.KVv2(ref.Mount).Get(ctx, ref.Path)
	if err != nil {
		return "", vaultError(where, err)
	}
	if sec.Data == nil {
		return "", vaultNotFound(where, "the latest version of vault secret %s is deleted", where)
	}
	raw, ok := sec.Data[ref.Field]
	if !ok {
		return "", vaultNotFound(ref.String(), "vault secret %s has no field %q", where, ref.Field)
	}
	v, ok := raw.(string)
	if !ok || v == "" {
		return "", api.InvalidConfig("ref", "field %q of vault secret %s is not a non-empty string", ref.Field, where)
	}
	return v, nil
}

// refreshToken reads the token file (when configured) and hands a changed
// token to the client. Errors: UNAVAILABLE (the file cannot be read or is
// empty).
func (s *vaultStore) refreshToken() error {
	if s.tokenFile == "" {
		return nil
	}
	data, err := os.ReadFile(s.tokenFile)
	if err != nil {
		return api.Errorf(api.CodeUnavailable, "vault token file: %v", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return api.Errorf(api.CodeUnavailable, "vault token file %s is empty", s.tokenFile)
	}
	s.setToken(token)
	return nil
}

func (s *vaultStore) setToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != s.token {
		s.token = token
		s.client.SetToken(token)
	}
}

// vaultError maps a failed KV v2 read of where (<mount>/<path>) to a code.
// Vault's own error texts and bodies are not quoted.
func vaultError(where string, err error) error {
	var re *vault.ResponseError
	switch {
	case errors.Is(err, vault.ErrSecretNotFound):
		return vaultNotFound(where, "vault secret %s not found", where)
	case errors.As(err, &re):
		switch s := re.StatusCode; {
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			return api.Errorf(api.CodeAccessDenied, "vault denied reading %s (status %d): check the token's policy", where, s)
		case s == http.StatusNotFound:
			return vaultNotFound(where, "vault secret %s not found", where)
		case s == http.StatusTooManyRequests || s >= 500:
			return api.Errorf(api.CodeUnavailable, "vault answered status %d reading %s (sealed, standby or overloaded?)", s, where)
		default:
			return api.Errorf(api.CodeInternal, "vault answered status %d reading %s", s, where)
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return api.Errorf(api.CodeUnavailable, "vault did not answer reading %s before the deadline", where)
	}
	var ne interface{ Timeout() bool } // net.Error and *url.Error: transport failures
	if errors.As(err, &ne) {
		return api.Errorf(api.CodeUnavailable, "vault cannot be reached reading %s: %v", where, err)
	}
	return api.Errorf(api.CodeInternal, "unexpected answer from vault reading %s", where)
}

// vaultNotFound is NOT_FOUND naming id (details.id) with a formatted message.
func vaultNotFound(id, format string, args ...any) *api.ComputeError {
	ce := api.Errorf(api.CodeNotFound, format, args...)
	ce.Details.ID = id
	return ce
}
