package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
	"better-compute.io/compute/pkg/bus/bustest"
)

// Every service of `compute up` names its endpoints <resource>-<verb>
// after their subjects (bus.EndpointName), as `nats micro info` shows them.
func TestEndpointNamesFollowOneConvention(t *testing.T) {
	s, _ := startTestStack(t, &bustest.LogBuffer{})
	for _, svc := range []string{"secrets", "accounts", "reconciler", "provider-hetzner-cloud", "provider-proxmox"} {
		msg, err := s.nc.Request("$SRV.INFO."+svc, nil, 10*time.Second)
		if err != nil {
			t.Fatalf("info of %s: %v", svc, err)
		}
		var info micro.Info
		if err := json.Unmarshal(msg.Data, &info); err != nil || len(info.Endpoints) == 0 {
			t.Fatalf("info of %s: %s (%v)", svc, msg.Data, err)
		}
		for _, ep := range info.Endpoints {
			tokens := strings.Split(ep.Subject, ".")
			resource, verb := tokens[len(tokens)-2], tokens[len(tokens)-1]
			if strings.HasPrefix(ep.Subject, bus.InternalRoot+"."+bus.ResourceProvider+".") {
				resource = bus.ResourceProvider
			}
			if want := bus.EndpointName(resource, verb); ep.Name != want {
				t.Errorf("%s: endpoint %q on %s, want %q", svc, ep.Name, ep.Subject, want)
			}
		}
	}
}

// api.Verbs, from which the tenant accounts' imports and the credentials'
// permissions are derived, lists exactly the public endpoints the services
// serve: a verb missing there would be unreachable for every tenant.
func TestVerbTableListsEveryPublicEndpoint(t *testing.T) {
	s, _ := startTestStack(t, &bustest.LogBuffer{})
	served := map[string]bool{}
	for _, svc := range []string{"secrets", "accounts", "reconciler"} {
		msg, err := s.nc.Request("$SRV.INFO."+svc, nil, 10*time.Second)
		if err != nil {
			t.Fatalf("info of %s: %v", svc, err)
		}
		var info micro.Info
		if err := json.Unmarshal(msg.Data, &info); err != nil {
			t.Fatal(err)
		}
		for _, ep := range info.Endpoints {
			if tokens := strings.Split(ep.Subject, "."); strings.HasPrefix(ep.Subject, bus.PublicRoot+".") && len(tokens) == 5 {
				served[tokens[3]+"."+tokens[4]] = true
			}
		}
	}
	listed := map[string]bool{}
	for _, v := range api.Verbs {
		listed[v.Resource+"."+v.Verb] = true
	}
	if !maps.Equal(served, listed) {
		t.Fatalf("public endpoints served %v, api.Verbs %v", slices.Sorted(maps.Keys(served)), slices.Sorted(maps.Keys(listed)))
	}
}
