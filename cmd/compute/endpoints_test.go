package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

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
