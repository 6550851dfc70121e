package provider_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
	"better-compute.io/compute/pkg/provider"
)

var allCapabilities = []string{provider.CapabilityPower, provider.CapabilityReinstall, provider.CapabilityList}

func fullTiny(st *tinyState) provider.Client { return &fullClient{bareClient{st: st}} }
func bareTiny(st *tinyState) provider.Client { return &bareClient{st: st} }

func TestServeRemoteRoundTrip(t *testing.T) {
	env := bustest.Start(t)
	d, st := tinyProvider(t, "tiny", allCapabilities, fullTiny)
	serve(t, env.Connect(t), d)
	r := provider.Remote{NC: env.NC, ID: "tiny"}
	ctx, acct := testCtx(t), account("pacct_1", 1)

	desc, err := r.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if desc.ID != "tiny" || desc.Version != "0.1.0" || !reflect.DeepEqual(desc.Provides, []string{"vps"}) ||
		!reflect.DeepEqual(desc.Capabilities, allCapabilities) || !reflect.DeepEqual(desc.Manifest, tinyManifest) {
		t.Fatalf("describe = %+v", desc)
	}
	var gotSchema, wantSchema any
	_ = json.Unmarshal(desc.ConfigSchema, &gotSchema)
	_ = json.Unmarshal(provider.ConfigSchema(tinyManifest), &wantSchema)
	if gotSchema == nil || !reflect.DeepEqual(gotSchema, wantSchema) {
		t.Fatalf("describe schema %s", desc.ConfigSchema)
	}

	offers, err := r.Offers(ctx, acct, api.OfferQuery{MinVcpu: 4})
	if err != nil || !reflect.DeepEqual(offers, tinyOffers[1:]) {
		t.Fatalf("offers = %+v, %v", offers, err)
	}
	if offers, err := r.Offers(ctx, acct, api.OfferQuery{Region: "hel1"}); err != nil || offers == nil || len(offers) != 0 {
		t.Fatalf("no matching offers = %#v, %v", offers, err)
	}
	call := st.last()
	if call.Account.ID != "pacct_1" || !reflect.DeepEqual(call.Account.Config, map[string]any{"token": secretRef, "region": "fsn1"}) {
		t.Fatalf("the client saw account %+v, want defaults applied", call.Account)
	}

	spec := api.MachineSpec{Name: "web-1", OfferID: "s", Image: "debian-12", UserData: "#cloud-config\n", SSHKeys: []string{"ssh-ed25519 AAAA"}}
	m, err := r.Create(ctx, acct, "key-1", spec)
	want := &api.ExternalMachine{ID: "m-key-1", Name: "web-1", State: api.StatePending, OfferID: "s", Region: "fsn1", Addresses: []string{}}
	if err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("create = %+v, %v", m, err)
	}
	if call := st.last(); call.IdempotencyKey != "key-1" || !reflect.DeepEqual(st.lastSpec, spec) {
		t.Fatalf("the client saw key %q spec %+v", call.IdempotencyKey, st.lastSpec)
	}

	if got, err := r.Get(ctx, acct, "m-key-1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if got, err := r.Get(ctx, acct, "absent"); err != nil || got != nil {
		t.Fatalf("get of an absent machine = %+v, %v; want nil, nil", got, err)
	}
	if err := r.Power(ctx, acct, "m-key-1", api.ActionOff); err != nil {
		t.Fatalf("power: %v", err)
	}
	got, err := r.Reinstall(ctx, acct, "m-key-1", "ubuntu-24.04")
	if err != nil || got.State != api.StateStopped || got.Name != "web-1@ubuntu-24.04" {
		t.Fatalf("reinstall = %+v, %v", got, err)
	}
	page, err := r.List(ctx, acct, "", 0)
	wantPage := api.List[api.ExternalMachine]{Items: []api.ExternalMachine{{ID: "a", State: api.StateRunning, Addresses: []string{"10.0.0.1"}}}, NextCursor: "next"}
	if err != nil || !reflect.DeepEqual(page, wantPage) || st.lastList != [2]any{"", provider.DefaultListLimit} {
		t.Fatalf("list = %+v, %v (client saw %v)", page, err, st.lastList)
	}
	page, err = r.List(ctx, acct, "next", 7)
	if err != nil || page.Items == nil || len(page.Items) != 0 || page.NextCursor != "" || st.lastList != [2]any{"next", 7} {
		t.Fatalf("last list page = %#v, %v (client saw %v)", page, err, st.lastList)
	}
	if err := r.Delete(ctx, acct, "m-key-1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantError(t, r.Delete(ctx, acct, "m-key-1"), api.CodeNotFound, `machine "m-key-1" not found`, api.ErrorDetails{ID: "m-key-1"})
	wantError(t, r.Power(ctx, acct, "m-key-1", api.ActionOn), api.CodeNotFound, `machine "m-key-1" not found`, api.ErrorDetails{ID: "m-key-1"})
	if st.builds.Load() != 1 {
		t.Fatalf("%d client builds for one account version, want 1", st.builds.Load())
	}

	_, err = provider.Remote{NC: env.NC, ID: "nobody"}.Describe(ctx)
	wantError(t, err, api.CodeUnavailable, "no service answers compute.internal.provider.nobody.describe", api.ErrorDetails{})
}

func TestServeValidation(t *testing.T) {
	env := bustest.Start(t)
	d, st := tinyProvider(t, "tiny", allCapabilities, fullTiny)
	serve(t, env.Connect(t), d)
	r := provider.Remote{NC: env.NC, ID: "tiny"}
	ctx, acct := testCtx(t), account("pacct_1", 1)
	spec := api.MachineSpec{Name: "web-1", OfferID: "s", Image: "debian-12"}
	with := func(change func(*api.MachineSpec)) api.MachineSpec {
		s := spec
		change(&s)
		return s
	}
	tooManyKeys := make([]string, provider.MaxSSHKeys+1)
	for i := range tooManyKeys {
		tooManyKeys[i] = "ssh-ed25519 AAAA"
	}
	path := func(p string) api.ErrorDetails { return api.ErrorDetails{Path: &p} }
	create := func(change func(*api.MachineSpec)) func() error {
		return func() error { _, err := r.Create(ctx, acct, "k", with(change)); return err }
	}
	plain := "config.token must be a secret reference (secret://<tenant>/<id>, env://NAME or vault://<mount>/<path>#<field>), not a plain value: store it with secrets.put first"

	tests := []struct {
		name    string
		err     func() error
		code    api.Code
		message string
		details api.ErrorDetails
	}{
		{"account without id", func() error { _, err := r.Offers(ctx, account("", 1), api.OfferQuery{}); return err },
			api.CodeInvalidInput, "account.id is required (at most 128 characters)", path("account.id")},
		{"account with a bad tenant", func() error {
			a := acct
			a.TenantID = "ACME"
			_, err := r.Offers(ctx, a, api.OfferQuery{})
			return err
		}, api.CodeInvalidInput, "account.tenantId must be a valid tenant id", path("account.tenantId")},
		{"config without token", func() error {
			a := acct
			a.Config = map[string]any{}
			_, err := r.Offers(ctx, a, api.OfferQuery{})
			return err
		}, api.CodeInvalidConfig, "config.token is required", path("account.config.token")},
		{"config with a plain token", func() error {
			a := acct
			a.Config = map[string]any{"token": tokenValue}
			_, err := r.Offers(ctx, a, api.OfferQuery{})
			return err
		}, api.CodeInvalidInput, plain, path("account.config.token")},
		{"missing idempotency key", func() error { _, err := r.Create(ctx, acct, "", spec); return err },
			api.CodeInvalidInput, "idempotencyKey is required (at most 255 characters)", path("idempotencyKey")},
		{"missing name", create(func(s *api.MachineSpec) { s.Name = "" }),
			api.CodeInvalidInput, "machine.name is required (at most 255 characters)", path("machine.name")},
		{"missing offer", create(func(s *api.MachineSpec) { s.OfferID = "" }),
			api.CodeInvalidInput, "machine.offerId is required (at most 128 characters)", path("machine.offerId")},
		{"missing image", create(func(s *api.MachineSpec) { s.Image = "" }),
			api.CodeInvalidInput, "machine.image is required (at most 255 characters)", path("machine.image")},
		{"oversized user data", create(func(s *api.MachineSpec) { s.UserData = strings.Repeat("x", provider.MaxUserDataBytes+1) }),
			api.CodeInvalidInput, "machine.userData is larger than 32768 bytes", path("machine.userData")},
		{"too many ssh keys", create(func(s *api.MachineSpec) { s.SSHKeys = tooManyKeys }),
			api.CodeInvalidInput, "at most 100 SSH keys", path("machine.sshKeys")},
		{"empty ssh key", create(func(s *api.MachineSpec) { s.SSHKeys = []string{"ssh-ed25519 AAAA", ""} }),
			api.CodeInvalidInput, "SSH key must be 1 to 16384 bytes", path("machine.sshKeys[1]")},
		{"unknown request field", func() error {
			body := []byte(`{"account":{"id":"pacct_1","tenantId":"acme","version":1,"config":{"token":"` + secretRef + `"}},"idempotencyKey":"k","machine":{"name":"a","offerId":"s","image":"i","flavor":"x"}}`)
			return bus.Call(ctx, env.NC, bus.ProviderCall("tiny", provider.VerbCreate), body, nil)
		}, api.CodeInvalidInput, `unknown field "machine.flavor"`, path("machine.flavor")},
		{"empty machine id", func() error { _, err := r.Get(ctx, acct, ""); return err },
			api.CodeInvalidInput, "id is required (at most 128 characters)", path("id")},
		{"unknown power action", func() error { return r.Power(ctx, acct, "m", "explode") },
			api.CodeInvalidInput, "action must be one of [on off graceful-off reset cycle graceful-restart nmi]", path("action")},
		{"reinstall without image", func() error { _, err := r.Reinstall(ctx, acct, "m", ""); return err },
			api.CodeInvalidInput, "image is required (at most 255 characters)", path("image")},
		{"list limit too large", func() error { _, err := r.List(ctx, acct, "", provider.MaxListLimit+1); return err },
			api.CodeInvalidInput, "limit must be between 1 and 500", path("limit")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.err(), tc.code, tc.message, tc.details)
		})
	}
	if n := st.creates.Load(); n != 0 {
		t.Fatalf("the client saw %d invalid creates", n)
	}
	if _, err := r.Create(ctx, acct, strings.Repeat("k", provider.MaxKeyLength), with(func(s *api.MachineSpec) {
		s.UserData = strings.Repeat("x", provider.MaxUserDataBytes)
		s.SSHKeys = tooManyKeys[:provider.MaxSSHKeys]
	})); err != nil {
		t.Fatalf("create at every limit: %v", err)
	}
}

func TestServeCapabilities(t *testing.T) {
	env := bustest.Start(t)
	bare, bareState := tinyProvider(t, "bare", nil, bareTiny)
	liar, liarState := tinyProvider(t, "liar", []string{provider.CapabilityPower}, bareTiny)
	// Implements Power but does not claim it: still UNSUPPORTED.
	modest, _ := tinyProvider(t, "modest", nil, fullTiny)
	nc := env.Connect(t)
	for _, d := range []*provider.Defined{bare, liar, modest} {
		serve(t, nc, d)
	}
	ctx, acct := testCtx(t), account("pacct_1", 1)
	bareR, liarR, modestR := provider.Remote{NC: env.NC, ID: "bare"}, provider.Remote{NC: env.NC, ID: "liar"}, provider.Remote{NC: env.NC, ID: "modest"}

	wantError(t, bareR.Power(ctx, acct, "m", api.ActionOn), api.CodeUnsupported, "provider bare does not support power actions", api.ErrorDetails{})
	_, err := bareR.Reinstall(ctx, acct, "m", "img")
	wantError(t, err, api.CodeUnsupported, "provider bare does not support reinstall", api.ErrorDetails{})
	_, err = bareR.List(ctx, acct, "", 0)
	wantError(t, err, api.CodeUnsupported, "provider bare does not support list", api.ErrorDetails{})
	wantError(t, modestR.Power(ctx, acct, "m", api.ActionOn), api.CodeUnsupported, "provider modest does not support power actions", api.ErrorDetails{})
	if _, err := bareR.Offers(ctx, acct, api.OfferQuery{}); err != nil {
		t.Fatalf("offers on a bare client: %v", err)
	}
	if bareState.builds.Load() != 1 {
		t.Fatalf("bare builds = %d", bareState.builds.Load())
	}

	_, err = liarR.Offers(ctx, acct, api.OfferQuery{})
	wantError(t, err, api.CodeInvalidConfig, `provider liar claims "power" but its client does not implement it`,
		api.ErrorDetails{Path: new("capabilities[0]")})
	_, err = liarR.Offers(ctx, acct, api.OfferQuery{})
	wantError(t, err, api.CodeInvalidConfig, `provider liar claims "power" but its client does not implement it`,
		api.ErrorDetails{Path: new("capabilities[0]")})
	if liarState.builds.Load() != 2 {
		t.Fatalf("liar builds = %d: a refused client must not be cached", liarState.builds.Load())
	}
}

func TestServeClientCache(t *testing.T) {
	env := bustest.Start(t)
	d, st := tinyProvider(t, "tiny", allCapabilities, fullTiny)
	serve(t, env.Connect(t), d)
	r := provider.Remote{NC: env.NC, ID: "tiny"}
	ctx := testCtx(t)
	offers := func(a api.ProviderAccount) error { _, err := r.Offers(ctx, a, api.OfferQuery{}); return err }

	st.failBuilds.Store(1)
	wantError(t, offers(account("pacct_1", 1)), api.CodeInvalidConfig, "build tiny client: registry down", api.ErrorDetails{})
	if err := offers(account("pacct_1", 1)); err != nil {
		t.Fatalf("the call after a failed build: %v", err)
	}
	if got := st.builds.Load(); got != 2 {
		t.Fatalf("builds after a failed and a good one = %d, want 2", got)
	}

	steps := []struct {
		acct   api.ProviderAccount
		builds int64
	}{
		{account("pacct_1", 1), 2}, // cached
		{account("pacct_1", 2), 3}, // new version
		{account("pacct_1", 2), 3}, // cached
		{account("pacct_2", 2), 4}, // other account, same version
		{account("pacct_2", 2), 4}, // cached
		{account("pacct_1", 1), 5}, // an older version than the cached one is built, not cached
		{account("pacct_1", 2), 5}, // the newer one stayed
	}
	for i, step := range steps {
		if err := offers(step.acct); err != nil {
			t.Fatal(err)
		}
		if got := st.builds.Load(); got != step.builds {
			t.Fatalf("step %d (%s v%d): builds = %d, want %d", i, step.acct.ID, step.acct.Version, got, step.builds)
		}
	}
}

func TestServeClientFailures(t *testing.T) {
	env := bustest.Start(t)
	d, _ := tinyProvider(t, "tiny", allCapabilities, fullTiny)
	serve(t, env.Connect(t), d)
	r := provider.Remote{NC: env.NC, ID: "tiny"}
	acct := account("pacct_1", 1)

	_, err := r.Get(bus.WithRequestID(testCtx(t), "req-panic-1"), acct, "panic")
	wantError(t, err, api.CodeProviderError, "provider tiny failed unexpectedly (request req-panic-1)", api.ErrorDetails{})
	if m, err := r.Get(testCtx(t), acct, "absent"); err != nil || m != nil {
		t.Fatalf("get after a panic = %+v, %v", m, err)
	}

	_, err = r.Get(testCtx(t), acct, "foreign")
	wantError(t, err, api.CodeProviderError, "upstream said no", api.ErrorDetails{})

	_, err = r.Get(testCtx(t), acct, "leak")
	wantError(t, err, api.CodeProviderError, "token [REDACTED] rejected",
		api.ErrorDetails{Code: new("unauthorized"), Reason: "sent [REDACTED]", Status: new(401)})

	// A secret the tenant cannot resolve is the resolver's error, unredacted
	// since nothing was resolved.
	other := acct
	other.TenantID = "beta"
	_, err = r.Get(testCtx(t), other, "leak")
	wantError(t, err, api.CodeNotFound, `secret "`+secretRef+`" not found`, api.ErrorDetails{ID: secretRef})
}
