package proxmox

import (
	"context"
	"strconv"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/provider/providertest"
	"better-compute.io/compute/services/provider-proxmox/emulator"
)

// withResizeSizes adds a size with small's vCPUs and twice its memory.
func withResizeSizes(su *setup) {
	su.config[FieldSizes] = []any{
		map[string]any{"name": testOffer, "vcpu": 2, "memoryGiB": 4, "diskGiB": 20},
		map[string]any{"name": "small-mem", "vcpu": 2, "memoryGiB": 8, "diskGiB": 20},
		map[string]any{"name": "large", "vcpu": 8, "memoryGiB": 32, "diskGiB": 80},
	}
}

// withMemoryHotplug gives the Ubuntu template memory and CPU hot-plug
// (and NUMA, which memory hot-plug needs); clones inherit it.
func withMemoryHotplug(su *setup) {
	su.emu.Templates[0].Config["hotplug"] = "network,disk,usb,memory,cpu"
	su.emu.Templates[0].Config["numa"] = "1"
}

// Resize of a running VM: what its hotplug setting takes is applied
// live (memory, with memory hot-plug and NUMA: no reboot); cores are
// always pending on a running VM, so a size with more vCPUs reboots it
// (recorded: Rebooted). The disk grows to the size's and is never shrunk;
// the description names the new offer, which get reports.
func TestResizeHotplugAndRebootPaths(t *testing.T) {
	cases := []struct {
		name        string
		mods        []func(*setup)
		offer       string
		rebooted    bool
		cores, mem  int
		diskGiB     int
		rebootCalls int
	}{
		{"memory hot-plugged", []func(*setup){withResizeSizes, withMemoryHotplug}, "small-mem", false, 2, 8192, 20, 0},
		{"memory without hot-plug reboots", []func(*setup){withResizeSizes}, "small-mem", true, 2, 8192, 20, 1},
		{"more cores reboot", []func(*setup){withResizeSizes, withMemoryHotplug}, "large", true, 8, 32768, 80, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.mods...)
			r := providertest.Serve(t, e.def, e.clock, testSecrets) // through the bus
			r.IdempotencyKey = "inst_rz"
			m := e.create(t, "inst_rz")
			e.clock.Advance(time.Minute)
			vmid, _ := strconv.Atoi(m.ID)
			e.emu.ResetCalls()
			res, err := r.Resize(context.Background(),
				api.ProviderResizeRequest{Account: e.acct, ID: m.ID, OfferID: c.offer, Power: api.PowerOn})
			if err != nil {
				t.Fatalf("resize: %v", err)
			}
			t.Logf("calls of one resize: %v", e.emu.CallCounts())
			v := e.vm(t, vmid)
			if res.Rebooted != c.rebooted || !res.Changed || v.Cores != c.cores || v.MemoryMiB != c.mem || v.DiskGiB != c.diskGiB ||
				v.Status != emulator.StatusRunning {
				t.Fatalf("resize answered %+v; VM %+v", res, v)
			}
			if n := e.emu.Calls(emulator.RouteReboot); n != c.rebootCalls {
				t.Fatalf("reboots: %d, want %d", n, c.rebootCalls)
			}
			if got := e.mustGet(t, m.ID); got.OfferID != c.offer {
				t.Fatalf("get reports offer %q, want %q", got.OfferID, c.offer)
			}
			// Back to small: cores and memory follow, the disk is never shrunk.
			if _, err := r.Resize(context.Background(),
				api.ProviderResizeRequest{Account: e.acct, ID: m.ID, OfferID: testOffer}); err != nil {
				t.Fatalf("resize back: %v", err)
			}
			if v := e.vm(t, vmid); v.Cores != 2 || v.DiskGiB != c.diskGiB {
				t.Fatalf("after the resize back: %+v", v)
			}
			e.emu.ResetCalls()
			if res, err := r.Resize(context.Background(),
				api.ProviderResizeRequest{Account: e.acct, ID: m.ID, OfferID: testOffer}); err != nil || res.Changed {
				t.Fatalf("resize to the offer it is on: %+v, %v", res, err)
			}
			if _, err := r.Resize(context.Background(),
				api.ProviderResizeRequest{Account: e.acct, ID: m.ID, OfferID: "nope"}); !api.IsCode(err, api.CodeInvalidInput) {
				t.Fatalf("resize to an unknown size: %v", err)
			}
		})
	}
}

// Metrics maps rrddata to the series of each type, within the window.
func TestMetricsFromRRDData(t *testing.T) {
	e := newEnv(t)
	m := e.create(t, "inst_mx")
	e.clock.Advance(2 * time.Hour)
	now := e.clock.Now()
	for _, typ := range api.MetricsTypes() {
		got, err := e.client.Metrics(context.Background(), e.call("inst_mx"), m.ID,
			api.MetricsWindow{Type: typ, From: now.Add(-time.Hour), To: now})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if len(got.Series) == 0 || got.Step != 60 {
			t.Fatalf("%s: %+v", typ, got)
		}
		for _, s := range got.Series {
			if len(s.Points) < 55 || len(s.Points) > 60 {
				t.Errorf("%s %s: %d points in an hour at 60 s", typ, s.Name, len(s.Points))
			}
		}
	}
	if n := e.emu.Calls(emulator.RouteRRDData); n != 3 {
		t.Fatalf("rrddata calls: %d", n)
	}
}
