package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestTenThousandVMs(t *testing.T) {
	s := startServer(t, Options{})
	x := newTester(t, s)
	e := s.Emulator()

	start := time.Now()
	ids, err := e.SeedVMs(SeedSpec{Count: 10_000, Tags: "fleet", Description: "load"})
	noErr(t, err)
	seedTime := time.Since(start)
	mustEqual(t, len(ids), 10_000, "seeded")
	equal(t, ids[0], 100, "first id")
	equal(t, ids[9_999], 10_100, "last id (the template's 9000 is skipped)")

	start = time.Now()
	req, err := http.NewRequest(http.MethodGet, s.URL()+"/cluster/resources?type=vm", nil)
	noErr(t, err)
	req.Header.Set("Authorization", x.auth)
	resp, err := x.client.Do(req)
	noErr(t, err)
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	noErr(t, err)
	listTime := time.Since(start)
	var list struct {
		Data []struct {
			VMID     int    `json:"vmid"`
			Template int    `json:"template"`
			Tags     string `json:"tags"`
		} `json:"data"`
	}
	noErr(t, json.Unmarshal(raw, &list))
	mustEqual(t, len(list.Data), 10_001, "resources")
	equal(t, list.Data[0].VMID, 100, "sorted by VMID")
	equal(t, list.Data[0].Tags, "fleet", "seeded tags")
	equal(t, list.Data[8900].VMID, tplID, "template in VMID order")
	equal(t, list.Data[8900].Template, 1, "template flag")
	equal(t, x.do(http.MethodGet, "/cluster/nextid", nil).data(), "10101", "nextid past the fleet")
	equal(t, len(e.VMs()), 10_001, "VMs")

	// Generous bounds: the race detector and a shared 2-core machine are slow.
	if seedTime > 10*time.Second || listTime > 10*time.Second {
		t.Errorf("too slow: seed %v, list %v", seedTime, listTime)
	}
	t.Logf("seed 10k: %v, list 10k: %v", seedTime, listTime)
}
