package emulator

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handshake connects to s trusting only caPEM.
func handshake(t *testing.T, s *Server, caPEM []byte) error {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA does not parse")
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.BaseURL(), "https://"), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err == nil {
		_ = conn.Close()
	}
	return err
}

// A CA kept in files signs the certificate of every later start; a
// directory holding the certificate alone (no key kept) gets a new pair.
func TestCAKeptAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	opts := Options{CAFile: certFile, CAKeyFile: keyFile}
	first := startServer(t, opts)
	firstCA := first.CACertPEM()
	onDisk, err := os.ReadFile(certFile)
	noErr(t, err)
	equal(t, bytes.Equal(onDisk, firstCA), true, "the CA file holds the served CA")
	info, err := os.Stat(keyFile)
	noErr(t, err)
	equal(t, info.Mode().Perm(), os.FileMode(0o600), "key file mode")
	noErr(t, first.Close())

	second := startServer(t, opts)
	noErr(t, handshake(t, second, firstCA))
	equal(t, bytes.Equal(second.CACertPEM(), firstCA), true, "second start's CA")

	noErr(t, os.Remove(keyFile))
	third := startServer(t, opts)
	if handshake(t, third, firstCA) == nil {
		t.Fatal("without its key the old CA still signs")
	}
	noErr(t, handshake(t, third, third.CACertPEM()))
	onDisk, err = os.ReadFile(certFile)
	noErr(t, err)
	equal(t, bytes.Equal(onDisk, third.CACertPEM()), true, "the new CA is written")

	noErr(t, os.WriteFile(keyFile, []byte("not a key"), 0o600))
	if _, err := Start(opts); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Fatalf("a broken key file: %v, want an error naming it", err)
	}
}
