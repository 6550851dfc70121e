package robot

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-hetzner-robot/emulator"
)

func ctx30(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestThroughBus drives every verb through provider.Remote: offers are
// the free servers, create claims by server name, reinstall arms the
// rescue system and resets, power maps to resets, delete releases; every
// Robot call is asserted in order.
func TestThroughBus(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctx30(t)
	desc, err := e.remote.Describe(ctx)
	if err != nil || desc.ID != ProviderID || !slices.Equal(desc.Provides, []string{api.KindMetal}) {
		t.Fatalf("describe = %+v, %v", desc, err)
	}
	offers, err := e.remote.Offers(ctx, e.acct, api.OfferQuery{})
	ids := []string{}
	for _, o := range offers {
		ids = append(ids, o.ID)
	}
	if err != nil || !slices.Equal(ids, []string{"101", "102", "EX44", "AX52"}) { // free servers, then their products
		t.Fatalf("offers = %+v, %v", offers, err)
	}
	// from GET /server (product, data centre) and GET /order/server/product/AX52 (CPU, memory, disks, the
	// gross monthly price in NBG1: 64 net + 19 % VAT)
	if o := offers[1]; o.Kind != api.KindMetal || o.Region != "nbg1" || o.Vcpu != 16 || o.MemoryGiB != 64 || o.Product != "AX52" ||
		o.CPU != "AMD Ryzen™ 7 7700" || !slices.Equal(o.Disks, []string{"2 x 1 TB NVMe SSD"}) || o.DiskGiB != 931.3 ||
		o.Datacenter != "NBG1-DC3" || o.PricePerMonth == nil || *o.PricePerMonth != 76.16 ||
		o.PricePerHour == nil || *o.PricePerHour != *o.PricePerMonth/api.HoursPerMonth {
		t.Fatalf("offer 102 = %+v", o)
	}
	m, err := e.remote.Create(ctx, e.acct, "inst_a", api.MachineSpec{Name: "bm-a", OfferID: "101", Image: "ubuntu-24.04"})
	if err != nil || m.ID != "101" || m.IdempotencyKey != "inst_a" || m.SSHEndpoint == "" || m.OfferID != "EX44" {
		t.Fatalf("claim = %+v, %v", m, err)
	}
	if again, err := e.remote.Create(ctx, e.acct, "inst_a", api.MachineSpec{Name: "bm-a", OfferID: "101", Image: "ubuntu-24.04"}); err != nil || again.ID != "101" {
		t.Fatalf("claim again = %+v, %v", again, err)
	}
	if offers, _ := e.remote.Offers(ctx, e.acct, api.OfferQuery{}); len(offers) != 2 { // 102 and AX52
		t.Fatalf("offers after the claim = %+v", offers)
	}
	if _, err := e.remote.Reinstall(ctx, e.acct, "101", "ubuntu-24.04"); err != nil {
		t.Fatal(err)
	}
	if got := e.emu.Booted(101); got != "rescue" {
		t.Fatalf("booted %q after reinstall, want rescue", got)
	}
	if err := e.remote.Power(ctx, e.acct, "101", api.ActionReset); err != nil {
		t.Fatal(err)
	}
	if err := e.remote.Power(ctx, e.acct, "101", api.ActionGracefulOff); !api.IsCode(err, api.CodeUnsupported) {
		t.Fatalf("graceful-off = %v, want UNSUPPORTED", err)
	}
	page, err := e.remote.List(ctx, e.acct, "", 0)
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "101" {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if err := e.remote.Delete(ctx, e.acct, "101"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.remote.Get(ctx, e.acct, "101"); err != nil || got != nil {
		t.Fatalf("get after release = %+v, %v", got, err)
	}
	if err := e.remote.Delete(ctx, e.acct, "101"); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("second release = %v, want NOT_FOUND", err)
	}
	want := []string{
		"GET /server", "GET /order/server/product/EX44", "GET /order/server/product/AX52", // describe makes no call; offers
		"GET /server/101", "POST /server/101 server_name=compute:inst_a", "GET /server/101", // claim
		"GET /server/101",                               // claim again
		"GET /server", "GET /order/server/product/AX52", // offers
		"GET /server/101", // reinstall: the claim check
		"POST /key name=better-compute", "GET /reset/101", "DELETE /boot/101/rescue",
		"POST /boot/101/rescue os=linux authorized_key=",
		"POST /reset/101 type=hw",
		"GET /server/101", "GET /reset/101", "POST /reset/101 type=hw", // power reset; graceful-off makes no call
		"GET /server",                                                                 // list
		"GET /server/101", "DELETE /boot/101/rescue", "POST /server/101 server_name=", // release
		"GET /server/101", "GET /server/101", // get after the release, second release
	}
	got := e.emu.Calls()
	if len(got) != len(want) {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("call %d = %q, want %q; all:\n%s", i, got[i], want[i], strings.Join(got, "\n"))
		}
	}
}

// TestNotOurs: a server named by someone else, or claimed under another
// key, is never touched: ACCESS_DENIED (permanent) or absent, and no
// write reaches the webservice.
func TestNotOurs(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctx30(t)
	_, err := e.remote.Create(ctx, e.acct, "inst_b", api.MachineSpec{Name: "bm-b", OfferID: "103", Image: "ubuntu-24.04"})
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeAccessDenied || !ce.Details.Permanent {
		t.Fatalf("claim of a named server = %v, want ACCESS_DENIED permanent", err)
	}
	for name, call := range map[string]func() error{
		"power":     func() error { return e.remote.Power(ctx, e.acct, "103", api.ActionReset) },
		"reinstall": func() error { _, err := e.remote.Reinstall(ctx, e.acct, "103", "x"); return err },
		"delete":    func() error { return e.remote.Delete(ctx, e.acct, "103") },
	} {
		if err := call(); !api.IsCode(err, api.CodeAccessDenied) {
			t.Errorf("%s of a server not ours = %v, want ACCESS_DENIED", name, err)
		}
	}
	if got, err := e.remote.Get(ctx, e.acct, "103"); err != nil || got != nil {
		t.Errorf("get of a server not ours = %+v, %v; want absent", got, err)
	}
	// Claimed by inst_a, asked for as inst_c: another claim.
	if _, err := e.remote.Create(ctx, e.acct, "inst_a", api.MachineSpec{Name: "bm-a", OfferID: "101", Image: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.remote.Create(ctx, e.acct, "inst_c", api.MachineSpec{Name: "bm-c", OfferID: "101", Image: "u"}); !api.IsCode(err, api.CodeAccessDenied) {
		t.Fatalf("claim of a server claimed by another = %v, want ACCESS_DENIED", err)
	}
	for _, c := range e.emu.Calls() {
		if strings.Contains(c, "/103") && !strings.HasPrefix(c, "GET ") {
			t.Errorf("a write reached server 103: %s", c)
		}
	}
	if n, _ := e.emu.Installed(103); e.emu.Booted(103) != "disk" || n != "Ubuntu-2404-noble-amd64-base" {
		t.Error("server 103 changed")
	}
}

// TestRateLimitedAndBlocked: a spent hourly limit and a blocked address
// are RATE_LIMITED with the webservice's interval and block time.
func TestRateLimitedAndBlocked(t *testing.T) {
	e := newEnv(t, map[string]int{emulator.LimitResetPost: 1})
	ctx := ctx30(t)
	var observed []api.RateLimit // the rate-limit state each reply reported
	e.remote.Observe = func(rl api.RateLimit, reported bool) {
		if reported {
			observed = append(observed, rl)
		}
	}
	if _, err := e.remote.Create(ctx, e.acct, "inst_a", api.MachineSpec{Name: "bm-a", OfferID: "101", Image: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := e.remote.Power(ctx, e.acct, "101", api.ActionReset); err != nil {
		t.Fatal(err)
	}
	err := e.remote.Power(ctx, e.acct, "101", api.ActionReset)
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeRateLimited || ce.RetryAfter() != time.Hour {
		t.Fatalf("reset over the limit = %v, want RATE_LIMITED retry 1h", err)
	}
	// Every server endpoint request is counted against the account's 200
	// an hour (budget.go; one report a call, its last request's); one
	// other endpoint's limit spent does not hold the account.
	servers := 0
	for _, c := range e.emu.Calls() {
		if strings.HasPrefix(c, "GET /server") || strings.HasPrefix(c, "POST /server/") {
			servers++
		}
	}
	if n := len(observed); n != 3 || observed[n-1].Limit != ServerRequestLimit ||
		observed[n-1].Remaining != ServerRequestLimit-servers || !observed[n-1].ResetAt.Equal(testStart.Add(time.Hour)) {
		t.Fatalf("after %d server requests the account's rate limit was reported as %+v", servers, observed)
	}
	bad := e.acct
	bad.ID, bad.Config = "pacct_01jq7g8v6k5m4n3p2r1s0t9w8y", map[string]any{FieldUser: testUserRef, FieldPassword: testUserRef,
		FieldSSHPublicKey: e.acct.Config[FieldSSHPublicKey], FieldKeyName: DefaultKeyName}
	for i := 0; i < emulator.BadLoginLimit; i++ {
		_, err := e.remote.Offers(ctx, bad, api.OfferQuery{})
		if st, code := api.AsComputeError(err).APIStatus(); st != 401 || code != "UNAUTHORIZED" {
			t.Fatalf("bad login %d = %v", i, err)
		}
	}
	e.clock.Advance(time.Minute)
	_, err = e.remote.Offers(ctx, e.acct, api.OfferQuery{})
	if ce := api.AsComputeError(err); ce == nil || ce.Code != api.CodeRateLimited || ce.RetryAfter() != emulator.BlockDuration-time.Minute {
		t.Fatalf("while blocked = %v, want RATE_LIMITED retry 9m", err)
	}
	if n := len(observed); n == 0 || observed[n-1].Remaining != 0 ||
		!observed[n-1].ResetAt.Equal(testStart.Add(emulator.BlockDuration)) {
		t.Fatalf("a blocked account reported %+v, want its budget spent until the block ends", observed)
	}
	for _, v := range []string{testUser, testPass} {
		if strings.Contains(err.Error(), v) {
			t.Fatal("an error quotes a credential")
		}
	}
}

// TestClaimByProduct: an offer naming a product claims its free server
// with the lowest number, the same one again for the same key; none
// free is CAPACITY_UNAVAILABLE, an unknown product a permanent refusal.
func TestClaimByProduct(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctx30(t)
	spec := api.MachineSpec{Name: "bm", OfferID: "AX52", Image: "u"}
	m, err := e.remote.Create(ctx, e.acct, "inst_p", spec)
	if err != nil || m.ID != "102" {
		t.Fatalf("claim AX52 = %+v, %v", m, err)
	}
	if again, err := e.remote.Create(ctx, e.acct, "inst_p", spec); err != nil || again.ID != "102" {
		t.Fatalf("claim again = %+v, %v", again, err)
	}
	if _, err := e.remote.Create(ctx, e.acct, "inst_q", spec); !api.IsCode(err, api.CodeCapacityUnavailable) {
		t.Fatalf("claim of a product with no free server = %v, want CAPACITY_UNAVAILABLE", err)
	}
	spec.OfferID = "no-such-product"
	_, err = e.remote.Create(ctx, e.acct, "inst_r", spec)
	if ce := api.AsComputeError(err); ce == nil || !ce.Permanent() || ce.Path() != "machine.offerId" {
		t.Fatalf("claim of an unknown product = %v, want a permanent refusal at machine.offerId", err)
	}
}

// TestPowerObserved: off is a long press and get reads it back from the
// reset status (stopped); on presses the power button only while the
// server is not running.
func TestPowerObserved(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.emu.AddServer(emulator.ServerSpec{Number: 104, ResetTypes: []string{"power", "power_long", "hw", "man"}}); err != nil {
		t.Fatal(err)
	}
	ctx := ctx30(t)
	if _, err := e.remote.Create(ctx, e.acct, "inst_p", api.MachineSpec{Name: "bm", OfferID: "104", Image: "u"}); err != nil {
		t.Fatal(err)
	}
	state := func() api.MachineState {
		t.Helper()
		m, err := e.remote.Get(ctx, e.acct, "104")
		if err != nil || m == nil {
			t.Fatalf("get = %+v, %v", m, err)
		}
		return m.State
	}
	if err := e.remote.Power(ctx, e.acct, "104", api.ActionOff); err != nil || state() != api.StateStopped {
		t.Fatalf("after off: %v, state %s", err, state())
	}
	if err := e.remote.Power(ctx, e.acct, "104", api.ActionOn); err != nil || state() != api.StateRunning {
		t.Fatalf("after on: %v, state %s", err, state())
	}
	if err := e.remote.Power(ctx, e.acct, "104", api.ActionOn); err != nil || state() != api.StateRunning {
		t.Fatalf("on of a running server must press nothing: %v, state %s", err, state())
	}
	if err := e.remote.Power(ctx, e.acct, "104", api.ActionGracefulRestart); !api.IsCode(err, api.CodeUnsupported) {
		t.Fatalf("graceful-restart without sw = %v, want UNSUPPORTED", err)
	}
}
