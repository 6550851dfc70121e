package emulator

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"time"
)

// ca is the certificate authority that signs the server's certificate.
type ca struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// certPEM is the CA certificate in PEM.
func (c ca) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

// serverCert is a certificate for 127.0.0.1, ::1 and localhost signed by
// the CA described by certFile and keyFile (see Options.CAFile), with the
// CA in its chain, and the CA certificate in PEM.
func serverCert(certFile, keyFile string) (tls.Certificate, []byte, error) {
	c, err := loadOrCreateCA(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := c.issue()
	return leaf, c.certPEM(), err
}

// loadOrCreateCA reads the CA from certFile and keyFile when both exist,
// else makes one and, when the names are set, writes it there. A pair
// that exists but does not parse, or whose key is not the certificate's,
// is an error naming the file: removing both makes a new CA.
func loadOrCreateCA(certFile, keyFile string) (ca, error) {
	if certFile == "" || keyFile == "" {
		return newCA()
	}
	certPEM, certErr := os.ReadFile(certFile)
	keyPEM, keyErr := os.ReadFile(keyFile)
	switch {
	case certErr == nil && keyErr == nil:
		return parseCA(certFile, certPEM, keyFile, keyPEM)
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return ca{}, certErr
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return ca{}, keyErr
	}
	// One or both are missing (a data directory from before the key was
	// kept has the certificate alone): a new CA replaces both.
	c, err := newCA()
	if err != nil {
		return ca{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return ca{}, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return ca{}, err
	}
	return c, os.WriteFile(certFile, c.certPEM(), 0o644)
}

// parseCA decodes a CA certificate and its PKCS #8 private key.
func parseCA(certFile string, certPEM []byte, keyFile string, keyPEM []byte) (ca, error) {
	certBlock, _ := pem.Decode(certPEM)
	if certBlock == nil || certBlock.Type != "CERTIFICATE" {
		return ca{}, fmt.Errorf("emulator CA %s: no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil || !cert.IsCA {
		return ca{}, fmt.Errorf("emulator CA %s: not a CA certificate (%v)", certFile, err) //nolint:errorlint // err may be nil
	}
	keyBlock, _ := pem.Decode(keyPEM)
	if keyBlock == nil || keyBlock.Type != "PRIVATE KEY" {
		return ca{}, fmt.Errorf("emulator CA key %s: no PEM private key", keyFile)
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	signer, ok := key.(crypto.Signer)
	if err != nil || !ok {
		return ca{}, fmt.Errorf("emulator CA key %s: not a private key (%v)", keyFile, err) //nolint:errorlint // err may be nil
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return ca{}, fmt.Errorf("emulator CA key %s is not the key of %s", keyFile, certFile)
	}
	return ca{cert: cert, key: signer}, nil
}

// serial is a random certificate serial number (128 bits).
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// newCA creates a self-signed ECDSA P-256 CA valid for 10 years.
func newCA() (ca, error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ca{}, err
	}
	sn, err := serial()
	if err != nil {
		return ca{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject: pkix.Name{
			CommonName:   "Proxmox Virtual Environment (emulator CA)",
			Organization: []string{"PVE Cluster Manager CA"},
		},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return ca{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return ca{cert: cert, key: key}, err
}

// issue makes a fresh key and a certificate for 127.0.0.1, ::1 and
// localhost signed by c (valid for 2 years), with c in its chain.
func (c ca) issue() (tls.Certificate, error) {
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	sn, err := serial()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"PVE Cluster Node"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(2 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: key}, nil
}
