package bus_test

import (
	"testing"

	"better-compute.io/compute/pkg/bus"
)

func TestSubjects(t *testing.T) {
	tests := []struct{ got, want string }{
		{bus.Command("acme", bus.ResourcePools, "create"), "compute.v1.acme.pools.create"},
		{bus.Command("*", bus.ResourceInstances, "get"), "compute.v1.*.instances.get"},
		{bus.Event("acme", "instances", "inst_1", "status"), "compute.v1.acme.events.instances.inst_1.status"},
		{bus.EventsOf("acme"), "compute.v1.acme.events.>"},
		{bus.EventsOf("*"), "compute.v1.*.events.>"},
		{bus.Work("acme", "inst_1"), "compute.work.acme.inst_1"},
		{bus.ProviderCall("hetzner-cloud", "create"), "compute.internal.provider.hetzner-cloud.create"},
		{bus.SecretsResolve, "compute.internal.secrets.resolve"},
		{bus.SecretsCheck, "compute.internal.secrets.check"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("subject %q, want %q", tc.got, tc.want)
		}
	}
}

func TestTenantOf(t *testing.T) {
	tests := []struct{ subject, want string }{
		{"compute.v1.acme.pools.create", "acme"},
		{bus.Event("beta-2", "pools", "pool_1", "created"), "beta-2"},
		{"compute.v1.acme", "acme"},
		{"compute.v1.", ""},
		{"compute.v1", ""},
		{"compute.v2.acme.pools.create", ""},
		{"compute.internal.provider.x.create", ""},
		{bus.Work("acme", "inst_1"), ""},
		{"xcompute.v1.acme.pools.create", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := bus.TenantOf(tc.subject); got != tc.want {
			t.Errorf("TenantOf(%q) = %q, want %q", tc.subject, got, tc.want)
		}
	}
}

// Every endpoint is named <resource>-<verb> after its subject.
func TestCommandEndpoint(t *testing.T) {
	ep := bus.CommandEndpoint(bus.ResourcePools, "create", nil)
	if ep.Name != "pools-create" || ep.Subject != "compute.v1.*.pools.create" {
		t.Fatalf("CommandEndpoint = %s on %s, want pools-create on compute.v1.*.pools.create", ep.Name, ep.Subject)
	}
	if got := bus.EndpointName(bus.ResourceProvider, "describe"); got != "provider-describe" {
		t.Fatalf("EndpointName = %s, want provider-describe", got)
	}
}
