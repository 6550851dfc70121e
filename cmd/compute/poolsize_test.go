package main

import (
	"strings"
	"testing"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus/bustest"
)

// compute pools scale, update (a deploy) and rollback on the stack of
// `compute up` (operator-mode NATS: the pool controller as its own NATS
// user), against the Hetzner emulator; pools get shows the status as a
// table and as JSON.
func TestPoolsScaleDeployRollbackCLI(t *testing.T) {
	logs := &bustest.LogBuffer{}
	s, _ := startTestStack(t, logs)
	c := &cli{t: t, url: s.nats.ClientURL(), creds: s.tenantCreds(t, "acme")}
	emu := s.hetzner.Emulator()
	_, _, pool := c.hetznerPool("web")

	var p api.Pool
	c.must(&p, "", "pools", "scale", "web", "--size", "1")
	if p.Sizes["small"] != 1 || p.Revision != 1 {
		t.Fatalf("scale: %+v", p)
	}
	settled := func(rev int64, image string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			var got api.Pool
			c.must(&got, "", "pools", "get", pool.ID, "-o", "json")
			servers := emu.Servers()
			if st := got.Status; st != nil && st.Rollout == api.RolloutComplete && st.TargetRevision == rev && st.Ready == 1 &&
				len(servers) == 1 && servers[0].Image == image {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool not settled on revision %d (%s): status %+v, servers %+v\nlogs:\n%s", rev, image, got.Status, servers, logs.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	settled(1, "ubuntu-24.04")
	c.must(&p, "", "pools", "update", "web", "--image", "debian-12", "--label", "app=web")
	if p.Revision != 2 || p.Template.Image != "debian-12" {
		t.Fatalf("update: %+v", p)
	}
	settled(2, "debian-12")
	c.must(&p, "", "pools", "rollback", "web")
	if p.Revision != 3 || p.Revisions[len(p.Revisions)-1].RollbackOf != 1 {
		t.Fatalf("rollback: %+v", p)
	}
	settled(3, "ubuntu-24.04")

	table, err := c.run("", "pools", "get", "web", "-o", "table")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Revision 3", "Status: Complete", "FLAVOR", "READY", "REVISION", "ROLLBACK-OF", "debian-12"} {
		if !strings.Contains(table, want) {
			t.Errorf("pools get table lacks %q:\n%s", want, table)
		}
	}
	if _, err := c.run("", "pools", "scale", "web", "--size", "1", "--flavor", "nope"); err == nil {
		t.Error("scale of an unknown flavor succeeded")
	}
	c.must(&p, "", "pools", "scale", "web", "--size", "0")
	deadline := time.Now().Add(60 * time.Second)
	for len(emu.Servers()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("size 0: servers %+v", emu.Servers())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
