package proxmox

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

func TestAPIErrorsMapped(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_err")
	cases := []struct {
		name   string
		fault  emulator.RouteFault
		status int
		code   string
		msg    string
	}{
		{"403", emulator.RouteFault{Route: emulator.RouteConfigGet, Status: 403, Message: "Permission check failed (/vms/1, VM.Audit)"},
			403, string(kindForbidden), "Permission check failed (/vms/1, VM.Audit)"},
		{"595", emulator.RouteFault{Route: emulator.RouteConfigGet, Status: 595, Message: "No route to host"},
			595, string(kindNodeOffline), "No route to host"},
		{"500 legacy", emulator.RouteFault{Route: emulator.RouteStatusCurrent, Status: 500, Message: "got unexpected control message", Style: emulator.StyleLegacy},
			500, string(kindAPI), "got unexpected control message"},
		{"500 modern", emulator.RouteFault{Route: emulator.RouteStatusCurrent, Status: 500, Message: "got unexpected control message", Style: emulator.StyleModern},
			500, string(kindAPI), "got unexpected control message"},
	}
	for _, c := range cases {
		e.emu.InjectRouteFault(c.fault)
		_, err := e.client.Get(context.Background(), e.call(""), m.ID)
		if ce := providertest.WantProviderError(t, err, c.status, c.code); !strings.Contains(ce.Message, c.msg) {
			t.Errorf("%s: message %q does not carry %q", c.name, ce.Message, c.msg)
		}
	}
	// A legacy 500 on a Telmate POST: the reason phrase is the message.
	e.emu.SetLegacyErrors(true)
	e.emu.InjectRouteFault(emulator.RouteFault{Route: emulator.RouteStop, Status: 500, Message: "VM is locked (backup)"})
	err := e.client.Power(context.Background(), e.call(""), m.ID, api.ActionOff)
	if ce := providertest.WantProviderError(t, err, 500, string(kindLocked)); !strings.Contains(ce.Message, "VM is locked (backup)") {
		t.Errorf("legacy POST error: %q", ce.Message)
	}
	// PVE before 8.3 says a VM is missing only in the reason phrase too:
	// the config read on the node the VM was seen on is recognised as
	// missing, and the cluster list confirms it.
	if err := e.emu.DeleteVM(mustAtoi(t, m.ID)); err != nil {
		t.Fatal(err)
	}
	e.emu.ResetCalls()
	if got := e.mustGet(t, m.ID); got != nil || e.emu.Calls(emulator.RouteConfigGet) != 1 || e.emu.Calls(emulator.RouteClusterResources) != 1 {
		t.Fatalf("get of a removed VM = %+v after %v", got, e.emu.CallCounts())
	}
	providertest.WantCode(t, e.client.Delete(context.Background(), e.call(""), m.ID), api.CodeNotFound)
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t, func(su *setup) { su.emu.Tokens = map[string]string{emulator.DefaultTokenID: "another-secret"} })
	e.emu.ResetCalls()
	_, err := e.client.Create(context.Background(), e.call("inst_401"), spec("inst_401"))
	ce := providertest.WantProviderError(t, err, http.StatusUnauthorized, string(kindUnauthorized))
	if strings.Contains(ce.Message, emulator.DefaultTokenSecret) || e.calls() != 1 {
		t.Fatalf("401: %q after %d requests", ce.Message, e.calls())
	}
}

func TestCAPinning(t *testing.T) {
	e := newEnv(t)
	if _, err := e.client.ListOffers(context.Background(), e.call(""), api.OfferQuery{}); err != nil {
		t.Fatalf("with the cluster's CA pinned: %v", err)
	}
	other := newEnv(t) // another emulator, another CA
	for name, ca := range map[string]any{"no CA (system roots)": nil, "another CA": string(other.srv.CACertPEM())} {
		acct := e.acct
		acct.Config = map[string]any{}
		for k, v := range e.acct.Config {
			acct.Config[k] = v
		}
		if ca == nil {
			delete(acct.Config, FieldCACert)
		} else {
			acct.Config[FieldCACert] = ca
		}
		c, err := Definition().New(provider.BuildContext{Account: acct})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListOffers(context.Background(), e.call(""), api.OfferQuery{})
		if ce := providertest.WantProviderError(t, err, 0, codeUnreachable); !strings.Contains(ce.Message, "certificate") {
			t.Errorf("%s: %q does not name the certificate", name, ce.Message)
		}
	}
}

func TestSecretNeverLogged(t *testing.T) {
	e := newEnv(t, withDurations)
	ctx := context.Background()
	m := e.create(t, "inst_secret")
	e.mustGet(t, m.ID)
	_ = e.client.Power(ctx, e.call(""), m.ID, api.ActionReset)
	_, _, _ = e.client.List(ctx, e.call(""), "", 10)
	if err := e.client.Delete(ctx, e.call(""), m.ID); err != nil {
		t.Fatal(err)
	}
	e.emu.InjectRouteFault(emulator.RouteFault{Route: "*", Status: 401, Message: "invalid token value!"})
	_, err := e.client.Create(ctx, e.call("inst_secret2"), spec("inst_secret2"))
	providertest.WantCode(t, err, api.CodeProviderError)
	log := e.log.String()
	if strings.Contains(log, emulator.DefaultTokenSecret) || strings.Contains(err.Error(), emulator.DefaultTokenSecret) {
		t.Fatal("the token secret appears in the log or an error")
	}
	if strings.Count(log, `"message":"proxmox call"`) != 6 || !strings.Contains(log, `"http_calls"`) { // provider.Serve adds the tenant and account
		t.Fatalf("want one log line per call with its request count:\n%s", log)
	}
}

func TestPanicOnOddReplyRecovered(t *testing.T) {
	// Telmate type-asserts an error reply's "errors" to an object: a reply
	// where it is a string panics inside the client.
	odd := &rewriter{match: func(r *http.Request) bool { return r.Method == http.MethodPost },
		status: 500, body: `{"data":null,"errors":"not an object","message":"boom"}`}
	e := newEnv(t, func(su *setup) {
		su.config[FieldCACert] = nil
		su.options = append(su.options, WithHTTPClient(&http.Client{Transport: odd}))
	})
	odd.base = pinnedTransport(t, e.srv)
	_, err := e.client.Create(context.Background(), e.call("inst_odd"), spec("inst_odd"))
	providertest.WantCode(t, err, api.CodeProviderError)
	if !strings.Contains(e.log.String(), "proxmox call panicked") {
		t.Fatal("the panic was not logged")
	}
}

// rewriter answers matching requests with status and body itself after
// sending them on (so their effect happens).
type rewriter struct {
	base   http.RoundTripper
	match  func(*http.Request) bool
	status int
	body   string
}

func (r *rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || !r.match(req) {
		return resp, err
	}
	_ = resp.Body.Close()
	return &http.Response{StatusCode: r.status, Status: http.StatusText(r.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader([]byte(r.body))), Request: req}, nil
}
