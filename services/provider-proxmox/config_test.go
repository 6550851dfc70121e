package proxmox

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
)

// validConfig is a complete account config (no CA pinned).
func validConfig() map[string]any {
	return map[string]any{
		FieldURL: "https://pve1.example.net:8006/api2/json", FieldTokenID: "svc@pve!compute", FieldTokenSecret: testSecretRef,
		FieldSizes: []any{map[string]any{"name": "small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 20}},
	}
}

func TestDefinition(t *testing.T) {
	d := Definition()
	desc := d.Describe()
	if desc.ID != ProviderID || desc.Version != Version || strings.Join(desc.Provides, ",") != api.KindVPS ||
		strings.Join(desc.Capabilities, ",") != "power,reinstall,list,delete.byKey,ssh,labels,resize,metrics,network.vlan,network.staticIPv4,placement.nodes" || len(desc.ConfigSchema) == 0 {
		t.Fatalf("description = %+v", desc)
	}
	cfg, err := provider.ValidateConfig(d.Manifest(), validConfig())
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]any{FieldVMIDMin: int64(DefaultVMIDMin), FieldVMIDMax: int64(DefaultVMIDMax), FieldStorage: DefaultStorage, FieldBridge: DefaultBridge}
	for k, want := range defaults {
		if cfg[k] != want {
			t.Errorf("default %s = %v, want %v", k, cfg[k], want)
		}
	}
	c, err := d.New(provider.BuildContext{Account: api.ProviderAccount{ID: "pacct_x", TenantID: testTenant, Config: validConfig()}})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if cl := c.(*client); cl.cfg.region() != DefaultRegion || cl.cfg.VMIDMin != DefaultVMIDMin || cl.tokenID.TokenName != "compute" {
		t.Fatalf("client config = %+v", cl.cfg)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		path   string
		code   api.Code
		change func(c map[string]any)
	}{
		{"config.url", api.CodeInvalidConfig, func(c map[string]any) { delete(c, FieldURL) }},
		{"config.url", api.CodeInvalidConfig, func(c map[string]any) { c[FieldURL] = "https://pve1:8006/api2/extjs" }},
		{"config.url", api.CodeInvalidConfig, func(c map[string]any) { c[FieldURL] = "pve1:8006/api2/json" }},
		{"config.url", api.CodeInvalidConfig, func(c map[string]any) { c[FieldURL] = "https://root:pw@pve1:8006/api2/json" }},
		{"config.url", api.CodeInvalidConfig, func(c map[string]any) { c[FieldURL] = "http://pve1:8006/api2/json" }},
		{"config.tokenId", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTokenID] = "svc@pve" }},
		{"config.tokenId", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTokenID] = "svc@pve!a=b" }},
		{"config.tokenSecret", api.CodeInvalidConfig, func(c map[string]any) { delete(c, FieldTokenSecret) }},
		{"config.tokenSecret", api.CodeInvalidInput, func(c map[string]any) { c[FieldTokenSecret] = "00000000-1111" }},
		{"config.caCert", api.CodeInvalidConfig, func(c map[string]any) { c[FieldCACert] = "not a certificate" }},
		{"config.caCert", api.CodeInvalidConfig, func(c map[string]any) {
			c[FieldCACert] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
		}},
		{"config.node", api.CodeInvalidConfig, func(c map[string]any) { c[FieldNode] = "pve_1" }},
		{"config.vmidMin", api.CodeInvalidConfig, func(c map[string]any) { c[FieldVMIDMin] = 99 }},
		{"config.vmidMin", api.CodeInvalidConfig, func(c map[string]any) { c[FieldVMIDMin], c[FieldVMIDMax] = 20000, 10000 }},
		{"config.vmidMax", api.CodeInvalidConfig, func(c map[string]any) { c[FieldVMIDMax] = 1000000000 }},
		{"config.sizes", api.CodeInvalidConfig, func(c map[string]any) { c[FieldSizes] = []any{} }},
		{"config.sizes[1].vcpu", api.CodeInvalidConfig, func(c map[string]any) {
			c[FieldSizes] = append(c[FieldSizes].([]any), map[string]any{"name": "big", "vcpu": 0, "memoryGiB": 4, "diskGiB": 20})
		}},
		{"config.sizes[1].name", api.CodeInvalidConfig, func(c map[string]any) {
			c[FieldSizes] = append(c[FieldSizes].([]any), map[string]any{"name": "small", "vcpu": 4, "memoryGiB": 4, "diskGiB": 20})
		}},
		{"config.sizes[0].diskGiB", api.CodeInvalidConfig, func(c map[string]any) {
			c[FieldSizes] = []any{map[string]any{"name": "small", "vcpu": 4, "memoryGiB": 4}}
		}},
		{"config.sizes[0].name", api.CodeInvalidConfig, func(c map[string]any) {
			c[FieldSizes] = []any{map[string]any{"name": "a b", "vcpu": 4, "memoryGiB": 4, "diskGiB": 1}}
		}},
		{"config.storage", api.CodeInvalidConfig, func(c map[string]any) { c[FieldStorage] = "local lvm" }},
		{"config.bridge", api.CodeInvalidConfig, func(c map[string]any) { c[FieldBridge] = "vmbr0,firewall=1" }},
		{"config.colour", api.CodeInvalidConfig, func(c map[string]any) { c["colour"] = "blue" }},
		{"config.taskPollMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskPollMs] = 99 }},
		{"config.taskPollMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskPollMs] = 60001 }},
		{"config.taskPollMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskPollMs] = "1000" }},
		{"config.taskPollMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskPollMs] = 1500.5 }},
		{"config.taskPollMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskPollMs], c[FieldTaskTimeoutMs] = 5000, 2000 }},
		{"config.taskTimeoutMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskTimeoutMs] = 999 }},
		{"config.taskTimeoutMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskTimeoutMs] = 86400001 }},
		{"config.taskTimeoutMs", api.CodeInvalidConfig, func(c map[string]any) { c[FieldTaskTimeoutMs] = -1 }},
	}
	for _, tc := range cases {
		cfg := validConfig()
		tc.change(cfg)
		_, err := Definition().New(provider.BuildContext{Account: api.ProviderAccount{ID: "pacct_x", TenantID: testTenant, Config: cfg}})
		ce := providertest.WantCode(t, err, tc.code)
		if ce.Path() != tc.path {
			t.Errorf("%s: path %q (%s)", tc.path, ce.Path(), ce.Message)
		}
		if strings.Contains(ce.Message, "00000000-1111") {
			t.Errorf("%s: the message quotes the plain secret: %s", tc.path, ce.Message)
		}
	}
}

// TestTaskTiming: an account's taskPollMs and taskTimeoutMs override the
// provider's options, which are the defaults (1 s and 10 min unless set);
// a poll interval above the effective timeout is refused naming the
// account field that made it so.
func TestTaskTiming(t *testing.T) {
	cases := []struct {
		name          string
		opts          []Option
		config        map[string]any
		poll, timeout time.Duration
		errPath       string
	}{
		{name: "defaults", poll: time.Second, timeout: 10 * time.Minute},
		{name: "options", opts: []Option{WithTaskPollInterval(2 * time.Second), WithTaskTimeout(time.Minute)}, poll: 2 * time.Second, timeout: time.Minute},
		{name: "config over options", opts: []Option{WithTaskPollInterval(2 * time.Second)},
			config: map[string]any{FieldTaskPollMs: 250, FieldTaskTimeoutMs: 1000}, poll: 250 * time.Millisecond, timeout: time.Second},
		{name: "bounds", config: map[string]any{FieldTaskPollMs: 100, FieldTaskTimeoutMs: 86400000}, poll: 100 * time.Millisecond, timeout: 24 * time.Hour},
		{name: "poll equals timeout", config: map[string]any{FieldTaskPollMs: 60000, FieldTaskTimeoutMs: 60000}, poll: time.Minute, timeout: time.Minute},
		{name: "config timeout below the option's poll", opts: []Option{WithTaskPollInterval(5 * time.Second)},
			config: map[string]any{FieldTaskTimeoutMs: 2000}, errPath: "config.taskTimeoutMs"},
	}
	for _, tc := range cases {
		cfg := validConfig()
		for k, v := range tc.config {
			cfg[k] = v
		}
		c, err := Definition(tc.opts...).New(provider.BuildContext{Account: api.ProviderAccount{ID: "pacct_x", TenantID: testTenant, Config: cfg}})
		if tc.errPath != "" {
			if ce := providertest.WantCode(t, err, api.CodeInvalidConfig); ce.Path() != tc.errPath {
				t.Errorf("%s: path %q (%s), want %s", tc.name, ce.Path(), ce.Message, tc.errPath)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := c.(*client).timing; got.poll != tc.poll || got.timeout != tc.timeout {
			t.Errorf("%s: timing %+v, want poll %s timeout %s", tc.name, got, tc.poll, tc.timeout)
		}
	}
}

func TestOptionsValidated(t *testing.T) {
	cases := map[string]Option{
		"options.taskPollInterval": WithTaskPollInterval(0),
		"options.taskTimeout":      WithTaskTimeout(-1),
	}
	for path, opt := range cases {
		_, err := Definition(opt).New(provider.BuildContext{Account: api.ProviderAccount{ID: "pacct_x", TenantID: testTenant, Config: validConfig()}})
		if ce := providertest.WantCode(t, err, api.CodeInvalidConfig); ce.Path() != path {
			t.Errorf("%s: build error %v", path, err)
		}
	}
	// A CA cannot be pinned into a transport that is not an *http.Transport.
	cfg := validConfig()
	cfg[FieldCACert] = string(newEnv(t).srv.CACertPEM())
	_, err := Definition(WithHTTPClient(&http.Client{Transport: &providertest.Barrier{}})).New(provider.BuildContext{Account: api.ProviderAccount{ID: "pacct_x", TenantID: testTenant, Config: cfg}})
	if ce := providertest.WantCode(t, err, api.CodeInvalidConfig); ce.Path() != "config.caCert" {
		t.Errorf("unpinnable transport: %v", err)
	}
}
