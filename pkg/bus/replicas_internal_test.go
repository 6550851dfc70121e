package bus

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestReplicasCaughtUp(t *testing.T) {
	cases := []struct {
		name     string
		replicas []*jetstream.PeerInfo
		want     bool
	}{
		{"single server", nil, true},
		{"all current", []*jetstream.PeerInfo{{Name: "n2", Current: true}, {Name: "n3", Current: true}}, true},
		{"one catching up", []*jetstream.PeerInfo{{Name: "n2", Current: true}, {Name: "n3", Current: false, Lag: 40}}, false},
		{"current but lagging", []*jetstream.PeerInfo{{Name: "n2", Current: true, Lag: 1}}, false},
		{"not current, no lag known", []*jetstream.PeerInfo{{Name: "n2", Current: false}}, false},
		{"one offline", []*jetstream.PeerInfo{{Name: "n2", Current: true}, {Name: "n3", Offline: true, Lag: 40}}, true},
	}
	for _, tc := range cases {
		var c *jetstream.ClusterInfo
		if tc.replicas != nil {
			c = &jetstream.ClusterInfo{Leader: "n1", Replicas: tc.replicas}
		}
		if got := replicasCaughtUp(c); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
