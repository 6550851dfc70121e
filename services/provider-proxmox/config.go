package proxmox

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	pve "github.com/Telmate/proxmox-api-go/proxmox"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
)

// sizeConfig is one size an account offers: its offer id, CPU cores,
// memory and boot disk in GiB.
type sizeConfig struct {
	Name      string `json:"name"`
	Vcpu      int    `json:"vcpu"`
	MemoryGiB int    `json:"memoryGiB"`
	DiskGiB   int    `json:"diskGiB"`
}

// accountConfig is a decoded account config (the token secret stays a
// reference and is not decoded).
type accountConfig struct {
	URL     string       `json:"url"`
	TokenID string       `json:"tokenId"`
	CACert  string       `json:"caCert"`
	Node    string       `json:"node"`
	VMIDMin int          `json:"vmidMin"`
	VMIDMax int          `json:"vmidMax"`
	Sizes   []sizeConfig `json:"sizes"`
	Storage string       `json:"storage"`
	Bridge  string       `json:"bridge"`
	// TaskPollMs and TaskTimeoutMs are 0 when absent (the manifest's
	// minimums are above 0).
	TaskPollMs    int `json:"taskPollMs"`
	TaskTimeoutMs int `json:"taskTimeoutMs"`
}

// apiPath is how every API base URL ends.
const apiPath = "/api2/json"

var (
	// dnsNamePattern is PVE's dns-name format (node and VM names).
	dnsNamePattern = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$`)
	// storagePattern is PVE's pve-storage-id format.
	storagePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9._-]*[a-zA-Z0-9]$`)
	// bridgePattern is a Linux interface name (at most 15 characters).
	bridgePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$`)
	// sizeNamePattern is an offer id.
	sizeNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)
	// tokenIDPattern is the character set of a token id: it travels in
	// "Authorization: PVEAPIToken=<id>=<secret>", so no '=' or white space.
	tokenIDPattern = regexp.MustCompile(`^[^=\s]+$`)
)

// parseConfig validates an account config against the Manifest (filling
// defaults) and then checks what the manifest cannot express. Errors:
// INVALID_CONFIG naming the field (config.<field>), INVALID_INPUT for a
// plain value in tokenSecret.
func parseConfig(raw map[string]any) (*accountConfig, pve.ApiTokenID, error) {
	var id pve.ApiTokenID
	validated, err := provider.ValidateConfig(Manifest(), raw)
	if err != nil {
		return nil, id, err
	}
	var c accountConfig
	if err := provider.DecodeConfig(validated, &c); err != nil {
		return nil, id, err
	}
	if err := c.validate(); err != nil {
		return nil, id, err
	}
	if err := id.Parse(c.TokenID); err != nil || !tokenIDPattern.MatchString(c.TokenID) {
		return nil, id, api.InvalidConfig("config."+FieldTokenID, "tokenId must be an API token id user@realm!name")
	}
	return &c, id, nil
}

// validate checks the fields one by one, in manifest order.
func (c *accountConfig) validate() error {
	if err := validateURL(c.URL); err != nil {
		return err
	}
	if c.CACert != "" {
		if _, err := certPool(c.CACert); err != nil {
			return err
		}
	}
	switch {
	case c.Node != "" && !dnsNamePattern.MatchString(c.Node):
		return api.InvalidConfig("config."+FieldNode, "node must be a node name (a DNS name)")
	case c.VMIDMin > c.VMIDMax:
		return api.InvalidConfig("config."+FieldVMIDMin, "vmidMin (%d) must not be above vmidMax (%d)", c.VMIDMin, c.VMIDMax)
	case len(c.Sizes) == 0:
		return api.InvalidConfig("config."+FieldSizes, "sizes must list at least one size")
	case !storagePattern.MatchString(c.Storage):
		return api.InvalidConfig("config."+FieldStorage, "storage must be a storage id such as %s", DefaultStorage)
	case !bridgePattern.MatchString(c.Bridge):
		return api.InvalidConfig("config."+FieldBridge, "bridge must be an interface name such as %s", DefaultBridge)
	}
	return validateSizes(c.Sizes)
}

// validateURL accepts an absolute https URL without credentials, query or
// fragment whose path ends in /api2/json. Plain http is refused: the API
// token travels in a header of every request.
func validateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || !strings.HasSuffix(u.Path, apiPath) {
		return api.InvalidConfig("config."+FieldURL, "url must be the API base URL, e.g. https://pve1.example.net:8006%s", apiPath)
	}
	return nil
}

// certPool parses the caCert PEM: every block must be a certificate, and
// there must be at least one.
func certPool(pemText string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	rest := []byte(pemText)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if block.Type != "CERTIFICATE" || err != nil {
			return nil, api.InvalidConfig("config."+FieldCACert, "caCert block %d is not a certificate", n+1)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		return nil, api.InvalidConfig("config."+FieldCACert, "caCert must be PEM certificates (-----BEGIN CERTIFICATE-----)")
	}
	return pool, nil
}

// validateSizes checks the size names: offer ids, each listed once (the
// manifest has checked the numbers' ranges).
func validateSizes(sizes []sizeConfig) error {
	seen := map[string]bool{}
	for i, sz := range sizes {
		p := fmt.Sprintf("config.%s[%d].", FieldSizes, i)
		switch {
		case !sizeNamePattern.MatchString(sz.Name):
			return api.InvalidConfig(p+"name", "a size name is 1 to 63 letters, digits, '.', '_' or '-'")
		case seen[sz.Name]:
			return api.InvalidConfig(p+"name", "size %q is listed twice", sz.Name)
		}
		seen[sz.Name] = true
	}
	return nil
}

// timing is the account's task timing: its taskPollMs and taskTimeoutMs
// over def (the provider's options). Errors: INVALID_CONFIG naming
// config.taskPollMs (or config.taskTimeoutMs when only it is set) when the
// poll interval is above the timeout.
func (c *accountConfig) timing(def taskTiming) (taskTiming, error) {
	t := def
	if c.TaskPollMs != 0 {
		t.poll, t.adaptive = time.Duration(c.TaskPollMs)*time.Millisecond, false
	}
	if c.TaskTimeoutMs != 0 {
		t.timeout = time.Duration(c.TaskTimeoutMs) * time.Millisecond
	}
	if t.poll > t.timeout {
		field := FieldTaskPollMs
		if c.TaskPollMs == 0 {
			field = FieldTaskTimeoutMs
		}
		return t, api.InvalidConfig("config."+field, "the task poll interval (%s) must not be above the task timeout (%s)", t.poll, t.timeout)
	}
	return t, nil
}

// size returns the configured size called name.
func (c *accountConfig) size(name string) (sizeConfig, bool) {
	for _, sz := range c.Sizes {
		if sz.Name == name {
			return sz, true
		}
	}
	return sizeConfig{}, false
}

// region is the region of the account's offers and machines: the pinned
// node, else DefaultRegion.
func (c *accountConfig) region() string {
	if c.Node != "" {
		return c.Node
	}
	return DefaultRegion
}
