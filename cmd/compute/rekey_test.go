package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/services/secrets"
)

// The key rotation of docs/operations.md through the CLI: a new key line
// becomes current, `compute secrets rekey` re-seals, the old line goes, and
// after a restart the secret still resolves.
func TestSecretsRekey(t *testing.T) {
	const value = "rekey-cli-value-6e1f"
	dir := t.TempDir()
	logs := &bustest.LogBuffer{}
	var cur *stack
	stop := func() {
		if cur != nil {
			cur.Close()
			cur = nil
		}
	}
	t.Cleanup(stop)
	start := func() *cli {
		t.Helper()
		var err error
		cur, err = startStack(upOptions{dataDir: dir, natsHost: "127.0.0.1", hetznerAddr: "127.0.0.1:0",
			services: serviceConfig{log: zerolog.New(logs), resyncInterval: -1}})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return &cli{t: t, url: cur.nats.ClientURL(), creds: cur.tenantCreds(t, "acme")}
	}
	keyFile := filepath.Join(dir, "seal.key")
	writeKeys := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(keyFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	c := start()
	var secret api.Secret
	c.must(&secret, value+"\n", "secrets", "put", "tok")
	stop()
	data, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var oldLine string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			oldLine = l
		}
	}
	oldID, _, _ := strings.Cut(oldLine, ":")
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	newLine := "k2:" + base64.StdEncoding.EncodeToString(fresh)
	writeKeys(oldLine, newLine) // the new key is the last line: current

	c = start()
	var report secrets.RekeyReply
	c.creds = cur.adminCreds(dir) // rekey is the operator's
	c.must(&report, "", "secrets", "rekey", "--batch", "1")
	if report.KeyID != "k2" || report.Resealed != 1 || report.Remaining != 0 || !slices.Equal(report.Retired, []string{oldID}) {
		t.Fatalf("rekey report: %+v; want 1 resealed with k2 and %s retired", report, oldID)
	}
	stop()

	writeKeys(newLine) // the old key is gone
	start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out api.SecretResolveReply
	if err := bus.Call(ctx, cur.nc, bus.SecretsResolve, api.SecretResolveRequest{TenantID: "acme", Ref: secret.Ref}, &out); err != nil || out.Value != value {
		t.Fatalf("resolve after dropping the old key: err %v, value matches %v", err, out.Value == value)
	}
}
