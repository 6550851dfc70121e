package hetzner

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
)

func TestMachineStateTable(t *testing.T) {
	cases := map[hcloud.ServerStatus]api.MachineState{
		"initializing": api.StatePending,
		"starting":     api.StatePending,
		"running":      api.StateRunning,
		"stopping":     api.StateRunning,
		"off":          api.StateStopped,
		"deleting":     api.StateDeleting,
		"rebuilding":   api.StatePending,
		"migrating":    api.StateRunning,
		"unknown":      api.StateUnknown,
		"melting":      api.StateUnknown, // a status the API may add later
		"":             api.StateUnknown,
	}
	for status, want := range cases {
		if got := machineState(status); got != want {
			t.Errorf("machineState(%q) = %q, want %q", status, got, want)
		}
	}
	if len(serverStates) != 9 {
		t.Errorf("serverStates has %d statuses, want the API's 9", len(serverStates))
	}
}

func TestPowerEndpointsTable(t *testing.T) {
	providertest.WantPowerTable(t, powerEndpoints, map[api.PowerAction]string{
		api.ActionOn: "poweron", api.ActionOff: "poweroff", api.ActionGracefulOff: "shutdown",
		api.ActionReset: "reset", api.ActionCycle: "reset", api.ActionGracefulRestart: "reboot",
	})
	for action, endpoint := range powerEndpoints {
		if endpointCalls[endpoint] == nil {
			t.Errorf("endpoint %q of %q has no hcloud call", endpoint, action)
		}
	}
}

// TestServerName: server names are provider.HostnameLabel (tested there)
// with the fallback "server".
func TestServerName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"inst_01JDXYZ", "inst-01jdxyz"},
		{"___", "server"},
		{"", "server"},
	}
	for _, c := range cases {
		if got := ServerName(c.in); got != c.want {
			t.Errorf("ServerName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKeyLabelValue(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?$`)
	long := strings.Repeat("k", 64)
	cases := []struct {
		key    string
		hashed bool
	}{
		{"inst_01jdxyz", false},
		{"op-1.2_x", false},
		{strings.Repeat("k", 63), false},
		{long, true},
		{"has space", true},
		{"_leading", true},
		{"trailing-", true},
		{"sha256-deadbeef", true}, // reserved for hashed values
		{"", true},
	}
	for _, c := range cases {
		got := KeyLabelValue(c.key)
		if !valid.MatchString(got) {
			t.Errorf("KeyLabelValue(%q) = %q is not a label value", c.key, got)
		}
		if c.hashed != (got != c.key) {
			t.Errorf("KeyLabelValue(%q) = %q, hashed = %v, want %v", c.key, got, got != c.key, c.hashed)
		}
		if c.hashed && (len(got) != 63 || !strings.HasPrefix(got, hashedKeyPrefix)) {
			t.Errorf("hashed value %q must be 63 characters starting with %s", got, hashedKeyPrefix)
		}
	}
	if KeyLabelValue(long) == KeyLabelValue(long+"x") {
		t.Error("distinct long keys share a label value")
	}
}

func TestMapFailure(t *testing.T) {
	now := testStart
	cases := []struct {
		name       string
		f          apiFailure
		serverID   string
		code       api.Code
		status     int
		apiCode    string
		retryAfter time.Duration
		// permanent: details.permanent, the request can never pass.
		permanent bool
	}{
		{"rate limited", apiFailure{status: 429, code: "rate_limit_exceeded", reset: now.Add(30 * time.Second)}, "", api.CodeRateLimited, 0, "", 30 * time.Second, false},
		{"rate limited, no reset", apiFailure{status: 429, code: "rate_limit_exceeded"}, "", api.CodeRateLimited, 0, "", time.Second, false},
		{"rate limited, reset passed", apiFailure{status: 429, reset: now.Add(-time.Minute)}, "7", api.CodeRateLimited, 0, "", 0, false},
		{"rate limit code, odd status", apiFailure{status: 403, code: "rate_limit_exceeded"}, "", api.CodeRateLimited, 0, "", time.Second, false},
		{"server absent", apiFailure{status: 404, code: "not_found"}, "7", api.CodeNotFound, 0, "", 0, false},
		{"404 not about a server", apiFailure{status: 404, code: "not_found"}, "", api.CodeProviderError, 404, "not_found", 0, false},
		{"uniqueness", apiFailure{status: 409, code: "uniqueness_error"}, "", api.CodeProviderError, 409, "uniqueness_error", 0, true},
		{"conflict", apiFailure{status: 409, code: "conflict"}, "", api.CodeProviderError, 409, "conflict", 0, false},
		{"unauthorized", apiFailure{status: 401, code: "unauthorized"}, "7", api.CodeProviderError, 401, "unauthorized", 0, false},
		{"gone", apiFailure{status: 410, code: "deprecated_api_endpoint"}, "", api.CodeProviderError, 410, "deprecated_api_endpoint", 0, false},
		{"unavailable type", apiFailure{status: 412, code: "resource_unavailable"}, "", api.CodeProviderError, 412, "resource_unavailable", 0, false},
		{"malformed body", apiFailure{status: 400, code: "json_error"}, "", api.CodeProviderError, 400, "json_error", 0, true},
		{"unsupported for the type", apiFailure{status: 422, code: "unsupported_error"}, "", api.CodeProviderError, 422, "unsupported_error", 0, true},
		{"quota", apiFailure{status: 403, code: "resource_limit_exceeded"}, "", api.CodeProviderError, 403, "resource_limit_exceeded", QuotaRetryAfter, false},
		{"invalid input", apiFailure{status: 422, code: "invalid_input"}, "", api.CodeProviderError, 422, "invalid_input", 0, true},
		{"service error", apiFailure{status: 422, code: "service_error"}, "", api.CodeProviderError, 422, "service_error", 0, false},
		{"locked", apiFailure{status: 423, code: "locked"}, "7", api.CodeProviderError, 423, "locked", 0, false},
		{"server error", apiFailure{status: 500, code: "server_error"}, "", api.CodeProviderError, 500, "server_error", 0, false},
		{"bare 502", apiFailure{status: 502}, "", api.CodeProviderError, 502, "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce := mapFailure(c.f, c.serverID, now)
			if ce.Code != c.code {
				t.Fatalf("code = %s, want %s (%v)", ce.Code, c.code, ce)
			}
			switch c.code {
			case api.CodeRateLimited:
				if ce.RetryAfter() != c.retryAfter {
					t.Errorf("retryAfter = %v, want %v", ce.RetryAfter(), c.retryAfter)
				}
			case api.CodeProviderError:
				if status, code := ce.APIStatus(); ce.Details.Status == nil || ce.Details.Code == nil || status != c.status || code != c.apiCode {
					t.Errorf("details = %v, want status %d code %q", ce.Details, c.status, c.apiCode)
				}
				if ce.Permanent() != c.permanent {
					t.Errorf("permanent = %v, want %v (details %v)", ce.Permanent(), c.permanent, ce.Details)
				}
				if ce.RetryAfter() != c.retryAfter {
					t.Errorf("retryAfter = %v, want %v (details %v)", ce.RetryAfter(), c.retryAfter, ce.Details)
				}
			case api.CodeNotFound:
				if ce.Details.ID != c.serverID {
					t.Errorf("details = %v, want id %s", ce.Details, c.serverID)
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	rec := &recorder{}
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	known := api.Errorf(api.CodeUnsupported, "no")
	if got := classify(live, known, rec, "", testStart); got != known {
		t.Errorf("a ComputeError must pass through, got %v", got)
	}
	if classify(live, nil, rec, "", testStart) != nil {
		t.Error("nil must stay nil")
	}
	providertest.WantProviderError(t, classify(live, errors.New("dial tcp: connection refused"), rec, "", testStart), 0, codeUnreachable)
	providertest.WantCode(t, classify(ended, context.Canceled, rec, "", testStart), api.CodeUnavailable)
	rec.status = 503
	providertest.WantProviderError(t, classify(live, hcloud.ErrStatusCode, rec, "", testStart), 503, "")
}

func TestToMachine(t *testing.T) {
	_, v6, _ := net.ParseCIDR("2001:db8:0:3::/64")
	srv := &hcloud.Server{
		ID: 42, Name: "web-1", Status: hcloud.ServerStatusRunning,
		ServerType: &hcloud.ServerType{Name: "cx23"}, Location: &hcloud.Location{Name: "nbg1"},
		PublicNet: hcloud.ServerPublicNet{
			IPv4: hcloud.ServerPublicNetIPv4{IP: net.ParseIP("203.0.113.7")},
			IPv6: hcloud.ServerPublicNetIPv6{IP: v6.IP, Network: v6},
		},
	}
	c := &client{labels: newLabels("better-compute.io")}
	m := c.toMachine(srv, "")
	want := api.ExternalMachine{ID: "42", Name: "web-1", State: api.StateRunning, OfferID: "cx23", Region: "nbg1",
		Addresses: []string{"203.0.113.7", "2001:db8:0:3::1"}}
	if m.ID != want.ID || m.Name != want.Name || m.State != want.State || m.OfferID != want.OfferID ||
		m.Region != want.Region || strings.Join(m.Addresses, ",") != strings.Join(want.Addresses, ",") {
		t.Errorf("toMachine = %+v, want %+v", *m, want)
	}
	bare := c.toMachine(&hcloud.Server{ID: 1, Status: "off"}, "")
	if bare.Addresses == nil || len(bare.Addresses) != 0 || bare.State != api.StateStopped || bare.IdempotencyKey != "" {
		t.Errorf("bare server = %+v, want stopped with an empty, non-nil address list and no key", *bare)
	}
}

// The key a server reports: the caller's key when the server carries it
// (also when the label holds its hash), else the label value, which never
// equals another key.
func TestReportedKey(t *testing.T) {
	l := newLabels("better-compute.io")
	hashed := "key with spaces" // not a label value: stored hashed
	cases := []struct {
		labels   map[string]string
		key      string
		want     string
		sameKey  bool
		describe string
	}{
		{l.forKey("web-1"), "web-1", "web-1", true, "plain key, expected"},
		{l.forKey("web-1"), "", "web-1", false, "plain key, no expectation"},
		{l.forKey(hashed), hashed, hashed, true, "hashed key, expected"},
		{l.forKey(hashed), "", KeyLabelValue(hashed), false, "hashed key, no expectation"},
		{l.forKey(hashed), "another key", KeyLabelValue(hashed), false, "another hashed key"},
		{l.forKey("inst_01k"), "inst_01k", "inst_01k", true, "an instance id is a label value as it is"},
		{l.forKey("web-1"), "web-2", "web-1", false, "another plain key"},
		{map[string]string{}, "web-1", "", false, "unmanaged server"},
	}
	for _, c := range cases {
		got := l.reportedKey(c.labels, c.key)
		if got != c.want || (got == c.key) != c.sameKey {
			t.Errorf("%s: reportedKey = %q, want %q", c.describe, got, c.want)
		}
	}
}

func TestParseServerID(t *testing.T) {
	for _, bad := range []string{"", "abc", "0", "-3", "1.5", "99999999999999999999"} {
		if _, err := parseServerID(bad); api.AsComputeError(err).Path() != "id" {
			t.Errorf("parseServerID(%q) = %v, want INVALID_INPUT at id", bad, err)
		}
	}
	if id, err := parseServerID("123"); err != nil || id != 123 {
		t.Errorf("parseServerID(123) = %d, %v", id, err)
	}
}
