package hetzner

import (
	"context"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/services/provider-hetzner/emulator"
)

// A resize of a running server powers it off, changes its type and
// leaves it running (the power dance); the requests are counted per
// route. With the disk kept (upgrade_disk false) a move back down
// passes; after a disk upgrade it is refused with INVALID_INPUT naming
// offerId, before any request that changes anything.
func TestResizePowerDanceAndDiskRule(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_r", "inst_r")
	e.clock.Advance(testActionDuration)
	ctx := context.Background()
	resize := func(offer string, grow bool, power api.Power) (*api.ResizeResult, error) {
		return e.client.Resize(ctx, e.call(""), api.ProviderResizeRequest{ID: m.ID, OfferID: offer, DiskGrow: grow, Power: power})
	}

	e.emu.ResetCalls()
	res, err := resize("cx33", false, api.PowerOn)
	if err != nil {
		t.Fatalf("resize to cx33: %v", err)
	}
	if !res.Changed || !res.Rebooted || res.Machine.OfferID != "cx33" || res.Machine.State != api.StateRunning {
		t.Fatalf("resize to cx33 answered %+v (machine %+v)", res, res.Machine)
	}
	counts := e.emu.CallCounts()
	if counts[emulator.RouteChangeType] != 1 || counts["POST /servers/{id}/actions/poweroff"] != 1 {
		t.Fatalf("calls of one resize: %v", counts)
	}
	t.Logf("calls of one resize of a running server: %d (%v)", e.calls(), counts)

	e.emu.ResetCalls()
	if res, err = resize("cx33", false, api.PowerOn); err != nil || res.Changed {
		t.Fatalf("resize to the type it is on: %+v, %v", res, err)
	}
	if n := e.calls(); n != 1 {
		t.Fatalf("a resize to the current type sent %d requests, want 1 (the look)", n)
	}

	if res, err = resize("cx23", false, api.PowerOff); err != nil || res.Machine.State != api.StateStopped {
		t.Fatalf("resize back to cx23 with the disk kept: %+v, %v", res, err)
	}
	if _, err = resize("cx43", true, ""); err != nil {
		t.Fatalf("resize to cx43 with the disk grown: %v", err)
	}
	e.emu.ResetCalls()
	_, err = resize("cx33", false, "")
	ce := api.AsComputeError(err)
	if ce.Code != api.CodeInvalidInput || ce.Path() != "offerId" || !ce.NotExecuted() {
		t.Fatalf("resize to a smaller disk: %v (details %+v)", err, ce.Details)
	}
	if n := e.emu.Calls(emulator.RouteChangeType) + e.emu.Calls("POST /servers/{id}/actions/poweroff"); n != 0 {
		t.Fatalf("a refused resize sent %d changes", n)
	}
	if got := e.mustGet(t, m.ID); got.OfferID != "cx43" || got.State != api.StateStopped {
		t.Fatalf("after the refusal the machine is %+v", got)
	}
}

// The emulator's change_type answers the real API's refusals.
func TestEmulatorChangeTypeRefusals(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_c", "inst_c")
	e.clock.Advance(testActionDuration)
	ctx := context.Background()
	// Running: server_not_stopped, and the provider says nothing changed
	// when asked through the API directly (no power-off first).
	s, sid, err := e.client.openServer(ctx, e.call(""), "test", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, typ, code string
		off             bool
	}{
		{"running", "cx33", "server_not_stopped", false},
		{"unknown type", "nope", "invalid_input", true},
		{"same disk size", "cpx12", "", true}, // 40 GB = 40 GB: allowed
		{"other architecture", "cax21", "invalid_server_type", true},
	}
	for _, c := range cases {
		if c.off {
			if err := e.client.serverAction(ctx, s, sid, "poweroff"); err != nil && c.name == "unknown type" {
				t.Fatalf("power off: %v", err)
			}
		}
		_, _, err := s.api.Server.ChangeType(ctx, hzServer(sid), changeTypeOpts(c.typ, false))
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			e.clock.Advance(2 * time.Second)
			continue
		}
		if err == nil || !isCode(err, c.code) {
			t.Errorf("%s: change_type answered %v, want %s", c.name, err, c.code)
		}
	}
	// The server runs again after cpx12 (change_type starts it): off, then
	// a grown disk (cpx22: 80 GB) rules out cx23 (40 GB); a second change
	// while one runs is locked.
	if err := e.client.serverAction(ctx, s, sid, "poweroff"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.api.Server.ChangeType(ctx, hzServer(sid), changeTypeOpts("cpx22", true)); err != nil {
		t.Fatalf("change to cpx22 with the disk grown: %v", err)
	}
	if _, _, err := s.api.Server.ChangeType(ctx, hzServer(sid), changeTypeOpts("cx33", false)); !isCode(err, "locked") {
		t.Errorf("change_type while one runs: %v, want locked", err)
	}
	e.clock.Advance(2 * time.Second)
	if err := e.client.serverAction(ctx, s, sid, "poweroff"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.api.Server.ChangeType(ctx, hzServer(sid), changeTypeOpts("cx23", false)); !isCode(err, "invalid_server_type") {
		t.Errorf("change to a smaller disk than the grown one: %v, want invalid_server_type", err)
	}
}

// Metrics answers the emulator's series in the real shape, parsed.
func TestMetricsSeries(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_m", "inst_m")
	e.clock.Advance(testActionDuration)
	to := e.clock.Now()
	w := api.MetricsWindow{Type: api.MetricsNetwork, From: to.Add(-time.Hour), To: to, Step: 60}
	got, err := e.client.Metrics(context.Background(), e.call(""), m.ID, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Series) != 4 || got.Step != 60 {
		t.Fatalf("network metrics: step %d, %d series", got.Step, len(got.Series))
	}
	for _, s := range got.Series {
		if len(s.Points) != 60 || s.Unit == "" {
			t.Errorf("series %s (%s): %d points, want 60", s.Name, s.Unit, len(s.Points))
		}
	}
}

func hzServer(id int64) *hcloud.Server { return &hcloud.Server{ID: id} }

func changeTypeOpts(typ string, grow bool) hcloud.ServerChangeTypeOpts {
	return hcloud.ServerChangeTypeOpts{ServerType: &hcloud.ServerType{Name: typ}, UpgradeDisk: grow}
}

func isCode(err error, code string) bool { return hcloud.IsError(err, hcloud.ErrorCode(code)) }
