package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 11, item 10: two starts of the PVE emulator with one data
// directory serve certificates that the first start's CA verifies, so a
// restart of `compute up` leaves accounts that pinned data/proxmox-ca.pem
// working.
func TestProxmoxEmulatorKeepsItsCA(t *testing.T) {
	dir := t.TempDir()
	caFile, keyFile := filepath.Join(dir, proxmoxCAFile), filepath.Join(dir, proxmoxCAKeyFile)
	first, err := startProxmoxEmulator("127.0.0.1:0", caFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	second, err := startProxmoxEmulator("127.0.0.1:0", caFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Close() }()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pinned) {
		t.Fatalf("%s does not hold a PEM certificate", caFile)
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(second.BaseURL(), "https://"), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("the second start's certificate does not verify with the first start's CA: %v", err)
	}
	_ = conn.Close()
}
